"""No English on a Chinese page, outside technical names.

Every page of the app (each module of explorer/ui/pages) is opened under AppTest with
``lang=zh``, and every text it shows is read (``apptest_helpers.shown_text``: markdown,
captions, alerts, widgets' labels, help and options, metrics, table headers and cells,
expanders and tabs). A word is English when it is three or more ASCII letters, all
lowercase after the first, and not a technical name: a unit, an Ascend C or hardware name
(DataCopy, TQue, MTE2, Cube, UB), a chip, model, kernel or parameter name, a format or a
file extension. Names that are identifiers by their shape (``aic_cube_ratio``, ``MTE2``,
``GetBlockIdx``, ``split-KV``) never count, nor do code spans, links, paths and dotted
names (``params.tile``). A citation (the source of a chip or model number, a claim's
quoted text and references, a validation case's source) stays as its document wrote it.

Refusals and the emulator's deadlock are checked the same way on the pages that show them
(vector add with a misaligned tile, the troubleshooting lab).
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

import hardware_presets as hp
import kernels
from explorer.core.i18n import catalogue, t
from tests.apptest_helpers import open_page, shown_text, texts
from tests.preset_helpers import one_preset_per_architecture

PAGES_DIR = Path(__file__).resolve().parents[1] / "explorer" / "ui" / "pages"
PAGES = sorted(p.stem for p in PAGES_DIR.glob("*.py") if p.stem != "__init__")

# ---- what counts as an English word --------------------------------------------------------
#: removed before looking for words: {placeholders}, code, link targets, URLs, Streamlit's
#: icon and badge directives, a book's title in 《》, an English term glossed in full-width
#: parentheses ("拐点（ridge point）"), file names and paths, dotted names (params.tile)
_NOT_PROSE = [re.compile(p) for p in (
    r"\{\w*\}", r"`[^`]*`", r"\]\([^)]*\)", r"https?://\S+", r"\b\w+://\S*", r":material/\w+:",
    r"《[^》]*》", r"（[A-Za-z][A-Za-z -]*）",
    r":[a-z]+-badge\[", r"[\w./-]*\.(?:md|csv|py|toml|json|html?|ini|zip|png|npz|npy|svg)\b",
    r"\b[A-Za-z_][\w-]*(?:/[\w-]+){2,}", r"\b[A-Za-z_]\w*(?:\.\w+)+")]
#: a word: letters, hyphenated parts joined (all-reduce, flash-decoding)
_WORD = re.compile(r"(?<![\w.-])[A-Za-z]+(?:-[A-Za-z]+)*(?![\w-])")

#: names of several words, kept as they are (an API, a conference, the blog's own term)
PHRASES = ("Matmul Tiling", "Hot Chips", "Global Memory")
#: technical names a Chinese page writes as they are, compared without case
ALLOWED = frozenset(w.lower() for w in """
    English
    Ascend Atlas Huawei Llama Qwen Meta Nvidia Hopper MindStudio MindFormers MindIE CANN
    Insight Perfetto Chrome Trace Markdown zip msprof msKPP Profiler profiler Dask torch
    torchair vLLM Megatron catlass hicann
    Graham Little Kahan Higham Devoto Frobenius Spearman Quest
    Cube Vector Core Buffer Unified Cache Fixpipe Mmad Cast Add Mul Max Min Sort
    burst repeat repeats tile tiles token tokens workspace swizzle cluster multicast
    roofline dense bias dtype seed batch hidden decode static params chip balance group
    scale offset block split kernels linear rope rmsnorm swiglu gate down head norm
    flop acc max min exp log sum sqrt div ceil mod softmax silu gamma beta alpha rms
    query key value attention logit sink kernel host tiling compute bank cycle reduce sort
    ini pto-isa matmul Python Ctrl Enter half float
    all-reduce log-sum-exp flash-decoding round-robin top-k alpha-beta gate-up
""".split())


@cache
def _data_names() -> frozenset[str]:
    """Names the data gives: chips, models, kernels and their parameters (lowercased)."""
    from kernels.models import list_models, load_model
    names = set(kernels.KERNELS)
    names |= {spec.name for record in kernels.KERNELS.values() for spec in record.params}
    names |= {w for name in hp.list_presets() for w in hp.load(name).display_name.split()}
    names |= {w for m in list_models() for w in load_model(m).display_name.split()}
    return frozenset(n.lower() for n in names)


@cache
def citations() -> tuple[str, ...]:
    """Texts quoted as their documents wrote them: sources of chip and model numbers, the
    claims' quotes and references, the validation cases' sources and the time model's
    version, the sparse policies' papers (longest first)."""
    from explorer.core.claims import claims
    from explorer.core.validation.cases import MODEL_VERSION, cases
    from kernels.models import list_models, load_model
    from kernels.sparse.policies import POLICY_INFO
    found = {p.source for name in hp.list_presets() for _, p in hp.load(name).provenance}
    found |= {p.source for m in list_models() for _, p in load_model(m).provenance}
    cards = [c for name in one_preset_per_architecture() for c in claims(name)]
    found |= {c.quote for c in cards} | {r for c in cards for r in c.references}
    found |= {case.source for case in cases()} | {MODEL_VERSION}
    found |= {p.reference for p in POLICY_INFO.values() if "arXiv" in p.reference}  # papers
    return tuple(sorted((s for s in found if s), key=len, reverse=True))


def english_words(shown: list[str]) -> dict[str, str]:
    """The English words in ``shown`` -> the first text they occur in."""
    allowed = ALLOWED | _data_names()
    found: dict[str, str] = {}
    for text in shown:
        bare = text
        for quoted in (*citations(), *PHRASES):
            bare = bare.replace(quoted, " ")
        for pattern in _NOT_PROSE:
            bare = pattern.sub(" ", bare)
        for word in _WORD.findall(bare):
            parts = word.split("-")
            if len(word) < 3 or word.lower() in allowed or any(
                    p[1:] != p[1:].lower() for p in parts):  # split-KV, MTE, TQue: a name
                continue
            if all(len(p) < 3 or p.lower() in allowed for p in parts):
                continue
            found.setdefault(word, text)
    return found


def _page_words(page: str) -> dict[str, str]:
    at = open_page(f"explorer/ui/pages/{page}.py", {"lang": "zh"})
    return english_words(shown_text(at))


@pytest.mark.parametrize("page", PAGES)
def test_a_chinese_page_shows_no_english(page):
    found = _page_words(page)
    assert not found, "\n".join(f"{word!r} in {text[:160]!r}" for word, text in found.items())


# ---- refusals and the deadlock -----------------------------------------------------------
def test_the_lab_says_its_refusals_and_its_deadlock_in_chinese():
    at = open_page("explorer/ui/pages/lab.py", {"lang": "zh"})
    shown = [e.value.replace("\\", "") for e in at.error]
    assert len(shown) >= 3 and any("死锁" in s for s in shown), shown
    assert not english_words(shown), english_words(shown)
    assert t("lab.deadlock", "zh", message="").strip() in texts(at.error).replace("\\", "")


def test_a_refusal_on_a_chinese_page_has_no_english():
    at = open_page("explorer/ui/pages/vector_add.py", {"lang": "zh", "tile": "1000"})
    shown = [e.value for e in at.error]
    assert shown and "1000" in shown[0]
    assert not english_words(shown), english_words(shown)


# ---- the rule itself -----------------------------------------------------------------------
@pytest.mark.parametrize(("text", "words"), [
    ("tile（元素个数） (params.tile) = 1000 不合法，允许的取值：a multiple of 16 elements",
     {"multiple", "elements"}),
    ("允许的取值：16 个元素的整数倍（fp16 的 DataCopy 需按 32 字节对齐）", set()),
    ("`InitBuffer(queue, BUFFER_NUM, tileBytes)` 与 split-KV、all-reduce、aic_cube_ratio", set()),
    ("[在对应页面打开](./vector_add?lang=zh&preset=910B2) · Ascend 910B2 · Llama 3 8B", set()),
    ("Engine message: deadlock", {"Engine", "message", "deadlock"}),
    ("范围：1 到 256 copies。", {"copies"}),
])
def test_english_words_finds_prose_not_names(text, words):
    assert set(english_words([text])) == words


def test_interconnect_sources_say_what_the_model_says():
    """The multi-card page words each interconnect source from the catalogue; the English
    there is the text explorer/core/multicard.py keeps with the numbers."""
    from explorer.core import multicard as mc
    from explorer.ui.multicard_view import SOURCE_IDS
    for (preset, field), msg_id in SOURCE_IDS.items():
        assert catalogue("en")[msg_id] == mc.INTERCONNECTS[preset].source(field).split(
            ": ", 1)[-1], (preset, field)


# ---- Streamlit's own words: the file uploaders --------------------------------------------
def _uploader_caption(at, key: str) -> tuple[str, int]:
    """(the caption under the uploader ``key``, its max_upload_size in MB)."""
    found = [u for u in at.get("file_uploader") if u.key == key]
    assert found, [u.key for u in at.get("file_uploader")]
    captions = [c.value for c in at.caption if c.value.startswith(
        t("uploads.instruction", "zh", types="\0", limit="\0").split("\0")[0])]
    return "\n".join(captions), found[0].proto.max_upload_size_mb


def test_the_compare_uploader_says_its_types_and_its_cap_in_chinese():
    from explorer.ui import compare_controls as cc
    from explorer.ui import uploads
    at = open_page("explorer/ui/pages/compare.py", {"lang": "zh"})
    at.session_state[cc.key("a_source")] = "upload"  # what the side's radio writes
    at.run()
    caption, mb = _uploader_caption(at, "cmp_upload_a")
    assert t("uploads.instruction", "zh", types=uploads.types_text(cc.UPLOAD_TYPES),
             limit=uploads.size_text(cc.MAX_UPLOAD_BYTES)) in caption
    assert mb << 20 >= cc.MAX_UPLOAD_BYTES and "1 MiB" in caption  # the page's own cap
    assert not english_words([caption])


def test_the_scenario_uploader_names_both_caps_in_chinese():
    from explorer.ui import run_view, uploads
    at = open_page("explorer/ui/pages/vector_add.py", {"lang": "zh"})
    caption, mb = _uploader_caption(at, run_view.UPLOAD_KEY)
    limit = t("uploads.limit_report", "zh", scenario=uploads.size_text(run_view.SCENARIO_MAX_BYTES),
              report=uploads.size_text(run_view.REPORT_MAX_BYTES))
    assert limit in caption and mb << 20 == run_view.REPORT_MAX_BYTES
    assert not english_words([caption])


def test_the_uploader_style_replaces_streamlits_words_in_the_session_language():
    from explorer.ui import uploads
    at = open_page("explorer/ui/pages/vector_add.py", {"lang": "zh"})
    styles = [h.proto.body for h in at.get("html") if "stFileUploaderDropzone" in h.proto.body]
    assert styles, "no uploader style on the page"
    css = styles[0]
    assert f".st-key-{uploads.box_key('w.scenario_upload')} " in css
    assert t("uploads.button", "zh") in css and t("uploads.drag", "zh") in css
    assert "stFileUploaderDropzoneInstructions" in css and "display: none" in css


#: units that are the same in every language
INTERNATIONAL_UNITS = frozenset({"", "KiB", "MiB", "GiB", "GB/s", "MHz"})


def test_every_unit_a_page_shows_has_words_in_both_languages():
    """Chip fields' and kernel parameters' units are shown in help texts and ranges: each
    is international or has its words (explorer.ui.widgets._UNIT_IDS) in both catalogues."""
    from explorer.ui import widgets
    units = {s.unit for s in hp.FIELDS.values()}
    units |= {s.unit for record in kernels.KERNELS.values() for s in record.params}
    missing = sorted(u for u in units - INTERNATIONAL_UNITS if u not in widgets._UNIT_IDS)
    assert missing == []
    for msg_id in widgets._UNIT_IDS.values():
        assert t(msg_id, "zh") != t(msg_id, "en")

"""One way to show bad input on every page: ``explorer.ui.errors.show`` leads the refused
field with the translated label of the parameter it names (the page's own label when the
page passes its ``label_id``), then the field in parentheses; a chip field gets the chip
field's label, and a field that names nothing is shown as it is.

The expected labels are read from the catalogue through the pages' own label ids, so a
reworded label keeps these tests green and a page that loses its labels does not.
"""
from __future__ import annotations

import pickle
import re

import pytest
from streamlit.testing.v1 import AppTest

from explorer.core.i18n import LANGUAGES, param_label_id, render, t
from explorer.ui import balance_controls, decode_controls, errors, sparse_controls
from explorer.ui.playground import UI_MAX_INSTRUCTIONS
from hardware_presets import FIELDS
from hardware_presets.errors import InputError, Phrase
from tests.apptest_helpers import open_page, run, texts
from tests.waiting import DEADLINE_S

#: (page, refused field, the message id of the label that must lead it)
CASES = [
    ("decode", "params.batch", param_label_id("batch", decode_controls.LABELS)),
    ("decode", "params.custom: q_heads", param_label_id("custom_q_heads", decode_controls.LABELS)),
    ("sparse", "keep_ratio", param_label_id("keep_ratio", "ui.sparse.param")),
    ("sparse", "params.mean_len", param_label_id("mean_len", "ui.decode.param")),
    ("balance", "params.cores", param_label_id("cores", "ui.balance.param")),
    ("balance", "params.lengths[0]", param_label_id("lengths", "ui.decode.param")),
    ("generic", "params.n", param_label_id("n")),
]
LABEL_IDS = {"decode": decode_controls.label_id, "sparse": sparse_controls.label_id,
             "balance": balance_controls.label_id, "generic": None}


def _show(field: str, lang: str, page: str) -> None:
    """The AppTest script: one refusal of ``field`` shown as ``page`` shows it."""
    from explorer.ui import balance_controls, decode_controls, errors, sparse_controls
    from hardware_presets.errors import InputError

    label_ids = {"decode": decode_controls.label_id, "sparse": sparse_controls.label_id,
                 "balance": balance_controls.label_id, "generic": None}
    errors.show(InputError(field, 0, "a smaller value", hint="try less"), lang,
                label_ids[page])


def shown(field: str, lang: str, page: str) -> str:
    at = AppTest.from_function(_show, args=(field, lang, page), default_timeout=DEADLINE_S)
    return texts(run(at).error)


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize(("page", "field", "label_id"), CASES)
def test_the_label_leads_the_field(page, field, label_id, lang):
    label = t(label_id, lang)
    assert label not in (field, field.rsplit(".", 1)[-1])  # a label, not the internal key
    text = shown(field, lang, page)
    assert text.startswith(f"{label} ({field}) = 0")
    assert t("error.hint", lang, hint="try less") in text


@pytest.mark.parametrize(("page", "field", "label_id"), CASES)
def test_chinese_labels_are_chinese(page, field, label_id):
    assert t(label_id, "zh") != t(label_id, "en")
    assert errors.field_label(field, "zh", LABEL_IDS[page]) != \
        errors.field_label(field, "en", LABEL_IDS[page])


@pytest.mark.parametrize("page", LABEL_IDS)
def test_every_page_words_fields_the_same_way(page):
    """A chip field gets the chip's label, a word that names nothing stays as it is."""
    label_id = LABEL_IDS[page]
    for lang in LANGUAGES:
        chip = errors.field_label("910B2 override: ub_KiB", lang, label_id)
        assert chip == f"{t(FIELDS['ub_KiB'].label_id, lang)} (910B2 override: ub_KiB)"
        assert errors.field_label("bogus", lang, label_id) == "bogus"
        assert errors.field_label("bad.npz", lang, label_id) == "bad.npz"


def test_a_page_parameter_named_like_a_chip_field_keeps_the_page_label():
    """The balance page's cluster_size is its own parameter, not the chip's field."""
    label = t(param_label_id("cluster_size", "ui.balance.param"), "en")
    assert label != t(FIELDS["cluster_size"].label_id, "en")
    assert errors.field_label("params.cluster_size", "en", balance_controls.label_id) == \
        f"{label} (params.cluster_size)"


def test_message_escapes_what_a_user_typed():
    text = errors.message(InputError("params.batch", "*x*", "1 to 256"), "en",
                          label_id=decode_controls.label_id)
    assert text.startswith(errors.escape(t(param_label_id("batch", decode_controls.LABELS),
                                           "en")))
    assert "\\*x\\*" in text


# ---- on the pages themselves -------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGUAGES)
def test_vector_add_refusal_of_n_reads_with_its_label(lang):
    huge = 1 << 34  # within the parameter's range, far beyond what the page emulates
    at = open_page("explorer/ui/pages/vector_add.py", {"lang": lang, "n": str(huge)})
    message = texts(at.error)
    assert f"{t(param_label_id('n'), lang)} (params.n) = {huge}" in message
    assert f"{UI_MAX_INSTRUCTIONS:,}" in message


def test_balance_refusal_in_chinese_reads_with_the_page_label():
    at = open_page("explorer/ui/pages/balance.py", {"lang": "zh", "cores": "100"})
    label = t(param_label_id("cores", balance_controls.label_prefix("cores")), "zh")
    assert f"{label} (params.cores) = 100" in texts(at.error)


# ---- the words of a refusal, translated (hardware_presets.errors.Phrase) ------------------
def _refusal(call):
    with pytest.raises(InputError) as err:
        call()
    return err.value


def test_a_phrase_is_its_english_and_says_itself_in_chinese():
    allowed = Phrase("refusal.int_range", low=1, high=48)
    assert allowed == "an integer from 1 to 48" and repr(allowed) == str(allowed)
    assert render(allowed, "zh") == t("refusal.int_range", "zh", low=1, high=48)
    nested = Phrase("refusal.params.whole_then", allowed=allowed)
    assert str(nested) == "a whole number; an integer from 1 to 48"
    assert render(allowed, "zh") in render(nested, "zh") and "integer" not in render(nested, "zh")
    assert render("as it is", "zh") == "as it is"  # text a page already translated


def test_a_phrase_survives_the_trip_out_of_a_worker():
    exc = InputError("params.tile", Phrase("refusal.value.non_finite"),
                     Phrase("refusal.rows.multiple", step=16,
                            why=Phrase("refusal.rows.datacopy_blocks", align=32, dtype="fp16")))
    back = pickle.loads(pickle.dumps(exc.allowed))
    assert back == exc.allowed and isinstance(back, Phrase)
    assert render(back, "zh") == render(exc.allowed, "zh")


def test_a_huge_value_is_described_in_the_readers_language():
    exc = InputError("params.n", 10 ** 5000, Phrase("refusal.int_range", low=1, high=2))
    assert "an integer of about 5,001 digits" in str(exc)
    zh = errors.message(exc, "zh", markdown=False)
    assert t("refusal.value.big_int", "zh", digits="5,001") in zh and "digits" not in zh


def test_a_kernel_refusal_reads_in_chinese_and_stays_english_in_its_text():
    """The library's refusal (vector add, a misaligned tile): its str is the English it
    always was; the page's sentence is Chinese from the field to the reason."""
    import hardware_presets as hp
    from kernels.vector_add.kernel import check
    exc = _refusal(lambda: check(hp.load("910B2"), {"tile": 1000}))
    assert str(exc) == ("params.tile = 1000 is not allowed: a multiple of 16 elements "
                        "(32-byte DataCopy alignment for fp16)")
    zh = errors.message(exc, "zh", markdown=False)
    assert t("refusal.vector_add.align", "zh", step=16, align=32, dtype="fp16") in zh
    assert not re.search(r"\b(?:multiple|elements|alignment)\b", zh), zh
    assert errors.reason(exc, "zh") == render(exc.allowed, "zh")


def test_a_chip_field_refusal_names_its_unit_in_chinese():
    import hardware_presets as hp
    exc = _refusal(lambda: hp.load("910B2", gm_read_max_outstanding=10 ** 6))
    assert "copies" in str(exc)
    zh = errors.message(exc, "zh", markdown=False)
    assert t("refusal.unit.copies", "zh") in zh and "copies" not in zh


def test_every_library_refusal_says_its_words_as_phrases():
    """No InputError raised in hardware_presets/ or kernels/ spells what is allowed, or its
    hint, as English text of its own (a literal, an f-string, a sum): a page could not
    translate it. Values stay data (a dtype, a file name)."""
    import ast
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    prose = []
    for path in sorted([*(root / "hardware_presets").rglob("*.py"),
                        *(root / "kernels").rglob("*.py")]):
        for call in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = getattr(call, "func", None)
            name = getattr(name, "id", getattr(name, "attr", None))
            if name not in ("InputError", "DocumentError") or not isinstance(call, ast.Call):
                continue
            parts = call.args[2:4] + [k.value for k in call.keywords
                                      if k.arg in ("allowed", "hint")]
            prose += [f"{path.relative_to(root)}:{call.lineno}: {ast.unparse(p)[:60]}"
                      for p in parts if isinstance(p, (ast.JoinedStr, ast.BinOp)) or (
                          isinstance(p, ast.Constant) and isinstance(p.value, str) and p.value)]
    assert not prose, "\n".join(prose)

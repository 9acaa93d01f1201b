"""Chinese provenance: every note of the shipped chip presets and model shapes has a
Chinese translation that keeps its figures, a file without translations still loads and
falls back to English, bad translations are refused with file and key named, and the chip
page shows the notes and the description in the session's language, in full.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import hardware_presets as hp
from explorer.core.i18n import t
from hardware_presets import FIELDS, InputError, load, load_file, load_text
from kernels.models import list_models, load_model, load_model_text
from kernels.models.loader import MODEL_DIR, MODELS
from tests.apptest_helpers import run, start_app

PRESET_DIR = Path(hp.__file__).parent
TINY_CHIP = Path(__file__).resolve().parent / "data" / "tiny_chip.toml"
CJK = re.compile(r"[\u4e00-\u9fff]")
# A figure with its unit ("1.6 TB/s", "32 B/cycle", "95%", "8B") or a ratio or shape
# ("5:1", "16x16x16"), not a digit inside a name ("Sort32", "910B1", "arXiv:2307.09288").
_UNIT = r"(?:%|[KMGT]i?B(?:/s)?|B/cycle|B|[MG]Hz|TFLOPS|TOPS|us|flop/cycle)"
FIGURE = re.compile(rf"(?<![\w.])\d+(?:\.\d+)?(?:\s?{_UNIT}(?![\w/])|(?:[x:]\d+)+(?!\w))")


def _records():
    """(file name, record) of every shipped chip preset and model shape."""
    return ([(f"{name}.toml", load(name)) for name in hp.PRESETS]
            + [(MODELS[name], load_model(name)) for name in list_models()])


def _check_translation(english: str, chinese: str, where: str) -> None:
    """A faithful translation: Chinese words, not the English copied, the same figures."""
    assert CJK.search(chinese), (where, chinese)
    assert chinese != english, where
    missing = [f for f in FIGURE.findall(english) if f not in chinese]
    assert not missing, (where, missing, chinese)


# ---- the shipped data --------------------------------------------------------------------
@pytest.mark.parametrize("origin, record", _records(), ids=[o for o, _ in _records()])
def test_every_note_and_description_has_a_faithful_chinese_translation(origin, record):
    _check_translation(record.description, record.description_zh, f"{origin}: description")
    for key, prov in record.provenance:
        if prov.note:
            _check_translation(prov.note, prov.note_zh, f"{origin}: {key}")
            assert prov.note_in("zh") == prov.note_zh and prov.note_in("en") == prov.note


def test_figures_are_found_in_the_notes_and_kept_in_chinese():
    """The figure pattern is not vacuous: it finds units, ratios and shapes in the English
    notes (and no digit inside a name), and the Chinese notes keep every one of them."""
    pairs = [(p.note, p.note_zh) for _, r in _records() for _, p in r.provenance]
    found = {f for english, _ in pairs for f in FIGURE.findall(english)}
    assert {"1.6 TB/s", "32 B/cycle", "1.85 GHz", "95%", "5:1", "16x16x16", "16 KB",
            "139.6 us", "70B"} <= found
    assert FIGURE.findall("Sort32 on 910B1 (arXiv:2307.09288), GM_TO_UB_910b3") == []
    kept = {f for english, chinese in pairs for f in FIGURE.findall(english) if f in chinese}
    assert kept == found


# ---- files without translations, and bad translations ------------------------------------
def _without_chinese(text: str) -> str:
    """A preset or model file as a user may write it: no note_zh, no description_zh."""
    text = re.sub(r", note_zh = \"[^\"]*\"", "", text)
    return re.sub(r"^description_zh = .*\n", "", text, flags=re.M)


def test_a_chip_file_without_chinese_loads_and_falls_back_to_english(tmp_path):
    path = tmp_path / "my_chip.toml"
    path.write_text(_without_chinese((PRESET_DIR / "910B2.toml").read_text("utf-8")), "utf-8")
    chip, preset = load_file(path), load("910B2")
    assert chip.values() == preset.values() and chip.description_zh == ""
    assert chip.description_in("zh") == chip.description == preset.description
    for key in FIELDS:
        prov = chip.provenance_of(key)
        assert prov.note_zh == "" and prov.note_in("zh") == prov.note == preset.provenance_of(
            key).note
    tiny = load_file(TINY_CHIP)  # a test chip that never had translations
    assert tiny.provenance_of("ai_cores").note_in("zh") == tiny.provenance_of("ai_cores").note
    assert load_text(tiny.to_toml()) == tiny


def test_a_model_file_without_chinese_loads_and_falls_back_to_english():
    text = (MODEL_DIR / MODELS["llama3-8b"]).read_text("utf-8")
    model, preset = load_model_text(_without_chinese(text)), load_model("llama3-8b")
    assert model.values() == preset.values()
    assert model.description_in("zh") == model.description == preset.description
    for _key, prov in model.provenance:
        assert prov.note_zh == "" and prov.note_in("zh") == prov.note


@pytest.mark.parametrize("name", hp.PRESETS)
def test_translations_survive_the_round_trip_through_toml(name):
    chip = load(name, ai_cores=4)
    back = load_text(chip.to_toml(), origin="saved.toml")
    assert back == chip and back.description_zh == chip.description_zh
    assert back.provenance_of("ub_KiB").note_zh == chip.provenance_of("ub_KiB").note_zh


@pytest.mark.parametrize("pattern, literal, field", [
    (r'note_zh = "每个 AIV"', "note_zh = 3", "bad.toml: memory.ub_KiB.note_zh"),
    (r"description_zh = .*", "description_zh = 5", "bad.toml: description_zh"),
    (r"description_zh = .*", f'description_zh = "{"长" * 501}"', "bad.toml: description_zh"),
], ids=["note_zh not a text", "description_zh not a text", "description_zh too long"])
def test_a_bad_chinese_text_in_a_chip_file_names_file_and_key(tmp_path, pattern, literal, field):
    text = (PRESET_DIR / "910B2.toml").read_text("utf-8")
    path = tmp_path / "bad.toml"
    path.write_text(re.sub(pattern, lambda _: literal, text, count=1), "utf-8")
    with pytest.raises(InputError) as err:
        load_file(path)
    assert err.value.field == field and "printable characters" in err.value.allowed


@pytest.mark.parametrize("old, new, field", [
    ('note_zh = "配置项 hidden_size"', "note_zh = 1", "llama3_8b.toml: shape.hidden.note_zh"),
    ("description_zh = ", "description_zh = 2 #", "llama3_8b.toml: description_zh"),
], ids=["note_zh not a text", "description_zh not a text"])
def test_a_bad_chinese_text_in_a_model_file_names_file_and_key(old, new, field):
    text = (MODEL_DIR / MODELS["llama3-8b"]).read_text("utf-8")
    assert old in text
    with pytest.raises(InputError) as err:
        load_model_text(text.replace(old, new, 1), origin="llama3_8b.toml")
    assert err.value.field == field and "printable characters" in err.value.allowed


# ---- the chip page -----------------------------------------------------------------------
def _notes_shown(at, lang: str) -> dict[str, str]:
    """{field key: note} of the chip page's full-text table (cells are escaped markdown)."""
    table = at.table[-1].value
    column = table[t("ui.chip.col.note", lang)]
    assert len(column) == len(FIELDS)
    return {key: cell.replace("\\", "") for key, cell in zip(FIELDS, column)}


def _page(lang: str, **query: str):
    return run(run(start_app({"lang": lang, "preset": "910B4", **query}))
               .switch_page("explorer/ui/pages/chip.py"))


def test_chip_page_in_chinese_shows_the_chinese_notes_and_description():
    at, chip = _page("zh"), load("910B4")
    shown = _notes_shown(at, "zh")
    for key, note in shown.items():
        prov = chip.provenance_of(key)
        assert note == prov.note_zh and note != prov.note, key
    sources = at.table[-1].value[t("ui.chip.col.source", "zh")]
    assert [s.replace("\\", "") for s in sources] == [chip.provenance_of(k).source for k in FIELDS]
    markdown = [m.value.replace("\\", "") for m in at.markdown]
    assert chip.description_zh in markdown and chip.description not in markdown
    legend = "\n".join(c.value for c in at.caption)  # what H, M and L mean, in Chinese
    assert all(t(f"provenance.confidence.{c}", "zh") in legend for c in hp.CONFIDENCES)


def test_chip_page_in_english_shows_the_english_notes_and_description():
    at, chip = _page("en"), load("910B4")
    assert _notes_shown(at, "en") == {k: chip.provenance_of(k).note for k in FIELDS}
    assert chip.description in [m.value.replace("\\", "") for m in at.markdown]


def test_an_override_note_is_worded_in_chinese_from_the_preset():
    at = _page("zh", **{"chip.ai_cores": "8"})
    shown, preset = _notes_shown(at, "zh"), load("910B4")
    for key in ("ai_cores", "vector_cores"):  # set, and followed (AIC:AIV = 1:2)
        assert CJK.search(shown[key]) and "what-if" not in shown[key], shown[key]
        assert str(getattr(preset, key)) in shown[key]
        assert preset.provenance_of(key).source in shown[key]
    assert "ai_cores" in shown["vector_cores"] and "ai_cores" not in shown["ai_cores"]

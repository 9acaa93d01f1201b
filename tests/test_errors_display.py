"""One way to show bad input on every page: ``explorer.ui.errors.show`` leads the refused
field with the translated label of the parameter it names (the page's own label when the
page passes its ``label_id``), then the field in parentheses; a chip field gets the chip
field's label, and a field that names nothing is shown as it is.

The expected labels are read from the catalogue through the pages' own label ids, so a
reworded label keeps these tests green and a page that loses its labels does not.
"""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from explorer.core.i18n import LANGUAGES, param_label_id, t
from explorer.ui import balance_controls, decode_controls, errors, sparse_controls
from explorer.ui.playground import UI_MAX_INSTRUCTIONS
from hardware_presets import FIELDS
from hardware_presets.errors import InputError
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

"""The "Validation" page (the time model's card) under ``streamlit.testing.v1.AppTest``:
what the emulator models and leaves out, the model version, a metric row per group and
one table row per published case, in English and in Chinese."""
from __future__ import annotations

import pytest

from explorer.core.i18n import t
from explorer.core.validation.cases import MODEL_VERSION, cases
from tests.apptest_helpers import open_page, texts

PAGE = "explorer/ui/pages/validation.py"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_page_lists_every_case_and_the_summary(lang):
    at = open_page(PAGE, {"lang": lang})
    assert at.title[0].value == t("validation.title", lang)
    table = at.dataframe[0].value
    assert len(at.dataframe) == 1 and len(table) == len(cases())
    assert list(table[t("validation.col.case", lang)]) == [c.id for c in cases()]
    assert list(table.columns[:4]) == [t(f"validation.col.{c}", lang)
                                       for c in ("case", "group", "preset", "published")]
    emulated = table[t("validation.col.emulated", lang)].str.replace(",", "").map(float)
    assert emulated.gt(0).all()  # shown as text, rounded as every table rounds
    assert set(table[t("validation.col.within", lang)]) <= {t("validation.yes", lang),
                                                            t("validation.no", lang)}
    assert MODEL_VERSION in texts(at.info)
    labels = [m.label for m in at.metric]
    for name in ("within", "mean_error", "max_error"):
        assert labels.count(t(f"validation.metric.{name}", lang)) == 2  # GEMM and DataCopy
    assert labels.count(t("validation.metric.mean_ratio", lang)) == 1  # ratios: GEMM only
    within = [m.value for m in at.metric if m.label == t("validation.metric.within", lang)]
    assert sum(int(v.split(" / ")[1]) for v in within) == len(cases())
    assert all(m.value.endswith("%") for m in at.metric
               if m.label == t("validation.metric.mean_error", lang))
    prose = texts(at.markdown)
    assert "MTE2" in prose and "SyncAll" in prose and "max_outstanding" in prose
    assert t("validation.group_title", lang, group="GEMM",
             cases=sum(c.group == "gemm" for c in cases())) in prose
    if lang == "en":
        assert "Bank conflicts" in prose and "DVFS" in prose
    else:
        assert "Bank 冲突" in prose and "未建模的内容" in [s.value for s in at.subheader]
    assert at.query_params["lang"] in ([lang], lang)

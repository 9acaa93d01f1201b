"""The "Claims" page under ``streamlit.testing.v1.AppTest``: twelve bordered cards with a
verdict badge, figures table, rule, explanation, references and link, in English and in
Chinese; switching the sidebar's preset recomputes the cards.
"""
from __future__ import annotations

import pytest

from tests.apptest_helpers import open_page, run, texts, widget

PAGE = "explorer/ui/pages/claims.py"


def card1_value(at, row: str) -> str:
    table = at.dataframe[0].value
    return str(table.set_index(table.columns[0]).loc[row].iloc[0])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_page_renders_twelve_cards(lang):
    at = open_page(PAGE, {"lang": lang})
    assert len(at.dataframe) == 12
    assert len(at.subheader) == 12
    prose = texts(at.markdown)
    assert "256 TOPS" in prose  # the original sentence of claim 1 (Chinese in both)
    assert "./decode?preset=910B2" in prose and f"lang={lang}" in prose
    if lang == "en":
        assert at.title[0].value == "The blog's claims, recomputed"
        assert "Claim 1 (section 1.1)" == at.subheader[0].value
        assert "Rule" in prose and "References" in prose
        assert "1 hold" not in texts(at.info) and "inconsistent" in texts(at.info)
    else:
        assert at.title[0].value == "博客论断，现场重算"
        assert "判定规则" in prose and "参考资料" in prose
    assert at.query_params["lang"] == [lang] or at.query_params["lang"] == lang


def test_switching_the_preset_changes_a_card():
    at = open_page(PAGE)
    before = card1_value(at, "Cube clock (GHz)")
    widget(at, "w.preset").set_value("910B4")
    run(at)
    after = card1_value(at, "Cube clock (GHz)")
    assert (before, after) == ("1.80", "1.50")
    assert "preset=910B4" in texts(at.markdown)

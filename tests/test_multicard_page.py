"""The "Multi-card decode" page under ``streamlit.testing.v1.AppTest``: it renders the
default scenario (Llama 3 70B on 8 cards, the scaling curve and step split over 1..8
cards, claims 11 and 12 computed), the card slider and the interconnect change the
output, a card count that does not divide the KV heads is a message and not an
exception, and Chinese works."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.apptest_helpers import open_page, run, set_widgets, texts
from tests.apptest_helpers import widget as find

PAGE = "explorer/ui/pages/multicard.py"
PREFIX = "w.mc."


def page(query: dict | None = None, **values) -> AppTest:
    at = open_page(PAGE, query)
    return set_widgets(at, PREFIX, **values) if values else at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def number(text: str) -> float:
    return float(text.split()[0].replace(",", ""))


def test_default_page_renders_scaling_and_claims():
    at = page()
    assert at.title[0].value == "Multi-card decode"
    assert (find(at, PREFIX + "model").value, find(at, PREFIX + "cards").value) == \
        ("llama3-70b", 8)
    assert metric(at, "Step time").endswith("ms") and number(metric(at, "Tokens/s")) > 0
    assert metric(at, "Fits one card's HBM") == "yes"
    assert len(at.get("plotly_chart")) == 2  # scaling curve, step split
    assert "Card counts 3, 5, 6, 7 are left out" in texts(at.caption)
    assert "ESTIMATE" in texts(at.caption)
    md = texts(at.markdown)
    assert "**Claim 11**" in md and "**54.0** sequences" in md and "**57.8** after" in md
    assert "**Claim 12**" in md and "roofline" in md
    assert not at.error
    assert at.query_params["cards"] == "8"


def test_cards_change_the_output():
    at = page()
    step8 = number(metric(at, "Step time"))
    set_widgets(at, PREFIX, cards=2)
    step2 = number(metric(at, "Step time"))
    assert step2 > step8
    assert metric(at, "Fits one card's HBM") == "no"  # 70.6 B fp16 weights / 2 > 64 GiB
    assert "Does not fit" in texts(at.caption)
    set_widgets(at, PREFIX, cards=1)
    assert metric(at, "All-reduce per step") == "0.00 ms"


def test_cards_that_do_not_divide_kv_heads_are_a_message():
    at = page(cards=3)
    assert "kv_heads" in texts(at.error)
    assert len(at.get("plotly_chart")) == 2  # the scaling still draws


def test_interconnect_latency_changes_the_allreduce():
    at = page()
    before = number(metric(at, "All-reduce per step"))
    find(at, PREFIX + "latency_us").set_value(15.0)
    run(at)
    assert number(metric(at, "All-reduce per step")) > 5 * before
    assert "override" in at.dataframe[0].value.to_string()


def test_chinese():
    at = page({"lang": "zh"})
    assert at.title[0].value == "多卡解码"
    assert "论断 11" in texts(at.markdown)
    assert not at.error

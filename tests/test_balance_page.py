"""The "Load balance" page under ``streamlit.testing.v1.AppTest``: it renders the synthetic
workload (predicted) and the decode kernel's attention (emulated under every policy, next
to the plan), a control changes the output, bad input (more cores than the chip has, a
list of lengths of the wrong size, a zero length, a bad link) is a translated message and
never an exception, a link reopens a scenario, and Chinese works.
"""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from explorer.ui import balance_controls
from tests.apptest_helpers import open_page, run, set_widgets, texts
from tests.apptest_helpers import widget as find
from tests.test_decode_page import metric

PAGE, PREFIX = "explorer/ui/pages/balance.py", "w.lb."


def balance_page(query: dict | None = None) -> AppTest:
    """The app from its entry point, on the balance page, with ``query`` in its URL."""
    return open_page(PAGE, query)


def value(at: AppTest, name: str) -> object:
    return find(at, PREFIX + name).value


def percent(text: str) -> float:
    return float(text.rstrip("%"))


def test_default_page_predicts_every_policy_on_the_synthetic_tasks():
    at = balance_page()
    assert at.title[0].value == "Load balance"
    assert value(at, "source") == "synthetic" and value(at, "batch") == 16
    assert "128 tasks: 16 sequences × 8 KV heads" in texts(at.caption)
    assert metric(at, "Makespan").endswith("µs")
    assert percent(metric(at, "Efficiency (mean/max)")) < 50  # static blocks, ragged batch
    assert len(at.get("plotly_chart")) == 5  # loads, timeline, policies, P50/P99, sweep
    prose = texts(at.markdown)
    assert "for m = 48, **1.3264×**" in prose  # Graham's 4/3 - 1/(3m)
    assert "1 − 65%/92% = **29.3%**" in prose  # the blog's claim has a ceiling
    assert "static → LPT goes from" in texts(at.info)
    assert "GetBlockIdx()" in prose and "INTER_CORE_COMM_COST" in prose
    table = at.dataframe[0].value
    assert len(table) == 10 and set(table["Series"]) == {"whole tasks", "long tasks split"}
    assert at.query_params["policy"] == "static" and at.query_params["source"] == "synthetic"


def test_changing_the_policy_changes_the_output():
    at = balance_page()
    before = metric(at, "Makespan")
    set_widgets(at, PREFIX, policy="lpt")
    assert metric(at, "Makespan") != before
    assert percent(metric(at, "Efficiency (mean/max)")) > 90
    assert at.subheader[0].value == "The chosen policy: LPT"
    set_widgets(at, PREFIX, cores=8)
    assert "planned on 8 cores" in texts(at.caption)


def test_decode_kernel_is_emulated_next_to_the_plan():
    at = balance_page({"source": "decode"})
    assert not at.error
    assert "attention tasks of the decode kernel" in texts(at.caption)
    table = at.dataframe[0].value
    assert set(table["Series"]) == {"predicted", "emulated"} and len(table) == 10
    assert len(at.get("plotly_chart")) == 5
    emulated = table[table["Series"] == "emulated"].set_index("Policy")
    assert percent(emulated.loc["LPT", "Efficiency (mean/max)"]) > \
        percent(emulated.loc["static blocks", "Efficiency (mean/max)"])


def test_refusals_are_messages():
    at = balance_page({"cores": "100"})
    message = texts(at.error)
    assert "Cores (block_dim, 0 = all) (params.cores) = 100 is not allowed" in message
    assert "0 to 48 (vector cores of Ascend 910B2)" in message
    assert at.get("plotly_chart")  # the page goes on with all the cores
    set_widgets(at, PREFIX, distribution="list")
    at.text_input(key="w.lb.lengths").set_value("512, 1024")
    run(at)
    assert "exactly batch = 16 lengths" in texts(at.error)
    assert not at.get("plotly_chart")
    assert "What this is in Ascend C" in [h.value for h in at.subheader]
    set_widgets(at, PREFIX, batch=2)
    at.text_input(key="w.lb.lengths").set_value("0, 1024")
    run(at)
    assert "Lengths (one per sequence) (params.lengths[0]) = 0 is not allowed" in texts(at.error)


def test_link_reopens_the_scenario_and_reports_bad_values():
    at = balance_page({"policy": "dynamic", "batch": "32", "split": "true", "kv_heads": "1",
                       "bogus": "1", "distribution": "zipf"})
    assert value(at, "policy") == "dynamic"
    assert value(at, "batch") == 32 and value(at, "split") is True
    message = texts(at.error)
    assert "bogus = '1' is not allowed" in message and "zipf" in message
    assert "32 tasks: 32 sequences × 1 KV heads" in texts(at.caption)
    assert at.query_params["policy"] == "dynamic" and at.query_params["split"] == "True"


def test_example_buttons_and_chinese():
    at = balance_page({"lang": "zh"})
    assert at.title[0].value == "负载均衡"
    at.button(key="lb_example_few").click()
    run(at)
    assert value(at, "batch") == 8 and value(at, "split") is True
    assert "m = 48 时为 **1.3264 倍**" in texts(at.markdown)
    assert at.subheader[0].value == "所选策略：静态分块"


def test_every_choice_the_page_offers_has_a_name():
    for name, ids in balance_controls.CHOICES.items():
        assert set(balance_controls.SPECS[name].choices) <= set(ids), name

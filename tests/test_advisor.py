"""The performance advisor (explorer/core/advisor.py, explorer/ui/advisor_view.py): on the
gallery scenarios every what-if it suggests keeps its promise when emulated; editable
thresholds change pass/fail; the bound is classified from per-pipe shares on crafted
cases; every message id exists in en and zh; the report carries the section; and the
vector add page shows the advisor with a working "Try it".
"""
from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from explorer.core import Scenario, advisor, gallery, simulate
from explorer.core.advisor import BOUNDS, CHECKS, DEFAULT_THRESHOLDS, advise, classify, improved
from explorer.core.i18n import LANGUAGES, has
from explorer.plots import report
from kernels.gemm import advice as gemm_advice
from tests.apptest_helpers import open_page, run, texts

#: gallery scenario -> a rule it must trigger (its lesson)
EXPECTED_TIP = {"double_buffer_a": "advisor.tip.buffer_num",
                "gemm_double_buffer_a": "advisor.tip.double_buffer",
                "lpt_a": "advisor.tip.lpt", "split_k_a": "advisor.tip.split_k",
                "tail_wave": "advisor.tip.tail", "int8_kv_a": "advisor.tip.int8_kv"}
EXPECTED_BOUND = {"lpt_a": "imbalance", "tail_wave": "tail", "int8_kv_b": "compute",
                  "decode_memory_bound": "memory", "double_buffer_a": "latency",
                  "split_k_b": "sync"}


@pytest.fixture(scope="module")
def runs() -> dict:
    return {i: simulate(gallery.load(i)) for i in gallery.ids()}


@pytest.mark.parametrize("scenario_id", gallery.ids())
def test_every_tip_keeps_its_promise(runs, scenario_id):
    result = runs[scenario_id]
    tips = advise(result).tips
    for tip in tips:
        new = simulate(tip.scenario)
        assert improved(tip, result.metrics, new.metrics), (
            tip.msg_id, tip.changes, result.metrics[tip.metric], new.metrics[tip.metric])
        assert tip.scenario.params != result.scenario.params
    if scenario_id in EXPECTED_TIP:
        assert EXPECTED_TIP[scenario_id] in {tip.msg_id for tip in tips}


@pytest.mark.parametrize("scenario_id, bound", EXPECTED_BOUND.items())
def test_gallery_bounds(runs, scenario_id, bound):
    assert advise(runs[scenario_id]).bound == bound


def test_thresholds_change_pass_and_fail(runs):
    result = runs["gemm_double_buffer_b"]  # overlap 94%, cube 54%
    strict = {key: (1.0 if sense == "min" else 0.0) for key, (_, sense) in CHECKS.items()}
    lenient = {key: (0.0 if sense == "min" else 1.0) for key, (_, sense) in CHECKS.items()}
    inside = {c.key for c in advise(result).checks if c.value is not None and 0 < c.value < 1}
    assert len(inside) >= 4
    for name, th, verdict in (("strict", strict, False), ("lenient", lenient, True)):
        got = {c.key: c.passed for c in advise(result, th).checks}
        assert all(got[key] is verdict for key in inside), (name, got)
    overlap = {c.key: c for c in advise(result).checks}["overlap"]
    assert overlap.passed and overlap.threshold == DEFAULT_THRESHOLDS["overlap"]
    raised = {c.key: c for c in advise(result, {"overlap": 0.99}).checks}["overlap"]
    assert not raised.passed and raised.threshold == 0.99


def test_streaming_kernel_has_no_l2_verdict_and_ub_occupancy(runs):
    checks = {c.key: c for c in advise(runs["double_buffer_a"]).checks}
    assert checks["l2_hit_rate"].passed is None  # nothing is read twice
    occ = checks["buffer_occupancy"]
    assert occ.detail["buffer"] == "UB" and 0 < occ.value < 1


def test_communication_counts_syncall_and_handoffs(runs):
    assert advisor.communication_share(runs["double_buffer_a"]) == 0.0
    assert advisor.communication_share(runs["split_k_b"]) > 0.1  # SyncAll + workspace
    assert advisor.communication_share(runs["decode_memory_bound"]) > 0.05  # GM S/P/O


def _crafted(result, **ratios):
    """The same run with some metrics replaced (the bound reads the load balance metric)."""
    metrics = {**result.metrics, "hbm_bytes": 0.0, "l2_bytes": 0.0, "aic_cube_ratio": 0.0,
               "aiv_vec_ratio": 0.0, "mte2_ratio": 0.0, "stall_ratio": 0.0,
               "load_balance_mean_max": ratios.pop("balance", 1.0)}
    metrics.update(ratios)
    return dataclasses.replace(result, metrics=metrics, timeline=result.timeline.iloc[0:0])


@pytest.mark.parametrize("ratios, bound", [
    ({"aiv_vec_ratio": 0.8, "mte2_ratio": 0.9}, "compute"),
    ({"aiv_vec_ratio": 0.5, "hbm_bytes": 1e12}, "memory"),
    ({"aiv_vec_ratio": 0.3, "balance": 0.5}, "imbalance"),
    ({"stall_ratio": 0.4}, "sync"),
    ({"mte2_ratio": 0.9}, "latency"),
])
def test_bound_classification_on_crafted_cases(runs, ratios, bound):
    kind, values = classify(_crafted(runs["double_buffer_a"], **ratios))
    assert kind == bound and kind in BOUNDS
    assert set(values) >= {"compute", "memory", "stall", "balance", "gain"}


def test_tail_needs_a_partial_last_wave(runs):
    assert classify(runs["tail_wave"])[0] == "tail"  # 45 tasks on 20 cores
    even = simulate(gallery.load("tail_wave").replace(params={"M": 1280}))  # 50 tasks
    assert gemm_advice.waves(even.params)[0] % 20 != 0 or classify(even)[0] != "tail"


def test_refused_what_ifs_are_dropped(runs):
    result = runs["double_buffer_a"]
    big = simulate(Scenario.make(kernel="vector_add",
                                 params={**result.params, "tile": 1 << 14}))
    assert advisor._accepted(big, {"tile": 1 << 15}) is None  # 3 x 64 KiB > UB
    assert advisor._accepted(big, {"buffer_num": 1}) is None  # changes nothing
    assert all(t.changes.get("tile") != 1 << 15 for t in advise(big).tips)


def test_every_message_id_exists_in_both_languages(runs):
    ids = {f"advisor.{k}" for k in ("title", "intro", "intro_report", "thresholds", "try",
                                     "no_tips", "promise", "promise_gain", "outcome",
                                     "outcome_ok", "outcome_bad", "open", "pass", "fail",
                                     "na")}
    ids |= {f"advisor.check.{k}.{part}" for k in CHECKS for part in ("name", "label", "why")}
    ids |= {f"advisor.bound.{b}" for b in BOUNDS}
    for result in runs.values():
        for tip in advise(result).tips:
            ids |= {tip.msg_id, f"advisor.metric.{tip.metric}",
                    f"advisor.direction.{tip.direction}"}
    for rule_id in ("buffer_num", "double_buffer", "block_dim", "split_k", "tail", "lpt",
                    "int8_kv", "tile", "swizzle"):
        ids.add(f"advisor.tip.{rule_id}")
    missing = [(i, lang) for i in sorted(ids) for lang in LANGUAGES if not has(i, lang)]
    assert not missing


@pytest.mark.parametrize("lang", LANGUAGES)
def test_report_has_the_advisor_section(runs, lang):
    result = runs["double_buffer_a"]
    page = report.html_report(result, lang)
    title = advisor.t("advisor.title", lang)
    assert f"<h2>{title}</h2>" in page
    table = advisor.checklist_table(advise(result), lang)
    assert isinstance(table, pd.DataFrame) and len(table) == len(CHECKS)
    assert advisor.t("advisor.check.l2_hit_rate.why", lang)[:20] in page


def test_vector_add_page_shows_the_advisor_and_try_it_works():
    at = open_page("explorer/ui/pages/vector_add.py",
                   {"n": "65536", "block_dim": "2", "tile": "4096", "buffer_num": "1"})
    assert "Performance advisor" in texts(at.subheader)
    assert len(at.table) >= 1  # the checklist
    buttons = [b for b in at.button if (b.key or "").startswith("advisor.try.")]
    assert buttons, "no Try it button"
    assert "buffer_num = 2" in texts(at.markdown)
    buttons[0].click()
    run(at)
    assert "kept its promise" in texts(at.success)
    assert "→" in texts(at.markdown)
    at.number_input(key="w.advisor.threshold.overlap").set_value(0.0)
    run(at)  # the thresholds rerun the page without an exception

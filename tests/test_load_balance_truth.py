"""One definition of load balance, in the metric and in the figure (issue 19).

* A core's load is its work time: the time its pipes run instructions, its SyncAll waits
  left out (explorer/core/tables.py ``work_ns``). Hand-worked on the tiny chip: two cores
  with 3 and 1 units of work, then a SyncAll, balance 2/3 (all cores are active until the
  barrier releases them, so active time would read 1).
* On the runs of vector add, GEMM, RMSNorm and the decode layer, the load-balance figure's
  mean and max lines and its title are the metric's numbers
  (``metrics.critical_work_ns``, ``load_balance_mean_max``), the cores it draws grey are
  exactly the cores the metric leaves out, and "mean" and "max" are legend entries, never
  text on the plot.
* ``compare.cores_used`` counts the cores ``metrics.worked`` says did work.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from explorer.core import Scenario, metrics, simulate
from explorer.core import compare as cmp
from explorer.core.emulator.engine import run
from explorer.core.i18n import LANGUAGES, t
from explorer.core.tables import per_core_table, timeline_table
from explorer.plots.cores import load_balance_figure
from explorer.plots.values import format_metric
from kernels.common.program import ProgramBuilder
from tests.engine_helpers import tiny

#: the runs the figure is checked on: (kernel, params); the decode page's default is the
#: whole layer (phases = layer: many launches with a SyncAll between them)
RUNS = {"vector_add": ("vector_add", {}), "gemm": ("gemm", {}), "rmsnorm": ("rmsnorm", {}),
        "decode_layer": ("decode", {"phases": "layer"}),
        "decode_both": ("decode", {"phases": "both", "batch": 8})}
AIV0, AIV1, AIV2 = 2, 3, 4  # the tiny chip's cores 0, 1 are AIC, 2..5 AIV
UNIT_NS = 60.0  # a 6400-element fp16 Add on the tiny chip: 10 + 12800 / 256 cycles at 1 GHz


@functools.cache
def result_of(name: str):
    kernel, params = RUNS[name]
    return simulate(Scenario.make("910B2", kernel, params))


# ---- the definition, by hand ---------------------------------------------------------------
def _hand_run():
    """AIV0 runs three Adds, AIV1 one, AIV2 none; then all three meet at a SyncAll."""
    b = ProgramBuilder("three-and-one")
    for seq in range(3):
        b.vector(AIV0, "Add", 6400, "fp16", seq)
    b.vector(AIV1, "Add", 6400, "fp16", 0)
    b.sync_all([AIV0, AIV1, AIV2], 3)
    program, chip = b.build(), tiny()
    schedule = run(program, chip)
    timeline = timeline_table(program, schedule, chip)
    return timeline, per_core_table(timeline, chip, schedule.makespan_ns)


def test_waiting_at_a_syncall_is_not_work():
    timeline, pc = _hand_run()
    pc = pc.set_index("core")
    assert pc.loc[AIV0, "work_ns"] == pytest.approx(3 * UNIT_NS)
    assert pc.loc[AIV1, "work_ns"] == pytest.approx(UNIT_NS)
    assert pc.loc[AIV2, "work_ns"] == 0.0
    # every core is active until the barrier releases it: active time cannot tell them apart
    assert pc.loc[AIV0, "active_ns"] == pc.loc[AIV1, "active_ns"] == pc.loc[AIV2, "active_ns"]
    barrier = timeline[timeline["op"].astype(str) == "SyncAll"].set_index("core")
    assert barrier.loc[AIV1, "start_ns"] == pytest.approx(UNIT_NS)  # AIV1 waits 120 ns
    assert list(metrics.worked(pc.reset_index())) == [True, True, False]


def test_balance_of_three_and_one_units_is_two_thirds():
    _, pc = _hand_run()
    assert list(metrics.balance_cores(pc)) == [True, True, False]
    assert metrics.load_balance(pc) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert cmp.cores_used(pc) == 2
    fig = load_balance_figure(pc, "en")
    lines = sorted(shape.y0 for shape in fig.layout.shapes)
    assert lines == [pytest.approx(2 * UNIT_NS / 1e3), pytest.approx(3 * UNIT_NS / 1e3)]
    assert format_metric("load_balance_mean_max", 2 / 3, "en") in fig.layout.title.text


# ---- the figure draws the metric ----------------------------------------------------------
def traces(fig, *metas: str) -> list:
    return [trace for trace in fig.data if trace.meta in metas]


def core_names(pc, mask) -> set[str]:
    return set(pc.loc[mask, "core_name"].astype(str))


@pytest.mark.parametrize("name", list(RUNS))
def test_the_figures_mean_and_max_are_the_metrics(name):
    result = result_of(name)
    pc = result.per_core
    work = metrics.critical_work_ns(pc)
    fig = load_balance_figure(pc, "en")
    named = {shape.name: shape.y0 for shape in fig.layout.shapes}
    mean = [y for text, y in named.items() if text.startswith("mean ")]
    peak = [y for text, y in named.items() if text.startswith("max ")]
    assert len(mean) == len(peak) == 1 and len(named) == 2
    assert mean[0] * 1e3 == pytest.approx(work.mean(), rel=1e-12)
    assert peak[0] * 1e3 == pytest.approx(work.max(), rel=1e-12)
    assert mean[0] / peak[0] == pytest.approx(result.metrics["load_balance_mean_max"],
                                              rel=1e-12)
    for lang in LANGUAGES:
        title = load_balance_figure(pc, lang).layout.title.text
        assert format_metric("load_balance_mean_max", result.metrics["load_balance_mean_max"],
                             lang) in title


@pytest.mark.parametrize("name", list(RUNS))
def test_the_figure_greys_exactly_the_cores_the_metric_leaves_out(name):
    pc = result_of(name).per_core
    counted = metrics.balance_cores(pc)
    fig = load_balance_figure(pc, "en")
    drawn = {x for trace in traces(fig, "counted") for x in trace.x}
    grey = {x for trace in traces(fig, "not_counted", "idle") for x in trace.x}
    assert drawn == core_names(pc, counted)
    assert grey == core_names(pc, ~counted)
    idle = {x for trace in traces(fig, "idle") for x in trace.x}
    assert idle == core_names(pc, ~metrics.worked(pc))
    heights = {x: y for trace in traces(fig, "counted", "not_counted")
               for x, y in zip(trace.x, trace.y)}
    work = dict(zip(pc["core_name"].astype(str), pc["work_ns"] / 1e3))
    assert heights == pytest.approx({x: work[x] for x in heights})


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", ["decode_layer", "decode_both"])
def test_mean_and_max_are_legend_entries_and_grey_cores_are_named(name, lang):
    pc = result_of(name).per_core
    kind_of = dict(zip(pc["core_name"].astype(str), pc["core_kind"].astype(str)))
    fig = load_balance_figure(pc, lang)
    assert not fig.layout.annotations  # no text written on the plot
    assert all(shape.showlegend for shape in fig.layout.shapes)
    assert traces(fig, "idle") or traces(fig, "not_counted")
    for meta, msg_id in (("idle", "plots.balance.idle"),
                         ("not_counted", "plots.balance.not_counted")):
        for trace in traces(fig, meta):
            (kind,) = {kind_of[x] for x in trace.x}
            assert trace.name == t(msg_id, lang, kind=kind)


def test_the_decode_layers_syncall_waits_do_not_read_as_balance():
    """Every core of the layer is active until the last barrier; the balance compares
    their work, so it is below 1 although their active times are all equal."""
    pc = result_of("decode_layer").per_core
    active = pc["active_ns"].to_numpy()
    assert active.min() == pytest.approx(active.max(), rel=1e-9)
    m = result_of("decode_layer").metrics
    work = metrics.critical_work_ns(pc)
    assert m["load_balance_mean_max"] == work.mean() / work.max() < 1.0
    assert m["load_balance_min_max"] == work.min() / work.max()


@pytest.mark.parametrize("name", list(RUNS))
def test_cores_used_are_the_cores_that_worked(name):
    pc = result_of(name).per_core
    assert cmp.cores_used(pc) == int(metrics.worked(pc).sum())
    assert cmp.metric_values(result_of(name))["cores_used"] == int(np.sum(pc["work_ns"] > 0))

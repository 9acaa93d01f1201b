"""The load-balance page's numbers without the page (explorer/core/balance.py): plans of a
hand-worked task list (3 cores, 7 tasks) under static blocks, round-robin and LPT with
their loads, metrics, pieces and completions worked out by hand; spans and completions
from a tiny hand-made timeline; the refusals of too much work; the predicted and
emulated outcomes of a small decode workload against each other; and invariants of every
plan (efficiency in (0, 1], LPT within Graham's bound of the brute-force optimum)."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hardware_presets as hp
from explorer.core import balance as bl
from explorer.core import scheduling as sc
from hardware_presets.errors import InputError
from kernels.common.scheduling import POLICIES, graham_bound

#: 7 tasks of known cost (cycles), one sequence each; total 23 on 3 cores
COSTS = (5.0, 1.0, 4.0, 2.0, 3.0, 6.0, 2.0)
#: loads by hand: static = blocks of ceil(7/3) = 3 tasks (0-2 | 3-5 | 6); round-robin =
#: task i on core i mod 3 (0,3,6 | 1,4 | 2,5); LPT = 6,5,4 to cores 0,1,2, then 3 -> core 2
#: (4), 2 -> core 1 (5), 2 -> core 0 (6), 1 -> core 1 (8, 7, 7: the tie goes to core 1)
HAND_LOADS = {"static": (10.0, 11.0, 2.0), "round_robin": (9.0, 4.0, 10.0),
              "lpt": (8.0, 8.0, 7.0)}


def hand_tasks(costs=COSTS) -> sc.TaskList:
    ids = np.arange(len(costs))
    return sc.TaskList(np.asarray(costs, float), ids, ids)


def outcome(policy: str, clock_MHz: float = 1.0, costs=COSTS, cores: int = 3) -> bl.Outcome:
    tasks = hand_tasks(costs)
    return bl.from_plan(sc.plan(tasks, cores, policy), tasks, clock_MHz, "unsplit")


# ---- a hand-worked plan ------------------------------------------------------------------
@pytest.mark.parametrize("policy", sorted(HAND_LOADS))
def test_hand_worked_loads_and_metrics(policy):
    o, loads = outcome(policy), HAND_LOADS[policy]
    top, bound = max(loads), 23 / 3  # bound = max(23 / 3, longest task 6)
    assert o.loads.tolist() == list(loads)
    assert o.balance.makespan == top
    assert o.balance.efficiency == pytest.approx(23 / 3 / top)
    assert o.balance.balance_ratio == pytest.approx(min(loads) / top)
    assert o.balance.lower_bound == pytest.approx(bound)
    assert o.balance.gap == pytest.approx(top / bound - 1)


def test_static_pieces_run_back_to_back_in_task_order():
    """Core 0 runs tasks 0, 1, 2 at [0, 5], [5, 6], [6, 10]; core 1 tasks 3, 4, 5 at
    [0, 2], [2, 5], [5, 11]; core 2 task 6 at [0, 2]."""
    o = outcome("static")
    assert o.pieces["slot"].tolist() == [0, 0, 0, 1, 1, 1, 2]
    assert o.pieces["start_us"].tolist() == [0, 5, 6, 0, 2, 5, 0]
    assert o.pieces["end_us"].tolist() == [5, 6, 10, 2, 5, 11, 2]
    assert o.seq_done.tolist() == [5, 6, 10, 2, 5, 11, 2]
    # sorted 2 2 5 5 6 10 11: the median is the 4th, P99 sits 0.94 of the way to 11
    assert o.percentiles() == pytest.approx((5.0, 10.94))
    assert o.largest_piece() == 6.0


def test_the_clock_turns_cycles_into_microseconds():
    at_1, at_2 = outcome("lpt", 1.0), outcome("lpt", 2000.0)
    assert np.allclose(at_2.loads * 2000.0, at_1.loads)
    assert np.allclose(at_2.seq_done * 2000.0, at_1.seq_done)
    assert at_2.balance.efficiency == pytest.approx(at_1.balance.efficiency)


def test_table_has_one_row_per_outcome_and_names_time_columns():
    df = bl.table([outcome(p) for p in sorted(HAND_LOADS)])
    assert df["policy"].tolist() == sorted(HAND_LOADS) and len(df) == 3
    lpt = df.set_index("policy").loc["lpt"]
    assert bl.metric_value(lpt, "makespan") == lpt["makespan_us"] == 8.0
    assert bl.metric_value(lpt, "efficiency") == pytest.approx(23 / 24)
    assert {f"{m}_us" if m in bl.TIME_METRICS else m for m in bl.METRICS} <= set(df.columns)


def test_an_outcome_without_sequences_has_zero_percentiles():
    o = outcome("lpt")
    empty = bl.Outcome(o.policy, o.series, o.loads, o.balance, o.pieces, np.zeros(0))
    assert empty.row()["p50_us"] == empty.row()["p99_us"] == 0.0


# ---- invariants of every plan ------------------------------------------------------------
costs_st = st.lists(st.floats(1.0, 1e6, allow_nan=False), min_size=1, max_size=40)


@given(costs=costs_st, cores=st.integers(1, 12), policy=st.sampled_from(POLICIES))
def test_every_outcome_is_within_its_bounds(costs, cores, policy):
    """Efficiency in (0, 1], ratio in [0, 1], never below the lower bound; the last
    completion of a plan is its makespan (cores start together and never wait)."""
    o = outcome(policy, 1000.0, costs, cores)
    b = o.balance
    assert 0 < b.efficiency <= 1 + 1e-12 and 0 <= b.balance_ratio <= 1 + 1e-12
    assert b.makespan >= b.lower_bound * (1 - 1e-12)
    assert o.seq_done.max() == pytest.approx(b.makespan)
    assert o.loads.sum() == pytest.approx(sum(costs) / 1000.0)


@given(costs=st.lists(st.integers(1, 40), min_size=1, max_size=7), cores=st.integers(1, 3))
def test_lpt_outcome_within_grahams_bound_of_the_optimum(costs, cores):
    best = min(np.bincount(np.asarray(a), weights=costs, minlength=cores).max()
               for a in itertools.product(range(cores), repeat=len(costs)))
    makespan = outcome("lpt", 1.0, [float(c) for c in costs], cores).balance.makespan
    assert best <= makespan <= graham_bound(cores) * best + 1e-9


# ---- the page's workload -----------------------------------------------------------------
SYNTHETIC = {"batch": 12, "distribution": "lognormal", "mean_len": 512, "max_len": 4096,
             "lengths": "", "kv_heads": 2, "cores": 5, "policy": "lpt",
             "inter_core_cost": 0.0, "cluster_size": 0}


def test_synthetic_plans_every_policy_whole_and_split():
    chip = hp.load("910B2")
    outcomes = bl.synthetic(chip, SYNTHETIC)
    assert [(o.series, o.policy) for o in outcomes] == \
        [(s, p) for s in ("unsplit", "split") for p in POLICIES]
    total = bl.synthetic_tasks(SYNTHETIC).costs.sum() / chip.clock_MHz
    for o in outcomes:  # no inter-core cost: the work is the same, only spread differently
        assert len(o.loads) == 5 and o.loads.sum() == pytest.approx(total)
        assert len(o.seq_done) == SYNTHETIC["batch"]
    whole, split = outcomes[0].balance, outcomes[len(POLICIES)].balance
    assert split.lower_bound <= whole.lower_bound  # splitting only lowers the longest task


def test_page_chip_cores_and_overrides():
    assert bl.chip_overrides({"cluster_size": 0}, {"ub_KiB": 96}) == (("ub_KiB", 96),)
    assert bl.chip_overrides({"cluster_size": 4}, {"ub_KiB": 96}) == \
        (("cluster_size", 4), ("ub_KiB", 96))
    chip = bl.page_chip("910B2", (("cluster_size", 4),))
    assert chip.cluster_size == 4
    assert bl.n_cores(chip, {"cores": 0}) == len(chip.vector_core_ids())
    assert bl.n_cores(chip, {"cores": 7}) == 7


def test_sweep_rows_and_the_filled_batch():
    df = bl.sweep(8, "lognormal", 512, 4096, 2)
    assert len(df) == len(bl.SWEEP_BATCHES) * len(bl.SWEEP_POLICIES) * 2
    assert (df["tasks"] == df["batch"] * 2).all()
    assert bl.filled_batch(8, 2) == 4  # 4 sequences x 2 tasks fill 8 cores


# ---- refusals ----------------------------------------------------------------------------
def test_too_many_tasks_is_refused_before_drawing():
    p = {**SYNTHETIC, "batch": 2048, "kv_heads": 64}  # 131,072 tasks
    with pytest.raises(bl.TooMuchWork) as exc:
        bl.synthetic_tasks(p)
    e = exc.value
    assert isinstance(e, InputError)
    assert e.field == "params.batch, kv_heads" and e.value == "2048 x 64"
    assert (e.what, e.count, e.limit) == ("tasks", 131_072, bl.MAX_TASKS)
    assert "at most 65,536" in e.allowed and "131,072" in e.allowed


def test_a_count_at_the_limit_passes_and_one_more_is_refused():
    bl.at_most(10, 10, "params.x", "10", "tasks")
    with pytest.raises(InputError, match=r"params\.x = '11' is not allowed: at most 10 "):
        bl.at_most(11, 10, "params.x", "11", "tasks")


def test_too_many_instructions_is_refused_before_building():
    p = {**SYNTHETIC, "model": "llama3-8b", "impl": "vector", "batch": 64,
         "distribution": "equal", "mean_len": 8192, "max_len": 8192, "cores": 0}
    with pytest.raises(bl.TooMuchWork) as exc:
        bl.decode_scenarios("910B2", (), p)
    e = exc.value
    assert e.field == "params.batch, mean_len" and e.value == "64 x 8,192"
    assert e.what == "instructions" and e.count > e.limit == bl.MAX_INSTRUCTIONS
    assert f"{e.count:,}" in e.allowed


def test_a_mean_above_the_maximum_is_refused_naming_it():
    with pytest.raises(InputError) as exc:
        bl.checked({**SYNTHETIC, "mean_len": 5000, "max_len": 4096})
    assert exc.value.field == "params.mean_len" and exc.value.value == 5000
    assert "4096" in exc.value.allowed


# ---- spans of a hand-made timeline -------------------------------------------------------
def tiny_timeline() -> pd.DataFrame:
    """Cores 5 and 7 work for sequences 0 and 1; core 9 is not a slot core; a SyncAll
    ends at 400 ns, after which core 5 combines sequence 0."""
    rows = [(5, 0, "CopyIn", 0, 100), (5, 0, "Compute", 100, 250), (7, 1, "CopyIn", 50, 150),
            (5, 1, "Compute", 250, 300), (9, 0, "Compute", 0, 1000),
            (5, -1, "SyncAll", 300, 400), (7, -1, "SyncAll", 150, 400),
            (5, 0, "Combine", 400, 450)]
    return pd.DataFrame(rows, columns=["core", "task", "op", "start_ns", "end_ns"])


def test_spans_per_slot_core_cut_at_the_sync():
    got = bl.spans(tiny_timeline(), (5, 7)).sort_values(["slot", "start_us"])
    assert got[["slot", "seq"]].values.tolist() == [[0, 0], [0, 1], [0, 0], [1, 1]]
    assert got["start_us"].tolist() == [0.0, 0.25, 0.4, 0.05]
    assert got["end_us"].tolist() == [0.25, 0.3, 0.45, 0.15]


def test_spans_without_a_sync_are_one_per_core_and_task():
    tl = tiny_timeline()
    got = bl.spans(tl[tl["op"] != "SyncAll"], (7, 5))  # slot 0 is now core 7
    assert sorted(got[["slot", "seq"]].values.tolist()) == [[0, 1], [1, 0], [1, 1]]
    combined = got[(got["slot"] == 1) & (got["seq"] == 0)].iloc[0]
    assert (combined["start_us"], combined["end_us"]) == (0.0, 0.45)


def test_sequence_completion_is_its_last_instruction():
    assert bl.seq_completion(tiny_timeline(), 3).tolist() == [1.0, 0.3, 0.0]


# ---- predicted against emulated on a small decode workload -------------------------------
DECODE = {**SYNTHETIC, "model": "llama3-8b", "impl": "vector", "batch": 4, "mean_len": 256,
          "max_len": 1024, "cores": 3, "distribution": "lognormal"}


@pytest.fixture(scope="module")
def decode_run():
    scenarios = bl.decode_scenarios("910B2", (), DECODE)
    return scenarios, bl.decode_outcomes(scenarios)


def test_decode_outcomes_pair_every_policy(decode_run):
    scenarios, outcomes = decode_run
    assert list(scenarios) == list(POLICIES)
    assert [(o.series, o.policy) for o in outcomes] == \
        [(s, p) for s in ("predicted", "emulated") for p in POLICIES]
    first = scenarios["static"]
    assert bl.tasks_per_sequence(scenarios) * DECODE["batch"] == len(sc.kernel_tasks(first))
    assert len(bl.core_names(first)) == 3


def test_emulated_outcomes_against_the_plan(decode_run):
    """Both cover the same cores and sequences; the emulation's bound uses the plan's
    longest task; a core is never busy longer than the run lasts, nor than the spans
    of its sequences; a plan's last completion is its makespan (later for the work
    queue, whose takes wait on the counter)."""
    _, outcomes = decode_run
    n = len(POLICIES)
    for plan, emu in zip(outcomes[:n], outcomes[n:]):
        assert plan.policy == emu.policy and len(plan.loads) == len(emu.loads) == 3
        assert emu.balance.lower_bound >= plan.largest_piece()
        last = plan.seq_done.max()
        if plan.policy == "dynamic":  # the queue's takes wait on the counter: not busy
            assert last >= plan.balance.makespan
        else:
            assert last == pytest.approx(plan.balance.makespan)
        assert (emu.seq_done > 0).all() and len(emu.seq_done) == DECODE["batch"]
        assert emu.balance.makespan <= emu.seq_done.max() + 1e-9
        span = (emu.pieces["end_us"] - emu.pieces["start_us"]).groupby(emu.pieces["slot"])
        assert np.all(span.sum().reindex(range(3), fill_value=0).to_numpy()
                      >= emu.loads - 1e-9)
        assert 0 < emu.balance.efficiency <= 1

"""Scheduling policies (kernels/common/scheduling.py) and the load-balance layer
(explorer/core/scheduling.py): every task once, Graham's bound against brute force, the
lower bound, the dynamic queue, splitting, and the emulated loads against the plan."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hardware_presets as hp
from explorer.core import Scenario, simulate
from explorer.core import scheduling as sch
from hardware_presets.errors import InputError
from kernels.common.scheduling import POLICIES, assign, graham_bound, split_costs
from kernels.decode import kernel as decode

costs_st = st.lists(st.floats(1.0, 1e6, allow_nan=False), min_size=1, max_size=60)


@given(costs=costs_st, cores=st.integers(1, 16), policy=st.sampled_from(POLICIES),
       inter=st.sampled_from([0.0, 100.0]))
def test_every_task_is_assigned_exactly_once(costs, cores, policy, inter):
    slots = assign(costs, cores, policy, inter_core_cost=inter, cluster_size=min(2, cores),
                   keys=np.arange(len(costs)) // 3, dispatch_cost=50.0)
    assert slots.shape == (len(costs),) and slots.min() >= 0 and slots.max() < cores


@given(costs=st.lists(st.integers(1, 50), min_size=1, max_size=7), cores=st.integers(1, 3))
def test_lpt_within_grahams_bound_of_the_brute_force_optimum(costs, cores):
    costs = np.asarray(costs, float)
    best = min(np.bincount(np.asarray(a), weights=costs, minlength=cores).max()
               for a in itertools.product(range(cores), repeat=len(costs)))
    lpt = np.bincount(assign(costs, cores, "lpt"), weights=costs, minlength=cores).max()
    assert best <= lpt <= graham_bound(cores) * best + 1e-9


@given(costs=costs_st, cores=st.integers(1, 16), policy=st.sampled_from(POLICIES),
       split=st.booleans())
def test_makespan_never_below_the_lower_bound(costs, cores, policy, split):
    tasks = sch.TaskList(np.asarray(costs), np.arange(len(costs)), np.arange(len(costs)))
    b = sch.plan(tasks, cores, policy, split=split).balance
    assert b.makespan >= b.lower_bound * (1 - 1e-12)
    assert b.lower_bound >= sum(costs) / cores * (1 - 1e-12)
    assert 0 < b.efficiency <= 1 and 0 <= b.balance_ratio <= 1 and b.gap >= -1e-12


@given(n=st.integers(1, 100), cores=st.integers(1, 16), dispatch=st.sampled_from([0.0, 300.0]))
def test_dynamic_queue_on_equal_tasks_is_round_robin(n, cores, dispatch):
    costs = np.full(n, 1000.0)
    assert np.array_equal(assign(costs, cores, "dynamic", dispatch_cost=dispatch),
                          assign(costs, cores, "round_robin"))


@given(costs=costs_st, cores=st.integers(1, 16))
def test_splitting_preserves_total_work(costs, cores):
    parent, pieces = split_costs(costs, cores)
    assert pieces.sum() == pytest.approx(sum(costs))
    assert np.allclose(np.bincount(parent, weights=pieces, minlength=len(costs)), costs)
    assert pieces.max() <= max(max(costs), sum(costs) / cores) + 1e-6


def test_static_is_the_blogs_contiguous_blocks_and_lpt_the_blogs_greedy():
    assert assign(np.ones(10), 4, "static").tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]
    # the blog: longest first to the least-loaded core, +100 cycles off core 0
    slots = assign([500.0, 400.0, 300.0, 200.0], 2, "lpt", inter_core_cost=100.0)
    assert slots.tolist() == [0, 1, 0, 1]  # 500 | 400 + 100: a tie goes to core 0, as
    # the blog's strict "<" scan from core 0 does; then 800 | 500 -> 200 to core 1


def test_cluster_lpt_keeps_a_key_within_one_cluster():
    keys = np.repeat(np.arange(6), 4)
    costs = np.random.default_rng(0).uniform(1, 10, len(keys))
    slots = assign(costs, 8, "cluster_lpt", keys=keys, cluster_size=4)
    for k in range(6):
        assert len(set(slots[keys == k] // 4)) == 1


@pytest.mark.parametrize("costs, cores, field", [([], 4, "tasks"), ([1.0, 0.0], 2, "tasks[1].cost"),
                                                 ([1.0, -3.0], 2, "tasks[1].cost"),
                                                 ([1.0], 0, "cores")])
def test_bad_task_lists_are_refused(costs, cores, field):
    with pytest.raises(InputError) as exc:
        assign(costs, cores, "lpt")
    assert exc.value.field == field


def test_more_cores_than_the_chip_has_is_refused():
    with pytest.raises(InputError) as exc:
        Scenario.make("910B2", "decode", {"block_dim": 49})
    assert exc.value.field == "params.block_dim" and "48" in str(exc.value)


def test_ceiling_of_an_efficiency_gain():
    assert sch.ceiling(0.65, 0.92) == pytest.approx(1 - 0.65 / 0.92)  # the blog's: 29%


DECODE = {"model": "llama3-8b", "batch": 12, "distribution": "lognormal", "mean_len": 800,
          "max_len": 4096, "phases": "attention", "block_dim": 16}


@pytest.mark.parametrize("policy", POLICIES)
def test_emulated_loads_follow_the_plan(policy):
    """The emulator adds contention and the atomics, not a different schedule: each
    core's emulated busy time tracks its predicted load, and the makespans agree."""
    scenario = Scenario.make("910B2", "decode", {**DECODE, "policy": policy}, seed=2)
    opts = sch.decode_schedule(scenario)
    cores = opts.pop("cores")
    predicted = sch.plan(sch.kernel_tasks(scenario), cores, **opts)
    result = simulate(scenario)
    to_ns = 1000.0 / result.chip.clock_MHz
    slots = sch.slot_cores(scenario)
    emulated = sch.emulated_balance(result, slots, predicted.costs.max() * to_ns)
    got = sch.emulated_loads(result, slots)
    assert np.corrcoef(predicted.loads * to_ns, got)[0, 1] > 0.95
    assert emulated.makespan == pytest.approx(predicted.balance.makespan * 1000.0 /
                                              result.chip.clock_MHz, rel=0.15)


def test_lpt_beats_static_on_a_ragged_batch_when_emulated():
    make = lambda policy: Scenario.make("910B2", "decode", {**DECODE, "policy": policy},  # noqa: E731
                                        seed=2)
    slots = sch.slot_cores(make("lpt"))
    static = sch.emulated_balance(simulate(make("static")), slots, 0.0)
    lpt = sch.emulated_balance(simulate(make("lpt")), slots, 0.0)
    assert lpt.makespan < static.makespan and lpt.efficiency > static.efficiency


def test_split_kv_keeps_the_outputs():
    """Splitting changes the schedule, not the result: both within their bounds of the
    same float64 reference, on the same inputs."""
    chip = hp.load("910B2")
    outs = []
    for impl in ("vector", "split_kv"):
        p = decode.check(chip, {**DECODE, "impl": impl, "split_tokens": 128})
        inputs = decode.make_inputs(p, np.random.default_rng(5))
        ref = decode.reference(inputs)["out"]
        out = decode.execute(p, inputs)["out"]
        assert np.all(np.abs(out - ref) <= decode.error_bound(p, inputs, ref))
        outs.append((out, decode.error_bound(p, inputs, ref)))
    (a, ba), (b, bb) = outs
    assert np.all(np.abs(a - b) <= ba + bb)

"""Load balance: task lists, the policies' plans, their metrics, and the emulated check.

The policies themselves are pure functions in `kernels.common.scheduling` (kernels call them in
``build``); this module gives them a workload and measures them:

* `TaskList`: tasks with estimated costs (cycles, from the cost model's formulas), the
  data key each reads and the sequence it belongs to: `synthetic_tasks` from a length
  distribution, or `kernel_tasks` of a decode scenario (its attention tasks).
* `plan(tasks, cores, policy, ...)`: the assignment, predicted core loads, `Balance`
  metrics and per-sequence completion; `split=True` first cuts long tasks
  (`kernels.common.scheduling.split_costs`, the synthetic form of split-KV).
* `compare` (every policy, with and without splitting) and `sweep_batches`.
* `emulated_balance(result, cores, largest)`: the same metrics measured on an emulated
  run (`emulated_loads`: each core's busy time, SyncAll waits excluded).

Metrics: makespan; efficiency = mean core busy / max core busy; balance ratio = min / max
(the blog's); coefficient of variation = std / mean of the loads; lower bound =
max(total work / cores, largest task); gap = makespan / lower bound - 1. Going from
efficiency e1 to e2 cuts the time by at most 1 - e1 / e2 (`ceiling`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kernels.common.scheduling import POLICIES, assign, check_tasks, core_order, loads, split_costs
from kernels.decode import attention as decode_attention
from kernels.decode import cube as decode_cube
from kernels.decode import kernel as decode
from kernels.decode.workload import context_lengths, parse_lengths

from .scenario import Scenario
from .simulate import Result
from .tables import union_length

#: a synthetic task's cost per token and fixed cost (cycles): one 64-token tile of K and
#: V for one KV head with GQA group 8 on a 910B2 vector core takes about 4,300 cycles
CYCLES_PER_TOKEN = 67.0
CYCLES_PER_TASK = 400.0


@dataclass(frozen=True)
class Balance:
    """Load-balance metrics of one set of per-core loads (any unit: cycles or ns)."""

    makespan: float
    efficiency: float  # mean / max
    balance_ratio: float  # min / max (the blog's)
    cv: float  # std / mean
    lower_bound: float  # max(total / cores, largest task)
    gap: float  # makespan / lower bound - 1

    @classmethod
    def of(cls, core_loads: np.ndarray, largest_task: float) -> Balance:
        core_loads = np.asarray(core_loads, dtype=np.float64)
        top, mean = float(core_loads.max()), float(core_loads.mean())
        bound = max(float(core_loads.sum()) / len(core_loads), float(largest_task))
        return cls(top, mean / top if top > 0 else 1.0,
                   float(core_loads.min()) / top if top > 0 else 1.0,
                   float(core_loads.std()) / mean if mean > 0 else 0.0, bound,
                   top / bound - 1.0 if bound > 0 else 0.0)


def ceiling(e1: float, e2: float) -> float:
    """The largest cut of a kernel's time from raising efficiency e1 to e2: the total
    work stays, so the makespan (work / cores / efficiency) falls by at most 1 - e1/e2."""
    return 1.0 - e1 / e2 if e2 > 0 else 0.0


@dataclass(frozen=True, eq=False)
class TaskList:
    """Independent tasks: cost (cycles), the key of the data each reads, its sequence."""

    costs: np.ndarray
    keys: np.ndarray
    seq: np.ndarray

    def __post_init__(self) -> None:
        check_tasks(self.costs, 1)

    def __len__(self) -> int:
        return len(self.costs)


def synthetic_tasks(distribution: str, batch: int, *, mean_len: int, max_len: int,
                    seed: int, lengths: str = "", kv_heads: int = 1) -> TaskList:
    """One task per (sequence, KV head) of a decode batch drawn like the decode page
    draws it; cost = CYCLES_PER_TASK + tokens x CYCLES_PER_TOKEN (an estimate)."""
    listed = parse_lengths(lengths) if distribution == "list" else None
    n = context_lengths(distribution, batch, mean=mean_len, max_len=max_len, lengths=listed,
                        rng=np.random.default_rng(seed))
    seq = np.repeat(np.arange(len(n)), kv_heads)
    return TaskList(CYCLES_PER_TASK + n[seq] * CYCLES_PER_TOKEN, seq, seq)


def kernel_tasks(scenario: Scenario) -> TaskList:
    """The attention tasks of a "decode" scenario with the kernel's own cost estimates."""
    chip, p = scenario.chip(), decode.DecodeParams.of(scenario.params_dict)
    model = p.model_shape
    lengths, _ = p.draw(np.random.default_rng(scenario.seed))
    module = decode.attention_module(p)
    tasks = module.tasks_for(chip, p, model, lengths)
    if module is decode_cube:
        costs = decode_cube.task_cycles(chip, p, model, tasks.tokens, len(set(tasks.slot)))
    else:
        costs = decode_attention.task_cycles(chip, p, model, tasks.tokens, tasks.heads)
    order = np.argsort(tasks.tid)
    return TaskList(costs[order], tasks.seq[order], tasks.seq[order])


@dataclass(frozen=True, eq=False)
class Plan:
    """A policy's assignment of a task list and what it predicts."""

    policy: str
    split: bool
    parent: np.ndarray  # task of the list each (piece of a) task comes from
    costs: np.ndarray  # cost of each piece
    slots: np.ndarray
    loads: np.ndarray  # per core
    balance: Balance
    end: np.ndarray  # predicted end of each piece (cores run their pieces in order)

    def seq_done(self, seq: np.ndarray) -> np.ndarray:
        """Predicted completion of every sequence: the end of its last piece."""
        done = np.zeros(int(seq.max()) + 1)
        np.maximum.at(done, seq[self.parent], self.end)
        return done


def plan(tasks: TaskList, n_cores: int, policy: str, *, inter_core_cost: float = 0.0,
         cluster_size: int = 1, dispatch_cost: float = 0.0, split: bool = False) -> Plan:
    """Assign ``tasks`` (after splitting long ones when ``split``) and predict."""
    parent, costs = split_costs(tasks.costs, n_cores) if split else \
        (np.arange(len(tasks)), np.asarray(tasks.costs, np.float64))
    slots = assign(costs, n_cores, policy, inter_core_cost=inter_core_cost,
                   keys=tasks.keys[parent], cluster_size=cluster_size,
                   dispatch_cost=dispatch_cost)
    per_core = loads(costs, slots, n_cores, inter_core_cost)
    extra = np.where(slots != 0, inter_core_cost, 0.0) + \
        (dispatch_cost if policy == "dynamic" else 0.0)
    order, _ = core_order(slots)
    end = np.empty(len(costs))
    run = np.cumsum((costs + extra)[order])
    first = np.r_[True, slots[order][1:] != slots[order][:-1]]
    base = np.maximum.accumulate(np.where(first, run - (costs + extra)[order], 0.0))
    end[order] = run - base
    return Plan(policy, split, parent, costs, slots, per_core,
                Balance.of(per_core, float(costs.max())), end)


def compare(tasks: TaskList, n_cores: int, **kw) -> pd.DataFrame:
    """Every policy, unsplit and split, on the same tasks: one row each."""
    rows = []
    for split in (False, True):
        for policy in POLICIES:
            b = plan(tasks, n_cores, policy, split=split, **kw).balance
            rows.append({"policy": policy, "split": split, **vars(b)})
    return pd.DataFrame(rows)


def sweep_batches(batches, n_cores: int, *, distribution: str, mean_len: int, max_len: int,
                  seed: int, policies=("round_robin", "lpt"), kv_heads: int = 1) -> pd.DataFrame:
    """Predicted efficiency per batch size and policy (and split + the policy)."""
    rows = []
    for batch in batches:
        tasks = synthetic_tasks(distribution, int(batch), mean_len=mean_len, max_len=max_len,
                                seed=seed, kv_heads=kv_heads)
        for policy in policies:
            for split in (False, True):
                b = plan(tasks, n_cores, policy, split=split).balance
                rows.append({"batch": int(batch), "tasks": len(tasks), "policy": policy,
                             "split": split, **vars(b)})
    return pd.DataFrame(rows)


def slot_cores(scenario: Scenario) -> tuple[int, ...]:
    """Global ids of the cores a decode scenario's attention tasks run on, slot 0 first."""
    chip = scenario.chip()
    ids = chip.cube_core_ids() if scenario.params_dict["impl"] == "cube_vector" \
        else chip.vector_core_ids()
    return tuple(ids[:decode_schedule(scenario)["cores"]])


def emulated_loads(result: Result, cores) -> np.ndarray:
    """Busy ns of each of ``cores`` on an emulated run: the union of its task
    instructions' intervals (a core waiting in a SyncAll is not busy)."""
    tl = result.timeline
    work = tl[tl["task"] >= 0]
    slot = work["core"].map({core: i for i, core in enumerate(cores)})
    mine = slot.notna().to_numpy()
    return union_length(slot[mine].to_numpy(np.int64), work["start_ns"].to_numpy()[mine],
                        work["end_ns"].to_numpy()[mine], len(cores))


def emulated_balance(result: Result, cores, largest_task_ns: float) -> Balance:
    """The metrics on an emulated run over ``cores`` (idle ones count as 0). The largest
    task comes from the plan (the timeline tags instructions by sequence, not by task)."""
    return Balance.of(emulated_loads(result, cores), largest_task_ns)


def decode_schedule(scenario: Scenario) -> dict:
    """The scheduling options a decode scenario's attention uses (policy, inter-core
    cost, cluster size, dispatch cost) and its core count."""
    chip, p = scenario.chip(), decode.DecodeParams.of(scenario.params_dict)
    cores = p.cube_cores(chip) if p.impl == "cube_vector" else p.vector_cores(chip)
    return {"cores": cores, **p.schedule(chip, cores)}

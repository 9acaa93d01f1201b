"""Task-to-core assignment: which core runs which independent task, and in what order.

Policies are pure, deterministic functions of the task costs (cycles, estimated with the
cost model's formulas, `kernels.common.cycles`) and the core count; ties go to the lowest core
and the lowest task id. Every kernel with independent tasks (decode attention, KV
append, GEMM tiles) maps its tasks through `assign`.

* ``static``: contiguous blocks of ceil(tasks / cores) tasks per core, as the blog's
  ``seqs_per_block = (batch_size + block_num - 1) / block_num`` (the last cores may get
  fewer tasks, or none).
* ``round_robin``: task i runs on core i mod cores.
* ``lpt``: Graham's Longest Processing Time first: tasks by decreasing cost, each to the
  least-loaded core. Its makespan is at most (4/3 - 1/(3m)) x the optimum on m cores
  (Graham 1969). ``inter_core_cost`` is the blog's INTER_CORE_COMM_COST: added to a
  core's load for every task assigned to a core other than core 0, as its code does.
* ``cluster_lpt``: tasks with the same key (the data they read) are kept within one
  cluster of ``cluster_size`` cores: key groups go by LPT to the cluster with the least
  load per core, then each cluster spreads its tasks over its cores by LPT.
* ``dynamic``: a work queue: cores take the next task (in task order) when they finish,
  as a GM atomic counter hands them out; taking one costs ``dispatch_cost`` and the
  takes serialise on the counter. This is the schedule the queue produces if the costs
  hold; kernels emit the atomics so the emulator times them.

Each core runs its tasks in ascending task order.
"""
from __future__ import annotations

import heapq

import numpy as np

from hardware_presets.errors import InputError, Phrase

POLICIES = ("static", "round_robin", "lpt", "cluster_lpt", "dynamic")


def graham_bound(m: int) -> float:
    """Graham's worst case of LPT's makespan over the optimum on m cores: 4/3 - 1/(3m)."""
    return 4.0 / 3.0 - 1.0 / (3.0 * m)


def check_tasks(costs, n_cores: int, where: str = "tasks") -> np.ndarray:
    """Costs as float64, refused when empty, not finite or not positive; cores >= 1."""
    costs = np.asarray(costs, dtype=np.float64).ravel()
    if costs.size == 0:
        raise InputError(where, Phrase("refusal.value.no_tasks"), Phrase("refusal.sched.one_task"))
    bad = np.flatnonzero(~np.isfinite(costs) | (costs <= 0))
    if len(bad):
        raise InputError(f"{where}[{int(bad[0])}].cost", float(costs[bad[0]]),
                         Phrase("refusal.sched.cost"))
    if isinstance(n_cores, bool) or not isinstance(n_cores, (int, np.integer)) or n_cores < 1:
        raise InputError("cores", n_cores, Phrase("refusal.sched.cores"))
    return costs


def assign(costs, n_cores: int, policy: str, *, inter_core_cost: float = 0.0, keys=None,
           cluster_size: int = 1, dispatch_cost: float = 0.0) -> np.ndarray:
    """Core slot (0 .. n_cores - 1) of every task under ``policy``."""
    costs = check_tasks(costs, n_cores)
    if policy not in POLICIES:
        raise InputError("policy", policy, Phrase("refusal.one_of", options=", ".join(POLICIES)))
    if inter_core_cost < 0 or dispatch_cost < 0:
        raise InputError("inter_core_cost" if inter_core_cost < 0 else "dispatch_cost",
                         min(inter_core_cost, dispatch_cost), Phrase("refusal.sched.nonnegative"))
    tasks = np.arange(len(costs), dtype=np.int64)
    if policy == "static":
        return tasks // -(-len(costs) // n_cores)
    if policy == "round_robin":
        return tasks % n_cores
    if policy == "lpt":
        return _lpt(costs, np.arange(n_cores), inter_core_cost)
    if policy == "cluster_lpt":
        return _cluster_lpt(costs, keys, n_cores, cluster_size, inter_core_cost)
    return _dynamic(costs, n_cores, dispatch_cost)


def _lpt(costs: np.ndarray, cores: np.ndarray, inter_core_cost: float) -> np.ndarray:
    """Longest first, to the least-loaded of ``cores`` (ties: lowest core)."""
    slots = np.empty(len(costs), np.int64)
    heap = [(0.0, int(c)) for c in cores]
    for task in np.argsort(-costs, kind="stable"):
        load, core = heapq.heappop(heap)
        slots[task] = core
        heapq.heappush(heap, (load + costs[task] + (inter_core_cost if core else 0.0), core))
    return slots


def _cluster_lpt(costs, keys, n_cores, cluster_size, inter_core_cost) -> np.ndarray:
    """Key groups to clusters by LPT on load per core, then LPT inside each cluster."""
    if keys is None:
        keys = np.arange(len(costs))
    keys = np.asarray(keys).ravel()
    if len(keys) != len(costs):
        raise InputError("keys", Phrase("refusal.value.keys", n=len(keys)),
                         Phrase("refusal.sched.keys", n=len(costs)))
    if isinstance(cluster_size, bool) or not 1 <= int(cluster_size) <= n_cores:
        raise InputError("cluster_size", cluster_size, Phrase("refusal.sched.cluster", n=n_cores))
    first = np.arange(0, n_cores, int(cluster_size))
    size = np.minimum(int(cluster_size), n_cores - first)
    _, group = np.unique(keys, return_inverse=True)
    group_cost = np.bincount(group, weights=costs)
    heap = [(0.0, i) for i in range(len(first))]
    cluster_of_group = np.empty(len(group_cost), np.int64)
    for g in np.argsort(-group_cost, kind="stable"):
        load, c = heapq.heappop(heap)
        cluster_of_group[g] = c
        heapq.heappush(heap, (load + group_cost[g] / size[c], c))
    slots = np.empty(len(costs), np.int64)
    for c in range(len(first)):
        mine = np.flatnonzero(cluster_of_group[group] == c)
        if len(mine):
            slots[mine] = _lpt(costs[mine], first[c] + np.arange(size[c]), inter_core_cost)
    return slots


def _dynamic(costs: np.ndarray, n_cores: int, dispatch_cost: float) -> np.ndarray:
    """List scheduling in task order: the first core to become free takes the next task;
    each take costs dispatch_cost and waits for the previous take (one counter)."""
    slots = np.empty(len(costs), np.int64)
    heap = [(0.0, c) for c in range(n_cores)]
    counter_free = 0.0
    for task in range(len(costs)):
        free, core = heapq.heappop(heap)
        taken = max(free, counter_free) + dispatch_cost
        counter_free = taken
        slots[task] = core
        heapq.heappush(heap, (taken + costs[task], core))
    return slots


def loads(costs, slots: np.ndarray, n_cores: int, inter_core_cost: float = 0.0) -> np.ndarray:
    """Predicted busy cycles per core: its tasks' costs (plus the blog's inter-core cost
    for tasks on cores other than 0)."""
    costs = np.asarray(costs, dtype=np.float64)
    extra = np.where(slots != 0, inter_core_cost, 0.0)
    return np.bincount(slots, weights=costs + extra, minlength=n_cores)


def core_order(slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tasks in execution order (core by core, ascending task id within a core) and each
    task's ordinal on its core (0, 1, 2, ...), in that same order."""
    order = np.lexsort((np.arange(len(slots)), slots))
    s = slots[order]
    first = np.r_[0, np.flatnonzero(s[1:] != s[:-1]) + 1] if len(s) else np.zeros(0, np.int64)
    counts = np.diff(np.r_[first, len(s)])
    ordinal = np.arange(len(s)) - np.repeat(first, counts)
    return order, ordinal


def split_costs(costs, n_cores: int) -> tuple[np.ndarray, np.ndarray]:
    """Split every task longer than the mean core load (total / cores) into
    ceil(cost / that) equal pieces: (parent task of each piece, piece costs). Total work
    is preserved; the pieces of one task still need a combine, which the kernel adds."""
    costs = check_tasks(costs, n_cores)
    target = costs.sum() / n_cores
    pieces = np.maximum(1, np.ceil(costs / target - 1e-12)).astype(np.int64)
    parent = np.repeat(np.arange(len(costs)), pieces)
    return parent, costs[parent] / pieces[parent]

"""Lowering a Program plus its costs into the flat arrays both engines consume.

Each instruction gets a rank, its position in lane order (core, pipe, program order), so
that the tie-break "(time, core, pipe, instruction index)" of DESIGN.md §4 becomes "(time,
rank)". Its internal id, which indexes every array, is where it is stored: the lanes are
interleaved by progress (``_jit.graph.interleave``), and each lane is walked through
``lane_next``.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import NamedTuple

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.common.program import N_PIPES, Program

from ._jit.graph import (
    dependents,
    gather,
    gather_arrays,
    interleave,
    lane_sorted,
    lanes_and_dependencies,
    successors,
)
from ._jit.progress import release
from .cost import check_cores, compute_costs

#: A transfer whose remaining bytes fall to this is complete (absorbs float round-off).
TOL_BYTES = 1e-3
#: Events this close (ns) to the next queued event are taken together with it.
EPS_NS = 1e-6
#: event kinds of both engines, in the order they sort at one moment for one instruction
COMPLETE, ENTER, ISSUED = 0, 1, 2
#: internal ids gathered at a time (the caller checks between two whether the side thread
#: is free to take the rest; the side thread publishes each as done)
GATHER_CHUNK = 1 << 15


class EngineInput(NamedTuple):
    """Everything the event loop needs, as contiguous numpy arrays indexed by internal id
    (a memory layout: the order of execution and of ties comes from lanes and ranks). One
    record, read by field name by both engines (numba takes a NamedTuple of arrays as one
    argument). Every array is as narrow as its values allow (ids int32: the instruction cap
    is far below 2^31; lanes, classes, clusters and queue depths fit a byte or two): at 10^7
    instructions the memory traffic of the event loop, not its arithmetic, sets its pace."""

    order: np.ndarray  # int32 internal id -> program id
    rank: np.ndarray  # int32 internal id -> position in lane order (ties go to the lower)
    lane: np.ndarray  # int16 lane (core * N_PIPES + pipe) per internal id
    lane_first: np.ndarray  # int32 first internal id of each lane, -1 if it is empty
    lane_next: np.ndarray  # int32 the next internal id of the same lane, -1 at its end
    dep_count: np.ndarray  # int32 dependencies of each instruction
    succ_ptr: np.ndarray  # int32 CSR of the instructions that depend on each one
    succ_idx: np.ndarray  # int32
    issue_ns: np.ndarray  # time the pipe is held (a compute instruction's whole duration)
    route: np.ndarray  # int8 a GM copy's route (cost.ROUTES), -1: not a GM copy
    # by route + 1 (row 0: not a copy) and lane, what the instruction's route makes it:
    route_latency_ns: np.ndarray  # [route + 1, lane] GM copy: issue end -> bytes flow
    route_depth: np.ndarray  # int8 [route + 1] copies its pipe may hold in flight
    route_gm: np.ndarray  # int8 [route + 1] GM_NONE / GM_READ / GM_WRITE
    route_class: np.ndarray  # int8 [route + 1, pool, lane] bandwidth class, -1: none
    nbytes: np.ndarray  # float64
    class_cap: np.ndarray  # float64 per class
    class_pool: np.ndarray  # int8 per class
    region: np.ndarray  # int32 GM region (numbered by first use, not the program's) or -1
    region_bytes: np.ndarray  # float64 per region (0: one no instruction names, numbered last)
    cluster: np.ndarray  # int8 multicast cluster of the instruction's core, -1 = none
    barrier: np.ndarray  # int32 SyncAll group or -1
    bar_ptr: np.ndarray  # int64
    bar_members: np.ndarray  # int32 internal ids, by group, then rank
    pool_bw: np.ndarray  # float64 [HBM, L2] bytes/ns
    l2_capacity: float
    sync_ns: float
    copies: int  # GM copies (each may start and end a bandwidth segment)
    # int64 [1]: the internal ids below are gathered; ``lower`` may return with the rest
    # still being gathered, in order, by the side thread (-1: it failed)
    ready: np.ndarray

    @property
    def n(self) -> int:
        return len(self.order)


def core_clusters(chip: Chip) -> np.ndarray:
    """Cluster id of every core (cores of one kind grouped k at a time), -1 when k == 1."""
    kinds = chip.core_kinds()
    if chip.cluster_size <= 1:
        return np.full(len(kinds), -1, np.int64)
    ids, seen = [], {}
    for kind in kinds:
        local = seen.get(kind, 0)
        seen[kind] = local + 1
        ids.append((kind, local // chip.cluster_size))
    uniq = {key: i for i, key in enumerate(dict.fromkeys(ids))}
    return np.array([uniq[key] for key in ids], np.int64)


class Gathering:
    """The gather of internal ids in order, a range at a time, by the caller until the side
    thread is free, then by the side thread: it publishes each range in ``ready`` once it
    and ``then(lo, hi)`` (what the loop's state needs) are done, so the event loop may
    start before the gather ends (it waits for an id not gathered yet)."""

    def __init__(self, order, columns, then) -> None:
        self.order, self.columns, self.then = order, columns, then
        self.ready = np.zeros(1, np.int64)
        self.used = 0  # region numbers used

    def upto(self, hi: int) -> None:
        """Gather and publish ids up to ``hi``; on a failure publish -1 (the loop stops)."""
        try:
            lo = int(self.ready[0])
            while lo < hi:
                step = min(lo + GATHER_CHUNK, hi)
                self.used = gather(self.order, lo, step, *self.columns, self.used)
                if self.then is not None:
                    self.then(lo, step)
                release(self.ready, 0, step)
                lo = step
        except BaseException:
            release(self.ready, 0, -1)
            raise


def lower(program: Program, chip: Chip, helper, then=None) -> tuple[EngineInput, Future]:
    """Cost, rank in lane order, lay out, and gather the arrays of :class:`EngineInput`.

    The passes that do not need each other's results run side by side on ``helper``
    (``side_thread``): the cost model and the count of each instruction's dependents beside
    the lane sort and layout, then the successor lists beside each instruction's lane and
    count of dependencies and the gather. The side thread finishes the gather, in order,
    from where the caller got to (``Gathering``; at 10^7 instructions the caller gathers
    about half, and the side thread the rest about twice as fast as the event loop, started
    meanwhile, reaches it). So this returns before the gather is done, with ``ready``
    saying how far it is, and the future of the rest (whose ``result`` raises what stopped
    it). ``then(lo, hi)`` runs after each gathered range, on the thread that gathered it."""
    c = program.cols
    n_lanes = len(chip.core_kinds()) * N_PIPES
    costing = helper.submit(compute_costs, program, chip)
    counted = helper.submit(dependents, program.dep_idx, len(program))
    copies = helper.submit(_copies, costing)
    ranked, lane_ptr = lane_sorted(c["core"], c["pipe"], c["seq"], N_PIPES, n_lanes)
    if len(ranked) < len(program):  # a core or pipe no lane has (nothing was written)
        check_cores(c["core"], chip)
        raise InputError("pipe", int(c["pipe"][lane_ptr[0]]), f"0 to {N_PIPES - 1}")
    order, rank, lane_next, lane_first, inverse = interleave(lane_ptr, ranked)
    n = len(order)
    lists = helper.submit(_successors, program, ranked, inverse, order, counted)
    lane, dep_count = lanes_and_dependencies(order, c["core"], c["pipe"], program.dep_ptr,
                                             N_PIPES)
    members = _barrier_members(c["barrier"], inverse, rank, len(program.barrier_size))
    costs = costing.result()  # (first: its temporaries are gone when the gather's come)
    out, renumber, region_bytes = gather_arrays(n, len(program.region_bytes))
    columns = (c["core"], c["nbytes"], c["region"], c["barrier"],
               core_clusters(chip).astype(np.int8), costs.issue_ns, costs.route, out, renumber,
               program.region_bytes, region_bytes)
    gathering = Gathering(order, columns, then)
    while gathering.ready[0] < n and not lists.done():
        gathering.upto(min(int(gathering.ready[0]) + GATHER_CHUNK, n))
    finishing = helper.submit(gathering.upto, n)
    succ_ptr, succ_idx = lists.result()
    del ranked, inverse, counted, costing
    cluster, nbytes, region, barrier, issue_ns, route = out
    core_of_lane = np.arange(n_lanes) // N_PIPES
    return EngineInput(
        order=order, rank=rank, lane=lane, lane_first=lane_first,
        lane_next=lane_next, dep_count=dep_count, succ_ptr=succ_ptr, succ_idx=succ_idx,
        issue_ns=issue_ns, route=route,
        route_latency_ns=costs.route_latency_ns[:, core_of_lane], route_depth=costs.route_depth,
        route_gm=costs.route_gm, route_class=costs.route_class[:, :, core_of_lane],
        nbytes=nbytes, class_cap=costs.class_cap,
        class_pool=costs.class_pool, region=region,
        region_bytes=region_bytes, cluster=cluster, barrier=barrier,
        bar_ptr=members[0], bar_members=members[1],
        pool_bw=np.array([chip.hbm_bytes_per_ns, chip.l2_bytes_per_ns], float),
        l2_capacity=float(chip.l2_bytes), sync_ns=float(costs.sync_ns),
        copies=copies.result(), ready=gathering.ready), finishing


def _copies(costing) -> int:
    """How many GM copies there are (on the side thread, once the cost model is done)."""
    return int(np.count_nonzero(costing.result().route >= 0))


def _successors(program, ranked, inverse, order, counted):
    """``graph.successors``, once the count of dependents is done."""
    return successors(program.dep_ptr, program.dep_idx, ranked, inverse, order,
                      counted.result())


def _barrier_members(barrier, inverse, rank, groups):
    """Each SyncAll group's internal ids, group after group, each in rank order, and where
    each group starts (``bar_ptr``), from the program's column: the gathered one may not
    be complete yet."""
    joined = np.flatnonzero(barrier >= 0)
    members, group = inverse[joined], barrier[joined]
    by_group = np.lexsort((rank[members], group))
    bar_ptr = np.zeros(groups + 1, np.int64)
    np.cumsum(np.bincount(group, minlength=groups), out=bar_ptr[1:])
    return bar_ptr, members[by_group].astype(np.int32)

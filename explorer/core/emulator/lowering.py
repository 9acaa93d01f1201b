"""Lowering a Program plus its costs into the flat arrays both engines consume.

Instructions are renumbered in lane order (core, pipe, program order), so a lane is a
contiguous id range, its head is just a counter, and the tie-break "(time, core, pipe,
instruction index)" of DESIGN.md §4 becomes "(time, internal id)".
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hardware_presets import Chip
from kernels.common.program import N_PIPES, Program, lane_order

from .cost import GM_NONE, POOL_HBM, POOL_L2, Costs

#: A transfer whose remaining bytes fall to this is complete (absorbs float round-off).
TOL_BYTES = 1e-3
#: Events this close (ns) to the next queued event are taken together with it.
EPS_NS = 1e-6


class EngineInput(NamedTuple):
    """Everything the event loop needs, as contiguous numpy arrays indexed by internal id
    (lane order). One record, read by field name by both engines (numba takes a
    NamedTuple of arrays as one argument). Index arrays are int32 (the instruction cap is
    far below 2^31): half the memory traffic of int64 in the event loop."""

    order: np.ndarray  # int64 internal id -> program id
    lane: np.ndarray  # int32 lane (core * N_PIPES + pipe) per internal id
    lane_ptr: np.ndarray  # int64: lane l holds internal ids lane_ptr[l] .. lane_ptr[l+1]-1
    dep_count: np.ndarray  # int32 dependencies of each instruction
    succ_ptr: np.ndarray  # int64 CSR of the instructions that depend on each one
    succ_idx: np.ndarray  # int32
    issue_ns: np.ndarray  # time the pipe is held (a compute instruction's whole duration)
    latency_ns: np.ndarray  # GM copies: issue end -> bytes start to flow
    max_out: np.ndarray  # int32 copies its pipe may hold in flight (1 for compute)
    gm: np.ndarray  # int8: GM_NONE / GM_READ / GM_WRITE
    nbytes: np.ndarray  # float64
    cap_hbm: np.ndarray  # float64 per-core cap (bytes/ns) when served by HBM
    cap_l2: np.ndarray  # ... when served by L2
    cls_hbm: np.ndarray  # int32 bandwidth class when served by HBM (-1 if not GM)
    cls_l2: np.ndarray  # int32 bandwidth class when served by L2 (-1 if not GM)
    class_cap: np.ndarray  # float64 per class
    class_pool: np.ndarray  # int32 per class
    region: np.ndarray  # int32 GM region or -1
    region_bytes: np.ndarray  # float64 per region
    cluster: np.ndarray  # int32 multicast cluster of the instruction's core, -1 = none
    barrier: np.ndarray  # int32 SyncAll group or -1
    bar_ptr: np.ndarray  # int64
    bar_members: np.ndarray  # int32
    pool_bw: np.ndarray  # float64 [HBM, L2] bytes/ns
    l2_capacity: float
    sync_ns: float

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


def _remap_csr(ptr: np.ndarray, idx: np.ndarray, order: np.ndarray, inverse: np.ndarray):
    """Re-index a CSR (rows and values) from program ids to internal ids."""
    counts = np.diff(ptr)[order]
    new_ptr = np.zeros(len(order) + 1, np.int64)
    np.cumsum(counts, out=new_ptr[1:])
    starts = np.repeat(ptr[:-1][order], counts)
    offsets = np.arange(len(starts)) - np.repeat(new_ptr[:-1], counts)
    values = inverse[idx[starts + offsets]] if len(starts) else np.zeros(0, np.int64)
    return new_ptr, values.astype(np.int64)


def _successors(dep_ptr: np.ndarray, dep_idx: np.ndarray, n: int):
    """Reverse CSR: for each instruction, the ones that depend on it (ascending ids)."""
    after = np.repeat(np.arange(n, dtype=np.int64), np.diff(dep_ptr))
    order = np.argsort(dep_idx, kind="stable")  # ``after`` ascends, so ties stay ascending
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dep_idx, minlength=n), out=ptr[1:])
    return ptr, after[order]


def _classes(gm, cap_hbm, cap_l2):
    """Bandwidth classes: flows of one pool with one per-core cap share a rate."""
    gm_copy = gm != GM_NONE
    keys = [(POOL_HBM, cap_hbm[gm_copy]), (POOL_L2, cap_l2[gm_copy])]
    class_cap, class_pool, lookup = [], [], {}
    for pool, caps in keys:
        for cap in np.unique(caps):
            lookup[(pool, float(cap))] = len(class_cap)
            class_cap.append(float(cap))
            class_pool.append(pool)
    cls_hbm = _lookup_vec(gm_copy, cap_hbm, POOL_HBM, lookup)
    cls_l2 = _lookup_vec(gm_copy, cap_l2, POOL_L2, lookup)
    return cls_hbm, cls_l2, np.array(class_cap, float), np.array(class_pool, np.int64)


def _lookup_vec(mask, caps, pool, lookup):
    out = np.full(len(caps), -1, np.int64)
    for (p, cap), k in lookup.items():
        if p == pool:
            out[mask & (caps == cap)] = k
    return out


def lower(program: Program, costs: Costs, chip: Chip) -> EngineInput:
    """Renumber in lane order and gather the arrays of :class:`EngineInput`."""
    c = program.cols
    n = len(program)
    order = lane_order(c)
    inverse = np.empty(n, np.int64)
    inverse[order] = np.arange(n)
    lane = c["core"][order].astype(np.int64) * N_PIPES + c["pipe"][order]
    n_lanes = len(chip.core_kinds()) * N_PIPES
    lane_ptr = np.searchsorted(lane, np.arange(n_lanes + 1)).astype(np.int64)
    dep_ptr, dep_idx = _remap_csr(program.dep_ptr, program.dep_idx, order, inverse)
    succ_ptr, succ_idx = _successors(dep_ptr, dep_idx, n)
    gm = costs.gm[order]
    cap_hbm, cap_l2 = costs.cap_hbm[order], costs.cap_l2[order]
    cls_hbm, cls_l2, class_cap, class_pool = _classes(gm, cap_hbm, cap_l2)
    barrier = c["barrier"][order].astype(np.int64)
    members = np.flatnonzero(barrier >= 0)
    members = members[np.argsort(barrier[members], kind="stable")]
    bar_ptr = np.zeros(len(program.barrier_size) + 1, np.int64)
    np.cumsum(np.bincount(barrier[members], minlength=len(program.barrier_size)),
              out=bar_ptr[1:])
    i32 = np.int32
    return EngineInput(
        order=order, lane=lane.astype(i32), lane_ptr=lane_ptr,
        dep_count=np.diff(dep_ptr).astype(i32),
        succ_ptr=succ_ptr, succ_idx=succ_idx.astype(i32), issue_ns=costs.issue_ns[order],
        latency_ns=costs.latency_ns[order], max_out=costs.max_outstanding[order].astype(i32),
        gm=gm, nbytes=c["nbytes"][order].astype(float), cap_hbm=cap_hbm, cap_l2=cap_l2,
        cls_hbm=cls_hbm.astype(i32), cls_l2=cls_l2.astype(i32), class_cap=class_cap,
        class_pool=class_pool.astype(i32), region=c["region"][order].astype(i32),
        region_bytes=program.region_bytes.astype(float),
        cluster=core_clusters(chip)[c["core"][order]].astype(i32), barrier=barrier.astype(i32),
        bar_ptr=bar_ptr, bar_members=members.astype(i32),
        pool_bw=np.array([chip.hbm_bytes_per_ns, chip.l2_bytes_per_ns], float),
        l2_capacity=float(chip.l2_bytes), sync_ns=float(costs.sync_ns))

"""Tidy tables of a run: one row per instruction (timeline), per core, per path, per
bandwidth segment. Built with vectorised numpy so a million-instruction run stays cheap."""
from __future__ import annotations

import numpy as np
import pandas as pd

from hardware_presets import Chip
from kernels.common.program import LANE_NAMES, N_PIPES, Kind, Level, Program

from .emulator.schedule import SERVED_HBM, SERVED_L2, SERVED_NAMES, Schedule

LEVEL_NAMES = tuple(level.name for level in Level)
COMPUTE_LANES = ("CUBE", "VECTOR")
TRANSFER_LANES = ("MTE1", "MTE2", "MTE3", "FIXP")
#: the op of a barrier (``ProgramBuilder.sync_all``): its span is a core waiting for the
#: others, which is not work
BARRIER_OP = "SyncAll"


def _categorical(codes: np.ndarray, names: tuple[str, ...], missing: str = "") -> pd.Categorical:
    cats = list(names) + ([missing] if missing not in names else [])
    codes = np.where(codes < 0, len(cats) - 1, codes) if missing not in names else codes
    return pd.Categorical.from_codes(codes.astype(np.int64), categories=cats)


def timeline_table(program: Program, schedule: Schedule, chip: Chip) -> pd.DataFrame:
    """One row per instruction with its lane, op, task, times, bytes and where it was served;
    a program of several kernel launches (a decode layer) adds the ``launch`` of each."""
    c = program.cols
    is_tr = c["kind"] == Kind.TRANSFER
    kinds = tuple(dict.fromkeys(chip.core_kinds()))
    kind_of_core = np.array([kinds.index(k) for k in chip.core_kinds()])
    table = pd.DataFrame({
        "instr": np.arange(len(program)),
        "core": c["core"].astype(np.int64),
        "core_name": _categorical(c["core"], tuple(chip.core_names())),
        "core_kind": _categorical(kind_of_core[c["core"]], kinds),
        "pipe": _categorical(c["pipe"], LANE_NAMES),
        "op": _categorical(c["op"], program.op_names),
        "task": c["task"].astype(np.int64),
        "start_ns": schedule.start_ns,
        "issue_end_ns": schedule.issue_end_ns,
        "end_ns": schedule.end_ns,
        "bytes": np.where(is_tr, c["nbytes"], 0),
        "src": _categorical(np.where(is_tr, c["src"], -1), LEVEL_NAMES),
        "dst": _categorical(np.where(is_tr, c["dst"], -1), LEVEL_NAMES),
        "served_from": _categorical(schedule.served, SERVED_NAMES),
    })
    if program.launches:
        table["launch"] = _categorical(program.launch_of(),
                                       tuple(name for name, _ in program.launches))
    return table


def union_length(group: np.ndarray, start: np.ndarray, end: np.ndarray,
                 n_groups: int) -> np.ndarray:
    """Total length of the union of intervals, per group, without a Python loop."""
    if len(start) == 0:
        return np.zeros(n_groups)
    base = float(np.min(start))
    offset = float(np.max(end)) - base + 1.0
    s, e = start - base + group * offset, end - base + group * offset
    order = np.argsort(s, kind="stable")
    s, e, g = s[order], e[order], group[order]
    covered = np.maximum.accumulate(e)
    prev = np.concatenate([[-np.inf], covered[:-1]])
    gain = np.maximum(0.0, e - np.maximum(s, prev))
    return np.bincount(g, weights=gain, minlength=n_groups)


def barrier_rows(timeline: pd.DataFrame) -> np.ndarray:
    """Whether each instruction is a SyncAll (`BARRIER_OP`), without comparing every row."""
    ops = timeline["op"]
    if isinstance(ops.dtype, pd.CategoricalDtype):
        cats = list(ops.cat.categories)
        if BARRIER_OP not in cats:
            return np.zeros(len(timeline), bool)
        return ops.cat.codes.to_numpy() == cats.index(BARRIER_OP)
    return (ops.astype(str) == BARRIER_OP).to_numpy()


def per_core_table(timeline: pd.DataFrame, chip: Chip, makespan: float) -> pd.DataFrame:
    """Busy time and ratio per pipe, active (union) time, work time and stalls, for cores
    that ran.

    A pipe is busy while it issues or has a copy in flight (the union of its instructions'
    start..end), as Ascend's profiler counts a DMA pipe: several copies in flight at once
    count once. ``active_ns`` is the union of all the core's instructions, SyncAll waits
    included; ``work_ns`` the union of all but its SyncAll waits (a core waiting at a
    barrier for the others does no work), the time the load balance compares."""
    n_cores = len(chip.core_kinds())
    core = timeline["core"].to_numpy()
    start, end = timeline["start_ns"].to_numpy(), timeline["end_ns"].to_numpy()
    pipe = timeline["pipe"].cat.codes.to_numpy()
    busy = union_length(core * N_PIPES + pipe, start, end,
                        n_cores * N_PIPES).reshape(n_cores, N_PIPES)
    used = np.flatnonzero(np.bincount(core, minlength=n_cores))
    table = pd.DataFrame({"core": used, "core_name": np.asarray(chip.core_names())[used],
                          "core_kind": np.asarray(chip.core_kinds())[used]})
    for p, lane in enumerate(LANE_NAMES):
        table[f"busy_ns_{lane}"] = busy[used, p]
        table[f"ratio_{lane}"] = busy[used, p] / makespan if makespan > 0 else 0.0
    first = np.full(n_cores, np.inf)
    last = np.zeros(n_cores)
    np.minimum.at(first, core, start)
    np.maximum.at(last, core, end)
    span = (last - first)[used]
    # the union is at most the span; clipping absorbs float round-off of the shifted sort
    active = np.minimum(union_length(core, start, end, n_cores)[used], span)
    table["active_ns"] = active
    work = ~barrier_rows(timeline)
    table["work_ns"] = np.minimum(union_length(core[work], start[work], end[work],
                                               n_cores)[used], active)
    table["first_start_ns"], table["last_end_ns"] = first[used], last[used]
    table["stall_ns"] = span - active
    return table


def overlap_ns(timeline: pd.DataFrame, n_cores: int) -> tuple[float, float, float]:
    """(compute time, transfer time, time both run) summed over cores."""
    core = timeline["core"].to_numpy()
    start, end = timeline["start_ns"].to_numpy(), timeline["end_ns"].to_numpy()
    lane = timeline["pipe"].cat.codes.to_numpy()
    comp = np.isin(lane, [LANE_NAMES.index(name) for name in COMPUTE_LANES])
    tran = np.isin(lane, [LANE_NAMES.index(name) for name in TRANSFER_LANES])
    a = union_length(core[comp], start[comp], end[comp], n_cores)
    b = union_length(core[tran], start[tran], end[tran], n_cores)
    both = comp | tran
    u = union_length(core[both], start[both], end[both], n_cores)
    inter = np.maximum(a + b - u, 0.0)  # |A ∩ B| = |A| + |B| - |A ∪ B|, minus round-off
    return float(a.sum()), float(b.sum()), float(np.minimum(inter, np.minimum(a, b)).sum())


def traffic_table(timeline: pd.DataFrame) -> pd.DataFrame:
    """Bytes and transfer count per path and per source of service (HBM, L2, multicast)."""
    src, dst = timeline["src"].cat, timeline["dst"].cat
    served = timeline["served_from"].cat
    moves = src.codes.to_numpy() != list(src.categories).index("")
    n_dst, n_srv = len(dst.categories), len(served.categories)
    codes = [x.codes.to_numpy()[moves].astype(np.int64) for x in (src, dst, served)]
    key = (codes[0] * n_dst + codes[1]) * n_srv + codes[2]
    size = len(src.categories) * n_dst * n_srv  # a few hundred (path, served) combinations
    count = np.bincount(key, minlength=size)
    keys = np.flatnonzero(count)
    nbytes = np.bincount(key, weights=timeline["bytes"].to_numpy()[moves], minlength=size)[keys]
    count = count[keys]
    s_names = np.asarray(src.categories)[keys // n_srv // n_dst]
    d_names = np.asarray(dst.categories)[keys // n_srv % n_dst]
    return pd.DataFrame({
        "path": [f"{a}→{b}" for a, b in zip(s_names, d_names)], "src": s_names.astype(str),
        "dst": d_names.astype(str),
        "served_from": np.asarray(served.categories)[keys % n_srv].astype(str),
        "bytes": nbytes.astype(np.int64), "count": count.astype(np.int64)})


def bandwidth_table(schedule: Schedule) -> pd.DataFrame:
    """Piecewise-constant HBM and L2 throughput (GB/s = bytes/ns) over time."""
    seg = schedule.segments
    return pd.DataFrame({"t0_ns": seg[:, 0], "t1_ns": seg[:, 1], "hbm_GBps": seg[:, 2],
                         "l2_GBps": seg[:, 3]})


def served_bytes(timeline: pd.DataFrame) -> tuple[float, float]:
    """Bytes that crossed HBM (reads from HBM + all writes) and bytes served by L2."""
    served = timeline["served_from"].cat.codes.to_numpy()
    nbytes = timeline["bytes"].to_numpy()
    return float(nbytes[served == SERVED_HBM].sum()), float(nbytes[served == SERVED_L2].sum())


def step_points(t0: np.ndarray, t1: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Corner points of a piecewise-constant signal; gaps between segments read as zero.
    (The bandwidth figure draws them; the trace's counters sample them.)"""
    order = np.argsort(t0, kind="stable")
    t0, t1, value = t0[order], t1[order], value[order]
    gap = np.flatnonzero(t0[1:] > t1[:-1])
    t0, t1 = np.insert(t0, gap + 1, t1[gap]), np.insert(t1, gap + 1, t0[gap + 1])
    value = np.insert(value, gap + 1, 0.0)
    x = np.column_stack([t0, t1]).ravel()
    y = np.column_stack([value, value]).ravel()
    return x, y


def binned_rate(t0: np.ndarray, t1: np.ndarray, value: np.ndarray,
                bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Average of a piecewise-constant rate over ``bins`` equal time bins: (bin starts,
    bin ends, mean rate). Exact: each bin's mean is the integral of the rate over it (the
    bytes moved) divided by its width, so the bytes are conserved."""
    order = np.argsort(t0, kind="stable")
    t0, t1, value = t0[order], t1[order], value[order]
    cum_end = np.cumsum(value * (t1 - t0))
    xp = np.column_stack([t0, t1]).ravel()  # the integral is linear inside a segment
    fp = np.column_stack([cum_end - value * (t1 - t0), cum_end]).ravel()
    edges = np.linspace(t0[0], t1.max(), bins + 1)
    cum = np.interp(edges, xp, fp)
    return edges[:-1], edges[1:], np.diff(cum) / np.diff(edges)

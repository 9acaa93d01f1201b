"""Counter tracks of the trace ("ph": "C"): HBM and L2 throughput over time, and the UB
bytes each core holds for its copies.

A counter event sets a track's value from its ``ts`` until the track's next event, so each
track here is a step function sampled where it changes, ending with 0. A long run has more
changes than a download should carry: above ``COUNTER_MAX_POINTS`` samples a track is
binned into that many equal bins over its span, the throughput as the mean over each bin
(the bytes moved are kept) and the UB bytes as the most held at any moment of each bin (the
peaks are kept); ``otherData.counters`` in the trace says which tracks were binned.

What "UB held" counts (the program does not allocate UB, so this is derived, and is an
estimate): a copy into UB holds its bytes from the moment it is issued (its buffer was
allocated before it: AllocTensor precedes DataCopy) until the last instruction of its core
that reads UB and depends on it ends (its FreeTensor cannot come earlier); a copy out of UB
whose data a vector instruction of its core produced holds its bytes from the start of that
producer until the copy ends. Vector scratch buffers (TBuf) and intermediate results that
no copy carries are not counted, so the true occupancy may be higher, never lower.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kernels.common.program import Kind, Level, Program

from .tables import binned_rate, step_points

#: samples per counter track at most (above it the track is binned, see module docstring)
COUNTER_MAX_POINTS = 1000
#: the memory system's counter tracks: Result.bandwidth column -> track name
THROUGHPUT_TRACKS = {"hbm_GBps": "HBM throughput", "l2_GBps": "L2 throughput"}
THROUGHPUT_UNIT = "GB/s"
UB_TRACK, UB_UNIT = "UB held by copies", "bytes"


def _counter(name: str, pid: int, key: str, t_ns: np.ndarray, value: np.ndarray) -> list[dict]:
    """One C event per sample (times in µs, as every event of the trace)."""
    return [{"name": name, "ph": "C", "pid": pid, "ts": float(t) / 1e3, "args": {key: float(v)}}
            for t, v in zip(t_ns.tolist(), value.tolist())]


def _changes(t: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The samples where the value changes (the first one always kept)."""
    keep = np.r_[True, value[1:] != value[:-1]] if len(value) else np.zeros(0, bool)
    return t[keep], value[keep]


def throughput_samples(t0: np.ndarray, t1: np.ndarray,
                       rate: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(times, values, binned) of a piecewise-constant rate; gaps read as 0, 0 at its end."""
    if len(t0) == 0:
        return np.zeros(0), np.zeros(0), False
    x, y = step_points(t0, t1, rate)
    t, v = _changes(np.r_[x[0::2], x[-1]], np.r_[y[0::2], 0.0])
    if len(t) <= COUNTER_MAX_POINTS:
        return t, v, False
    lo, hi, mean = binned_rate(t0, t1, rate, COUNTER_MAX_POINTS - 1)
    t, v = _changes(np.r_[lo, hi[-1]], np.r_[mean, 0.0])
    return t, v, True


def throughput_counters(bandwidth: pd.DataFrame, pid: int) -> tuple[list[dict], dict]:
    """HBM and L2 throughput tracks on process ``pid``, and what each track holds."""
    t0, t1 = (bandwidth[c].to_numpy(np.float64) for c in ("t0_ns", "t1_ns"))
    events, about = [], {}
    for column, name in THROUGHPUT_TRACKS.items():
        t, v, binned = throughput_samples(t0, t1, bandwidth[column].to_numpy(np.float64))
        if np.any(v > 0):
            events += _counter(name, pid, THROUGHPUT_UNIT, t, v)
            about[name] = {"unit": THROUGHPUT_UNIT, "samples": len(t),
                           "binned": "mean over each bin" if binned else False}
    return events, about


def ub_holdings(program: Program, start: np.ndarray, end: np.ndarray):
    """(core, from_ns, to_ns, bytes) of every UB buffer a copy fills or empties (see the
    module docstring); ``start`` and ``end`` are the schedule's, by instruction id."""
    c, n = program.cols, len(program)
    transfer = c["kind"] == Kind.TRANSFER
    into, out = transfer & (c["dst"] == Level.UB), transfer & (c["src"] == Level.UB)
    vector = c["kind"] == Kind.VECTOR
    after = np.repeat(np.arange(n), np.diff(program.dep_ptr))  # waits for ...
    before = program.dep_idx.astype(np.int64)  # ... this one
    same_core = c["core"][after] == c["core"][before]
    until = end.copy()
    read = same_core & into[before] & (vector | out)[after]
    np.maximum.at(until, before[read], end[after[read]])
    since = start.copy()
    fed = same_core & out[after] & vector[before]
    np.minimum.at(since, after[fed], start[before[fed]])
    held = into.copy()
    held[after[fed]] = True
    ids = np.flatnonzero(held)
    return (c["core"][ids].astype(np.int64), since[ids], until[ids],
            c["nbytes"][ids].astype(np.float64))


def held_samples(since: np.ndarray, until: np.ndarray,
                 nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bytes held over time (a buffer freed at t and one taken at t never add up)."""
    t = np.r_[since, until]
    delta = np.r_[nbytes, -nbytes]
    order = np.lexsort((delta, t))  # at equal times, frees first
    t, level = t[order], np.cumsum(delta[order])
    last = np.r_[t[1:] != t[:-1], True]  # the level once every change at t is applied
    return _changes(t[last], level[last])


def peak_binned(t: np.ndarray, level: np.ndarray, span: tuple[float, float],
                bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The most held at any moment of each of ``bins`` equal bins over ``span`` (bin
    starts, maxima), then 0 at the span's end."""
    edges = np.linspace(span[0], span[1], bins + 1)
    inside = np.clip(np.searchsorted(edges, t, "right") - 1, 0, bins - 1)
    carried = np.r_[0.0, level][np.searchsorted(t, edges[:-1], "right")]  # level at each edge
    peak = carried.copy()
    np.maximum.at(peak, inside, level)
    return _changes(edges, np.r_[peak, 0.0])


def ub_counters(program: Program, start: np.ndarray, end: np.ndarray) -> tuple[list[dict], dict]:
    """A "UB held by copies" track in the process of every core that holds UB (a core's
    process id is its global core id)."""
    core, since, until, nbytes = ub_holdings(program, start, end)
    events, binned = [], []
    for c in np.unique(core).tolist():
        mine = core == c
        t, level = held_samples(since[mine], until[mine], nbytes[mine])
        if len(t) > COUNTER_MAX_POINTS:
            t, level = peak_binned(t, level, (float(t[0]), float(t[-1])),
                                   COUNTER_MAX_POINTS - 1)
            binned.append(c)
        events += _counter(UB_TRACK, c, UB_UNIT, t, level)
    about = {UB_TRACK: {"unit": UB_UNIT, "estimate": True, "counts": UB_COUNTS,
                        "binned": "most held in each bin" if binned else False,
                        "binned_pids": binned}} if events else {}
    return events, about


#: what the UB track counts, in the trace's otherData (the module docstring says it longer)
UB_COUNTS = ("bytes of each copy into UB from its issue until the last instruction reading "
             "it ends, plus bytes of each copy out of UB from the start of the vector "
             "instruction producing them until the copy ends; vector scratch (TBuf) not "
             "counted")

"""Chrome / Perfetto trace export: process = core, thread = pipe, lanes named as Ascend's
own tools name them (CUBE, VECTOR, SCALAR, MTE1, MTE2, MTE3, FIXP), so the file opens in
Perfetto, chrome://tracing and MindStudio Insight.

Complete ("X") events of one thread must nest, and the copies of a DMA pipe (MTE2, MTE3,
FIXP writing to GM) overlap while in flight. So a pipe's thread carries what it does one at
a time: every instruction, a GM copy for its issue slot (start .. issue end). The in-flight
part of a copy (issue end .. arrival) goes to threads "MTE2 in flight 1", "MTE2 in flight
2", ... under the pipe's thread, as many as the pipe had copies in flight at once, each
copy on the lowest-numbered one free when it was issued."""
from __future__ import annotations

import heapq

import numpy as np

from kernels.common.program import LANE_NAMES

#: thread order inside a core's process, as Ascend's simulator shows lanes
LANE_ORDER = ("CUBE", "VECTOR", "SCALAR", "MTE1", "MTE2", "MTE3", "FIXP")
#: sort index of a pipe's thread (in-flight threads follow it: + 1, + 2, ...)
_SORT_STRIDE = 1000


def in_flight_tid(pipe_tid: int, slot: int) -> int:
    """Thread id of in-flight thread ``slot`` (0-based) of the pipe whose thread is
    ``pipe_tid``: above the seven pipe threads, unique per (pipe, slot)."""
    return len(LANE_ORDER) * (slot + 1) + pipe_tid


def in_flight_name(lane: str, slot: int) -> str:
    """Name of in-flight thread ``slot`` (0-based) of a lane: "MTE2 in flight 1"."""
    return f"{lane} in flight {slot + 1}"


def flight_slots(core: np.ndarray, tid: np.ndarray, start: np.ndarray,
                 end: np.ndarray) -> np.ndarray:
    """Greedy interval colouring per (core, pipe): the lowest slot free at each span's
    start (a span ending at t frees its slot for one starting at t). Uses as many slots as
    the lane's peak number of overlapping spans. A heap per lane; traces are downloads."""
    n = len(start)
    slot = np.zeros(n, dtype=np.int64)
    order = np.lexsort((np.arange(n), start, tid, core))
    key = None
    busy: list[tuple[float, int]] = []  # (end, slot) of spans still in flight
    free: list[int] = []
    used = 0
    for i in order.tolist():
        lane = (int(core[i]), int(tid[i]))
        if lane != key:
            key, busy, free, used = lane, [], [], 0
        s = float(start[i])
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            k = heapq.heappop(free)
        else:
            k, used = used, used + 1
        slot[i] = k
        heapq.heappush(busy, (float(end[i]), k))
    return slot


def chrome_trace(result) -> dict:
    """The run as a Chrome trace dict (``json.dumps`` it to save); times in µs."""
    tl = result.timeline
    lanes = tl["pipe"].astype(str).to_numpy()
    tids = np.array([LANE_ORDER.index(lane) for lane in LANE_NAMES])[tl["pipe"].cat.codes]
    core = tl["core"].to_numpy(dtype=np.int64)
    start_ns = tl["start_ns"].to_numpy(dtype=np.float64)
    end_ns = tl["end_ns"].to_numpy(dtype=np.float64)
    issue_ns = (tl["issue_end_ns"].to_numpy(dtype=np.float64) if "issue_end_ns" in tl
                else end_ns)
    issue_ns = np.minimum(np.maximum(issue_ns, start_ns), end_ns)
    flying = issue_ns < end_ns
    slots = np.full(len(tl), -1, dtype=np.int64)
    slots[flying] = flight_slots(core[flying], tids[flying], issue_ns[flying], end_ns[flying])
    events = _metadata(tl, core[flying], tids[flying], slots[flying])
    start, issued, end = start_ns / 1e3, issue_ns / 1e3, end_ns / 1e3
    for i, (op, task, nbytes, served) in enumerate(zip(
            tl["op"].astype(str), tl["task"], tl["bytes"], tl["served_from"].astype(str))):
        args = {"task": int(task)}
        if nbytes:
            args.update(bytes=int(nbytes), served_from=served)
        pid, tid = int(core[i]), int(tids[i])
        if not flying[i]:
            events.append({"name": op, "cat": lanes[i], "ph": "X", "pid": pid, "tid": tid,
                           "ts": float(start[i]), "dur": float(end[i] - start[i]),
                           "args": args})
            continue
        events.append({"name": op, "cat": lanes[i], "ph": "X", "pid": pid, "tid": tid,
                       "ts": float(start[i]), "dur": float(issued[i] - start[i]),
                       "args": {**args, "arrival_us": float(end[i])}})
        events.append({"name": op, "cat": lanes[i], "ph": "X", "pid": pid,
                       "tid": in_flight_tid(tid, int(slots[i])), "ts": float(issued[i]),
                       "dur": float(end[i] - issued[i]),
                       "args": {**args, "issue_start_us": float(start[i]),
                                "in_flight": True}})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"scenario": result.scenario.to_dict(),
                          "chip": result.chip.display_name}}


def _metadata(tl, core: np.ndarray, tid: np.ndarray, slot: np.ndarray) -> list[dict]:
    """Process and thread names and sort order for every core that ran: the seven pipe
    threads, then the in-flight threads the core's copies used (given per in-flight copy
    as core, pipe thread, slot)."""
    events = []
    flights: dict[int, set[tuple[int, int]]] = {}
    for c, t, k in set(zip(core.tolist(), tid.tolist(), slot.tolist())):
        flights.setdefault(c, set()).add((t, k))
    for c, name in tl[["core", "core_name"]].drop_duplicates().itertuples(index=False):
        pid = int(c)
        events.append({"name": "process_name", "ph": "M", "pid": pid,
                       "args": {"name": str(name)}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                       "args": {"sort_index": pid}})
        threads = [(t, lane, t * _SORT_STRIDE) for t, lane in enumerate(LANE_ORDER)]
        threads += [(in_flight_tid(t, k), in_flight_name(LANE_ORDER[t], k),
                     t * _SORT_STRIDE + k + 1) for t, k in sorted(flights.get(pid, ()))]
        for t, lane, order in threads:
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": t,
                           "args": {"name": lane}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": t,
                           "args": {"sort_index": order}})
    return events

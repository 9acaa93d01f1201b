"""Chrome / Perfetto trace export, named the way Ascend's operator simulator names its own
trace, so that it opens in Perfetto, chrome://tracing and MindStudio Insight.

Format: the Trace Event Format's JSON object form (``traceEvents``, ``displayTimeUnit``,
``otherData``; times in µs), with complete ("X"), metadata ("M"), counter ("C") and one
global instant ("i") event (Google, "Trace Event Format", linked from catapult's
docs/trace-event-format.md). tests/data/chrome_trace.schema.json is the subset we write.

Names, as msprof op simulator writes its trace.json (msOpProf simulator user guide,
gitcode.com/Ascend/msopprof docs/en/user_guide/msopprof_simulator_user_guide.md; hiascend
"仿真指令流水图文件"): one process per core, named ``core<g>.cubecore0`` for the AIC of core
group g and ``core<g>.veccore<k>`` for its k-th AIV on split chips (MindStudio Insight's
tests read that trace with pid "core0.cubecore0", tid "SCALAR"), ``core<i>`` for an AI core
of a coupled chip (910, 310P: no sub-cores; a 310P vector core is ``veccore<i>``, our
naming: msprof documents none); one thread per pipe named CUBE, VECTOR, SCALAR, MTE1, MTE2,
MTE3, FIXP. Processes sort by core group (core0.veccore0, core0.veccore1, core1.veccore0, the
order of msopprof's per-core folders), a group's cube core before its vector cores (our
choice: msprof documents no order across kinds); the explorer's own core name (AIV3) is the
process label. pid and tid stay
integers (the format's examples, Perfetto's importer) with the names as metadata. The
object starts with ``"profilingType": "op"``: MindStudio Insight imports an operator-tuning
JSON only when that key comes before the first "[" (Ascend/msinsight
docs/en/user_guide/operator_tuning.md).

Complete events of one thread must nest (Perfetto's FAQ: overlapping X events on one thread
are not supported), and the copies of a DMA pipe overlap while in flight. So a pipe's thread
carries what it does one at a time: every instruction, a GM copy for its issue slot (start ..
issue end). The in-flight part of a copy (issue end .. arrival) goes to threads "MTE2 in
flight 1", "MTE2 in flight 2", ... under the pipe's thread, as many as the pipe had copies in
flight at once, each copy on the lowest-numbered one free when it was issued.

Size: a trace is a download. Above ``TRACE_MAX_SLICES`` complete events the trace keeps the
instructions in start order up to that many events (every instruction that starts before
the cut) and says so (``otherData.truncated`` and an instant event at the cut); the counter
tracks (explorer.core.trace_counters) always cover the whole run.
"""
from __future__ import annotations

import heapq

import numpy as np

import kernels
from kernels.common.program import LANE_NAMES

from .trace_counters import throughput_counters, ub_counters

#: thread order inside a core's process (hardware_facts.md: the simulator's lanes)
LANE_ORDER = ("CUBE", "VECTOR", "SCALAR", "MTE1", "MTE2", "MTE3", "FIXP")
#: sort index of a pipe's thread (in-flight threads follow it: + 1, + 2, ...)
_SORT_STRIDE = 1000
#: complete events at most (about 220 bytes each in JSON: some 90 MB at the cap)
TRACE_MAX_SLICES = 400_000
MEMORY_PROCESS = "HBM / L2"


def in_flight_tid(pipe_tid: int, slot: int) -> int:
    """Thread id of in-flight thread ``slot`` (0-based) of the pipe whose thread is
    ``pipe_tid``: above the seven pipe threads, unique per (pipe, slot)."""
    return len(LANE_ORDER) * (slot + 1) + pipe_tid


def in_flight_name(lane: str, slot: int) -> str:
    """Name of in-flight thread ``slot`` (0-based) of a lane: "MTE2 in flight 1"."""
    return f"{lane} in flight {slot + 1}"


def msprof_core_names(chip) -> tuple[tuple[str, int], ...]:
    """(name, sort index) of every global core id, as msprof op simulator names cores (see
    the module docstring); sort indices start at 1 (0 is the memory process)."""
    ai, vec = chip.ai_cores, chip.vector_cores
    if chip.architecture != "split":
        return tuple((f"core{i}", i + 1) for i in range(ai)) + tuple(
            (f"veccore{i}", ai + i + 1) for i in range(vec))
    per = max(1, vec // max(ai, 1))  # AIVs per AIC: 2 on 910B
    cube = tuple((f"core{g}.cubecore0", g * (per + 1) + 1) for g in range(ai))
    return cube + tuple((f"core{j // per}.veccore{j % per}", (j // per) * (per + 1) + j % per + 2)
                        for j in range(vec))


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


def shown_rows(start_ns: np.ndarray, slices: np.ndarray) -> tuple[np.ndarray, float | None]:
    """Which instructions the trace shows (each makes ``slices`` complete events) and the
    cut time in ns (None: all of them): in start order, up to TRACE_MAX_SLICES events."""
    if int(slices.sum()) <= TRACE_MAX_SLICES:
        return np.ones(len(start_ns), bool), None
    order = np.argsort(start_ns, kind="stable")
    k = int(np.searchsorted(np.cumsum(slices[order]), TRACE_MAX_SLICES, "right"))
    cut = float(start_ns[order[k]])
    return start_ns < cut, cut


def chrome_trace(result, program=None) -> dict:
    """The run as a Chrome trace dict (``json.dumps`` it to save); times in µs. ``program``
    is the run's program, rebuilt from the scenario when not given and UB is used (the UB
    counters need its dependencies)."""
    tl = result.timeline
    tids = np.array([LANE_ORDER.index(lane) for lane in LANE_NAMES])[tl["pipe"].cat.codes]
    core = tl["core"].to_numpy(dtype=np.int64)
    start_ns, end_ns = (tl[c].to_numpy(dtype=np.float64) for c in ("start_ns", "end_ns"))
    issue_ns = np.minimum(np.maximum(tl["issue_end_ns"].to_numpy(dtype=np.float64), start_ns),
                          end_ns)
    flying = issue_ns < end_ns
    shown, cut = shown_rows(start_ns, 1 + flying.astype(np.int64))
    slots = np.full(len(tl), -1, dtype=np.int64)
    fly = flying & shown
    slots[fly] = flight_slots(core[fly], tids[fly], issue_ns[fly], end_ns[fly])
    names = msprof_core_names(result.chip)
    events = _metadata(result.chip, names, np.unique(core).tolist(), core[fly], tids[fly],
                       slots[fly])
    events += _slices(tl, shown, core, tids, (start_ns, issue_ns, end_ns), slots)
    counters, about = _counters(result, program)
    events += counters
    other = {"scenario": result.scenario.to_dict(), "chip": result.chip.display_name,
             "counters": about}
    if cut is not None:
        other["truncated"] = _truncation(events, result.chip.num_cores, cut, shown, len(tl))
    return {"profilingType": "op", "traceEvents": events, "displayTimeUnit": "ns",
            "otherData": other}


def _slices(tl, shown, core, tids, times, slots) -> list[dict]:
    """X events of the shown instructions: a pipe's work, a GM copy's issue slot on the
    pipe's thread and its flight on an in-flight thread."""
    rows = np.flatnonzero(shown)
    start, issued, end = (t[rows] / 1e3 for t in times)
    columns = [_strings(tl[c], rows) for c in ("op", "pipe", "served_from")]
    columns += [tl[c].to_numpy()[rows].tolist() for c in ("task", "bytes")]
    columns += [a[rows].tolist() for a in (core, tids, slots)]
    columns += [start.tolist(), issued.tolist(), end.tolist()]
    events = []
    for op, lane, served, task, nbytes, pid, tid, slot, s, m, e in zip(*columns):
        args = {"task": task, "bytes": nbytes, "served_from": served} if nbytes else \
            {"task": task}
        if slot < 0:
            events.append({"name": op, "cat": lane, "ph": "X", "pid": pid, "tid": tid,
                           "ts": s, "dur": e - s, "args": args})
            continue
        events.append({"name": op, "cat": lane, "ph": "X", "pid": pid, "tid": tid, "ts": s,
                       "dur": m - s, "args": {**args, "arrival_us": e}})
        events.append({"name": op, "cat": lane, "ph": "X", "pid": pid,
                       "tid": in_flight_tid(tid, slot), "ts": m, "dur": e - m,
                       "args": {**args, "issue_start_us": s, "in_flight": True}})
    return events


def _strings(column, rows: np.ndarray) -> list[str]:
    """A categorical column's values at ``rows`` as Python strings (no per-row pandas)."""
    return np.asarray(column.cat.categories, dtype=object)[column.cat.codes.to_numpy()[rows]] \
        .astype(str).tolist()


def _counters(result, program) -> tuple[list[dict], dict]:
    """Throughput tracks in the memory process (pid = the chip's core count) and the UB
    tracks in the cores' processes."""
    memory_pid = result.chip.num_cores
    events, about = throughput_counters(result.bandwidth, memory_pid)
    tl = result.timeline
    if tl["src"].eq("UB").any() or tl["dst"].eq("UB").any():
        if program is None:
            program = kernels.get(result.scenario.kernel).build_program(
                result.chip, result.params, result.scenario.seed)
        ub, ub_about = ub_counters(program, tl["start_ns"].to_numpy(np.float64),
                                   tl["end_ns"].to_numpy(np.float64))
        events, about = events + ub, {**about, **ub_about}
    if events:
        events[:0] = [{"name": "process_name", "ph": "M", "pid": memory_pid,
                       "args": {"name": MEMORY_PROCESS}},
                      {"name": "process_sort_index", "ph": "M", "pid": memory_pid,
                       "args": {"sort_index": 0}}]
    return events, about


def _truncation(events: list[dict], pid: int, cut_ns: float, shown, total: int) -> dict:
    """What a cut trace leaves out, in otherData and as an instant event at the cut."""
    info = {"instructions_shown": int(shown.sum()), "instructions": int(total),
            "shown_before_us": cut_ns / 1e3, "max_slices": TRACE_MAX_SLICES}
    events.append({"name": "trace cut here: later instructions left out", "ph": "i", "s": "g",
                   "pid": pid, "tid": 0, "ts": cut_ns / 1e3, "args": info})
    return info


def _metadata(chip, names, cores: list[int], core: np.ndarray, tid: np.ndarray,
              slot: np.ndarray) -> list[dict]:
    """Process names (msprof's), labels (the chip's own core names) and sort order for every
    core that ran; its seven pipe threads, then the in-flight threads its copies used
    (given per in-flight copy as core, pipe thread, slot)."""
    events = []
    flights: dict[int, set[tuple[int, int]]] = {}
    for c, t, k in set(zip(core.tolist(), tid.tolist(), slot.tolist())):
        flights.setdefault(c, set()).add((t, k))
    labels = chip.core_names()
    for pid in cores:
        name, order = names[pid]
        events += [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}},
                   {"name": "process_labels", "ph": "M", "pid": pid,
                    "args": {"labels": labels[pid]}},
                   {"name": "process_sort_index", "ph": "M", "pid": pid,
                    "args": {"sort_index": order}}]
        threads = [(t, lane, t * _SORT_STRIDE) for t, lane in enumerate(LANE_ORDER)]
        threads += [(in_flight_tid(t, k), in_flight_name(LANE_ORDER[t], k),
                     t * _SORT_STRIDE + k + 1) for t, k in sorted(flights.get(pid, ()))]
        for t, lane, index in threads:
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": t,
                           "args": {"name": lane}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": t,
                           "args": {"sort_index": index}})
    return events

"""Chrome / Perfetto trace export: process = core, thread = pipe, lanes named as Ascend's
own tools name them (CUBE, VECTOR, SCALAR, MTE1, MTE2, MTE3, FIXP), so the file opens in
Perfetto, chrome://tracing and MindStudio Insight."""
from __future__ import annotations

import numpy as np

from kernels.program import LANE_NAMES

#: thread order inside a core's process, as Ascend's simulator shows lanes
LANE_ORDER = ("CUBE", "VECTOR", "SCALAR", "MTE1", "MTE2", "MTE3", "FIXP")


def chrome_trace(result) -> dict:
    """The run as a Chrome trace dict (``json.dumps`` it to save); times in µs."""
    tl = result.timeline
    events = _metadata(tl)
    lanes = tl["pipe"].astype(str).to_numpy()
    tids = np.array([LANE_ORDER.index(lane) for lane in LANE_NAMES])[tl["pipe"].cat.codes]
    start = tl["start_ns"].to_numpy() / 1e3
    dur = tl["end_ns"].to_numpy() / 1e3 - start
    for i, (op, core, task, nbytes, served) in enumerate(zip(
            tl["op"].astype(str), tl["core"], tl["task"], tl["bytes"],
            tl["served_from"].astype(str))):
        args = {"task": int(task)}
        if nbytes:
            args.update(bytes=int(nbytes), served_from=served)
        events.append({"name": op, "cat": lanes[i], "ph": "X", "pid": int(core),
                       "tid": int(tids[i]), "ts": float(start[i]), "dur": float(dur[i]),
                       "args": args})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"scenario": result.scenario.to_dict(),
                          "chip": result.chip.display_name}}


def _metadata(tl) -> list[dict]:
    """Process and thread names (and sort order) for every core that ran."""
    events = []
    for core, name in tl[["core", "core_name"]].drop_duplicates().itertuples(index=False):
        events.append({"name": "process_name", "ph": "M", "pid": int(core),
                       "args": {"name": str(name)}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": int(core),
                       "args": {"sort_index": int(core)}})
        for tid, lane in enumerate(LANE_ORDER):
            events.append({"name": "thread_name", "ph": "M", "pid": int(core), "tid": tid,
                           "args": {"name": lane}})
    return events

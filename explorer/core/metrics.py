"""Scalar metrics of a run, named as Ascend's profiler names them where it has a name.

Each metric has a unit and a one-line definition in the translation catalogues
(``metric.<name>.label`` / ``metric.<name>.def``); ``METRICS`` lists them in display order.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from hardware_presets import Chip

from .tables import COMPUTE_LANES, overlap_ns, served_bytes

#: metric name -> unit ("" for ratios and labels)
METRICS: dict[str, str] = {
    "makespan_us": "µs", "instructions": "", "achieved_tflops": "TFLOPS",
    "hbm_GBps": "GB/s", "hbm_utilization": "", "l2_GBps": "GB/s",
    "arithmetic_intensity": "flop/B", "hbm_bytes": "B", "l2_bytes": "B",
    "multicast_bytes": "B", "l2_hit_rate": "", "aic_cube_ratio": "", "aiv_vec_ratio": "",
    "mte1_ratio": "", "mte2_ratio": "", "mte3_ratio": "", "fixpipe_ratio": "",
    "scalar_ratio": "", "overlap_ratio": "", "stall_ratio": "", "load_balance_min_max": "",
    "load_balance_mean_max": "", "roofline_bound_us": "µs", "roofline_efficiency": "",
    "bound": "",
}
#: profiler ratio name -> trace lane
RATIO_LANES = {"aic_cube_ratio": "CUBE", "aiv_vec_ratio": "VECTOR", "mte1_ratio": "MTE1",
               "mte2_ratio": "MTE2", "mte3_ratio": "MTE3", "fixpipe_ratio": "FIXP",
               "scalar_ratio": "SCALAR"}
#: the bound is "memory"/"compute" when that bound explains at least this share of time
BOUND_SHARE = 0.6
#: below this mean/max balance an unexplained run is called "imbalance"
BALANCE_FLOOR = 0.8


def _pipe_ratios(per_core: pd.DataFrame) -> dict[str, float]:
    """Mean over the cores that used a pipe of its busy time / kernel duration."""
    out = {}
    for name, lane in RATIO_LANES.items():
        busy = per_core[f"busy_ns_{lane}"] > 0
        out[name] = float(per_core.loc[busy, f"ratio_{lane}"].mean()) if busy.any() else 0.0
    return out


def compute_bound_ns(per_core: pd.DataFrame) -> float:
    """Busiest compute pipe's total work spread perfectly over the cores that ran it
    (transfer pipes are excluded: their busy time includes waiting for bandwidth)."""
    best = 0.0
    for lane in COMPUTE_LANES:
        busy = per_core[f"busy_ns_{lane}"]
        if (busy > 0).any():
            best = max(best, float(busy.sum()) / int((busy > 0).sum()))
    return best


def _bound(memory_ns, compute_ns, makespan, balance) -> str:
    if makespan <= 0:
        return "none"
    if memory_ns >= compute_ns and memory_ns / makespan >= BOUND_SHARE:
        return "memory"
    if compute_ns / makespan >= BOUND_SHARE:
        return "compute"
    return "imbalance" if balance < BALANCE_FLOOR else "latency"


def compute_metrics(timeline: pd.DataFrame, per_core: pd.DataFrame, chip: Chip,
                    flops: float) -> dict[str, float | str]:
    """All scalar metrics of one run (see METRICS for names and units)."""
    makespan = float(timeline["end_ns"].max()) if len(timeline) else 0.0
    hbm, l2 = served_bytes(timeline)
    multicast = float(timeline.loc[timeline["served_from"] == "multicast", "bytes"].sum())
    reads = float(timeline.loc[timeline["src"] == "GM", "bytes"].sum())
    comp, tran, both = overlap_ns(timeline, len(chip.core_kinds()))
    active = per_core["active_ns"].to_numpy() if len(per_core) else np.zeros(1)
    span = (per_core["last_end_ns"] - per_core["first_start_ns"]).sum() if len(per_core) else 0
    memory_ns = hbm / chip.hbm_bytes_per_ns + l2 / chip.l2_bytes_per_ns
    compute_ns = compute_bound_ns(per_core) if len(per_core) else 0.0
    balance = float(active.mean() / active.max()) if active.max() > 0 else 1.0
    bound_ns = max(memory_ns, compute_ns)
    per_ns = 1.0 / makespan if makespan > 0 else 0.0
    return {
        "makespan_us": makespan / 1e3, "instructions": int(len(timeline)),
        "achieved_tflops": flops * per_ns / 1e3, "hbm_GBps": hbm * per_ns,
        "hbm_utilization": hbm * per_ns / chip.hbm_bytes_per_ns, "l2_GBps": l2 * per_ns,
        "arithmetic_intensity": flops / hbm if hbm > 0 else 0.0,
        "hbm_bytes": hbm, "l2_bytes": l2, "multicast_bytes": multicast,
        "l2_hit_rate": (l2 + multicast) / reads if reads > 0 else 0.0,
        **_pipe_ratios(per_core),
        "overlap_ratio": both / min(comp, tran) if min(comp, tran) > 0 else 0.0,
        "stall_ratio": float(per_core["stall_ns"].sum() / span) if span > 0 else 0.0,
        "load_balance_min_max": float(active.min() / active.max()) if active.max() > 0 else 1.0,
        "load_balance_mean_max": balance,
        "roofline_bound_us": bound_ns / 1e3,
        "roofline_efficiency": bound_ns / makespan if makespan > 0 else 0.0,
        "bound": _bound(memory_ns, compute_ns, makespan, balance),
    }

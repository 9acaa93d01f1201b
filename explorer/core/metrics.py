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
#: metric name -> message id of its label and of its one-line definition (literal ids, so
#: that tests/test_message_ids.py finds every one in the catalogues)
METRIC_LABEL_IDS: dict[str, str] = {
    "cores_used": "metric.cores_used.label", "makespan_us": "metric.makespan_us.label",
    "instructions": "metric.instructions.label", "achieved_tflops": "metric.achieved_tflops.label",
    "hbm_GBps": "metric.hbm_GBps.label", "hbm_utilization": "metric.hbm_utilization.label",
    "l2_GBps": "metric.l2_GBps.label", "arithmetic_intensity": "metric.arithmetic_intensity.label",
    "hbm_bytes": "metric.hbm_bytes.label", "l2_bytes": "metric.l2_bytes.label",
    "multicast_bytes": "metric.multicast_bytes.label", "l2_hit_rate": "metric.l2_hit_rate.label",
    "aic_cube_ratio": "metric.aic_cube_ratio.label", "aiv_vec_ratio": "metric.aiv_vec_ratio.label",
    "mte1_ratio": "metric.mte1_ratio.label", "mte2_ratio": "metric.mte2_ratio.label",
    "mte3_ratio": "metric.mte3_ratio.label", "fixpipe_ratio": "metric.fixpipe_ratio.label",
    "scalar_ratio": "metric.scalar_ratio.label", "overlap_ratio": "metric.overlap_ratio.label",
    "stall_ratio": "metric.stall_ratio.label",
    "load_balance_min_max": "metric.load_balance_min_max.label",
    "load_balance_mean_max": "metric.load_balance_mean_max.label",
    "roofline_bound_us": "metric.roofline_bound_us.label",
    "roofline_efficiency": "metric.roofline_efficiency.label", "bound": "metric.bound.label",
}

METRIC_DEF_IDS: dict[str, str] = {
    "cores_used": "metric.cores_used.def", "makespan_us": "metric.makespan_us.def",
    "instructions": "metric.instructions.def", "achieved_tflops": "metric.achieved_tflops.def",
    "hbm_GBps": "metric.hbm_GBps.def", "hbm_utilization": "metric.hbm_utilization.def",
    "l2_GBps": "metric.l2_GBps.def", "arithmetic_intensity": "metric.arithmetic_intensity.def",
    "hbm_bytes": "metric.hbm_bytes.def", "l2_bytes": "metric.l2_bytes.def",
    "multicast_bytes": "metric.multicast_bytes.def", "l2_hit_rate": "metric.l2_hit_rate.def",
    "aic_cube_ratio": "metric.aic_cube_ratio.def", "aiv_vec_ratio": "metric.aiv_vec_ratio.def",
    "mte1_ratio": "metric.mte1_ratio.def", "mte2_ratio": "metric.mte2_ratio.def",
    "mte3_ratio": "metric.mte3_ratio.def", "fixpipe_ratio": "metric.fixpipe_ratio.def",
    "scalar_ratio": "metric.scalar_ratio.def", "overlap_ratio": "metric.overlap_ratio.def",
    "stall_ratio": "metric.stall_ratio.def",
    "load_balance_min_max": "metric.load_balance_min_max.def",
    "load_balance_mean_max": "metric.load_balance_mean_max.def",
    "roofline_bound_us": "metric.roofline_bound_us.def",
    "roofline_efficiency": "metric.roofline_efficiency.def", "bound": "metric.bound.def",
}
#: the bound's value -> message id of its name
BOUND_VALUE_IDS: dict[str, str] = {
    "memory": "metric.bound_value.memory", "compute": "metric.bound_value.compute",
    "imbalance": "metric.bound_value.imbalance", "latency": "metric.bound_value.latency",
    "none": "metric.bound_value.none",
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

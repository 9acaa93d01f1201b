"""Scalar metrics of a run, named as Ascend's profiler names them where it has a name.

Each metric has a unit and a one-line definition in the translation catalogues
(``metric.<name>.label`` / ``metric.<name>.def``); ``METRICS`` lists them in display order.

Two of them are judgements that more than one place shows: the bound and the load
balance. They are defined here once (``bound_of``, ``load_balance``) and everything else
reads them, the advisor included, so that a page's tile and the advisor below it can
never disagree.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from hardware_presets import Chip
from kernels.common.record import KernelRecord

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
    "sync": "metric.bound_value.sync", "tail": "metric.bound_value.tail",
    "none": "metric.bound_value.none",
}

#: the metrics a run is summed up by: a kernel page's tiles and a notebook's summary
KEY_METRICS = ("makespan_us", "hbm_GBps", "hbm_utilization", "bound",
               "mte2_ratio", "aiv_vec_ratio", "overlap_ratio", "roofline_efficiency")
#: profiler ratio name -> trace lane
RATIO_LANES = {"aic_cube_ratio": "CUBE", "aiv_vec_ratio": "VECTOR", "mte1_ratio": "MTE1",
               "mte2_ratio": "MTE2", "mte3_ratio": "MTE3", "fixpipe_ratio": "FIXP",
               "scalar_ratio": "SCALAR"}

# ---- the bound: the blog's PerformanceMonitor rule, structural causes first --------------
#: every value the bound takes: the rules in the order they are tried, then "none" (the
#: run took no time, which is checked before them)
BOUNDS = ("tail", "compute", "memory", "imbalance", "sync", "latency", "none")
COMPUTE_SHARE = 0.7  # the busiest compute pipe's busy share above this: compute-bound
MEMORY_SHARE = 0.6  # HBM + L2 traffic at full bandwidth above this share: memory-bound
STALL_SHARE = 0.3  # stalls above this share of core time: synchronization-bound
COMM_SHARE = 0.1  # SyncAll and cross-core hand-offs above this share: synchronization
#: load balance (mean/max) below this: cores wait for the slowest one, a tail wave when
#: the kernel's last wave of tasks is partial, imbalance otherwise
IMBALANCE_FLOOR = 0.8
#: time a core spends exchanging data with other cores: barriers and GM hand-offs
#: (decode cube+vector S/P/O, split-K workspace partials)
COMM_OPS = re.compile(r"^(SyncAll|Fixpipe [SO] -> GM|CopyIn [SO]$|CopyOut P -> GM|"
                      r"Load P -> L1|Fixpipe -> workspace|CopyIn partial)")


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


# ---- load balance -------------------------------------------------------------------------
# One definition, read by the metric tiles, the advisor, the comparison's ``cores_used``
# and the load-balance figure: a core's load is its ``work_ns`` (explorer.core.tables:
# the time its pipes run instructions, its SyncAll waits left out), and the balance
# compares the cores of the kind that sets the makespan.
def worked(per_core: pd.DataFrame) -> np.ndarray:
    """Whether each core did work: any time on its pipes other than waiting at a SyncAll."""
    if not len(per_core):
        return np.zeros(0, bool)
    return per_core["work_ns"].to_numpy(np.float64) > 0


def balance_cores(per_core: pd.DataFrame) -> np.ndarray:
    """Whether the load balance counts each core: among the cores that did work, those of
    the kind (AIC or AIV) whose busiest core works longest. Idle kinds (a vector decode's
    AIC cores that only wait at a SyncAll) and a shorter kind's work (split-K's few AIV
    combining partials) would only dilute the balance that decides the time."""
    did = worked(per_core)
    if not did.any():
        return did
    work = per_core["work_ns"].to_numpy(np.float64)
    kinds = per_core["core_kind"].astype(str).to_numpy()
    kind = kinds[np.flatnonzero(did)[np.argmax(work[did])]]
    return did & (kinds == kind)


def critical_work_ns(per_core: pd.DataFrame) -> np.ndarray:
    """Work time (ns) of the cores `balance_cores` counts, in the table's order."""
    if not len(per_core):
        return np.zeros(0)
    return per_core["work_ns"].to_numpy(np.float64)[balance_cores(per_core)]


def load_balance(per_core: pd.DataFrame) -> tuple[float, float]:
    """(min/max, mean/max) of `critical_work_ns`: 1.0 when nothing worked."""
    work = critical_work_ns(per_core)
    if not len(work):
        return 1.0, 1.0
    top = float(work.max())
    return float(work.min()) / top, float(work.mean()) / top


# ---- the bound -----------------------------------------------------------------------------
def communication_share(timeline: pd.DataFrame, per_core: pd.DataFrame) -> float:
    """Core time in SyncAll spans and cross-core GM hand-offs / total core active span."""
    span = float((per_core["last_end_ns"] - per_core["first_start_ns"]).sum()) \
        if len(per_core) else 0.0
    if span <= 0 or not len(timeline):
        return 0.0
    codes, ops = pd.factorize(timeline["op"])  # match each distinct op once, not every row
    hits = np.array([bool(COMM_OPS.match(str(op))) for op in ops] + [False])
    mask = hits[codes]
    busy = timeline.loc[mask, "end_ns"] - timeline.loc[mask, "start_ns"]
    return min(1.0, float(busy.sum()) / span)


def bound_shares(metrics: dict, per_core: pd.DataFrame, timeline: pd.DataFrame,
                 chip: Chip) -> dict[str, float]:
    """What the bound is decided on, each a share of the run: compute (busiest compute
    pipe), memory (traffic at full bandwidth / duration), mte2, stall, balance (the load
    balance metric) and comm (`communication_share`)."""
    m, makespan = metrics, float(metrics["makespan_us"]) * 1e3
    memory_ns = m["hbm_bytes"] / chip.hbm_bytes_per_ns + m["l2_bytes"] / chip.l2_bytes_per_ns
    return {"compute": max(m["aic_cube_ratio"], m["aiv_vec_ratio"]),
            "memory": memory_ns / makespan if makespan > 0 else 0.0,
            "mte2": m["mte2_ratio"], "stall": m["stall_ratio"],
            "balance": m["load_balance_mean_max"],
            "comm": communication_share(timeline, per_core)}


def waves_of(kernel: KernelRecord, params: dict) -> tuple[int, int, int] | None:
    """(tasks, waves, cores) of the kernel's task grid, None when it has no waves."""
    waves = kernel.advice.waves
    return waves(params) if waves is not None else None


def _is_tail(waves: tuple[int, int, int] | None, balance: float) -> bool:
    """More than one wave, a partial last one, and the cores unbalanced by it as much as
    an imbalance would have to be (a smaller tail is not what bounds the run)."""
    if waves is None:
        return False
    tasks, count, cores = waves
    return count > 1 and tasks % cores != 0 and balance < IMBALANCE_FLOOR


def classify_bound(shares: dict[str, float], makespan_ns: float,
                   waves: tuple[int, int, int] | None) -> str:
    """The bound (one of `BOUNDS`): the first rule that applies, in `BOUNDS` order."""
    if makespan_ns <= 0:
        return "none"
    if _is_tail(waves, shares["balance"]):
        return "tail"
    if shares["compute"] > COMPUTE_SHARE:
        return "compute"
    if shares["memory"] > MEMORY_SHARE:
        return "memory"
    if shares["balance"] < IMBALANCE_FLOOR:
        return "imbalance"
    if shares["stall"] > STALL_SHARE or shares["comm"] > COMM_SHARE:
        return "sync"
    return "latency"


def bound_of(metrics: dict, per_core: pd.DataFrame, timeline: pd.DataFrame, chip: Chip,
             waves: tuple[int, int, int] | None) -> str:
    """The run's bound: `classify_bound` on `bound_shares` (metrics["bound"] is this)."""
    shares = bound_shares(metrics, per_core, timeline, chip)
    return classify_bound(shares, float(metrics["makespan_us"]) * 1e3, waves)


# ---- all of them ---------------------------------------------------------------------------
def compute_metrics(timeline: pd.DataFrame, per_core: pd.DataFrame, chip: Chip,
                    flops: float, waves: tuple[int, int, int] | None = None
                    ) -> dict[str, float | str]:
    """All scalar metrics of one run (see METRICS for names and units); ``waves`` is the
    kernel's task grid (`waves_of`), for the bound's tail rule."""
    makespan = float(timeline["end_ns"].max()) if len(timeline) else 0.0
    hbm, l2 = served_bytes(timeline)
    multicast = float(timeline.loc[timeline["served_from"] == "multicast", "bytes"].sum())
    reads = float(timeline.loc[timeline["src"] == "GM", "bytes"].sum())
    comp, tran, both = overlap_ns(timeline, len(chip.core_kinds()))
    span = (per_core["last_end_ns"] - per_core["first_start_ns"]).sum() if len(per_core) else 0
    compute_ns = compute_bound_ns(per_core) if len(per_core) else 0.0
    balance_min, balance_mean = load_balance(per_core)
    # HBM and L2 are separate pools in the emulator (a read is served by one of them), so
    # each alone bounds the duration; their sum does not (an MXFP4 linear layer on the
    # 950PR ran in 206 us against a summed "bound" of 276 us)
    bound_ns = max(hbm / chip.hbm_bytes_per_ns, l2 / chip.l2_bytes_per_ns, compute_ns)
    per_ns = 1.0 / makespan if makespan > 0 else 0.0
    metrics = {
        "makespan_us": makespan / 1e3, "instructions": int(len(timeline)),
        "achieved_tflops": flops * per_ns / 1e3, "hbm_GBps": hbm * per_ns,
        "hbm_utilization": hbm * per_ns / chip.hbm_bytes_per_ns, "l2_GBps": l2 * per_ns,
        "arithmetic_intensity": flops / hbm if hbm > 0 else 0.0,
        "hbm_bytes": hbm, "l2_bytes": l2, "multicast_bytes": multicast,
        "l2_hit_rate": (l2 + multicast) / reads if reads > 0 else 0.0,
        **_pipe_ratios(per_core),
        "overlap_ratio": both / min(comp, tran) if min(comp, tran) > 0 else 0.0,
        "stall_ratio": float(per_core["stall_ns"].sum() / span) if span > 0 else 0.0,
        "load_balance_min_max": balance_min, "load_balance_mean_max": balance_mean,
        "roofline_bound_us": bound_ns / 1e3,
        "roofline_efficiency": bound_ns / makespan if makespan > 0 else 0.0,
    }
    metrics["bound"] = bound_of(metrics, per_core, timeline, chip, waves)
    return metrics

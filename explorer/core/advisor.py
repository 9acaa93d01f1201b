"""The performance advisor: the seed blog's tuning checklist (section 8.2) evaluated on a
run, the bound it is under, and concrete what-ifs that the kernel accepts.

``advise(result, thresholds) -> Advice`` is pure: it reads the run's metrics, per-core
table and timeline, never simulates. Each tip carries the validated what-if scenario,
the metric it promises to move and in which direction, so the UI (or a test) can run
it and show old against new.

The blog's "UB hit rate > 80%" is replaced: UB is a software-managed scratchpad, every
byte in it was put there by a ``DataCopy``, so it has no hit rate. The nearest measurable
things are the L2 hit rate (a real cache, between HBM and the cores) and how full the
kernel's UB (or L1) plan is. The bound and the load balance are the run's own metrics
(``explorer.core.metrics.bound_of`` and ``load_balance``, one definition for every page,
report and comparison); the advisor adds the shares that decided the bound to its text.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

import kernels
from hardware_presets.errors import InputError
from kernels.common.record import percent as pct

from . import metrics as mt
from .i18n import t
from .metrics import BOUND_VALUE_IDS, MEMORY_SHARE, compute_bound_ns
from .scenario import Scenario

#: checklist item -> (default threshold, "min" when the value must reach it, "max" when
#: it must stay below it)
CHECKS: dict[str, tuple[float, str]] = {
    "compute_utilization": (0.75, "min"), "overlap": (0.85, "min"),
    "load_balance": (0.90, "min"), "communication": (mt.COMM_SHARE, "max"),
    "l2_hit_rate": (0.80, "min"), "buffer_occupancy": (0.25, "min"),
}
DEFAULT_THRESHOLDS: dict[str, float] = {k: v for k, (v, _) in CHECKS.items()}
BANDWIDTH_FLOOR = 0.5  # MTE2 busy with HBM below half its bandwidth: DataCopy latency
BOUNDS = mt.BOUNDS  # every value of metrics["bound"]; each has its sentence in BOUND_IDS
#: message ids (literal, so that tests/test_message_ids.py checks every one): a checklist
#: item's (name, label with the run's details, why it matters), each bound's sentence, the
#: metric a tip promises to move and the direction it moves it
CHECK_IDS: dict[str, tuple[str, str, str]] = {
    "compute_utilization": ("advisor.check.compute_utilization.name",
                            "advisor.check.compute_utilization.label",
                            "advisor.check.compute_utilization.why"),
    "overlap": ("advisor.check.overlap.name", "advisor.check.overlap.label",
                "advisor.check.overlap.why"),
    "load_balance": ("advisor.check.load_balance.name", "advisor.check.load_balance.label",
                     "advisor.check.load_balance.why"),
    "communication": ("advisor.check.communication.name", "advisor.check.communication.label",
                      "advisor.check.communication.why"),
    "l2_hit_rate": ("advisor.check.l2_hit_rate.name", "advisor.check.l2_hit_rate.label",
                    "advisor.check.l2_hit_rate.why"),
    "buffer_occupancy": ("advisor.check.buffer_occupancy.name",
                         "advisor.check.buffer_occupancy.label",
                         "advisor.check.buffer_occupancy.why"),
}
BOUND_IDS = {"compute": "advisor.bound.compute", "memory": "advisor.bound.memory",
             "latency": "advisor.bound.latency", "sync": "advisor.bound.sync",
             "imbalance": "advisor.bound.imbalance", "tail": "advisor.bound.tail",
             "none": "advisor.bound.none"}
METRIC_IDS = {"makespan_us": "advisor.metric.makespan_us",
              "overlap_ratio": "advisor.metric.overlap_ratio",
              "load_balance_mean_max": "advisor.metric.load_balance_mean_max",
              "l2_hit_rate": "advisor.metric.l2_hit_rate"}
DIRECTION_IDS = {"up": "advisor.direction.up", "down": "advisor.direction.down"}


@dataclass(frozen=True)
class Check:
    """One checklist item: its value, threshold and verdict (None: not applicable)."""

    key: str
    value: float | None
    threshold: float
    passed: bool | None
    detail: dict = field(default_factory=dict)  # values for the item's explanation


@dataclass(frozen=True)
class Tip:
    """One what-if: a message, the parameter changes, the metric it should move."""

    msg_id: str
    values: dict
    changes: dict
    metric: str
    direction: str  # "up" or "down"
    gain: float | None  # rough expected makespan ratio (old / new), when computable
    scenario: Scenario


@dataclass(frozen=True)
class Advice:
    checks: tuple[Check, ...]
    bound: str
    bound_values: dict
    tips: tuple[Tip, ...]


# ---- measures ----------------------------------------------------------------------------
def communication_share(result) -> float:
    """Core time in SyncAll spans and cross-core GM hand-offs / total core active span."""
    return mt.communication_share(result.timeline, result.per_core)


def buffer_occupancy(result) -> tuple[str, float] | None:
    """(buffer, used / capacity) of the kernel's own buffer plan, where it is known."""
    use = _advice(result).buffer_use
    return use(result.chip, result.params) if use else None


def _advice(result) -> kernels.common.record.Advice:
    return kernels.get(result.scenario.kernel).advice


def _shares(result) -> dict[str, float]:
    return mt.bound_shares(result.metrics, result.per_core, result.timeline, result.chip)


# ---- the checklist -----------------------------------------------------------------------
def _verdict(key: str, value: float | None, thresholds: dict) -> bool | None:
    if value is None:
        return None
    limit, sense = thresholds[key], CHECKS[key][1]
    return value >= limit if sense == "min" else value <= limit


def checklist(result, thresholds: dict, shares: dict | None = None) -> tuple[Check, ...]:
    """Every item's value and verdict (``shares``: the run's `_shares`, when at hand)."""
    m, sh = result.metrics, shares or _shares(result)
    cube = m["aic_cube_ratio"] > 0
    occ = buffer_occupancy(result)
    reuse = _advice(result).l2_reuse or m["l2_hit_rate"] > 0
    values = {
        "compute_utilization": (m["aic_cube_ratio"] if cube else m["aiv_vec_ratio"],
                                {"pipe": "CUBE" if cube else "VECTOR"}),
        "overlap": (m["overlap_ratio"], {}),
        "load_balance": (sh["balance"], {}),
        "communication": (sh["comm"], {}),
        "l2_hit_rate": (m["l2_hit_rate"] if reuse else None, {}),
        "buffer_occupancy": (occ[1] if occ else None, {"buffer": occ[0] if occ else "UB"}),
    }
    return tuple(Check(k, v, thresholds[k], _verdict(k, v, thresholds), d)
                 for k, (v, d) in values.items())


# ---- the bound ---------------------------------------------------------------------------
def classify(result, shares: dict | None = None) -> tuple[str, dict]:
    """The run's bound (``metrics.bound_of``, what ``result.metrics["bound"]`` holds) and
    the shares that decided it, in %, with the gain a compute-bound run would have."""
    sh = shares or _shares(result)
    kind = mt.classify_bound(sh, result.makespan_ns,
                             mt.waves_of(kernels.get(result.scenario.kernel), result.params))
    compute_ns = compute_bound_ns(result.per_core) if len(result.per_core) else 0.0
    gain = result.makespan_ns / compute_ns if compute_ns > 0 else None
    return kind, {**{k: pct(v) for k, v in sh.items()},
                  "gain": f"{gain:.1f}" if gain else "-"}


# ---- the rules ---------------------------------------------------------------------------
def _overlap_gain(result) -> float | None:
    """makespan / the busiest single pipe of any core: the time with perfect overlap."""
    pc = result.per_core
    busy = pc[[c for c in pc.columns if c.startswith("busy_ns_")]].to_numpy().max()
    return result.makespan_ns / busy if busy > 0 else None


def _tip(msg, changes, metric, direction, gain=None, **values) -> tuple:
    return msg, values, changes, metric, direction, gain


def _rule_buffers(result, ctx) -> list[tuple]:
    """Double buffering where the kernel has it and it is off."""
    double = _advice(result).double_buffer
    p = result.params
    if double is None or all(p.get(k) == v for k, v in double[1].items()):
        return []
    return [_tip(double[0], double[1], "overlap_ratio", "up", _overlap_gain(result),
                 overlap=pct(ctx["overlap"]))]


def _rule_cores(result, ctx) -> list[tuple]:
    """More cores when the kernel leaves most of them idle (and has tasks for them)."""
    advice, p, chip = _advice(result), result.params, result.chip
    kind = advice.block_cores
    if kind is None:
        return []
    cores = len(chip.vector_core_ids() if kind == "vector" else chip.cube_core_ids())
    if p["block_dim"] * 2 > cores:
        return []
    if advice.waves is not None and advice.waves(p)[0] <= p["block_dim"]:
        return []  # too few tasks: more cores would idle (see split-K)
    return [_tip("advisor.tip.block_dim", {"block_dim": cores}, "makespan_us", "down",
                 None, used=p["block_dim"], cores=cores)]


def _rule_kernel(result, ctx) -> list[tuple]:
    """The kernel's own rules (its record's ``advice.rules``)."""
    return [found for rule in _advice(result).rules for found in rule(result, ctx)]


def _mte2_rate_share(result) -> float:
    """Bytes per ns MTE2 moves while busy, over its per-core HBM cap (mean over cores)."""
    tl, pc = result.timeline, result.per_core
    moved = tl[tl["pipe"] == "MTE2"].groupby("core", observed=True)["bytes"].sum()
    busy = pc.set_index("core")["busy_ns_MTE2"].reindex(moved.index)
    cap = result.chip.gm_read_hbm_bytes_per_cycle * result.chip.clock_MHz / 1000.0
    rate = (moved / busy.where(busy > 0)).dropna()
    return float(rate.mean() / cap) if len(rate) else 1.0


#: a core whose MTE2 streams below this share of its cap while busy is latency-bound
LATENCY_BOUND_SHARE = 0.6


def _rule_tile(result, ctx) -> list[tuple]:
    """Larger tiles when MTE2 is busy, HBM is not, and each core's copies stream well below
    its path cap: small DataCopies whose issue and latency are not hidden by the copies in
    flight (vector_add's tile, decode's tile_tokens). A core already at its cap needs more
    cores, not bigger copies."""
    m, p = result.metrics, result.params
    if m["mte2_ratio"] < MEMORY_SHARE or m["hbm_utilization"] >= BANDWIDTH_FLOOR \
            or _mte2_rate_share(result) >= LATENCY_BOUND_SHARE:
        return []
    key = _advice(result).tile_param
    if key is None:
        return []
    return [_tip("advisor.tip.tile", {key: p[key] * 2}, "makespan_us", "down", None,
                 key=key, value=p[key], new=p[key] * 2, mte2=pct(m["mte2_ratio"]),
                 hbm=pct(m["hbm_utilization"]))]


RULES = (_rule_buffers, _rule_cores, _rule_kernel, _rule_tile)


def _accepted(result, changes: dict) -> Scenario | None:
    """The what-if scenario, or None when the kernel refuses it (or changes nothing)."""
    try:
        trial = result.scenario.replace(params=changes)
    except InputError:
        return None
    return None if trial.params == result.scenario.params else trial


def advise(result, thresholds: dict | None = None) -> Advice:
    """The checklist, the bound and the accepted what-ifs of one run."""
    thresholds = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    shares = _shares(result)
    bound, values = classify(result, shares)
    ctx = {"bound": bound, "thresholds": thresholds, "balance": shares["balance"],
           "accepts": lambda changes: _accepted(result, changes) is not None,
           "overlap": result.metrics["overlap_ratio"],
           "shares": {k: pct(v) for k, v in shares.items()}}
    tips = []
    for rule in RULES:
        for msg, vals, changes, metric, direction, gain in rule(result, ctx):
            scenario = _accepted(result, changes)
            if scenario is not None:
                gain = round(gain, 2) if gain and gain > 1.005 else None
                tips.append(Tip(msg, vals, changes, metric, direction, gain, scenario))
    return Advice(checklist(result, thresholds, shares), bound, values, tuple(tips))


def improved(tip: Tip, old: dict, new: dict) -> bool:
    """Whether the what-if moved its promised metric the promised way."""
    a, b = float(old[tip.metric]), float(new[tip.metric])
    return b > a if tip.direction == "up" else b < a


# ---- text --------------------------------------------------------------------------------
#: a check's verdict (None: not applicable) -> message id of its status word
STATUS_IDS = {True: "advisor.pass", False: "advisor.fail", None: "advisor.na"}


def status_text(check: Check, lang: str = "en") -> str:
    """The verdict as a word (a symbol would need a font the reader may not have)."""
    return t(STATUS_IDS[check.passed], lang)


def checklist_table(advice: Advice, lang: str = "en") -> pd.DataFrame:
    """The checklist as a table: item, this run's value (ratios as the metric tiles write
    them), threshold, status, meaning."""
    rows = []
    for c in advice.checks:
        value = t("advisor.na_value", lang) if c.value is None else f"{c.value:.1%}"
        rows.append({t("advisor.col.item", lang): t(CHECK_IDS[c.key][1], lang, **c.detail),
                     t("advisor.col.value", lang): value,
                     t("advisor.col.threshold", lang): f"{c.threshold:.0%}",
                     t("advisor.col.status", lang): status_text(c, lang),
                     t("advisor.col.why", lang): t(CHECK_IDS[c.key][2], lang, **c.detail)})
    return pd.DataFrame(rows)


def promise_text(tip: Tip, lang: str = "en") -> str:
    metric = t(METRIC_IDS[tip.metric], lang)
    direction = t(DIRECTION_IDS[tip.direction], lang)
    if tip.gain:
        return t("advisor.promise_gain", lang, metric=metric, direction=direction,
                 gain=f"{tip.gain:.2f}")
    return t("advisor.promise", lang, metric=metric, direction=direction)


def bound_text(advice: Advice, lang: str = "en") -> str:
    """Why the run is under its bound, with the shares that decided it. Plain prose: the
    bound's name is the metric's word, shown beside it."""
    return t(BOUND_IDS[advice.bound], lang, **advice.bound_values)


def report_content(result, lang: str = "en") -> list:
    """The advisor as a report section: checklist table, bound, tips (default thresholds)."""
    advice = advise(result)
    tips = "\n".join(f"- {t(tip.msg_id, lang, **tip.values)} *{promise_text(tip, lang)}*"
                     for tip in advice.tips) or t("advisor.no_tips", lang)
    bound = t("advisor.bound_line", lang, label=t("metric.bound.label", lang),
              value=t(BOUND_VALUE_IDS[advice.bound], lang), text=bound_text(advice, lang))
    return [t("advisor.intro_report", lang), checklist_table(advice, lang), bound, tips]

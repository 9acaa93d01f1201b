"""Two runs side by side: which scenario fields differ, every metric of A and B with
B − A and B / A, and sentences that say what changed and, where the metrics show it, why.

``compare(a, b) -> Comparison`` is pure (two ``Result`` in, tables out); ``sentences`` turns
a comparison into ``(message id, values)`` pairs by explicit rules, each with its
threshold below, so that an identical pair says nothing and every sentence can be traced
to the numbers in the table. ``say`` renders one sentence in a language.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .i18n import t
from .metrics import BOUND_VALUE_IDS, METRIC_DEF_IDS, METRICS, RATIO_LANES, worked
from .simulate import Result

#: metrics of the table: the run's metrics plus the cores that did any work
TABLE_METRICS: dict[str, str] = {**METRICS, "cores_used": ""}
TEXT_METRICS = ("bound",)
COLUMNS = ("metric", "a", "b", "delta", "ratio", "unit", "definition")
#: below this a value is rounding noise (a stall ratio of 1e-16): B / A is left undefined
EPS = 1e-9
#: pipes whose busy ratio the pipe rule reads (SCALAR's counts SyncAll waits, not work)
PIPE_METRICS = tuple(m for m in RATIO_LANES if m != "scalar_ratio")
#: scenario parameters that choose single or double buffering
BUFFER_PARAMS = ("buffer_num", "db_l1", "db_l0", "db_l0c")

# ---- the rules' thresholds (a difference smaller than these is not worth a sentence) -----
SPEED_MIN = 0.02  # makespan ratio beyond 1 ± 2 %
OVERLAP_STEP = 0.2  # compute/transfer overlap ratio, absolute change
PIPE_STEP = 0.15  # a pipe's busy ratio, absolute change
BALANCE_STEP = 0.1  # load balance (mean/max), absolute change
L2_STEP = 0.1  # L2 hit rate, absolute change
TRAFFIC_MIN = 0.1  # HBM bytes ratio beyond 1 ± 10 %
HALF = (0.45, 0.55)  # an HBM bytes ratio in this range is "about half"
CORES_MIN = 1.25  # cores used, ratio either way


@dataclass(frozen=True, eq=False)
class Comparison:
    """Scenario diff and metric table of two runs (A is the reference, B the change)."""

    a: Result
    b: Result
    diff: tuple[tuple[str, object, object], ...]  # (field, A's value, B's value)
    table: pd.DataFrame  # COLUMNS; one row per TABLE_METRICS entry

    def value(self, metric: str, side: str) -> object:
        """A's or B's value of one metric (side "a" or "b")."""
        return self.table.loc[self.table["metric"] == metric, side].iloc[0]

    def values(self, metric: str) -> tuple:
        return self.value(metric, "a"), self.value(metric, "b")


def _flat(scenario) -> dict[str, object]:
    """A scenario as field -> value (params and overrides as ``params.x``), name left out."""
    data = scenario.to_dict()
    flat = {k: data[k] for k in ("preset", "kernel", "seed")}
    for group in ("params", "overrides"):
        flat.update({f"{group}.{k}": v for k, v in sorted(data[group].items())})
    return flat


def scenario_diff(a, b) -> tuple[tuple[str, object, object], ...]:
    """Fields whose values differ, in field order (None where one side lacks the field)."""
    fa, fb = _flat(a), _flat(b)
    fields = list(fa) + [f for f in fb if f not in fa]
    return tuple((f, fa.get(f), fb.get(f)) for f in fields if fa.get(f) != fb.get(f))


def cores_used(per_core: pd.DataFrame) -> int:
    """Cores that did any work (``metrics.worked``: a core that only waits at SyncAll did
    none), the same cores the load balance chooses from."""
    return int(worked(per_core).sum())


def metric_values(result: Result) -> dict[str, object]:
    """The run's metrics plus ``cores_used``."""
    return {**result.metrics, "cores_used": cores_used(result.per_core)}


def _row(name: str, a: object, b: object) -> dict[str, object]:
    numeric = name not in TEXT_METRICS
    delta = float(b) - float(a) if numeric else np.nan
    ratio = float(b) / float(a) if numeric and abs(float(a)) > EPS else np.nan
    return {"metric": name, "a": a, "b": b, "delta": delta, "ratio": ratio,
            "unit": TABLE_METRICS[name], "definition": METRIC_DEF_IDS[name]}


def compare(a: Result, b: Result) -> Comparison:
    """The diff of the two scenarios and the table of every metric (B − A, B / A)."""
    va, vb = metric_values(a), metric_values(b)
    table = pd.DataFrame([_row(n, va[n], vb[n]) for n in TABLE_METRICS], columns=COLUMNS)
    return Comparison(a, b, scenario_diff(a.scenario, b.scenario), table)


# ---- the rules ---------------------------------------------------------------------------
Sentence = tuple[str, dict]


def rule_speed(c: Comparison) -> list[Sentence]:
    """B faster (or slower) than A by more than SPEED_MIN."""
    a, b = (float(v) for v in c.values("makespan_us"))
    if a <= 0 or b <= 0 or abs(a / b - 1) <= SPEED_MIN and abs(b / a - 1) <= SPEED_MIN:
        return []
    values = {"a_us": a, "b_us": b}
    if a > b:
        return [("compare.say.faster", {"times_x": a / b, **values})]
    return [("compare.say.slower", {"times_x": b / a, **values})]


def rule_bound(c: Comparison) -> list[Sentence]:
    """What limits the run changed (memory, compute, imbalance, latency)."""
    a, b = c.values("bound")
    return [] if a == b else [("compare.say.bound", {"a_bound": a, "b_bound": b})]


def _buffer_change(c: Comparison) -> str:
    """The buffering parameters that differ, as "buffer_num 1 → 2" (empty if none)."""
    fields = {f"params.{p}" for p in BUFFER_PARAMS}
    return ", ".join(f"{f.split('.', 1)[1]} {a} → {b}" for f, a, b in c.diff if f in fields)


def _compute_pipe(c: Comparison) -> str:
    """The compute pipe the copies overlap with: CUBE when the cube did more, else VECTOR."""
    cube = max(float(v) for v in c.values("aic_cube_ratio"))
    vector = max(float(v) for v in c.values("aiv_vec_ratio"))
    return "CUBE" if cube > vector else "VECTOR"


def rule_double_buffer(c: Comparison) -> list[Sentence]:
    """Buffering differs and the compute/transfer overlap moved by OVERLAP_STEP or more."""
    change = _buffer_change(c)
    a, b = (float(v) for v in c.values("overlap_ratio"))
    if not change or abs(b - a) < OVERLAP_STEP:
        return []
    msg_id = "compare.say.double_buffer_on" if b > a else "compare.say.double_buffer_off"
    return [(msg_id, {"change": change, "pipe": _compute_pipe(c), "a_pct": a, "b_pct": b})]


def rule_cores(c: Comparison) -> list[Sentence]:
    """B keeps CORES_MIN times more (or fewer) cores busy."""
    a, b = (int(v) for v in c.values("cores_used"))
    if min(a, b) <= 0 or max(a, b) / min(a, b) < CORES_MIN:
        return []
    return [("compare.say.cores_more" if b > a else "compare.say.cores_fewer",
             {"a_n": a, "b_n": b})]


def _step_rule(metric: str, step: float, up: str, down: str) -> Callable:
    """A rule that fires when ``metric`` moves by ``step`` or more (absolute)."""
    def rule(c: Comparison) -> list[Sentence]:
        a, b = (float(v) for v in c.values(metric))
        if abs(b - a) < step:
            return []
        return [(up if b > a else down, {"a_pct": a, "b_pct": b})]
    rule.__doc__ = f"{metric} changes by {step} or more."
    return rule


rule_balance = _step_rule("load_balance_mean_max", BALANCE_STEP, "compare.say.balance_up",
                          "compare.say.balance_down")
rule_l2 = _step_rule("l2_hit_rate", L2_STEP, "compare.say.l2_up", "compare.say.l2_down")


def rule_hbm(c: Comparison) -> list[Sentence]:
    """HBM bytes about halved, or down / up by more than TRAFFIC_MIN."""
    a, b = (float(v) for v in c.values("hbm_bytes"))
    if a <= 0:
        return []
    ratio = b / a
    values = {"a_mib": a, "b_mib": b, "ratio_x": ratio}
    if HALF[0] <= ratio <= HALF[1]:
        return [("compare.say.hbm_halved", values)]
    if abs(ratio - 1) <= TRAFFIC_MIN:
        return []
    return [("compare.say.hbm_down" if ratio < 1 else "compare.say.hbm_up", values)]


def rule_pipes(c: Comparison) -> list[Sentence]:
    """Every pipe (but SCALAR) whose busy ratio moves by PIPE_STEP or more."""
    found = []
    for metric in PIPE_METRICS:
        pipe = RATIO_LANES[metric]
        a, b = (float(v) for v in c.values(metric))
        if abs(b - a) >= PIPE_STEP:
            found.append(("compare.say.pipe_busier" if b > a else "compare.say.pipe_idler",
                          {"pipe": pipe, "metric": metric, "a_pct": a, "b_pct": b}))
    return found


#: every rule, in the order its sentences are shown: what changed first, then why
RULES: tuple[Callable[[Comparison], list[Sentence]], ...] = (
    rule_speed, rule_bound, rule_double_buffer, rule_cores, rule_balance, rule_hbm,
    rule_l2, rule_pipes)


def sentences(comparison: Comparison) -> list[Sentence]:
    """What the rules find, as (message id, raw values); empty for equivalent runs."""
    return [s for rule in RULES for s in rule(comparison)]


# ---- rendering ---------------------------------------------------------------------------
def _bound(value: object, lang: str) -> str:
    return t(BOUND_VALUE_IDS[value], lang)


#: how a value is written, by the suffix of its name (``a_us`` -> "us")
FORMATS: dict[str, Callable[[object, str], str]] = {
    "us": lambda v, lang: f"{float(v):,.2f} µs",
    "pct": lambda v, lang: f"{float(v):.0%}",
    "x": lambda v, lang: f"{float(v):.2f}×",
    "mib": lambda v, lang: f"{float(v) / 2**20:,.2f} MiB",
    "n": lambda v, lang: f"{int(v):,}",
    "bound": _bound,
}


def say(sentence: Sentence, lang: str = "en") -> str:
    """One sentence in ``lang``, its numbers formatted by their names' suffixes."""
    msg_id, values = sentence
    text = {k: FORMATS.get(k.rsplit("_", 1)[-1], lambda v, _: str(v))(v, lang)
            for k, v in values.items()}
    return t(msg_id, lang, **text)

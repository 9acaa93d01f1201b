"""The load-balance page's numbers, free of any UI: every policy's outcome on one workload
(per-core loads, pieces of work over time, per-sequence completion, the ``Balance``
metrics), predicted with ``scheduling.plan`` for a synthetic task list, or emulated for
the decode kernel's attention with the plan of the kernel's own estimates beside it;
the comparison table and the sweep over the batch size.

The page (``explorer.ui.balance_view``) reads its widgets, decides what to cache and
draws; everything it shows is computed here from (chip, parameters, results), so the
CLI, notebooks and tests get the same numbers. Refusals are ``InputError``s in the
library's English; `TooMuchWork` also carries what was counted (``what``, ``count``,
``limit``) so the page can say it in the reader's language.

Everything is in µs: plans count cycles (divided by the chip's clock), the emulator ns.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

import hardware_presets as hp
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.decode import kernel as decode
from kernels.decode import params as dp
from kernels.decode import workload as wl

from . import scheduling as sc
from .scenario import Scenario
from .simulate import Result, simulate

SEED = 0  # lengths are drawn from it, as the decode page does
#: five emulated attention runs per workload: each must stay small
MAX_INSTRUCTIONS = 250_000
MAX_TASKS = 65_536  # synthetic tasks per plan (ten plans per workload)
SWEEP_BATCHES = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
SWEEP_POLICIES = ("static", "round_robin", "lpt")
#: the metrics shown for one outcome, in the page's order
METRICS = ("makespan", "efficiency", "balance_ratio", "gap", "cv", "lower_bound", "p50", "p99")
#: metrics in µs: their column in `table` is ``<name>_us``
TIME_METRICS = frozenset({"makespan", "lower_bound", "p50", "p99"})
#: what a limit counts (the English of the refusal; the page words it from its catalogue)
LIMITS = {"tasks": "tasks (batch x KV heads) per plan",
          "instructions": "instructions per emulated run (one run per policy)"}
SMALLER_HINT = "Use a smaller batch, shorter contexts or fewer tasks per sequence."
#: the workload parameters the decode kernel validates (mean <= max, one length each)
WORKLOAD_KEYS = ("batch", "distribution", "mean_len", "max_len", "lengths")


class TooMuchWork(InputError):
    """More work than the page computes at once: ``count`` of ``what`` over ``limit``."""

    def __init__(self, field: str, value: object, what: str, count: int, limit: int) -> None:
        self.what, self.count, self.limit = what, count, limit
        super().__init__(field, value, f"at most {limit:,} {LIMITS[what]}; "
                         f"these settings make {count:,}", SMALLER_HINT)


@dataclass(frozen=True, eq=False)
class Outcome:
    """One policy on the workload, in µs."""

    policy: str
    series: str  # "unsplit" / "split" (synthetic), "predicted" / "emulated" (decode)
    loads: np.ndarray  # busy time per core slot
    balance: sc.Balance
    pieces: pd.DataFrame  # slot, seq, start_us, end_us
    seq_done: np.ndarray  # completion of every sequence

    def percentiles(self) -> tuple[float, float]:
        """P50 and P99 of the sequences' completions (0 when there are none)."""
        if not len(self.seq_done):
            return 0.0, 0.0
        p50, p99 = np.percentile(self.seq_done, [50, 99])
        return float(p50), float(p99)

    def largest_piece(self) -> float:
        """The longest piece of work: the lower bound's longest task for a plan."""
        return float((self.pieces["end_us"] - self.pieces["start_us"]).max())

    def row(self) -> dict:
        """The outcome as one row of `table` (times in µs, ratios as fractions)."""
        b = self.balance
        p50, p99 = self.percentiles()
        return {"policy": self.policy, "series": self.series, "makespan_us": b.makespan,
                "efficiency": b.efficiency, "balance_ratio": b.balance_ratio, "cv": b.cv,
                "lower_bound_us": b.lower_bound, "gap": b.gap, "p50_us": p50, "p99_us": p99}


def table(outcomes: list[Outcome]) -> pd.DataFrame:
    """Every outcome side by side: one row each, the columns of `Outcome.row`."""
    return pd.DataFrame([o.row() for o in outcomes])


def metric_value(row: dict | pd.Series, name: str) -> float:
    """One of `METRICS` from a row of `table` (times in µs)."""
    return float(row[f"{name}_us" if name in TIME_METRICS else name])


# ---- the chip and the cores --------------------------------------------------------------
def chip_overrides(p: dict, overrides: dict) -> tuple:
    """The user's chip overrides plus the page's cluster size (0 keeps the chip's), as a
    sorted tuple (hashable: caches key on it)."""
    extra = {"cluster_size": p["cluster_size"]} if p["cluster_size"] else {}
    return tuple(sorted({**overrides, **extra}.items()))


def page_chip(preset: str, overrides: tuple) -> Chip:
    """The chip the page plans and emulates on (``hp.load`` caches it)."""
    return hp.load(preset, **dict(overrides))


def n_cores(chip: Chip, p: dict) -> int:
    """The cores the tasks are spread over: the page's count, or every vector core."""
    return p["cores"] or len(chip.vector_core_ids())


# ---- refusals ----------------------------------------------------------------------------
def at_most(count: int, limit: int, field: str, shown: str, what: str) -> None:
    """Refuse more work than the page computes at once, before computing it."""
    if count > limit:
        raise TooMuchWork(field, shown, what, int(count), limit)


def checked(p: dict) -> dict:
    """The workload part validated as the decode kernel validates it (mean <= max,
    one length per sequence, each 1..max_len); ``p`` itself when it passes."""
    wl.check({k: p[k] for k in WORKLOAD_KEYS})
    return p


# ---- predicted: a plan -------------------------------------------------------------------
def from_plan(plan: sc.Plan, tasks: sc.TaskList, clock_MHz: float, series: str) -> Outcome:
    """A plan's loads, pieces and completions in µs (cycles / MHz)."""
    end = plan.end / clock_MHz
    pieces = pd.DataFrame({"slot": plan.slots, "seq": tasks.seq[plan.parent],
                           "start_us": end - plan.costs / clock_MHz, "end_us": end})
    loads = plan.loads / clock_MHz
    return Outcome(plan.policy, series, loads, sc.Balance.of(loads, plan.costs.max() / clock_MHz),
                   pieces, plan.seq_done(tasks.seq) / clock_MHz)


def synthetic_tasks(p: dict) -> sc.TaskList:
    """The synthetic task list of the page's workload, refused above `MAX_TASKS`."""
    at_most(p["batch"] * p["kv_heads"], MAX_TASKS, "params.batch, kv_heads",
            f"{p['batch']} x {p['kv_heads']}", "tasks")
    return sc.synthetic_tasks(p["distribution"], p["batch"], mean_len=p["mean_len"],
                              max_len=p["max_len"], seed=SEED, lengths=p["lengths"],
                              kv_heads=p["kv_heads"])


def synthetic(chip: Chip, p: dict) -> list[Outcome]:
    """Every policy, unsplit then split, on the synthetic task list (predicted), with the
    options the decode kernel would use on this chip (inter-core cost, cluster size,
    the queue's dispatch cost)."""
    tasks, cores = synthetic_tasks(p), n_cores(chip, p)
    kw = dp.schedule(chip, p["policy"], p["inter_core_cost"], cores)
    del kw["policy"]
    return [from_plan(sc.plan(tasks, cores, policy, split=split, **kw), tasks,
                      chip.clock_MHz, "split" if split else "unsplit")
            for split in (False, True) for policy in sc.POLICIES]


# ---- emulated: the decode kernel ---------------------------------------------------------
def decode_params(p: dict) -> dict:
    """The decode kernel's parameters for the page's workload: its attention only, on
    the page's cores, over-committing allowed (the page may ask for fewer cores)."""
    return {"model": p["model"], "batch": p["batch"], "distribution": p["distribution"],
            "mean_len": p["mean_len"], "max_len": p["max_len"], "lengths": p["lengths"],
            "impl": p["impl"], "block_dim": p["cores"], "phases": "attention",
            "inter_core_cost": p["inter_core_cost"], "allow_overcommit": True}


def decode_scenarios(preset: str, overrides: tuple, p: dict) -> dict[str, Scenario]:
    """The attention of the decode workload under every policy, checked and refused
    above `MAX_INSTRUCTIONS` per run before anything is built."""
    chip, params = page_chip(preset, overrides), decode_params(p)
    checked_p = decode.check(chip, params)
    lengths, _ = decode.workload(checked_p, np.random.default_rng(SEED))
    at_most(decode.instruction_count(chip, decode.DecodeParams.of(checked_p), lengths),
            MAX_INSTRUCTIONS, "params.batch, mean_len",
            f"{p['batch']} x {int(np.mean(lengths)):,}", "instructions")
    return {policy: Scenario.make(preset, "decode", {**params, "policy": policy},
                                  dict(overrides), seed=SEED) for policy in sc.POLICIES}


def core_names(scenario: Scenario) -> list[str]:
    """The slot cores' names as the chip gives them (AIV0, AIC3, ...)."""
    names = scenario.chip().core_names()
    return [names[core] for core in sc.slot_cores(scenario)]


def spans(timeline: pd.DataFrame, cores: tuple[int, ...]) -> pd.DataFrame:
    """Each task's span on each of ``cores`` (slot = position in ``cores``), in µs,
    cut at the first SyncAll's end: split-KV's combine runs after it, and one span
    across the barrier would hide the wait."""
    sync = timeline.loc[timeline["op"] == "SyncAll", "end_ns"]
    after = timeline["start_ns"] >= (sync.min() if len(sync) else np.inf)
    work = timeline.assign(after=after)
    work = work[(work["task"] >= 0) & work["core"].isin(cores)]
    found = work.groupby(["core", "task", "after"], observed=True).agg(
        start=("start_ns", "min"), end=("end_ns", "max")).reset_index()
    slot = {core: i for i, core in enumerate(cores)}
    return pd.DataFrame({"slot": found["core"].map(slot).to_numpy(np.int64),
                         "seq": found["task"].to_numpy(np.int64),
                         "start_us": found["start"] / 1e3, "end_us": found["end"] / 1e3})


def seq_completion(timeline: pd.DataFrame, batch: int) -> np.ndarray:
    """When each of ``batch`` sequences is done (µs): the end of its last instruction
    (0 for a sequence without any)."""
    work = timeline[timeline["task"] >= 0]
    done = work.groupby("task", observed=True)["end_ns"].max()
    seq_done = np.zeros(batch)
    seq_done[done.index.to_numpy()] = done.to_numpy() / 1e3
    return seq_done


def predicted(scenario: Scenario) -> Outcome:
    """The plan of the kernel's own tasks and cost estimates for this scenario."""
    tasks, kw = sc.kernel_tasks(scenario), sc.decode_schedule(scenario)
    cores, policy = kw.pop("cores"), kw.pop("policy")
    return from_plan(sc.plan(tasks, cores, policy, **kw), tasks, scenario.chip().clock_MHz,
                     "predicted")


def emulated(scenario: Scenario, result: Result, prediction: Outcome) -> Outcome:
    """The emulated attention: busy time per slot core (SyncAll waits excluded), each
    sequence's span per core, completions. The lower bound's longest task is the plan's
    (``prediction``): the timeline's task is the sequence, so two heads of one sequence
    on one core make one span."""
    cores = sc.slot_cores(scenario)
    loads = sc.emulated_loads(result, cores) / 1e3
    return Outcome(scenario.params_dict["policy"], "emulated", loads,
                   sc.Balance.of(loads, prediction.largest_piece()),
                   spans(result.timeline, cores),
                   seq_completion(result.timeline, scenario.params_dict["batch"]))


def decode_outcomes(scenarios: dict[str, Scenario],
                    run: Callable[[Scenario], Result] = simulate) -> list[Outcome]:
    """Predicted then emulated outcome of every policy (``run`` emulates: the page
    passes its shared, cached one)."""
    plans = [predicted(s) for s in scenarios.values()]
    return plans + [emulated(s, run(s), plan) for s, plan in zip(scenarios.values(), plans)]


def tasks_per_sequence(scenarios: dict[str, Scenario]) -> int:
    """The kernel's attention tasks per sequence (KV heads per pass), at least 1."""
    first = next(iter(scenarios.values()))
    return max(1, round(len(sc.kernel_tasks(first)) / first.params_dict["batch"]))


# ---- the sweep over the batch size -------------------------------------------------------
def sweep(cores: int, distribution: str, mean_len: int, max_len: int,
          tasks_per_seq: int) -> pd.DataFrame:
    """Predicted efficiency of `SWEEP_POLICIES` (unsplit and split) per batch size of
    `SWEEP_BATCHES`, on the synthetic cost model."""
    return sc.sweep_batches(SWEEP_BATCHES, cores, distribution=distribution, mean_len=mean_len,
                            max_len=max_len, seed=SEED, policies=SWEEP_POLICIES,
                            kv_heads=tasks_per_seq)


def filled_batch(cores: int, tasks_per_seq: int) -> float:
    """The batch at which there are as many tasks as cores: below it each core gets one
    task at most and no policy beats the longest one."""
    return cores / tasks_per_seq

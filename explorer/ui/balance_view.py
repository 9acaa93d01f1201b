"""What the load-balance page computes and shows about one workload: every policy's
outcome (per-core loads, pieces of work over time, per-sequence completion, the
``Balance`` metrics), predicted with ``scheduling.plan`` for a synthetic task list or
emulated for the decode kernel's attention (with the plan's prediction next to it); the
metrics of the chosen policy, its loads and timeline, all policies side by side, and the
sweep over the batch size.

Everything is in µs: plans count cycles (divided by the chip's clock), the emulator ns.
Outcomes are cached as resources on their inputs, so a view change reruns in a blink.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

import hardware_presets as hp
from explorer.core import Scenario
from explorer.core import scheduling as sc
from explorer.plots import balance as bp
from explorer.ui import run_view, state
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.decode import kernel as decode
from kernels.decode import params as dp

SEED = 0  # lengths are drawn from it, as the decode page does
#: five emulated attention runs per workload: each must stay small
MAX_INSTRUCTIONS = 250_000
MAX_TASKS = 65_536  # synthetic tasks per plan (ten plans per workload)
SWEEP_BATCHES = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
SWEEP_POLICIES = ("static", "round_robin", "lpt")
METRICS = ("makespan", "efficiency", "balance_ratio", "gap", "cv", "lower_bound", "p50", "p99")


@dataclass(frozen=True, eq=False)
class Outcome:
    """One policy on the workload, in µs."""

    policy: str
    series: str  # "unsplit" / "split" (synthetic), "predicted" / "emulated" (decode)
    loads: np.ndarray  # busy time per core slot
    balance: sc.Balance
    pieces: pd.DataFrame  # slot, seq, start_us, end_us
    seq_done: np.ndarray  # completion of every sequence

    def row(self) -> dict:
        b = self.balance
        p50, p99 = np.percentile(self.seq_done, [50, 99]) if len(self.seq_done) else (0, 0)
        return {"policy": self.policy, "series": self.series, "makespan_us": b.makespan,
                "efficiency": b.efficiency, "balance_ratio": b.balance_ratio, "cv": b.cv,
                "lower_bound_us": b.lower_bound, "gap": b.gap, "p50_us": float(p50),
                "p99_us": float(p99)}


def table(outcomes: list[Outcome]) -> pd.DataFrame:
    return pd.DataFrame([o.row() for o in outcomes])


def chip_overrides(p: dict) -> tuple:
    """The sidebar's overrides plus the page's cluster size (0 keeps the chip's)."""
    extra = {"cluster_size": p["cluster_size"]} if p["cluster_size"] else {}
    return tuple(sorted({**state.overrides(), **extra}.items()))


def page_chip(p: dict) -> Chip:
    return hp.load(state.preset(), **dict(chip_overrides(p)))


def n_cores(chip: Chip, p: dict) -> int:
    return p["cores"] or len(chip.vector_core_ids())


# ---- predicted: a plan -------------------------------------------------------------------
def from_plan(plan: sc.Plan, tasks: sc.TaskList, clock_MHz: float, series: str) -> Outcome:
    """A plan's loads, pieces and completions in µs (cycles / MHz)."""
    end = plan.end / clock_MHz
    pieces = pd.DataFrame({"slot": plan.slots, "seq": tasks.seq[plan.parent],
                           "start_us": end - plan.costs / clock_MHz, "end_us": end})
    loads = plan.loads / clock_MHz
    return Outcome(plan.policy, series, loads, sc.Balance.of(loads, plan.costs.max() / clock_MHz),
                   pieces, plan.seq_done(tasks.seq) / clock_MHz)


def at_most(count: int, limit: int, field: str, shown: str, msg_id: str) -> None:
    """Refuse more work than the page computes at once, naming the limit and the count."""
    if count > limit:
        raise InputError(field, shown, state.tr(msg_id, count=f"{count:,}", limit=f"{limit:,}"),
                         hint=state.tr("ui.balance.smaller_hint"))


def checked(p: dict) -> dict:
    """The workload part validated as the decode kernel validates it (mean <= max,
    one length per sequence, each 1..max_len)."""
    dp.wl.check({k: p[k] for k in ("batch", "distribution", "mean_len", "max_len", "lengths")})
    return p


def synthetic_tasks(p: dict) -> sc.TaskList:
    tasks = sc.synthetic_tasks(p["distribution"], p["batch"], mean_len=p["mean_len"],
                               max_len=p["max_len"], seed=SEED, lengths=p["lengths"],
                               kv_heads=p["kv_heads"])
    at_most(len(tasks), MAX_TASKS, "params.batch, kv_heads", f"{p['batch']} x {p['kv_heads']}",
            "ui.balance.too_many_tasks")
    return tasks


@st.cache_resource(max_entries=16, show_spinner=False)
def synthetic(preset: str, overrides: tuple, frozen: tuple) -> list[Outcome]:
    """Every policy, unsplit and split, on the synthetic task list (predicted)."""
    p, chip = dict(frozen), hp.load(preset, **dict(overrides))
    tasks, cores = synthetic_tasks(p), n_cores(chip, p)
    kw = dp.schedule(chip, p, cores)
    del kw["policy"]
    return [from_plan(sc.plan(tasks, cores, policy, split=split, **kw), tasks,
                      chip.clock_MHz, "split" if split else "unsplit")
            for split in (False, True) for policy in sc.POLICIES]


# ---- emulated: the decode kernel ---------------------------------------------------------
def decode_scenarios(chip: Chip, p: dict) -> dict[str, Scenario]:
    """The attention of the decode workload under every policy, checked and small enough."""
    params = {"model": p["model"], "batch": p["batch"], "distribution": p["distribution"],
              "mean_len": p["mean_len"], "max_len": p["max_len"], "lengths": p["lengths"],
              "impl": p["impl"], "block_dim": p["cores"], "phases": "attention",
              "inter_core_cost": p["inter_core_cost"], "allow_overcommit": True}
    checked_p = decode.check(chip, params)
    lengths, _ = decode.workload(checked_p, np.random.default_rng(SEED))
    at_most(decode.instruction_count(chip, checked_p, lengths), MAX_INSTRUCTIONS,
            "params.batch, mean_len", f"{p['batch']} x {int(np.mean(lengths)):,}",
            "ui.balance.too_many_instructions")
    return {policy: Scenario.make(state.preset(), "decode", {**params, "policy": policy},
                                  dict(chip_overrides(p)), seed=SEED) for policy in sc.POLICIES}


def core_names(scenario: Scenario) -> list[str]:
    """The slot cores' names as the chip gives them (AIV0, AIC3, ...)."""
    names = scenario.chip().core_names()
    return [names[core] for core in sc.slot_cores(scenario)]


def _spans(timeline: pd.DataFrame, cores: tuple[int, ...]) -> pd.DataFrame:
    """Each task's span on each slot core, before and after a SyncAll (split-KV's
    combine runs after it)."""
    sync = timeline.loc[timeline["op"] == "SyncAll", "end_ns"]
    after = timeline["start_ns"] >= (sync.min() if len(sync) else np.inf)
    work = timeline.assign(after=after)
    work = work[(work["task"] >= 0) & work["core"].isin(cores)]
    spans = work.groupby(["core", "task", "after"], observed=True).agg(
        start=("start_ns", "min"), end=("end_ns", "max")).reset_index()
    slot = {core: i for i, core in enumerate(cores)}
    return pd.DataFrame({"slot": spans["core"].map(slot).to_numpy(np.int64),
                         "seq": spans["task"].to_numpy(np.int64),
                         "start_us": spans["start"] / 1e3, "end_us": spans["end"] / 1e3})


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs={Scenario: state.scenario_key})
def emulated(scenario: Scenario) -> Outcome:
    """The emulated attention: busy time per slot core, each sequence's span per core,
    completions; the lower bound's longest task is the plan's (the timeline's task is
    the sequence, so two heads of one sequence on one core make one span)."""
    result, cores = state.simulate(scenario), sc.slot_cores(scenario)
    work = result.timeline[result.timeline["task"] >= 0]
    loads = sc.emulated_loads(result, cores) / 1e3
    plan = predicted(scenario).pieces
    largest = float((plan["end_us"] - plan["start_us"]).max())
    done = work.groupby("task", observed=True)["end_ns"].max()
    seq_done = np.zeros(scenario.params_dict["batch"])
    seq_done[done.index.to_numpy()] = done.to_numpy() / 1e3
    return Outcome(scenario.params_dict["policy"], "emulated", loads,
                   sc.Balance.of(loads, largest), _spans(result.timeline, cores), seq_done)


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs={Scenario: state.scenario_key})
def predicted(scenario: Scenario) -> Outcome:
    """The plan of the kernel's own tasks and cost estimates for this scenario."""
    tasks, kw = sc.kernel_tasks(scenario), sc.decode_schedule(scenario)
    cores, policy = kw.pop("cores"), kw.pop("policy")
    return from_plan(sc.plan(tasks, cores, policy, **kw), tasks, scenario.chip().clock_MHz,
                     "predicted")


def decode_outcomes(scenarios: dict[str, Scenario]) -> list[Outcome]:
    """Predicted and emulated outcome of every policy (emulation cached per scenario)."""
    with st.spinner(state.tr("ui.balance.running")):
        emulations = [emulated(s) for s in scenarios.values()]
    return [predicted(s) for s in scenarios.values()] + emulations


def tasks_per_sequence(scenarios: dict[str, Scenario]) -> int:
    first = next(iter(scenarios.values()))
    return max(1, round(len(sc.kernel_tasks(first)) / first.params_dict["batch"]))


# ---- showing -----------------------------------------------------------------------------
def _value(name: str, row: pd.Series) -> str:
    if name in ("makespan", "lower_bound", "p50", "p99"):
        return f"{row[f'{name}_us']:,.2f} µs"
    return f"{row[name]:.3f}" if name == "cv" else f"{row[name]:.1%}"


def show_metrics(outcome: Outcome) -> None:
    """The chosen policy's metrics in rows of four, each with its one-line definition."""
    row = pd.Series(outcome.row())
    for start in range(0, len(METRICS), 4):
        for column, name in zip(st.columns(4), METRICS[start:start + 4]):
            column.metric(state.tr(f"ui.balance.metric.{name}"), _value(name, row),
                          help=state.tr(f"ui.balance.def.{name}"), border=True)


def show_loads(outcome: Outcome, names: list[str], prediction: Outcome | None) -> None:
    fig = bp.loads_figure(outcome.loads, outcome.balance.lower_bound, state.language(),
                          names=names, predicted_us=None if prediction is None
                          else prediction.loads)
    run_view.show(fig, key="lb_loads")
    st.caption(state.tr("ui.balance.caption.loads"))


def show_gantt(outcome: Outcome, names: list[str]) -> None:
    fig = bp.gantt_figure(outcome.pieces, len(names), state.language(), names=names,
                          lower_bound_us=outcome.balance.lower_bound)
    run_view.show(fig, key="lb_gantt")
    st.caption(state.tr(f"ui.balance.caption.gantt_{outcome.series}"))


def _display(df: pd.DataFrame) -> pd.DataFrame:
    """The comparison as text, headed in the session's language."""
    out = pd.DataFrame({
        state.tr("ui.balance.col.policy"): [bp.policy_name(p, state.language())
                                            for p in df["policy"]],
        state.tr("ui.balance.col.series"): [state.tr(f"plots.lb.series.{s}")
                                            for s in df["series"]]})
    for name in METRICS:
        out[state.tr(f"ui.balance.metric.{name}")] = [_value(name, r) for _, r in df.iterrows()]
    return out


def show_comparison(df: pd.DataFrame, chosen: str, main_series: str) -> None:
    """Every policy side by side: efficiency bars, P50 / P99, and the full table."""
    st.subheader(state.tr("ui.balance.compare_title"))
    lang = state.language()
    left, right = st.columns(2)
    with left:
        run_view.show(bp.policies_figure(df, lang, chosen), key="lb_policies")
    with right:
        run_view.show(bp.completion_figure(df[df["series"] == main_series], lang),
                      key="lb_completion")
    kind = "emulated" if main_series == "emulated" else "synthetic"
    st.caption(state.tr(f"ui.balance.caption.compare_{kind}"))
    st.dataframe(_display(df), hide_index=True, width="stretch")


@st.cache_data(max_entries=16, show_spinner=False)
def sweep(cores: int, distribution: str, mean_len: int, max_len: int,
          tasks_per_seq: int) -> pd.DataFrame:
    return sc.sweep_batches(SWEEP_BATCHES, cores, distribution=distribution, mean_len=mean_len,
                            max_len=max_len, seed=SEED, policies=SWEEP_POLICIES,
                            kv_heads=tasks_per_seq)


def show_sweep(p: dict, cores: int, tasks_per_seq: int) -> None:
    """Predicted efficiency from batch 1 to 256 on these cores (a distribution, not a list)."""
    st.subheader(state.tr("ui.balance.sweep_title"))
    if p["distribution"] == "list":
        st.caption(state.tr("ui.balance.sweep_list"))
        return
    df = sweep(cores, p["distribution"], p["mean_len"], p["max_len"], tasks_per_seq)
    run_view.show(bp.sweep_figure(df, cores, tasks_per_seq, state.language()), key="lb_sweep")
    st.caption(state.tr("ui.balance.caption.sweep", cores=cores, per_seq=tasks_per_seq,
                        filled=f"{cores / tasks_per_seq:g}"))

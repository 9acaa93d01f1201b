"""What the load-balance page shows about one workload: the chosen policy's metrics, its
loads and timeline, every policy side by side, and the sweep over the batch size.

The numbers come from ``explorer.core.balance`` (outcomes of plans and emulations, the
comparison table, the sweep); here the page reads its session values, decides what to
cache, words refusals in the reader's language and draws. Outcomes are cached as
resources on their inputs, so a view change reruns in a blink.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pandas as pd
import streamlit as st

from explorer.core import Scenario
from explorer.core import balance as bl
from explorer.core.balance import METRICS, Outcome  # balance_explain reads METRICS here
from explorer.plots import balance as bp
from explorer.plots import values
from explorer.ui import run_view, state
from hardware_presets import Chip
from hardware_presets.errors import InputError

#: message ids of each metric's name and one-line definition
METRIC_IDS = {"makespan": "ui.balance.metric.makespan",
              "efficiency": "ui.balance.metric.efficiency",
              "balance_ratio": "ui.balance.metric.balance_ratio",
              "gap": "ui.balance.metric.gap", "cv": "ui.balance.metric.cv",
              "lower_bound": "ui.balance.metric.lower_bound",
              "p50": "ui.balance.metric.p50", "p99": "ui.balance.metric.p99"}
DEF_IDS = {"makespan": "ui.balance.def.makespan", "efficiency": "ui.balance.def.efficiency",
           "balance_ratio": "ui.balance.def.balance_ratio", "gap": "ui.balance.def.gap",
           "cv": "ui.balance.def.cv", "lower_bound": "ui.balance.def.lower_bound",
           "p50": "ui.balance.def.p50", "p99": "ui.balance.def.p99"}
#: each series' name in the table, and the timeline's caption for the chosen series
SERIES_IDS = {"unsplit": "plots.lb.series.unsplit", "split": "plots.lb.series.split",
              "predicted": "plots.lb.series.predicted", "emulated": "plots.lb.series.emulated"}
GANTT_CAPTION_IDS = {"unsplit": "ui.balance.caption.gantt_unsplit",
                     "split": "ui.balance.caption.gantt_split",
                     "emulated": "ui.balance.caption.gantt_emulated"}
COMPARE_CAPTION_IDS = {"synthetic": "ui.balance.caption.compare_synthetic",
                       "emulated": "ui.balance.caption.compare_emulated"}
#: each metric's unit, where it is not a ratio
UNITS = {**dict.fromkeys(bl.TIME_METRICS, "µs"), "cv": values.NUMBER}
#: the refusal of too much work, by what the core counted
LIMIT_IDS = {"tasks": "ui.balance.too_many_tasks",
             "instructions": "ui.balance.too_many_instructions"}


@contextmanager
def _worded() -> Iterator[None]:
    """The core's refusal of too much work, its allowed range and hint in the session's
    language (field and value as the core gave them)."""
    try:
        yield
    except bl.TooMuchWork as exc:
        allowed = state.tr(LIMIT_IDS[exc.what], count=f"{exc.count:,}", limit=f"{exc.limit:,}")
        raise InputError(exc.field, exc.value, allowed,
                         hint=state.tr("ui.balance.smaller_hint")) from None


# ---- the workload and its outcomes (the page calls them here) ------------------------------
table, n_cores, core_names = bl.table, bl.n_cores, bl.core_names
checked, tasks_per_sequence = bl.checked, bl.tasks_per_sequence


def chip_overrides(p: dict) -> tuple:
    """The sidebar's overrides plus the page's cluster size (0 keeps the chip's)."""
    return bl.chip_overrides(p, state.overrides())


def page_chip(p: dict) -> Chip:
    return bl.page_chip(state.preset(), chip_overrides(p))


@st.cache_resource(max_entries=16, show_spinner=False)
def synthetic(preset: str, overrides: tuple, frozen: tuple) -> list[Outcome]:
    """Every policy, unsplit and split, on the synthetic task list (predicted)."""
    with _worded():
        return bl.synthetic(bl.page_chip(preset, overrides), dict(frozen))


def decode_scenarios(chip: Chip, p: dict) -> dict[str, Scenario]:
    """The attention of the decode workload under every policy (``chip`` is the page's,
    from the same preset and overrides)."""
    with _worded():
        return bl.decode_scenarios(state.preset(), chip_overrides(p), p)


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs={Scenario: state.scenario_key})
def predicted(scenario: Scenario) -> Outcome:
    return bl.predicted(scenario)


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs={Scenario: state.scenario_key})
def emulated(scenario: Scenario) -> Outcome:
    """The emulated attention, run on the shared worker pool."""
    return bl.emulated(scenario, state.simulate(scenario), predicted(scenario))


def decode_outcomes(scenarios: dict[str, Scenario]) -> list[Outcome]:
    """Predicted and emulated outcome of every policy (emulation cached per scenario)."""
    with st.spinner(state.tr("ui.balance.running")):
        emulations = [emulated(s) for s in scenarios.values()]
    return [predicted(s) for s in scenarios.values()] + emulations


@st.cache_data(max_entries=16, show_spinner=False)
def sweep(cores: int, distribution: str, mean_len: int, max_len: int,
          tasks_per_seq: int) -> pd.DataFrame:
    return bl.sweep(cores, distribution, mean_len, max_len, tasks_per_seq)


# ---- showing -----------------------------------------------------------------------------
def _value(name: str, row: dict | pd.Series) -> str:
    """A balance metric as every table writes it: times in µs or ms, ratios in %."""
    return run_view.metric_value(name, bl.metric_value(row, name), UNITS.get(name, ""))


def show_metrics(outcome: Outcome) -> None:
    """The chosen policy's metrics in rows of four, each with its one-line definition."""
    row = outcome.row()
    for start in range(0, len(METRICS), 4):
        for column, name in zip(st.columns(4), METRICS[start:start + 4]):
            column.metric(state.tr(METRIC_IDS[name]), _value(name, row),
                          help=state.tr(DEF_IDS[name]), border=True)


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
    st.caption(state.tr(GANTT_CAPTION_IDS[outcome.series]))


def _display(df: pd.DataFrame) -> pd.DataFrame:
    """The comparison as text, headed in the session's language."""
    out = pd.DataFrame({
        state.tr("ui.balance.col.policy"): [bp.policy_name(p, state.language())
                                            for p in df["policy"]],
        state.tr("ui.balance.col.series"): [state.tr(SERIES_IDS[s]) for s in df["series"]]})
    for name in METRICS:
        out[state.tr(METRIC_IDS[name])] = [_value(name, r) for _, r in df.iterrows()]
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
    st.caption(state.tr(COMPARE_CAPTION_IDS[kind]))
    st.dataframe(_display(df), hide_index=True, width="stretch")


def show_sweep(p: dict, cores: int, tasks_per_seq: int) -> None:
    """Predicted efficiency from batch 1 to 256 on these cores (a distribution, not a list)."""
    st.subheader(state.tr("ui.balance.sweep_title"))
    if p["distribution"] == "list":
        st.caption(state.tr("ui.balance.sweep_list"))
        return
    df = sweep(cores, p["distribution"], p["mean_len"], p["max_len"], tasks_per_seq)
    run_view.show(bp.sweep_figure(df, cores, tasks_per_seq, state.language()), key="lb_sweep")
    st.caption(state.tr("ui.balance.caption.sweep", cores=cores, per_seq=tasks_per_seq,
                        filled=f"{bl.filled_batch(cores, tasks_per_seq):g}"))

"""Page "Load balance": one concept, how independent tasks are spread over the cores and
what that costs. A kernel is done when its busiest core is: static blocks, round-robin,
Graham's LPT, cluster-aware LPT and a GM work queue spread the same tasks differently,
and the best any of them can do is bounded by the total work and the longest task.

Read the widgets, refuse what the chip cannot run (more cores than it has, a bad list of
lengths), then either plan a synthetic task list with every policy (predicted, in a
blink) or emulate the decode kernel's attention under every policy (cached) next to the
plan's prediction; show the chosen policy's loads and timeline, every policy side by
side, the ceiling of what balancing can give, the blog's claim beside it, the batch
sweep, and the Ascend C explanation. Streamlit runs this file as the page script.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from explorer.core.scheduling import CYCLES_PER_TASK, CYCLES_PER_TOKEN
from explorer.plots.balance import policy_name
from explorer.ui import balance_controls as controls
from explorer.ui import balance_explain as explain
from explorer.ui import balance_view as view
from explorer.ui import errors, state, widgets
from hardware_presets import Chip
from hardware_presets.errors import InputError


def _synthetic(chip: Chip, p: dict) -> tuple[list, list[str], int]:
    """(outcomes, core names, tasks per sequence) of the synthetic task list."""
    outcomes = view.synthetic(state.preset(), view.chip_overrides(p), tuple(sorted(p.items())))
    return outcomes, [str(i) for i in range(view.n_cores(chip, p))], p["kv_heads"]


def _decode(chip: Chip, p: dict) -> tuple[list, list[str], int]:
    """(outcomes, core names, tasks per sequence) of the emulated decode attention."""
    scenarios = view.decode_scenarios(chip, p)
    outcomes = view.decode_outcomes(scenarios)
    return outcomes, view.core_names(scenarios["static"]), view.tasks_per_sequence(scenarios)


def _outcomes(p: dict):
    """(chip, outcomes, core names, tasks per sequence) of the workload, or None after
    showing why it cannot be computed."""
    try:
        view.checked(p)
        chip = view.page_chip(p)
        return chip, *(_synthetic if p["source"] == "synthetic" else _decode)(chip, p)
    except InputError as exc:
        errors.show(exc, state.language(), controls.label_id)
        return None


def _series(p: dict) -> str:
    if p["source"] == "decode":
        return "emulated"
    return "split" if p["split"] else "unsplit"


def _results(p: dict, outcomes: list, names: list[str], per_seq: int) -> None:
    """The chosen policy, every policy side by side, the ceiling, the sweep."""
    series, cores = _series(p), len(names)
    chosen = next(o for o in outcomes if o.policy == p["policy"] and o.series == series)
    prediction = next((o for o in outcomes if o.policy == p["policy"]
                       and o.series == "predicted"), None)
    explain.show_workload(p, len(outcomes[0].pieces), cores)
    st.subheader(state.tr("ui.balance.chosen_title",
                          policy=policy_name(p["policy"], state.language())))
    view.show_metrics(chosen)
    explain.show_definitions()
    df = view.table(outcomes)
    explain.show_graham(df, series, cores)
    view.show_loads(chosen, names, prediction)
    view.show_gantt(chosen, names)
    view.show_comparison(df, p["policy"], series)
    explain.show_ceiling(df, series)
    view.show_sweep(p, cores, per_seq)


def _mean_task_cycles(p: dict, found) -> float:
    """A mean task's cycles: the workload's (synthetic or the kernel's estimates), else
    the synthetic formula at the mean length."""
    if found is None:
        return CYCLES_PER_TASK + CYCLES_PER_TOKEN * p["mean_len"]
    chip, outcomes = found[:2]
    pieces = outcomes[0].pieces  # static, whole tasks: one piece per task
    return float(np.mean(pieces["end_us"] - pieces["start_us"])) * chip.clock_MHz


def main() -> None:
    """Draw the page: examples, controls, results, explanation; keep the URL in step."""
    widgets.sidebar()
    chip = state.chip()
    explain.show_intro(chip)
    for exc in controls.take_url() + controls.within_chip(chip):
        errors.show(exc, state.language(), controls.label_id)
    controls.examples()
    p = controls.controls(chip)
    found = _outcomes(p)
    if found is not None:
        _results(p, *found[1:])
    explain.explain(_mean_task_cycles(p, found))
    state.sync_url(controls.url_params(p))


if __name__ == "__main__":
    main()

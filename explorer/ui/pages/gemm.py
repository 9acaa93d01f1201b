"""Page "GEMM and the 3-D task grid": one concept, how a GEMM's tiling becomes a grid of
tasks (X over M, Y over N, Z splitting K) that a 1-D launch of blockDim cube cores walks
in waves, and what the tiling, the grid, the policy and split-K do to the cube's time.

Read the widgets, build a Scenario from them and the sidebar's chip, draw the task grid
(the plan alone decides it), run the cached simulate, draw the cached figures, explain.
Bad input is shown translated, led by the field's label, and the page stays usable: a value
it refuses moves, visibly, to the nearest one it runs (``gemm_controls.controls``).
Streamlit runs this file as the page script (``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

from explorer.core import Scenario
from explorer.ui import (
    advisor_view,
    errors,
    gemm_controls,
    gemm_explain,
    gemm_view,
    run_view,
    state,
    widgets,
)
from hardware_presets.errors import InputError

#: the page's labels of its parameters, leading its refusals ("blockDim (...) (params.block_dim)")
LABEL_ID = gemm_controls.label_id


def _scenario(params: dict, seed: int) -> Scenario | None:
    """The validated scenario, or None after showing why the parameters are refused."""
    try:
        scenario = Scenario.make(state.preset(), "gemm", params, state.overrides(), seed=seed)
        gemm_controls.check_size(scenario.params_dict)
        return scenario
    except InputError as exc:
        errors.show(exc, state.language(), LABEL_ID)
        return None


def _results(scenario: Scenario) -> None:
    """Emulate (cached) and show metrics, timeline, figures, the check and downloads."""
    try:
        with st.spinner(state.tr("ui.gemm.running")):
            result = state.simulate(scenario)
    except InputError as exc:
        errors.show(exc, state.language(), LABEL_ID)
        return
    st.subheader(state.tr("ui.gemm.metrics"))
    gemm_view.show_metrics(result)
    gemm_view.show_timeline(scenario, result)
    gemm_view.show_figures(scenario)
    run_view.show_closing(scenario, result, lambda: gemm_view.show_figure("bandwidth", scenario),
                          gemm_view.show_numerics)
    advisor_view.show_advisor(result)


def main() -> None:
    """Draw the page: examples, controls, task grid, results, explanation."""
    widgets.sidebar()
    chip = state.chip()
    st.title(state.tr("ui.gemm.title"))
    st.caption(state.tr("ui.gemm.intro", chip=chip.display_name,
                        cores=len(chip.cube_core_ids())))
    taken = gemm_controls.take()
    gemm_controls.examples()
    params = gemm_controls.controls(chip, taken)
    seed = params.pop("seed")
    gemm_explain.sparsity_note(params)
    scenario = _scenario(params, seed)
    if scenario is not None:
        gemm_view.show_grid(scenario)
        _results(scenario)
    gemm_explain.explain(chip, scenario.params_dict if scenario is not None else None)
    state.sync_url({**params, "seed": seed})


if __name__ == "__main__":
    main()

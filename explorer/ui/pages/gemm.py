"""Page "GEMM and the 3-D task grid": one concept, how a GEMM's tiling becomes a grid of
tasks (X over M, Y over N, Z splitting K) that a 1-D launch of blockDim cube cores walks
in waves, and what the tiling, the grid, the policy and split-K do to the cube's time.

The answer comes first. One-click examples apply at once; the controls
(``gemm_controls.controls``) are drawn in the page's apply fragment (``apply.controls``):
a changed widget reruns them alone (the buffer occupancy follows it live), and the results
keep showing the applied values, marked stale, until "Apply" runs the new ones. Then, from
the applied scenario: the metric tiles, the timeline, the advisor's top finding (its full
checklist folded), the task grid (the plan alone decides it), the summary figures with
their captions, and the long tail folded (the bandwidth over time, the numerical check,
the explanation of the Ascend C API), the downloads and the upload. Bad input is shown
translated, led by the field's label, and the page stays usable: a value it refuses moves,
visibly, to the nearest one it runs. Streamlit runs this file as the page script
(``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

from explorer.core import Scenario
from explorer.ui import (
    advisor_view,
    apply,
    errors,
    gemm_controls,
    gemm_explain,
    gemm_view,
    quant_view,
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
    """Emulate (cached); the answer (tiles, timeline, the advisor's top finding), then the
    task grid and the figures, then the long tail."""
    try:
        with st.spinner(state.tr("ui.gemm.running")):
            result = state.simulate(scenario)
    except InputError as exc:
        errors.show(exc, state.language(), LABEL_ID)
        return
    st.subheader(state.tr("ui.gemm.metrics"))
    gemm_view.show_metrics(result)
    gemm_view.show_timeline(scenario, result)
    advisor_view.show_advisor(result)
    gemm_view.show_grid(scenario)
    gemm_view.show_figures(scenario)
    quant_view.show_quantization(scenario, result.numerics, "stored")
    run_view.show_closing(scenario, result, lambda: gemm_view.show_figure("bandwidth", scenario),
                          gemm_view.show_numerics, "apply.bandwidth")


def _explain(chip, params: dict | None) -> None:
    """Why the launch is 1-D, the default tiling and the Ascend C API, folded."""
    with st.expander(state.tr("ui.gemm.explain.title"), icon=":material/school:"):
        gemm_explain.explain(chip, params)


def main() -> None:
    """Draw the page: examples, controls, then the answer, the figures and the long tail."""
    widgets.sidebar()
    chip = state.chip()
    st.title(state.tr("ui.gemm.title"))
    st.caption(state.tr("ui.gemm.intro", chip=chip.display_name,
                        cores=len(chip.cube_core_ids())))
    taken = gemm_controls.take()
    gemm_controls.examples()
    values = apply.controls(
        gemm_controls.PREFIX,
        lambda first: gemm_controls.controls(chip, taken if first else None),
        fresh=bool(taken.names or taken.refused))
    params = {k: v for k, v in values.items() if k != "seed"}
    gemm_explain.sparsity_note(params)
    scenario = _scenario(params, values["seed"])
    if scenario is not None:
        _results(scenario)
    _explain(chip, scenario.params_dict if scenario is not None else None)
    state.sync_url(values)


if __name__ == "__main__":
    main()

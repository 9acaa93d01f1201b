"""Page "Vector add playground": one concept, the Ascend C pipeline of CopyIn -> Compute ->
CopyOut with TQue queues, and what double buffering (BUFFER_NUM = 2) does to it.

Read the widgets, build a Scenario from them and the sidebar's chip, run the cached
simulate, draw the cached figures, explain. Bad input is shown translated, led by the
field's label, and the page stays usable: a value it refuses moves, visibly, to the
nearest one it runs (``playground.controls``). Streamlit runs this file as the page
script (``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

from explorer.core import Scenario
from explorer.ui import advisor_view, errors, playground, run_view, state, widgets
from hardware_presets.errors import InputError

#: what the run shows for each BUFFER_NUM (and what to try next)
NOW_IDS = {1: "ui.va.explain.now_bn1", 2: "ui.va.explain.now_bn2"}


def _explain(result) -> None:
    """CopyIn / Compute / CopyOut, TQue, BUFFER_NUM and the Ascend C APIs behind them."""
    st.subheader(state.tr("ui.va.explain.title"))
    st.markdown(state.tr("ui.va.explain.stages"))
    st.markdown(state.tr("ui.va.explain.tque"))
    st.markdown(state.tr("ui.va.explain.buffer_num"))
    if result is not None:
        bn = result.params["buffer_num"]
        st.info(state.tr(NOW_IDS[bn], overlap=run_view.metric_value(
            "overlap_ratio", result.metrics["overlap_ratio"])))
    with st.expander(state.tr("ui.va.explain.api_title")):
        st.markdown(state.tr("ui.va.explain.api"))
        st.code(state.tr("ui.va.explain.code"), language="cpp")


def _run(params: dict):
    """The scenario and its cached result, or (scenario or None, None) after a shown error."""
    scenario = None
    try:
        scenario = Scenario.make(state.preset(), "vector_add", params, state.overrides(),
                                 playground.seed())
        playground.check_size(state.chip(), scenario.params_dict)
        with st.spinner(state.tr("ui.va.running")):
            return scenario, state.simulate(scenario)
    except InputError as exc:
        errors.show(exc, state.language(), playground.label_id)
        return scenario, None


def _results(scenario: Scenario, result) -> None:
    run_view.show_metrics(result)
    run_view.show_timeline(scenario, result)
    run_view.show_figures(scenario)
    run_view.show_closing(scenario, result, lambda: run_view.show_roofline(scenario),
                          run_view.show_numerics, widths=(3, 2))
    advisor_view.show_advisor(result)


def main() -> None:
    """Draw the playground: controls, metrics, timeline, figures, check, explanation."""
    widgets.sidebar()
    chip = state.chip()
    st.title(state.tr("ui.va.title"))
    st.caption(state.tr("ui.va.intro", chip=chip.display_name))
    taken = playground.take()
    params = playground.controls(chip, taken)
    result = None
    if params is not None:
        scenario, result = _run(params)
        if result is not None:
            _results(scenario, result)
    _explain(result)
    url = dict(params or {}, seed=playground.seed())
    state.sync_url(url)


if __name__ == "__main__":
    main()

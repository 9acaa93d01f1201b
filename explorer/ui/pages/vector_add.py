"""Page "Vector add playground": one concept, the Ascend C pipeline of CopyIn -> Compute ->
CopyOut with TQue queues, and what double buffering (BUFFER_NUM = 2) does to it.

The answer comes first. The controls (``playground.controls``) are drawn in the page's
apply fragment (``apply.controls``): a changed widget reruns them alone, and the results
keep showing the applied values, marked stale, until "Apply" runs the new ones. Then,
from the applied values: the metric tiles, the timeline with what BUFFER_NUM does in this
run under it, the advisor's top finding (its full checklist folded), the summary figures
with their captions, and the long tail folded (how the pipeline maps to Ascend C, the
roofline, the numerical check), the downloads and the upload. Bad input is shown
translated, led by the field's label, and the page stays usable: a value it refuses
moves, visibly, to the nearest one it runs. Streamlit runs this file as the page script
(``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

from explorer.core import Scenario
from explorer.ui import advisor_view, apply, errors, playground, run_view, state, widgets
from hardware_presets.errors import InputError

#: what the run shows for each BUFFER_NUM (and what to try next)
NOW_IDS = {1: "ui.va.explain.now_bn1", 2: "ui.va.explain.now_bn2"}


def _now(result) -> None:
    """What this run's BUFFER_NUM does, under the timeline that shows it."""
    bn = result.params["buffer_num"]
    st.info(state.tr(NOW_IDS[bn], overlap=run_view.metric_value(
        "overlap_ratio", result.metrics["overlap_ratio"])), icon=":material/info:")


def _explain() -> None:
    """CopyIn / Compute / CopyOut, TQue, BUFFER_NUM and the Ascend C APIs behind them,
    folded: the timeline above shows them at work."""
    with st.expander(state.tr("ui.va.explain.title"), icon=":material/school:"):
        st.markdown(state.tr("ui.va.explain.stages"))
        st.markdown(state.tr("ui.va.explain.tque"))
        st.markdown(state.tr("ui.va.explain.buffer_num"))
        st.markdown(f"**{state.tr('ui.va.explain.api_title')}**")
        st.markdown(state.tr("ui.va.explain.api"))
        st.code(state.tr("ui.va.explain.code"), language="cpp")


def _run(values: dict):
    """The scenario and its cached result, or (scenario or None, None) after a shown error."""
    params = {k: v for k, v in values.items() if k != "seed"}
    scenario = None
    try:
        scenario = Scenario.make(state.preset(), "vector_add", params, state.overrides(),
                                 values["seed"])
        playground.check_size(state.chip(), scenario.params_dict)
        with st.spinner(state.tr("ui.va.running")):
            return scenario, state.simulate(scenario)
    except InputError as exc:
        errors.show(exc, state.language(), playground.label_id)
        return scenario, None


def _results(scenario: Scenario, result) -> None:
    """The answer (tiles, timeline, the advisor's top finding), the figures, the tail."""
    run_view.show_metrics(result)
    run_view.show_timeline(scenario, result)
    _now(result)
    advisor_view.show_advisor(result)
    run_view.show_figures(scenario)
    _explain()
    run_view.show_closing(scenario, result, lambda: run_view.show_roofline(scenario),
                          run_view.show_numerics)


def main() -> None:
    """Draw the playground: controls, then the answer, the figures and the long tail."""
    widgets.sidebar()
    chip = state.chip()
    st.title(state.tr("ui.va.title"))
    st.caption(state.tr("ui.va.intro", chip=chip.display_name))
    taken = playground.take()
    values = apply.controls(
        playground.PREFIX, lambda first: playground.controls(chip, taken if first else None),
        fresh=bool(taken.names or taken.refused))
    if values is not None:
        scenario, result = _run(values)
        if result is not None:
            _results(scenario, result)
    else:
        _explain()
    state.sync_url(values or {})


if __name__ == "__main__":
    main()

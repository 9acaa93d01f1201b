"""Page "Sweep": one concept, how a metric follows one or two parameters when everything
else stays the same. Pick the kernel (its base scenario comes from its own page, or its
defaults), one or two knobs (kernel parameters or chip numbers) with their values, the
metric and the chart; Run emulates every combination in parallel, with a progress bar
and a Cancel button, and draws the metric, the table and its CSV.

Read the widgets, parse the grid (a bad range or a grid above the cap is a translated
message and the Run button stays off), start or follow the background run, draw the
last results, explain. Streamlit runs this file as the page script.
"""
from __future__ import annotations

import streamlit as st

from explorer.ui import errors, state, widgets
from explorer.ui import sweep_controls as controls
from explorer.ui import sweep_view as view


def _explain() -> None:
    st.subheader(state.tr("ui.sweep.explain_title"))
    st.markdown(state.tr("ui.sweep.explain"))


def main() -> None:
    """Draw the page: controls, grid, Run / progress / Cancel, results, explanation."""
    widgets.sidebar()
    st.title(state.tr("ui.sweep.title"))
    st.caption(state.tr("ui.sweep.intro", chip=state.chip().display_name))
    for exc in controls.take_url():
        errors.show(exc, state.language())
    view.collect()
    c = controls.controls()
    sweep = view.build(c)
    if st.button(state.tr("ui.sweep.run"), key="sw_run", type="primary",
                 disabled=sweep is None or view.running(), icon=":material/play_arrow:"):
        view.start(sweep, c)
        view.collect()
    if view.running():
        view.progress()
    view.show_results(c, sweep)
    _explain()
    state.sync_url(controls.url_params(c))


if __name__ == "__main__":
    main()

"""Page "Compare": one concept, what one change does to a run. Scenario A (the reference)
and scenario B (the change) each come from the gallery of built-in lessons or from an
uploaded scenario file; a gallery pair fills both sides in one click.

Read the two sides, run both (cached), then show the scenario diff first, the sentences
that say what changed and why, the metric table with definitions, the two timelines on
one time axis, bytes per path, B / A per metric and the downloads. The URL carries the
gallery ids (``?a=split_k_a&b=split_k_b``). Streamlit runs this file as the page script.
"""
from __future__ import annotations

import streamlit as st

from explorer.ui import compare_controls as controls
from explorer.ui import compare_view as view
from explorer.ui import errors, state, widgets
from hardware_presets.errors import InputError


def main() -> None:
    """Draw the page: intro, pair buttons, the two sides, the comparison; sync the URL."""
    widgets.sidebar()
    st.title(state.tr("ui.compare.title"))
    st.markdown(state.tr("ui.compare.intro"))
    for exc in controls.take_url():
        errors.show(exc, state.language())
    controls.pair_buttons()
    a, b = controls.sides()
    if a is not None and b is not None:
        try:
            view.show(a, b, controls.same_pair())
        except InputError as exc:
            errors.show(exc, state.language())
    state.sync_url(controls.url_params())


if __name__ == "__main__":
    main()

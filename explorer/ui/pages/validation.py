"""Page "Validation": the time model's card. What the emulator models and what it leaves
out, the model version, and every published real-hardware case (GEMM kernel times and
pipe ratios, msKPP's DataCopy points) beside the emulated figure, with the mean and max
error per group.

The cases run on their own presets (explorer/core/validation), not on the sidebar's chip.
Streamlit runs this file as the page script.
"""
from __future__ import annotations

import streamlit as st

from explorer.core.validation.cases import MODEL_VERSION
from explorer.ui import state, widgets
from explorer.ui import validation_view as view


def main() -> None:
    """Draw the page: intro and version, the model's scope, the summary, the table."""
    widgets.sidebar()
    st.title(state.tr("validation.title"))
    st.markdown(state.tr("validation.intro"))
    st.info(state.tr("validation.version", version=MODEL_VERSION))
    view.show_model()
    with st.spinner(state.tr("validation.running")):
        done = view.outcomes()
    view.show_summary(done)
    view.show_table(done)
    state.sync_url()


if __name__ == "__main__":
    main()

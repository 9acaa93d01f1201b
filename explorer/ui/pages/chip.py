"""Page "Chip": one concept, the hardware. Pick a preset, tune it, and see where every
number comes from, what it implies (peaks, ridge points) and how the cores are built.

Overrides made here are kept in session state, so the other pages simulate the tuned chip.
Streamlit runs this file as the page script (``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

from explorer.ui import chip_compare, chip_view, errors, state, widgets

#: architecture -> message ids of its one-line summary and of its explanation
ARCHITECTURE_IDS = {"split": ("architecture.split", "ui.chip.explain_split"),
                    "coupled": ("architecture.coupled", "ui.chip.explain_coupled")}


def _architecture(chip) -> None:
    """Split vs coupled in words, next to the block diagram of the chip's cores."""
    st.subheader(state.tr("ui.chip.architecture"))
    summary_id, explain_id = ARCHITECTURE_IDS[chip.architecture]
    st.info(state.tr(summary_id))
    left, right = st.columns([3, 2])
    with left:
        chip_view.show_core_diagram(chip)
    right.markdown(state.tr(explain_id))
    right.markdown(state.tr("ui.chip.explain_common"))


def main() -> None:
    """Draw the chip page: picker, override editor, peaks, diagram, today's chips next to
    910B2, provenance table."""
    widgets.sidebar()
    lang = state.language()
    chip = state.chip()
    st.title(state.tr("ui.chip.title", chip=chip.display_name))
    st.caption(state.tr("ui.chip.intro"))
    widgets.preset_picker(st, widget="preset_page")
    st.subheader(state.tr("ui.chip.tune"))
    st.caption(state.tr("ui.chip.tune_help"))
    refused = chip_view.pop_override_error()
    if refused is not None:
        errors.show(refused, lang)
    chip_view.override_editor(chip)
    st.subheader(state.tr("ui.chip.peaks"))
    chip_view.show_peaks(chip)
    _architecture(chip)
    st.subheader(state.tr("ui.chip.compare.title"))
    st.caption(state.tr("ui.chip.compare.caption"))
    chip_compare.show()
    st.subheader(state.tr("ui.chip.fields"))
    st.caption(state.tr("ui.chip.fields_help"))
    chip_view.show_fields_table(chip)
    state.sync_url()


if __name__ == "__main__":
    main()

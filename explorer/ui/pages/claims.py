"""Page "Claims": the seed blog's twelve quantitative claims, each recomputed now for the
sidebar's chip (preset + overrides) and judged by an explicit rule.

One bordered card per claim: verdict, the original sentence, the figures computed from
the preset, the models and the emulator, the rule, the explanation, the references and a
link to the page that demonstrates it. Streamlit runs this file as the page script.
"""
from __future__ import annotations

import streamlit as st

from explorer.ui import claims_view as view
from explorer.ui import errors, state, widgets


def main() -> None:
    """Draw the page: intro, the verdict summary, then the twelve cards."""
    widgets.sidebar()
    chip = state.chip()
    st.title(state.tr("claims.title"))
    st.markdown(state.tr("claims.intro", chip=errors.escape(chip.display_name)))
    with st.spinner(state.tr("claims.running")):
        cards = view.cached_claims(chip)
    view.show_summary(cards, chip)
    for card in cards:
        view.show_card(card)
    state.sync_url()


if __name__ == "__main__":
    main()

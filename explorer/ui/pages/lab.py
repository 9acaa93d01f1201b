"""Page "Troubleshooting lab": one concept, the common Ascend C problems (UB overflow, a
misaligned DataCopy, SyncAll with too many blocks, single buffering, a tail wave, split-K
without enough K, int8 without a scale), each triggered by a scenario and detected by the
kernels, the emulator or the quantiser, never by a canned verdict, next to its fix.

The problems run once per server (cached); the page only draws them. Streamlit runs this
file as the page script (``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

from explorer.core.troubleshoot import PROBLEMS
from explorer.ui import lab_view, state, widgets


def main() -> None:
    """Draw the page: title, intro, one expander per problem; keep the URL in step."""
    widgets.sidebar()
    st.title(state.tr("lab.title"))
    st.markdown(state.tr("lab.intro"))
    with st.spinner(state.tr("lab.running")):
        for problem in PROBLEMS:
            lab_view.show(problem)
    state.sync_url()


if __name__ == "__main__":
    main()

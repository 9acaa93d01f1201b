"""Entry point of the Streamlit app (``make run``): page config and navigation, nothing else.

Each page is one module under explorer/ui/pages; titles follow the session's language.
"""
import streamlit as st

from explorer.ui import state

st.set_page_config(page_title=state.tr("app.title"), page_icon=":material/memory:",
                   layout="wide")
st.navigation([
    st.Page("explorer/ui/pages/chip.py", title=state.tr("nav.chip"), url_path="chip",
            icon=":material/developer_board:", default=True),
    st.Page("explorer/ui/pages/vector_add.py", title=state.tr("nav.vector_add"),
            url_path="vector_add", icon=":material/add_circle:"),
    st.Page("explorer/ui/pages/gemm.py", title=state.tr("nav.gemm"), url_path="gemm",
            icon=":material/grid_on:"),
    st.Page("explorer/ui/pages/precision.py", title=state.tr("nav.precision"),
            url_path="precision", icon=":material/tune:"),
    st.Page("explorer/ui/pages/decode.py", title=state.tr("nav.decode"), url_path="decode",
            icon=":material/memory_alt:"),
    st.Page("explorer/ui/pages/balance.py", title=state.tr("nav.balance"), url_path="balance",
            icon=":material/balance:"),
    st.Page("explorer/ui/pages/sweep.py", title=state.tr("nav.sweep"), url_path="sweep",
            icon=":material/ssid_chart:"),
    st.Page("explorer/ui/pages/sparse.py", title=state.tr("nav.sparse"), url_path="sparse",
            icon=":material/filter_alt:"),
    st.Page("explorer/ui/pages/compare.py", title=state.tr("nav.compare"), url_path="compare",
            icon=":material/compare:"),
    st.Page("explorer/ui/pages/lab.py", title=state.tr("nav.lab"), url_path="lab",
            icon=":material/build:"),
    st.Page("explorer/ui/pages/multicard.py", title=state.tr("nav.multicard"),
            url_path="multicard", icon=":material/hub:"),
    st.Page("explorer/ui/pages/claims.py", title=state.tr("nav.claims"), url_path="claims",
            icon=":material/fact_check:"),
]).run()

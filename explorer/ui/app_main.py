"""The Streamlit app's main script: page config, navigation and the footer, nothing else.

``app.py`` at the checkout's root runs :func:`main` (``make run``); an installed package has
no checkout, so ``ascend-explorer app`` hands this file itself to ``streamlit run``. Each page
is one module under explorer/ui/pages, given by its absolute path (``pages.page_file``), so
that either main script finds it; titles follow the session's language. Every run ends with the
version footer and the run marker (`explorer.ui.run_marker`), even when the page raised.
The emulation workers (explorer.core.worker_pool) re-import the main script as
``__mp_main__``, as multiprocessing does: that import draws nothing and starts nothing.
"""
from __future__ import annotations

from explorer.ui.pages import page_file

#: (module under explorer/ui/pages, url path, icon, the title's message id); the first,
#: whose url path is empty, is the default page at ``/``
PAGES = (("start", "", "home", "nav.start"),
         ("chip", "chip", "developer_board", "nav.chip"),
         ("vector_add", "vector_add", "add_circle", "nav.vector_add"),
         ("gemm", "gemm", "grid_on", "nav.gemm"),
         ("precision", "precision", "tune", "nav.precision"),
         ("decode", "decode", "memory_alt", "nav.decode"),
         ("balance", "balance", "balance", "nav.balance"),
         ("kernels", "kernels", "extension", "nav.kernels"),
         ("sweep", "sweep", "ssid_chart", "nav.sweep"),
         ("sparse", "sparse", "filter_alt", "nav.sparse"),
         ("compare", "compare", "compare", "nav.compare"),
         ("lab", "lab", "build", "nav.lab"),
         ("puzzles", "puzzles", "code", "nav.puzzles"),
         ("multicard", "multicard", "hub", "nav.multicard"),
         ("claims", "claims", "fact_check", "nav.claims"),
         ("validation", "validation", "verified", "nav.validation"))


def footer() -> None:
    """The explorer's version at the foot of every page's sidebar (the one reports and
    ``--version`` show): under the page itself it would push a one-screen page (the start
    page) past the screen."""
    import streamlit as st

    from explorer.ui import state
    from explorer.version import __version__

    st.sidebar.caption(state.tr("app.version", version=__version__))


def main() -> None:
    """Configure the page, then run the one the URL asks for."""
    import streamlit as st

    from explorer.ui import run_marker, state

    st.set_page_config(page_title=state.tr("app.title"), page_icon=":material/memory:",
                       layout="wide")
    navigation = st.navigation([
        st.Page(page_file(name), title=state.tr(title_id), url_path=path,
                icon=f":material/{icon}:", default=not path)
        for name, path, icon, title_id in PAGES])
    try:
        navigation.run()
    finally:
        footer()
        run_marker.mark_run_end()


if __name__ == "__main__":
    main()

"""Entry point of the Streamlit app (``make run``): page config and navigation, nothing else.

Each page is one module under explorer/ui/pages; titles follow the session's language.
Every run ends with the run marker (`explorer.ui.run_marker`), even when the page raised.
The emulation workers (explorer.core.worker_pool) re-import the main module as
``__mp_main__``, as multiprocessing does: that import draws nothing and starts nothing.
"""
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


def main() -> None:
    """Configure the page, then run the one the URL asks for."""
    import streamlit as st

    from explorer.ui import run_marker, state

    st.set_page_config(page_title=state.tr("app.title"), page_icon=":material/memory:",
                       layout="wide")
    navigation = st.navigation([
        st.Page(f"explorer/ui/pages/{name}.py", title=state.tr(title_id), url_path=path,
                icon=f":material/{icon}:", default=not path)
        for name, path, icon, title_id in PAGES])
    try:
        navigation.run()
    finally:
        run_marker.mark_run_end()


if __name__ != "__mp_main__":
    main()

"""Page "More kernels": any registered kernel without a page of its own (a kernel package
added under ``kernels/``, or one a test registers), shown from its record alone: choose
the kernel, set its parameters (widgets generated from its schema), and see the emulated
run in time and in value, the advisor and the kernel's own explanation.

Read the URL (``?kernel=<name>&<param>=<value>``), draw the chooser and the controls, run
the scenario through the shared worker pool, draw the shared result views, explain, write
the URL. Bad input is shown translated and the page stays usable. Streamlit runs this file
as the page script (``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

from explorer.ui import errors, state, widgets
from explorer.ui import generic_kernel as generic


def main() -> None:
    """Draw the page: chooser, controls, results, explanation."""
    widgets.sidebar()
    st.title(state.tr("ui.kernels.title"))
    st.caption(state.tr("ui.kernels.intro", chip=state.chip().display_name))
    for exc in generic.take_url():
        errors.show(exc, state.language())
    kernel = generic.chooser()
    if kernel is None:
        state.sync_url()
        return
    params, seed = generic.controls(kernel)
    scenario, result = generic.run(kernel, params, seed)
    if result is not None:
        generic.show_results(scenario, result)
    generic.explain(kernel)
    state.sync_url(generic.url_params(kernel, params, seed))


if __name__ == "__main__":
    main()

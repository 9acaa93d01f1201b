"""Page "More kernels": any registered kernel without a page of its own (a kernel package
added under ``kernels/``, or one a test registers), shown from its record alone: choose
the kernel, set its parameters (widgets generated from its schema), and see the emulated
run in time and in value, the advisor and the kernel's own explanation.

Read the URL (``?kernel=<name>&<param>=<value>``), draw the chooser, draw the controls in
the page's apply fragment (``apply.controls``: a changed widget reruns them alone, the
results keep showing the applied values, marked stale, until "Apply" runs the new ones),
run the applied scenario through the shared worker pool, draw the answer first (tiles,
timeline, the advisor's top finding), then the figures and the long tail folded, and
write the applied values into the URL. Bad input is shown translated and the page stays
usable. Streamlit runs this file as the page script (``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

from explorer.ui import apply, errors, state, widgets
from explorer.ui import generic_kernel as generic


def main() -> None:
    """Draw the page: chooser, controls, then the answer, the figures and the long tail."""
    widgets.sidebar()
    st.title(state.tr("ui.kernels.title"))
    st.caption(state.tr("ui.kernels.intro", chip=state.chip().display_name))
    taken = generic.take_url()
    for exc in taken.refused:
        errors.show(exc, state.language())
    kernel = generic.chooser()
    if kernel is None:
        state.sync_url()
        return
    values = apply.controls(generic.page(kernel).prefix,
                            lambda _first: generic.controls(kernel),
                            fresh=bool(taken.names or taken.refused))
    params, seed = generic.split(kernel, values)
    scenario, result = generic.run(kernel, params, seed)
    if result is not None:
        generic.show_results(scenario, result)
    generic.explain(kernel)
    state.sync_url(generic.url_params(kernel, params, seed))


if __name__ == "__main__":
    main()

"""Page "Sparse attention": one concept, what keeping only some of the KV cache costs in
accuracy and saves in memory and time. The blog keeps the sinks and the keys with the
largest norm; the literature keeps the smallest norm (Devoto et al.), the heavy hitters
(H2O), the sinks and a recent window (StreamingLLM), or reads the pages a query needs
(Quest). Every rule is measured on the same attention inputs, and the chosen one is
emulated in a decode step next to dense attention.

The answer comes first. One-click examples apply at once; the controls
(``sparse_controls.controls``) are drawn in the page's apply fragment (``apply.controls``):
a changed widget (or a new upload) reruns them alone, and the results keep showing the
applied values, marked stale, until "Apply" runs the new ones. From the applied values:
the dense, sparse and compression steps are emulated (cached) and their tiles shown (bytes
and times), the compression on the per-core timeline, the advisor's top finding (its full
checklist folded); then the figures with their explanations beside them: every policy's
accuracy against the keep ratio on the chosen inputs (synthetic with its designed
structure, or an uploaded dump), which tokens each keeps, how key norms relate to
attention, the bytes and the step times; then the long tail folded (the blog's claim, the
numerical check, each policy with its paper), the downloads and the upload. Bad input is
shown translated and the page goes on. Streamlit runs this file as the page script.
"""
from __future__ import annotations

import streamlit as st

from explorer.core import Scenario
from explorer.core.sparse_step import SparseStep
from explorer.ui import advisor_view, apply, errors, state, widgets
from explorer.ui import sparse_controls as controls
from explorer.ui import sparse_explain as explain
from explorer.ui import sparse_view as view
from hardware_presets import Chip
from hardware_presets.errors import InputError


def _inputs(p: dict):
    """(cache key, inputs) of the chosen data, or None after saying why there are none."""
    try:
        found = view.inputs(p)
    except InputError as exc:
        errors.show(exc, state.language(), controls.label_id)
        explain.show_format()
        return None
    if found is None:
        st.info(state.tr("ui.sparse.upload_prompt"), icon=":material/upload_file:")
        explain.show_format()
    return found


def _accuracy(p: dict) -> float | None:
    """Every policy's accuracy on the data, the kept tokens, the norm relation (rho)."""
    st.subheader(state.tr("ui.sparse.accuracy_title"))
    found = _inputs(p)
    if found is None:
        return None
    explain.show_data(p, found[1])
    try:
        view.show_accuracy(p, found)
    except InputError as exc:
        errors.show(exc, state.language(), controls.label_id)
        return None
    st.subheader(state.tr("ui.sparse.kept_title"))
    return view.show_kept(p, found, explain.show_relation)


def _step(chip: Chip, p: dict) -> tuple[Scenario, SparseStep] | None:
    """The emulated dense, sparse and compression steps, or None after a shown refusal."""
    try:
        scenario = view.scenario(chip, p)
        with st.spinner(state.tr("ui.sparse.running")):
            return scenario, view.step(scenario)
    except InputError as exc:
        errors.show(exc, state.language(), controls.label_id)
        return None


def _answer(p: dict, scenario: Scenario, s: SparseStep) -> None:
    """Bytes and times of the step with and without the policy (tiles), the compression
    on the timeline, and the advisor's top finding."""
    st.subheader(state.tr("ui.sparse.time_title"))
    view.show_time(s)
    st.subheader(state.tr("ui.sparse.memory_title"))
    view.show_memory(s)
    explain.show_workload(p, s)
    st.subheader(state.tr("ui.sparse.compress_title"))
    view.show_compression(scenario, s)
    advisor_view.show_advisor(state.simulate(scenario))


def _cost_figures(s: SparseStep) -> None:
    """The bytes and the step times as bars, what the times mean under them (full width:
    their titles and bar labels are long)."""
    view.show_memory_figure(s)
    view.show_time_figure(s)
    explain.show_time(s)


def _explain(rho: float | None) -> None:
    """Each policy with its paper, how it maps to Ascend C, what the numbers cover."""
    with st.expander(state.tr("ui.sparse.explain.title"), icon=":material/school:"):
        explain.explain(rho)


def main() -> None:
    """Draw the page: examples, controls, then the answer, the figures and the long tail."""
    widgets.sidebar()
    chip = state.chip()
    explain.show_intro(chip)
    taken = controls.take()
    for exc in taken.refused:
        errors.show(exc, state.language(), controls.label_id)
    controls.examples()
    p = apply.controls(controls.PREFIX, lambda _first: controls.controls(),
                       fresh=bool(taken.names or taken.refused))
    ran = _step(chip, p)
    if ran is not None:
        _answer(p, *ran)
    rho = _accuracy(p)
    if ran is not None:
        _cost_figures(ran[1])
        explain.show_blog(ran[1])
        view.show_check(*ran)
    _explain(rho)
    state.sync_url(controls.url_params(p))


if __name__ == "__main__":
    main()

"""Page "Multi-card decode": one concept, what tensor parallelism over N cards does to a
decode step. Every card holds 1/N of the heads, the KV cache and the weights, so its
share of the step shrinks about N-fold; in exchange every layer all-reduces its
activations twice over the interconnect (HCCS on a 910B board), a cost that does not
shrink with N. The page emulates one card's share, adds the alpha-beta all-reduce cost,
draws the scaling over 1..8 cards and holds the blog's claims 11 and 12 against it.

Streamlit runs this file as the page script (``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

from explorer.core import Scenario
from explorer.core import multicard as mc
from explorer.ui import errors, state, widgets
from explorer.ui import multicard_view as view
from hardware_presets.errors import InputError

#: the page's labels of its parameters, leading its refusals
LABEL_ID = errors.param_labels(view.SPECS, view.LABELS)


def _scenario(params: dict) -> Scenario | None:
    try:
        return Scenario.make(state.preset(), "decode", params, state.overrides())
    except InputError as exc:
        errors.show(exc, state.language(), LABEL_ID)
        return None


def _selected(scenario: Scenario, cards: int, ic: mc.Interconnect) -> None:
    """The step on the chosen card count, or why that count cannot split the model."""
    try:
        with st.spinner(state.tr("ui.mc.running")):
            step = mc.simulate_multicard(scenario, cards, ic, decode=view.decode_step)
    except InputError as exc:
        errors.show(exc, state.language(), LABEL_ID)
        return
    view.show_step(step)


def _explain() -> None:
    st.subheader(state.tr("ui.mc.explain_title"))
    st.markdown(state.tr("ui.mc.explain"))


def main() -> None:
    """Draw the page: controls, interconnect, the chosen N, scaling, claims, explanation."""
    widgets.sidebar()
    st.title(state.tr("ui.mc.title"))
    st.caption(state.tr("ui.mc.intro", chip=state.chip().display_name))
    for exc in view.take_url():
        errors.show(exc, state.language(), LABEL_ID)
    c = view.controls()
    ic = view.interconnect()
    scenario = _scenario(c["params"])
    if scenario is not None and ic is not None:
        _selected(scenario, c["cards"], ic)
        try:
            with st.spinner(state.tr("ui.mc.running")):
                table = view.scaling_table(scenario, ic)
            view.show_scaling(table, scenario)
            view.show_claims(table, ic, c["params"]["impl"])
        except InputError as exc:
            errors.show(exc, state.language(), LABEL_ID)
    _explain()
    state.sync_url({k: view.value(k) for k in view.SPECS})


if __name__ == "__main__":
    main()

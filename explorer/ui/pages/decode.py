"""Page "KV cache and decode": one concept, what a decode step of an LLM costs on the chip.
Every new token appends its K and V to the cache and then reads the whole cache once:
the KV bytes decide how many sequences fit next to the weights and, streamed from HBM,
how long the attention takes; the implementation decides how close to the HBM roof it
gets.

Read the widgets (their ranges follow the other parameters: the page's own checks,
``decode_view.runs``, decide what it accepts; a value it would refuse moves into range,
the refusal shown), split a model too big for one chip over cards (one card's share is
emulated), check the parameters (auto values resolved), show the KV memory calculator
(the shapes alone decide it), refuse what would not fit in HBM or is too big to emulate
here, run the cached decode step (one emulated layer times the model's layers), draw it,
explain. Bad input is shown translated and the page stays usable. Streamlit runs this
file as the page script (``__name__ == "__main__"``).
"""
from __future__ import annotations

from functools import partial

import streamlit as st

from explorer.core import Scenario
from explorer.ui import (
    advisor_view,
    decode_controls,
    decode_explain,
    decode_view,
    errors,
    run_view,
    state,
    widgets,
)
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.decode import params as dp


def _refused(exc: InputError) -> None:
    errors.show(exc, state.language(), decode_controls.label_id)


def _prepared(chip: Chip, params: dict, seed: int) -> decode_view.Prepared | None:
    """The checked parameters and the drawn batch of what the page emulates (one card's
    share of a model split over cards), or None after showing why not."""
    try:
        run = decode_controls.emulated(chip, params)
        return decode_view.prepare(chip, run, seed)
    except InputError as exc:
        _refused(exc)
        return None


def _cards(chip: Chip, params: dict, w: decode_view.Prepared) -> None:
    """Say why and how the model is split, when it is."""
    cards = decode_controls.cards_of(chip, params)
    if cards > 1:
        decode_explain.show_cards(chip, decode_controls.whole_model(params), dp.model_of(w.p),
                                  cards, params["weight_dtype"])


def _scenario(chip: Chip, w: decode_view.Prepared, seed: int) -> Scenario | None:
    """The validated scenario, or None after showing why it cannot run (HBM, size)."""
    try:
        decode_view.check_runs(chip, w)
        return Scenario.make(state.preset(), "decode", w.run, state.overrides(), seed=seed)
    except InputError as exc:
        _refused(exc)
        return None


def _results(scenario: Scenario) -> None:
    """Emulate (cached) and show the step, the layer, the roofline, the append, the check."""
    try:
        with st.spinner(state.tr("ui.decode.running")):
            s = decode_view.step(scenario)
    except InputError as exc:
        _refused(exc)
        return
    st.subheader(state.tr("ui.decode.step.title"))
    decode_view.show_step(s)
    decode_view.show_layer(scenario, s)
    left, right = st.columns(2)
    with left:
        decode_view.show_roofline(scenario)
    with right:
        decode_view.show_hbm(s)
        decode_explain.show_bound(s)
    decode_view.show_append(scenario, s)
    left, right = st.columns(2)
    with left:
        st.subheader(state.tr("ui.va.numerics"))
        decode_view.show_numerics(s)
    with right:
        st.subheader(state.tr("ui.va.downloads"))
        run_view.show_downloads(scenario)
    advisor_view.show_advisor(state.simulate(scenario))


def main() -> None:
    """Draw the page: examples, controls, KV memory, buffer plan, results, explanation."""
    widgets.sidebar()
    chip = state.chip()
    st.title(state.tr("ui.decode.title"))
    st.caption(state.tr("ui.decode.intro", chip=chip.display_name,
                        cores=dp.block_dim_limit(chip)))
    for exc in decode_controls.take_url(chip):
        _refused(exc)
    decode_controls.examples()
    params, notices = decode_controls.controls(chip, partial(decode_view.runs, chip))
    decode_controls.show_notices(notices)
    seed = params.pop("seed")
    w = _prepared(chip, params, seed)
    if w is not None:
        _cards(chip, params, w)
        decode_view.show_memory(chip, w.p, w.lengths, w.layout)
        decode_explain.show_plan(chip, w.p)
        scenario = _scenario(chip, w, seed)
        if scenario is not None:
            _results(scenario)
    decode_explain.show_blog(chip)
    decode_explain.explain()
    state.sync_url(decode_controls.url_params({**params, "seed": seed}))


if __name__ == "__main__":
    main()

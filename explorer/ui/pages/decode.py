"""Page "KV cache and decode": one concept, what a decode step of an LLM costs on the chip.
Every new token appends its K and V to the cache and then reads the whole cache once:
the KV bytes decide how many sequences fit next to the weights and, streamed from HBM,
how long the attention takes; the implementation decides how close to the HBM roof it
gets.

The answer comes first. One-click examples apply at once; the controls (their ranges
follow the other parameters: the page's own checks, ``decode_view.runs``, decide what it
accepts; a value it would refuse moves into range, the refusal shown as an error) are
drawn in the page's apply fragment (``apply.controls``): a changed widget reruns them
alone, and the results keep showing the applied values, marked stale, until "Apply" runs
the new ones. From the applied values: a model too big for one chip is split over cards
(one card's share is emulated), the parameters are checked (auto values resolved), what
would not fit in HBM or is too big to emulate here is refused, and the cached decode step
(one emulated layer times the model's layers) is shown: the step's tiles, the layer's
tiles and timeline, the advisor's top finding on that layer (its full checklist folded),
then the figures with their captions, the KV memory calculator, and the long tail folded
(the append comparison, the buffer plan, the numerical check, the blog's claim, the
Ascend C explanation), the downloads and the upload. Bad input is shown translated and
the page stays usable. Streamlit runs this file as the page script
(``__name__ == "__main__"``).
"""
from __future__ import annotations

from functools import partial

import streamlit as st

from explorer.core import Scenario
from explorer.ui import (
    advisor_view,
    apply,
    decode_cards,
    decode_controls,
    decode_explain,
    decode_view,
    errors,
    quant_view,
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
        run = decode_cards.emulated(chip, params)
        return decode_view.prepare(chip, run, seed)
    except InputError as exc:
        _refused(exc)
        return None


def _cards(chip: Chip, params: dict, w: decode_view.Prepared) -> None:
    """Say why and how the model is split, when it is."""
    cards = decode_cards.cards_of(chip, params)
    if cards > 1:
        decode_explain.show_cards(chip, decode_cards.whole_model(params), dp.model_of(w.p),
                                  cards, params["weight_dtype"])


def _scenario(chip: Chip, w: decode_view.Prepared, seed: int) -> Scenario | None:
    """The validated scenario, or None after showing why it cannot run (HBM, size)."""
    try:
        decode_view.check_runs(chip, w)
        return Scenario.make(state.preset(), "decode", w.run, state.overrides(), seed=seed)
    except InputError as exc:
        _refused(exc)
        return None


def _capacity(chip: Chip, w: decode_view.Prepared) -> None:
    """The KV memory calculator (the shapes alone decide it), and the buffer plan behind
    the tile and heads per pass, folded."""
    decode_view.show_memory(chip, w.p, w.lengths, w.layout)
    with st.expander(state.tr("ui.decode.plan.title"), icon=":material/memory:"):
        decode_explain.show_plan(chip, w.p)


def _results(chip: Chip, w: decode_view.Prepared, scenario: Scenario) -> None:
    """Emulate (cached); the answer (the step, the layer, the advisor's top finding on the
    layer shown), then the figures and the KV memory, then the long tail folded."""
    try:
        with st.spinner(state.tr("ui.decode.running")):
            s = decode_view.step(scenario)
    except InputError as exc:
        _refused(exc)
        return
    st.subheader(state.tr("ui.decode.step.title"))
    decode_view.show_step(s)
    decode_view.show_layer(scenario, s)
    advisor_view.show_advisor(s.result)  # the layer the tiles show, whatever the phases
    decode_view.show_ops(s)
    left, right = st.columns(2)
    with left:
        decode_view.show_latency(s)
    with right:
        decode_view.show_hbm(s)
        decode_explain.show_bound(s)
    decode_view.show_layer_figures(scenario)
    _capacity(chip, w)
    with st.expander(state.tr("ui.decode.append.title"), icon=":material/add_box:"):
        decode_view.show_append(scenario, s)
    with st.expander(state.tr("apply.roofline"), icon=":material/show_chart:"):
        decode_view.show_roofline(scenario)
    run_view.show_check_folded(s, decode_view.show_numerics, s.result.numerics.passed)
    quant_view.show_quantization(scenario, s.result.numerics, "real")
    run_view.show_downloads(scenario)


def _explain(chip: Chip) -> None:
    """The blog's KV-cache claim recomputed, and the kernel in Ascend C, folded."""
    decode_explain.show_blog(chip)
    with st.expander(state.tr("ui.decode.explain.title"), icon=":material/school:"):
        decode_explain.explain()


def main() -> None:
    """Draw the page: examples, controls, then the answer, the figures and the long tail."""
    widgets.sidebar()
    chip = state.chip()
    st.title(state.tr("ui.decode.title"))
    st.caption(state.tr("ui.decode.intro", chip=chip.display_name,
                        cores=dp.block_dim_limit(chip)))
    taken = decode_controls.take_url(chip)
    for exc in taken.refused:
        _refused(exc)
    decode_controls.examples()
    values = apply.controls(decode_controls.PREFIX, partial(_controls, chip),
                            fresh=bool(taken.names or taken.refused))
    params = {k: v for k, v in values.items() if k != "seed"}
    w = _prepared(chip, params, values["seed"])
    if w is not None:
        _cards(chip, params, w)
        scenario = _scenario(chip, w, values["seed"])
        if scenario is not None:
            _results(chip, w, scenario)
        else:
            _capacity(chip, w)
    _explain(chip)
    state.sync_url(decode_controls.url_params(values))


def _controls(chip: Chip, _first: bool) -> dict:
    """The widgets within what the page runs, and the values moved into range."""
    params, notices = decode_controls.controls(chip, partial(decode_view.runs, chip))
    decode_controls.show_notices(notices)
    return params


if __name__ == "__main__":
    main()

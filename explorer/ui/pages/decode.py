"""Page "KV cache and decode": one concept, what a decode step of an LLM costs on the chip.
Every new token appends its K and V to the cache and then reads the whole cache once:
the KV bytes decide how many sequences fit next to the weights and, streamed from HBM,
how long the attention takes; the implementation decides how close to the HBM roof it
gets.

Read the widgets, check the parameters (auto values resolved), show the KV memory
calculator (the shapes alone decide it), build a Scenario, refuse what would not fit in
HBM or is too big to emulate here, run the cached decode step (one emulated layer times
the model's layers, plus the estimated linear layers), draw it, explain. Bad input is
shown translated and the page stays usable. Streamlit runs this file as the page script
(``__name__ == "__main__"``).
"""
from __future__ import annotations

import numpy as np
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
from kernels.decode import kernel as decode


def _checked(chip: Chip, params: dict) -> dict | None:
    """The parameters with every auto value resolved, or None after showing why not."""
    try:
        return decode.check(chip, params)
    except InputError as exc:
        errors.show(exc, state.language(), decode_controls.label_id)
        return None


def _scenario(chip: Chip, params: dict, p: dict, workload, seed: int) -> Scenario | None:
    """The validated scenario, or None after showing why it cannot run (HBM, size)."""
    lengths, layout = workload
    try:
        decode.memory_check(chip, decode.DecodeParams.of(p), lengths, layout)
        decode_view.check_size(chip, p, lengths)
        return Scenario.make(state.preset(), "decode", params, state.overrides(), seed=seed)
    except InputError as exc:
        errors.show(exc, state.language(), decode_controls.label_id)
        return None


def _results(scenario: Scenario) -> None:
    """Emulate (cached) and show the step, the layer, the roofline, the append, the check."""
    try:
        with st.spinner(state.tr("ui.decode.running")):
            s = decode_view.step(scenario)
    except InputError as exc:
        errors.show(exc, state.language(), decode_controls.label_id)
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
                        cores=len(chip.vector_core_ids())))
    for exc in decode_controls.take_url():
        errors.show(exc, state.language(), decode_controls.label_id)
    decode_controls.examples()
    params = decode_controls.controls(chip)
    seed = params.pop("seed")
    p = _checked(chip, params)
    if p is not None:
        workload = decode.workload(p, np.random.default_rng(seed))
        decode_view.show_memory(chip, p, *workload)
        decode_explain.show_plan(chip, p)
        scenario = _scenario(chip, params, p, workload, seed)
        if scenario is not None:
            _results(scenario)
    decode_explain.show_blog(chip)
    decode_explain.explain()
    state.sync_url(decode_controls.url_params({**params, "seed": seed}))


if __name__ == "__main__":
    main()

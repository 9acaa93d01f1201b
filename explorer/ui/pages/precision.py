"""Page "Mixed precision": one concept, what each number format costs in error and gains
in time and bytes. The user picks a kernel (GEMM, the attention score, the KV cache's
storage), its shape and data, and a configuration (storage / compute / accumulate /
output formats, quantisation granularity); the page sets it among the standard ones
(fp32 everywhere, bf16, the blog's fp16 "sandwich", fp16 accumulation, int8 and int4
weights or KV, W8A8) in a Pareto chart and a table, draws error growth with K against
the classic bounds, the element errors, where each format lives, the blog's "Kahan"
routine against true Kahan, and says what each choice is in Ascend C. Then the number
formats themselves: the table of every format (FP8, HiF8 and the MX block formats among
them) with the chips that take it, and how each one rounds the same data.

Streamlit runs this file as the page script (``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

from explorer.ui import (
    errors,
    precision_controls,
    precision_explain,
    precision_formats_view,
    precision_view,
    state,
    widgets,
)
from hardware_presets.errors import InputError


def _study(p: dict) -> None:
    """Pareto chart, table, error vs K, histogram, sandwich, Ascend C, blog vs Kahan."""
    kernel, shape = p["kernel"], precision_controls.shape(p)
    cfg = precision_controls.config(p)
    mine = precision_view.cfg_tuple(cfg)
    impossible = any(pr.status == "impossible"
                     for pr in precision_explain.problems(kernel, shape, cfg))
    with st.spinner(state.tr("ui.precision.running")):
        df = precision_view.table(kernel, shape, p["distribution"], p["seed"], mine,
                                  *precision_view.chip_args())
    st.subheader(state.tr("ui.precision.pareto_title"))
    precision_view.show_pareto(kernel, shape, p["distribution"], p["seed"], mine)
    st.subheader(state.tr("ui.precision.table_title"))
    precision_view.show_table(df, kernel)
    left, right = st.columns(2)
    with left:
        st.subheader(state.tr("ui.precision.vs_k_title"))
        precision_view.show_vs_k(cfg.compute, cfg.accumulate, p["seed"])
    with right:
        st.subheader(state.tr("ui.precision.hist_title"))
        if impossible:
            st.info(state.tr("ui.precision.hist_none"), icon=":material/block:")
        else:
            precision_view.show_histogram(kernel, shape, p["distribution"], p["seed"], mine)
    st.subheader(state.tr("ui.precision.sandwich_title"))
    precision_explain.show_sandwich(kernel, cfg, mine, precision_view.chip_args())
    st.subheader(state.tr("ui.precision.map_title"))
    precision_explain.show_mapping(kernel, cfg)
    st.subheader(state.tr("ui.precision.blog_title"))
    precision_view.show_blog(p["seed"])


def main() -> None:
    """Draw the page: controls, the user's problems, the study, the explanation."""
    widgets.sidebar()
    chip = state.chip()
    st.title(state.tr("ui.precision.title"))
    st.caption(state.tr("ui.precision.intro", chip=chip.display_name))
    for exc in precision_controls.take_url():
        errors.show(exc, state.language(), precision_controls.label_id)
    params = precision_controls.controls(chip)
    try:
        _study(params)
    except InputError as exc:
        errors.show(exc, state.language(), precision_controls.label_id)
    params = precision_formats_view.show(chip, params)
    precision_explain.explain()
    state.sync_url(precision_controls.url_params(params))


if __name__ == "__main__":
    main()

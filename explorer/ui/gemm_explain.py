"""The GEMM page's explanations: what each control is in Ascend C, why the launch is 1-D
while the task grid is 3-D, why the default tiling is the one a careful author picks (with
the numbers of the tiling on screen), and what a small GEMM teaches.

The prose lives in the catalogues (``ui.gemm.explain.*``); here only the live numbers are
computed: buffer occupancy, operand reuse of the base tile and the chip's ridge points.
"""
from __future__ import annotations

import streamlit as st

from explorer.plots.roofline import ridge_intensity
from explorer.ui import gemm_controls, state
from hardware_presets import Chip
from kernels.gemm import params as gp


def literal(msg_id: str) -> str:
    """A catalogue text shown as is: C++ braces are doubled there (``{{``) so that the
    catalogue checks, which parse every message as a format string, accept it."""
    return state.tr(msg_id).replace("{{", "{").replace("}}", "}")


def tile_reuse(p: dict) -> float:
    """Flop per byte of A and B brought from GM into L1 for one base tile: each A element
    serves base_n columns and each B element base_m rows (2 flop per multiply-add)."""
    ib = gp.IN_BYTES[p["dtype_in"]]
    return 2.0 * p["base_m"] * p["base_n"] / ((p["base_m"] + p["base_n"]) * ib)


def _occupancy_words(chip: Chip, p: dict) -> str:
    """ "L1 384 of 512 KiB · L0A 32 of 64 KiB · ..." for the tiling on screen."""
    parts = []
    for buffer, (used, limit, _, _) in gp.buffer_use(chip, gp.GemmParams.of(p)).items():
        parts.append(state.tr("ui.gemm.explain.use_part", buffer=buffer,
                              used=gemm_controls.kib(used), total=gemm_controls.kib(limit)))
    return " · ".join(parts)


def _live_tiling(chip: Chip, p: dict) -> None:
    """The chosen tiling's occupancy, reuse and per-step pipe budget against the chip."""
    dtype = p["dtype_in"]
    peak = chip.peak_tflops(dtype)
    budget = gp.step_budget(chip, gp.GemmParams.of(p))
    st.info(state.tr(
        "ui.gemm.explain.now", bm=p["base_m"], bn=p["base_n"], bk=p["base_k"], dtype=dtype,
        use=_occupancy_words(chip, p), reuse=f"{tile_reuse(p):.0f}",
        ridge_hbm=f"{ridge_intensity(peak, chip.hbm_bandwidth_GBps):.0f}",
        chip=chip.display_name), icon=":material/straighten:")
    st.info(state.tr(
        "ui.gemm.explain.budget", cube=f"{budget['cube']:,.0f}", mte1=f"{budget['mte1']:,.0f}",
        gm=gemm_controls.kib(budget["gm_bytes"]), mte2_l2=f"{budget['mte2_l2']:,.0f}",
        mte2_hbm=f"{budget['mte2_hbm']:,.0f}", cores=p["block_dim"],
        need=f"{budget['need_GBps']:,.0f}", hbm=f"{chip.hbm_bandwidth_GBps:,.0f}",
        l2=f"{chip.l2_bandwidth_GBps:,.0f}", hit=f"{budget['hit']:.0%}"),
        icon=":material/speed:")


def explain(chip: Chip, p: dict | None) -> None:
    """Every explanation of the page, the live numbers when the parameters are valid."""
    st.subheader(state.tr("ui.gemm.explain.title"))
    st.markdown(state.tr("ui.gemm.explain.launch"))
    with st.expander(state.tr("ui.gemm.explain.code_title")):
        st.code(literal("ui.gemm.explain.code"), language="cpp")
    st.markdown(state.tr("ui.gemm.explain.default"))
    if p is not None:
        _live_tiling(chip, p)
    st.markdown(state.tr("ui.gemm.explain.small"))
    st.markdown(state.tr("ui.gemm.explain.split_k"))
    with st.expander(state.tr("ui.gemm.explain.api_title"), expanded=True):
        st.markdown(state.tr("ui.gemm.explain.api"))


def sparsity_note(p: dict) -> None:
    """Say loudly that 2:4 is a what-if, and what the real 4:2 path is."""
    if p["sparsity"] == "2:4":
        st.warning(state.tr("ui.gemm.sparsity_whatif"), icon=":material/science:")
    elif p["sparsity"] == "4:2":
        st.info(state.tr("ui.gemm.sparsity_real"), icon=":material/memory:")

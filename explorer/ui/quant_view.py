"""What a run's quantised inputs lost to their format (explorer.core.quantization), shown
on the kernel pages that store inputs in FP8, HiF8, MX or int8: a table per operand next
to bf16's loss on the same values, what each column means, and beside it the output's own
error from the numerical check, said against what it was compared with."""
from __future__ import annotations

import streamlit as st

from explorer.core import NumericsCheck, Scenario
from explorer.core.quantization import input_quantization, quantization_table
from explorer.ui import state

#: what the check compared the output with: the inputs as stored (GEMM, linear), or the
#: real values before storing (the decode attention, whose bound holds the storage error)
OUTPUT_IDS = {"stored": "ui.quant.output_stored", "real": "ui.quant.output_real"}


def show_quantization(scenario: Scenario, check: NumericsCheck, against: str) -> None:
    """The table, when the scenario's kernel stores something quantised (else nothing),
    and the output's error from ``check``, compared ``against`` "stored" or "real" values."""
    lost = input_quantization(scenario)
    if not lost:
        return
    st.subheader(state.tr("ui.quant.title"))
    st.caption(state.tr("ui.quant.intro"))
    st.dataframe(quantization_table(lost, state.language()), hide_index=True,
                 width="stretch")
    st.caption(state.tr("ui.quant.columns"))
    st.markdown(state.tr(OUTPUT_IDS[against], norm=f"{check.norm_rel_error:.3%}",
                         bound=f"{check.norm_bound:.3%}",
                         large=f"{check.max_rel_error_large:.3%}"))

"""The "Mixed precision" page's explanations: why the user's configuration cannot run
(translated), the "sandwich" picture of where each format lives, and what every choice
is in Ascend C (Mmad input and output types, L0C accumulation, the Fixpipe's quantPre
mode, Cast and AntiQuant on the vector unit).

Prose lives in the catalogues (``ui.precision.map.*``, ``precision.problem.*``); here the
configuration is only turned into message ids and values.
"""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from explorer.core import precision_study as ps
from explorer.plots import precision as pp
from explorer.ui import run_view, state
from explorer.ui.precision_controls import CHOICE_IDS
from kernels.common.formats import FORMATS
from kernels.common.precision import format_of

#: the stored operand (B or K/V) of each operation family, as a message id
OPERAND_IDS = {"gemm": "ui.precision.map.operand_gemm",
               "attention": "ui.precision.map.operand_kv"}
#: Ascend C element types of the formats
C_TYPES = {name: fmt.c_type for name, fmt in FORMATS.items()}
#: why a configuration cannot run, by the problem's status
PROBLEM_IDS = {"not_on_chip": "ui.precision.problem_not_on_chip",
               "impossible": "ui.precision.problem_impossible"}
#: what each Fixpipe quantPre mode does (``precision_study.stages``' "fixpipe")
MODE_IDS = {"NoQuant": "ui.precision.map.mode.NoQuant",
            "F322F16": "ui.precision.map.mode.F322F16",
            "F322BF16": "ui.precision.map.mode.F322BF16",
            "QF322B8_PRE": "ui.precision.map.mode.QF322B8_PRE",
            "DEQF16": "ui.precision.map.mode.DEQF16", "VDEQF16": "ui.precision.map.mode.VDEQF16",
            "QS322BF16_PRE": "ui.precision.map.mode.QS322BF16_PRE",
            "VQS322BF16_PRE": "ui.precision.map.mode.VQS322BF16_PRE",
            "REQ8": "ui.precision.map.mode.REQ8", "VREQ8": "ui.precision.map.mode.VREQ8"}
#: how L0C and the vector unit accumulate, by ``stages``' "acc" (a strategy, or int32)
ACC_IDS = {"fp32": "ui.precision.map.acc.fp32", "int32": "ui.precision.map.acc.int32",
           "fp16": "ui.precision.map.acc.fp16", "pairwise": "ui.precision.map.acc.pairwise",
           "kahan": "ui.precision.map.acc.kahan"}
#: the background, one paragraph each
EXPLAIN_IDS = ("ui.precision.explain.formats", "ui.precision.explain.bounds",
               "ui.precision.explain.granularity", "ui.precision.explain.cost")


def problems(operation: str, shape: tuple, cfg: ps.PrecisionConfig) -> tuple[ps.Problem, ...]:
    """Show why the user's configuration cannot run (translated); returns the problems."""
    found = ps.problems(operation, shape, cfg, state.chip())
    for problem in found:
        reason = state.tr(problem.msg_id, **problem.values)
        st.error(state.tr(PROBLEM_IDS[problem.status], reason=reason), icon=":material/error:")
    if cfg.compute == "int8" and cfg.accumulate != "fp32":
        st.info(state.tr("ui.precision.int8_acc", acc=cfg.accumulate), icon=":material/info:")
    return found


# ---- the sandwich ------------------------------------------------------------------------
@st.cache_resource(max_entries=16, show_spinner=False)
def sandwich(operation: str, cfg: tuple, preset: str, overrides: tuple, lang: str) -> go.Figure:
    config = ps.PrecisionConfig(*cfg)
    stages = ps.stages(operation, config, state.chip())
    return pp.sandwich_figure(stages, lang, label=config.short())


def show_sandwich(operation: str, cfg: ps.PrecisionConfig, cfg_key: tuple,
                  chip_args: tuple) -> None:
    run_view.show(sandwich(operation, cfg_key, *chip_args, state.language()), key="sandwich")
    st.caption(state.tr("ui.precision.sandwich_caption"))


# ---- Ascend C ----------------------------------------------------------------------------
def _granularity_words(cfg: ps.PrecisionConfig, operation: str) -> str:
    words = state.tr(CHOICE_IDS["granularity"][cfg.granularity])
    if cfg.granularity == "group":
        words += " " + state.tr("ui.precision.map.group_of", size=cfg.group_size,
                                axis=ps.REDUCTION_AXIS[operation])
    return words


def _storage_line(operation: str, cfg: ps.PrecisionConfig) -> str:
    operand = state.tr(OPERAND_IDS[ps.family(operation)])
    if cfg.quantized:
        return state.tr("ui.precision.map.storage_int", operand=operand, fmt=cfg.storage,
                        granularity=_granularity_words(cfg, operation), scheme=state.tr(
                            CHOICE_IDS["scheme"][cfg.scheme]))
    return state.tr("ui.precision.map.storage_float", operand=operand, fmt=cfg.storage,
                    bytes=f"{format_of(cfg.storage).bytes:g}")


def _vector_line(st_: dict) -> str:
    if st_["vector_op"] == "antiquant":
        return state.tr("ui.precision.map.antiquant", src=st_["ub_from"], dst=st_["ub_to"])
    if st_["vector_op"] == "cast":
        return state.tr("ui.precision.map.cast", src=st_["ub_from"], dst=st_["ub_to"])
    return state.tr("ui.precision.map.no_vector")


def _output_line(st_: dict, chip) -> str:
    if not st_["has_fixpipe"]:
        return state.tr("ui.precision.map.no_fixpipe", chip=chip.display_name,
                        acc=st_["l0c"], out=st_["gm_out"])
    mode = st_["fixpipe"]
    return state.tr("ui.precision.map.fixpipe", mode=mode, out=st_["gm_out"],
                    meaning=state.tr(MODE_IDS[mode]))


def mapping_lines(operation: str, cfg: ps.PrecisionConfig) -> list[str]:
    """The configuration in Ascend C, one markdown bullet per step."""
    chip = state.chip()
    st_ = ps.stages(operation, cfg, chip)
    lines = [_storage_line(operation, cfg), state.tr("ui.precision.map.load"), _vector_line(st_)]
    lines.append(state.tr("ui.precision.map.mmad", l0=st_["l0"], l0c=st_["l0c"],
                          a=C_TYPES[st_["l0"]], c=C_TYPES[st_["l0c"]]))
    if st_["hf32"]:
        lines.append(state.tr("ui.precision.map.hf32"))
    lines.append(state.tr(ACC_IDS[st_["acc"]]))
    lines.append(_output_line(st_, chip))
    if cfg.compute == "int8":
        lines.append(state.tr("ui.precision.map.w8a8"))
    if ps.family(operation) == "attention":
        lines.append(state.tr("ui.precision.map.attention", compute=cfg.compute))
    return lines


def show_mapping(operation: str, cfg: ps.PrecisionConfig) -> None:
    st.markdown("\n".join(f"- {line}" for line in mapping_lines(operation, cfg)))


def explain() -> None:
    """The background: bounds, quantisation granularity, the blog's claim."""
    with st.expander(state.tr("ui.precision.explain.title"), expanded=False):
        for msg_id in EXPLAIN_IDS:
            st.markdown(state.tr(msg_id))

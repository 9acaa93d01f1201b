"""Controls of the "Mixed precision" page: the operation studied (GEMM, the attention
score, the KV cache's storage; not a kernel of the emulator's registry), its shape and
data, and the user's precision configuration (storage / compute / accumulate / output
formats, quantisation granularity, scheme and group size).

Values live in session state under ``pr.<name>`` (see ``state.bound``) and in the URL, so
a link reproduces a study; the operation's parameter keeps the name "kernel" there (URL,
widget key, ``p["kernel"]``) because shared links depend on it. The choices depend on the
operation: the attention operations compute in a float format and write float results,
GEMM also offers the int8 Mmad and an int8 C; a value that the new operation does not
offer falls back to the blog's fp16 sandwich. What the chip cannot run is not hidden: it
is offered, marked, and explained by the page.
"""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from explorer.core import precision_formats as pf
from explorer.core import precision_study as ps
from explorer.core.i18n import t
from explorer.ui import errors, state, widgets
from explorer.ui.gemm_controls import labels
from explorer.ui.page_params import PageParams
from hardware_presets import Chip
from kernels.common.accumulate import STRATEGIES
from kernels.common.params import ParamSpec
from kernels.common.precision import chip_formats

PREFIX = "pr."
_LIM = {name: (lo, hi) for fam in ps.LIMITS.values() for name, lo, hi in fam}
PARAMS = (
    ParamSpec("kernel", str, "gemm", choices=ps.OPERATIONS),  # the operation studied
    ParamSpec("M", int, 1024, *_LIM["M"], log_scale=True),
    ParamSpec("N", int, 1024, *_LIM["N"], log_scale=True),
    ParamSpec("K", int, 1024, *_LIM["K"], log_scale=True),
    ParamSpec("T", int, 4096, *_LIM["T"], log_scale=True),
    ParamSpec("d", int, 128, choices=(64, 128, 256)),
    ParamSpec("distribution", str, "gaussian", choices=ps.DISTRIBUTIONS),
    ParamSpec("seed", int, 0, 0, 2**32 - 1),
    ParamSpec("storage", str, "fp16", choices=ps.STORAGE_FORMATS),
    ParamSpec("compute", str, "fp16", choices=ps.COMPUTE_FORMATS["gemm"]),
    ParamSpec("accumulate", str, "fp32", choices=STRATEGIES),
    ParamSpec("output", str, "fp16", choices=ps.OUTPUT_FORMATS["gemm"]),
    ParamSpec("granularity", str, "channel", choices=ps.GRANULARITIES),
    ParamSpec("scheme", str, "symmetric", choices=ps.SCHEMES),
    ParamSpec("group_size", int, 128, 1, 4096),
    ParamSpec("format", str, "fp8_e4m3", choices=pf.STUDY_FORMATS),  # the format studied
    ParamSpec("magnitude", int, 0, *pf.MAGNITUDE_RANGE),  # the data times 10^magnitude
)
SPECS = {spec.name: spec for spec in PARAMS}
LABEL_PREFIX = "ui.precision.param"
#: the catalogue id of every choice of the choice parameters named in words, by parameter
#: (ids written out, see tests/test_message_ids.py); the explanations name theirs from here
CHOICE_IDS = {
    "kernel": {"gemm": "ui.precision.kernel.gemm",
               "attention_score": "ui.precision.kernel.attention_score",
               "kv_storage": "ui.precision.kernel.kv_storage"},
    "distribution": {"gaussian": "ui.precision.distribution.gaussian",
                     "uniform": "ui.precision.distribution.uniform",
                     "heavy": "ui.precision.distribution.heavy",
                     "outliers": "ui.precision.distribution.outliers"},
    "accumulate": {"fp32": "ui.precision.strategy.fp32", "fp16": "ui.precision.strategy.fp16",
                   "pairwise": "ui.precision.strategy.pairwise",
                   "kahan": "ui.precision.strategy.kahan"},
    "granularity": {"tensor": "ui.precision.granularity.tensor",
                    "channel": "ui.precision.granularity.channel",
                    "token": "ui.precision.granularity.token",
                    "group": "ui.precision.granularity.group"},
    "scheme": {"symmetric": "ui.precision.scheme.symmetric",
               "asymmetric": "ui.precision.scheme.asymmetric"},
}


PAGE = PageParams(PREFIX, SPECS)
key, value, take_url = PAGE.key, PAGE.value, PAGE.take_url
#: the label of each parameter, for ``errors.show`` ("M (rows of A and C) (params.M)")
label_id = errors.param_labels(SPECS, LABEL_PREFIX)


# ---- labels ------------------------------------------------------------------------------
def _format_label(chip: Chip, unit: str) -> Callable[[str], str]:
    """Formats as offered: those the chip's ``unit`` lacks are marked (and explained)."""
    lang, have, name = state.language(), chip_formats(chip)[unit], chip.display_name
    return lambda fmt: fmt if fmt in have else t("ui.precision.not_on_chip", lang, fmt=fmt,
                                                 chip=name)


def _widget(name: str, where, **kwargs):
    return widgets.param_widget(SPECS[name], key(name), where=where, prefix=LABEL_PREFIX,
                                **kwargs)


def _keep_in(name: str, options: tuple, fallback: object) -> tuple:
    """Make the session value one of ``options`` (an operation switch may leave it outside)."""
    if value(name) not in options:
        st.session_state[key(name)] = fallback
    return options


def _shape_names(operation: str) -> tuple[str, ...]:
    """The shape parameters of ``operation``: M, N, K for GEMM, T, d for attention."""
    return tuple(name for name, _, _ in ps.LIMITS[ps.family(operation)])


# ---- the three groups --------------------------------------------------------------------
def _problem(where) -> dict:
    where.markdown(f"**{state.tr('ui.precision.group.problem')}**")
    p = {"kernel": _widget("kernel", where, options=ps.OPERATIONS,
                           format_func=labels(CHOICE_IDS["kernel"]))}
    for name in _shape_names(p["kernel"]):
        p[name] = _widget(name, where)
    p["distribution"] = _widget("distribution", where,
                                format_func=labels(CHOICE_IDS["distribution"]))
    p["seed"] = _widget("seed", where)
    return p


def _formats(chip: Chip, p: dict, where) -> dict:
    where.markdown(f"**{state.tr('ui.precision.group.formats')}**")
    fam = ps.family(p["kernel"])
    compute = _keep_in("compute", ps.COMPUTE_FORMATS[fam], "fp16")
    output = _keep_in("output", ps.OUTPUT_FORMATS[fam], "fp16")
    p["storage"] = _widget("storage", where, options=ps.STORAGE_FORMATS)
    p["compute"] = _widget("compute", where, options=compute,
                           format_func=_format_label(chip, "cube"))
    p["accumulate"] = _widget("accumulate", where, options=STRATEGIES,
                              format_func=labels(CHOICE_IDS["accumulate"]))
    p["output"] = _widget("output", where, options=output)
    return p


def _quantization(p: dict, where) -> dict:
    where.markdown(f"**{state.tr('ui.precision.group.quant')}**")
    if p["storage"] not in ps.INT_FORMATS:
        where.caption(state.tr("ui.precision.quant_unused", storage=p["storage"]))
    p["granularity"] = _widget("granularity", where,
                               format_func=labels(CHOICE_IDS["granularity"]))
    p["scheme"] = _widget("scheme", where, format_func=labels(CHOICE_IDS["scheme"]))
    p["group_size"] = _widget("group_size", where)
    return p


def controls(chip: Chip) -> dict:
    """Every widget of the configuration in three bordered columns; returns the page
    parameters (the format study's two are drawn in its section: ``format_controls``)."""
    left, middle, right = (column.container(border=True) for column in st.columns(3))
    p = _problem(left)
    p = _formats(chip, p, middle)
    return _quantization(p, right)


def format_controls(chip: Chip, p: dict) -> dict:
    """The format studied (those the chip lacks marked, as the cube's compute formats
    are) and the magnitude of the data, side by side; returns ``p`` with both."""
    left, right = st.columns(2)
    lang, name = state.language(), chip.display_name
    have = {f for names in chip_formats(chip).values() for f in names}
    mark = lambda fmt: fmt if fmt in have else t(  # noqa: E731
        "ui.precision.not_on_chip", lang, fmt=fmt, chip=name)
    fmt = _widget("format", left, format_func=mark)
    return {**p, "format": fmt, "magnitude": _widget("magnitude", right)}


# ---- what the parameters mean ------------------------------------------------------------
def shape(p: dict) -> tuple[int, ...]:
    return tuple(p[name] for name in _shape_names(p["kernel"]))


def config(p: dict) -> ps.PrecisionConfig:
    return ps.PrecisionConfig(p["storage"], p["compute"], p["accumulate"], p["output"],
                              p["granularity"], int(p["group_size"]), p["scheme"])


def url_params(p: dict) -> dict:
    """The parameters that describe the study (the other operations' shapes are left out)."""
    skip = set(_LIM) - set(_shape_names(p["kernel"]))
    return {k: v for k, v in p.items() if k not in skip}

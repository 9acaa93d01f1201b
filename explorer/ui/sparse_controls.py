"""Controls of the "Sparse attention" page: the policy (which tokens to keep, how many, the
sinks and window every policy keeps, Quest's page size, how often to compress), the decode
workload the time and bytes are emulated on (model, batch, lengths, KV dtype), and the data
the accuracy is measured on (synthetic inputs with their structure knobs, or a user's .npz
dump).

Parameters are ``ParamSpec``s, so URL values, widgets and refusals work as on the other
kernel pages; the decode kernel's own specs (and labels) serve the workload and the
policy's numbers. The synthetic knobs are ``kernels.sparse.data.Structure``'s fields with
its ranges, a few capped lower so that the page answers in seconds. The page starts small
(Llama 3 8B, 8 sequences of 4K tokens; 1,024 synthetic tokens) so it answers at once.
"""
from __future__ import annotations

import dataclasses

import streamlit as st

from explorer.plots.sparse import policy_name
from explorer.ui import state, widgets
from explorer.ui.decode_controls import CHOICE_IDS
from explorer.ui.gemm_controls import labels
from explorer.ui.page_params import PageParams
from kernels.common.params import ParamSpec
from kernels.decode import params as dp
from kernels.decode import workload as wl
from kernels.models import load_model
from kernels.sparse import data as sd
from kernels.sparse.policies import POLICIES

SOURCES = ("synthetic", "upload")
SOURCE_IDS = {"synthetic": "ui.sparse.source.synthetic", "upload": "ui.sparse.source.upload"}
_DECODE = {s.name: s for s in dp.PARAMS}
#: the page's caps on the synthetic knobs (the study takes seconds beyond them)
PAGE_CAPS = {"tokens": 16_384, "head_dim": 256, "kv_heads": 8, "group": 16,
             "past_queries": 64, "sink_tokens": 64, "heavy_hitters": 4096,
             "local_span": 16_384.0, "query_channels": 64, "outlier_channels": 64}


def _knob(field: dataclasses.Field) -> ParamSpec:
    """A ParamSpec of one Structure knob: its default and range (page caps applied)."""
    low, high = sd._RANGES[field.name]  # the ranges Structure itself enforces
    return ParamSpec(field.name, type(field.default), field.default, low,
                     min(high, PAGE_CAPS.get(field.name, high)))


KNOBS: dict[str, ParamSpec] = {f.name: _knob(f) for f in dataclasses.fields(sd.Structure)}
WORKLOAD = ("model", "batch", "distribution", "mean_len", "max_len", "kv_dtype")
POLICY = ("sparse", "keep_ratio", "sinks", "window", "page_size", "compress_every")
SPECS: dict[str, ParamSpec] = {
    "sparse": ParamSpec("sparse", str, "norm_high", choices=POLICIES),
    **{name: _DECODE[name] for name in POLICY[1:]},
    "model": wl.PARAMS[0],  # the shipped models
    **{name: _DECODE[name] for name in ("batch", "mean_len", "max_len", "kv_dtype")},
    "distribution": ParamSpec("distribution", str, "equal", choices=tuple(
        d for d in _DECODE["distribution"].choices if d != "list")),
    "source": ParamSpec("source", str, "synthetic", choices=SOURCES),
    "head": ParamSpec("head", int, 0, 0, sd.MAX_HEADS - 1, unit="KV head"),
    **KNOBS,
}
UI_DEFAULTS = {"batch": 8, "mean_len": 4096, "max_len": 8192}
#: knobs shown first (the ones that decide which rule works); the rest in an expander
MAIN_KNOBS = ("norm_relation", "tokens", "heavy_hitters", "locality")
#: one-click scenarios; each starts from the page defaults
EXAMPLES = {
    "blog": {"sparse": "norm_high", "keep_ratio": 0.3},
    "blog_world": {"sparse": "norm_high", "norm_relation": 1.0},
    "devoto": {"sparse": "norm_low"},
    "h2o": {"sparse": "h2o", "keep_ratio": 0.1},
    "quest": {"sparse": "quest", "keep_ratio": 0.1, "page_size": 16},
    "streaming": {"sparse": "streaming", "heavy_hitters": 32, "heavy_strength": 5.0},
}


PREFIX = "sa."  # session keys of this page's values: sa.sparse, sa.batch, ...
PAGE = PageParams(PREFIX, SPECS, UI_DEFAULTS, EXAMPLES)
key, value, take = PAGE.key, PAGE.value, PAGE.take


def label_id(name: str) -> str:
    """The catalogue id of a parameter's label (the decode page's for the workload), for
    the widgets drawn here and for ``errors.show``, which leads a refused field with it
    ("Keep ratio (params.keep_ratio)"); "" for a word that names no parameter of the page."""
    return f"{_prefix(name)}.{name}.label" if name in SPECS else ""


def _prefix(name: str) -> str:
    if name in KNOBS:
        return "ui.sparse.knob"
    return "ui.decode.param" if name in WORKLOAD else "ui.sparse.param"


# ---- URL, examples -----------------------------------------------------------------------
def url_params(p: dict) -> dict:
    """The parameters of the scenario: knobs only where they leave the defaults (and only
    for synthetic data), the uploaded file never."""
    out = {k: v for k, v in p.items() if k in SPECS and k not in KNOBS}
    out["head"] = value("head")
    if p["source"] == "synthetic":
        out.update({k: p[k] for k in KNOBS if p[k] != KNOBS[k].default})
    return out


def examples() -> None:
    PAGE.example_row("ui.sparse.example", "sa_example")


# ---- widgets -----------------------------------------------------------------------------
def _widget(name: str, where, **kwargs):
    st.session_state.setdefault(key(name), value(name))
    return widgets.param_widget(SPECS[name], key(name), where=where, prefix=_prefix(name),
                                **kwargs)


def _float(name: str, where, step: float):
    """A number input for a float parameter over its whole range."""
    spec = SPECS[name]
    return where.number_input(
        state.tr(label_id(name)), min_value=float(spec.min),
        max_value=float(spec.max), step=step, format="%g",
        help=widgets.param_help(spec, prefix=_prefix(name)),
        **state.bound(key(name), value(name)))


def _more(where):
    """The rarely changed widgets of a group, folded under "More options"."""
    return where.expander(state.tr("apply.more"))


def _policy(where) -> dict:
    """Policy and keep ratio; the sinks, window, Quest's page size and the compression
    interval folded."""
    where.markdown(f"**{state.tr('ui.sparse.group.policy')}**")
    lang = state.language()
    p = {"sparse": _widget("sparse", where, format_func=lambda x: policy_name(x, lang))}
    p["keep_ratio"] = _float("keep_ratio", where, 0.05)
    with _more(where):
        for name in POLICY[2:]:
            p[name] = _widget(name, st)
    return p


def _workload(p: dict, where) -> dict:
    """The decode step the time and bytes are emulated on: model, batch and mean length;
    the distribution, max length and KV precision folded."""
    where.markdown(f"**{state.tr('ui.sparse.group.workload')}**")
    p["model"] = _widget("model", where, format_func=lambda n: load_model(n).display_name)
    p["batch"] = _widget("batch", where)
    p["mean_len"] = _widget("mean_len", where)
    with _more(where):
        p["distribution"] = _widget("distribution", st,
                                    format_func=labels(CHOICE_IDS["distribution"]))
        for name in ("max_len", "kv_dtype"):
            p[name] = _widget(name, st)
    return p


def _knob_widget(name: str, where):
    if name == "norm_relation":
        spec = SPECS[name]
        return where.slider(state.tr(label_id(name)), -1.0, 1.0, step=0.1,
                            help=widgets.param_help(spec, prefix=_prefix(name)),
                            **state.bound(key(name), value(name)))
    if SPECS[name].kind is float:
        return _float(name, where, 0.5)
    return _widget(name, where)


def _data(p: dict, where) -> dict:
    """Synthetic inputs (main knobs, then the rest in an expander) or an uploaded dump."""
    where.markdown(f"**{state.tr('ui.sparse.group.data')}**")
    p["source"] = _widget("source", where, format_func=labels(SOURCE_IDS))
    if p["source"] == "upload":
        p.update({k: value(k) for k in KNOBS})
        from explorer.ui import uploads  # (here: the rest of this module is edited elsewhere)
        p["upload"] = uploads.uploader(
            where, "ui.sparse.upload", ("npz",), "sa_upload", max_bytes=sd.MAX_FILE_BYTES,
            help_id="ui.sparse.upload_help", help_values={"mib": sd.MAX_FILE_BYTES >> 20})
        return p
    for name in MAIN_KNOBS:
        p[name] = _knob_widget(name, where)
    with where.expander(state.tr("ui.sparse.more_knobs")):
        for name in KNOBS:
            if name not in MAIN_KNOBS:
                p[name] = _knob_widget(name, st)
    return p


def controls() -> dict:
    """Draw the policy, workload and data widgets in three bordered columns."""
    left, middle, right = (column.container(border=True) for column in st.columns(3))
    p = _workload(_policy(left), middle)
    return _data(p, right)


def head_slider(kv_heads: int) -> int:
    """The KV head of the heat map (kept within the data's heads)."""
    st.session_state[key("head")] = min(int(value("head")), kv_heads - 1)
    if kv_heads == 1:
        return 0
    spec = SPECS["head"]
    return st.slider(state.tr(label_id("head")), 0, kv_heads - 1, step=1,
                     help=widgets.param_help(spec, prefix=_prefix("head")),
                     **state.bound(key("head"), value("head")))

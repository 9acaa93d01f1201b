"""Controls of the "KV cache and decode" page, generated from ``kernels.decode.params.PARAMS``.

Three groups, as a serving engineer meets them: the workload (model or a custom shape,
batch, context lengths, KV and weight precisions), the cache (layout, block size, how
the new token is appended) and the kernel (attention implementation, cores, BUFFER_NUM,
task policy, tile and head grouping, split-KV chunk).

The page starts small (Llama 3 8B, 8 sequences of 2K tokens) so it answers in a blink;
the chip decides block_dim's range (it follows a preset change when it was "all cores",
0). Whatever the kernel refuses (a length list of the wrong size, a tile too big for UB)
is shown as a translated error by the page (``errors.show`` with this page's labels,
``label_id``); the controls keep the value to fix.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from explorer.core.i18n import t
from explorer.ui import errors, state, widgets
from explorer.ui.gemm_controls import labels
from explorer.ui.page_params import PageParams
from hardware_presets import Chip
from kernels.common.params import ParamSpec
from kernels.decode import params as dp
from kernels.models import load_model

SPECS = {spec.name: spec for spec in (*dp.PARAMS, widgets.SEED_SPEC)}
PAGE_PHASES = ("layer", "both", "append", "attention")  # compression: the sparse page
PREFIX = "dc."  # session keys of this page's values: dc.batch, dc.impl, ...
LABELS = "ui.decode.param"  # <LABELS>.<name>.label / .help
#: the page's own starting point: small enough to emulate in about a second
UI_DEFAULTS = {"model": "llama3-8b", "batch": 8, "mean_len": 2048, "max_len": 8192}
#: the catalogue id of every choice of the choice parameters, by parameter (ids written out,
#: see tests/test_message_ids.py); the load-balance and sparse pages name theirs from here
CHOICE_IDS = {
    "distribution": {"equal": "ui.decode.distribution.equal",
                     "uniform": "ui.decode.distribution.uniform",
                     "lognormal": "ui.decode.distribution.lognormal",
                     "bimodal": "ui.decode.distribution.bimodal",
                     "list": "ui.decode.distribution.list"},
    "layout": {"contiguous": "ui.decode.layout.contiguous", "paged": "ui.decode.layout.paged"},
    "allocation": {"shuffled": "ui.decode.allocation.shuffled",
                   "interleaved": "ui.decode.allocation.interleaved"},
    "append": {"incremental": "ui.decode.append.incremental",
               "concat": "ui.decode.append.concat"},
    "phases": {"layer": "ui.decode.phases.layer", "both": "ui.decode.phases.both",
               "append": "ui.decode.phases.append", "attention": "ui.decode.phases.attention"},
    "impl": {"vector": "ui.decode.impl.vector", "cube_vector": "ui.decode.impl.cube_vector",
             "split_kv": "ui.decode.impl.split_kv"},
    "policy": {"static": "ui.decode.policy.static", "round_robin": "ui.decode.policy.round_robin",
               "lpt": "ui.decode.policy.lpt", "cluster_lpt": "ui.decode.policy.cluster_lpt",
               "dynamic": "ui.decode.policy.dynamic"},
}

#: one-click scenarios; each starts from the page defaults
EXAMPLES = {
    "small": {},
    "ragged": {"distribution": "bimodal", "mean_len": 1024, "policy": "round_robin"},
    "concat": {"append": "concat"},
    "cube": {"impl": "cube_vector"},
    "split": {"impl": "split_kv", "batch": 2, "mean_len": 8192},
    "paged_int8": {"kv_dtype": "int8_token", "block_size": 64},
}


PAGE = PageParams(PREFIX, SPECS, UI_DEFAULTS, EXAMPLES)
key, value, take_url = PAGE.key, PAGE.value, PAGE.take_url
#: the label of each parameter, for ``errors.show`` ("Batch (params.batch)")
label_id = errors.param_labels(SPECS, LABELS)


def default(name: str) -> object:
    return UI_DEFAULTS.get(name, SPECS[name].default)


# ---- URL and examples --------------------------------------------------------------------


def url_params(p: dict) -> dict:
    """The parameters that describe the scenario (unused ones are left out of links)."""
    skip = set()
    if p["model"] != dp.CUSTOM:
        skip |= {f"custom_{name}" for name in dp.CUSTOM_FIELDS}
    if p["distribution"] != "list":
        skip.add("lengths")
    if p["layout"] != "paged":
        skip |= {"block_size", "allocation"}
    if p["impl"] != "split_kv":
        skip.add("split_tokens")
    if p["policy"] not in ("lpt", "cluster_lpt"):
        skip.add("inter_core_cost")
    return {k: v for k, v in p.items() if k not in skip}


def examples() -> None:
    """A row of buttons, each one a ready scenario."""
    PAGE.example_row("ui.decode.example", "dc_example")


# ---- widgets -----------------------------------------------------------------------------
def _model_label() -> Callable[[str], str]:
    lang = state.language()
    return lambda name: t("ui.decode.custom_model", lang) if name == dp.CUSTOM else \
        load_model(name).display_name


def _widget(name: str, where, spec: ParamSpec | None = None, **kwargs):
    st.session_state.setdefault(key(name), default(name))
    return widgets.param_widget(spec or SPECS[name], key(name), where=where, prefix=LABELS,
                                **kwargs)


def _choice(name: str, where, choices: tuple | None = None):
    """A choice widget; ``choices`` narrows the parameter's own (the page's subset)."""
    spec = replace(SPECS[name], choices=choices) if choices else None
    return _widget(name, where, spec, format_func=labels(CHOICE_IDS[name]))


def _clamp(name: str, hi: int) -> int:
    """Keep an integer parameter within [its minimum, hi]; returns hi."""
    lo = int(SPECS[name].min)
    st.session_state[key(name)] = min(max(int(value(name)), lo), max(hi, lo))
    return hi


def _number(name: str, where, **kwargs):
    """A plain number input (floats, or integers whose slider would be too long)."""
    spec = SPECS[name]
    return where.number_input(
        widgets.param_label(spec, LABELS), min_value=spec.kind(spec.min),
        max_value=spec.kind(spec.max), help=widgets.param_help(spec, prefix=LABELS),
        **kwargs, **state.bound(key(name), value(name)))


def _custom_shape(p: dict, where) -> dict:
    """The custom model's shape fields (only when the model is "custom")."""
    with where.expander(state.tr("ui.decode.custom_title"), expanded=True):
        for name in dp.CUSTOM_FIELDS:
            field = f"custom_{name}"
            p[field] = (_number(field, st, format="%g") if name in ("params_B", "hidden")
                        else _widget(field, st))
    return p


def _lengths(p: dict, where) -> dict:
    """Mean and max length, or the explicit list of lengths."""
    if p["distribution"] == "list":
        spec = SPECS["lengths"]
        p["lengths"] = where.text_input(
            widgets.param_label(spec, LABELS), help=widgets.param_help(spec, prefix=LABELS),
            placeholder="2048, 512, 8192", **state.bound(key("lengths"), value("lengths")))
    else:
        p["mean_len"] = _widget("mean_len", where)
        p["lengths"] = value("lengths")
    p["max_len"] = _widget("max_len", where)
    return p


def _workload(where) -> dict:
    """Model, batch, context lengths, KV and weight precisions."""
    where.markdown(f"**{state.tr('ui.decode.group.workload')}**")
    p = {"model": _widget("model", where, format_func=_model_label())}
    if p["model"] == dp.CUSTOM:
        p = _custom_shape(p, where)
    else:
        p.update({f"custom_{n}": value(f"custom_{n}") for n in dp.CUSTOM_FIELDS})
    p["batch"] = _widget("batch", where)
    p["distribution"] = _choice("distribution", where)
    p = _lengths(p, where)
    p["kv_dtype"] = _widget("kv_dtype", where)
    p["weight_dtype"] = _widget("weight_dtype", where)
    return p


def _cache(p: dict, where) -> dict:
    """Layout (and its blocks), append strategy and which phases run."""
    where.markdown(f"**{state.tr('ui.decode.group.cache')}**")
    p["layout"] = _choice("layout", where)
    if p["layout"] == "paged":
        p["block_size"] = _widget("block_size", where)
        p["allocation"] = _choice("allocation", where)
    else:
        p["block_size"], p["allocation"] = value("block_size"), value("allocation")
    p["append"] = _choice("append", where)
    p["phases"] = _choice("phases", where, PAGE_PHASES)
    p["allow_overcommit"] = _widget("allow_overcommit", where)
    return p


def _kernel(chip: Chip, p: dict, where) -> dict:
    """Implementation, cores, BUFFER_NUM, policy, tile, heads per pass, split chunk."""
    where.markdown(f"**{state.tr('ui.decode.group.kernel')}**")
    p["impl"] = _choice("impl", where)
    cores = len(chip.vector_core_ids())
    p["block_dim"] = _widget("block_dim", where, max_value=_clamp("block_dim", cores),
                             extra_help=state.tr("ui.decode.block_dim_max", cores=cores,
                                                 cube=chip.ai_cores, chip=chip.display_name))
    p["buffer_num"] = _widget("buffer_num", where)
    p["policy"] = _choice("policy", where)
    if p["policy"] in ("lpt", "cluster_lpt"):
        p["inter_core_cost"] = _number("inter_core_cost", where, step=50.0)
    else:
        p["inter_core_cost"] = value("inter_core_cost")
    p["tile_tokens"] = _number("tile_tokens", where, step=16)
    p["heads_per_pass"] = _widget("heads_per_pass", where,
                                  max_value=_clamp("heads_per_pass", _kv_heads(p)))
    if p["impl"] == "split_kv":
        p["split_tokens"] = _number("split_tokens", where, step=256)
    else:
        p["split_tokens"] = value("split_tokens")
    return p


def _kv_heads(p: dict) -> int:
    """KV heads of the chosen model (the custom one may be invalid: its field's range)."""
    if p["model"] == dp.CUSTOM:
        return int(p.get("custom_kv_heads", SPECS["custom_kv_heads"].max))
    return load_model(p["model"]).kv_heads


def controls(chip: Chip) -> dict:
    """Draw every parameter widget in three bordered columns; returns the parameters and
    the scenario's seed (key "seed": it draws the lengths and the block table)."""
    left, middle, right = (column.container(border=True) for column in st.columns(3))
    p = _workload(left)
    p = _cache(p, middle)
    p = _kernel(chip, p, right)
    p["seed"] = _number("seed", right, step=1)
    return p

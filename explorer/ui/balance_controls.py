"""Controls of the "Load balance" page: the workload (a synthetic task list drawn from a
length distribution, or the decode kernel's attention) and the schedule (cores, policy,
the blog's inter-core cost, cluster size, splitting).

Parameters are ``ParamSpec``s, so URL values, widgets and refusals work as on the other
kernel pages; those the decode kernel also has (model, batch, lengths, implementation,
policy, inter-core cost) are its own specs and reuse its labels. The page starts small
(Llama 3 8B shape, 16 lognormal sequences of mean 1,024 tokens, 8 KV heads each) so it
answers at once; the decode workload is emulated only when asked for.
"""
from __future__ import annotations

import streamlit as st

from explorer.plots.balance import policy_name
from explorer.ui import errors, state, widgets
from explorer.ui.decode_controls import CHOICE_IDS
from explorer.ui.gemm_controls import labels
from explorer.ui.page_params import PageParams
from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common.params import ParamSpec
from kernels.decode import params as dp
from kernels.decode import workload as wl
from kernels.models import load_model

SOURCES = ("synthetic", "decode")
_SHARED = {s.name: s for s in dp.PARAMS}
SPECS: dict[str, ParamSpec] = {
    "source": ParamSpec("source", str, "synthetic", choices=SOURCES),
    "model": wl.PARAMS[0],  # the shipped models (no custom shape here)
    **{name: _SHARED[name] for name in ("batch", "distribution", "mean_len", "max_len",
                                         "lengths", "impl")},
    "kv_heads": ParamSpec("kv_heads", int, 8, 1, 64, unit="tasks per sequence"),
    "cores": ParamSpec("cores", int, 0, 0, 256, unit="cores (0 = all)"),
    "policy": _SHARED["policy"],
    "inter_core_cost": _SHARED["inter_core_cost"],
    "cluster_size": ParamSpec("cluster_size", int, 0, 0, 64, unit="cores (0 = the chip's)"),
    "split": ParamSpec("split", bool, False),
}
PREFIX = "lb."  # session keys of this page's values: lb.batch, lb.policy, ...
DECODE_LABELS = ("model", "batch", "distribution", "mean_len", "max_len", "lengths", "impl")
#: the catalogue ids of the choices of the choice parameters (the policy is named as the
#: page's figures name it, ``policy_name``)
CHOICES = {"source": {"synthetic": "ui.balance.source.synthetic",
                      "decode": "ui.balance.source.decode"},
           "distribution": CHOICE_IDS["distribution"], "impl": CHOICE_IDS["impl"]}
UI_DEFAULTS = {"batch": 16, "distribution": "lognormal", "mean_len": 1024, "max_len": 8192}
#: one-click scenarios; each starts from the page defaults
EXAMPLES = {
    "blog": {"policy": "lpt", "inter_core_cost": 100.0},
    "few": {"batch": 8, "kv_heads": 1, "split": True},
    "bimodal": {"distribution": "bimodal", "mean_len": 512, "policy": "round_robin"},
    "queue": {"policy": "dynamic"},
    "decode": {"source": "decode"},
}


PAGE = PageParams(PREFIX, SPECS, UI_DEFAULTS, EXAMPLES)
key, value, take_url = PAGE.key, PAGE.value, PAGE.take_url


def label_prefix(name: str) -> str:
    return "ui.decode.param" if name in DECODE_LABELS else "ui.balance.param"


#: the label of each parameter, for ``errors.show`` ("Batch (params.batch)")
label_id = errors.param_labels(SPECS, label_prefix)


# ---- URL, examples, the chip's limits ----------------------------------------------------
def url_params(p: dict) -> dict:
    """The parameters that describe the workload and schedule (unused ones left out)."""
    skip = {"model", "impl"} if p["source"] == "synthetic" else {"kv_heads", "split"}
    skip.add("mean_len" if p["distribution"] == "list" else "lengths")
    return {k: v for k, v in p.items() if k not in skip}


def examples() -> None:
    PAGE.example_row("ui.balance.example", "lb_example")


def within_chip(chip: Chip) -> list[InputError]:
    """Refuse cores or a cluster size the chip does not have (from a link or a preset
    change): the value goes back to 0 (all cores, the chip's cluster) and the error says
    why. The widgets themselves stop at the chip's limits."""
    refused = []
    for name, limit, allowed_id in (
            ("cores", len(chip.vector_core_ids()), "refusal.balance.cores"),
            ("cluster_size", chip.ai_cores, "refusal.balance.cluster")):
        if int(value(name)) > limit:
            refused.append(InputError(f"params.{name}", int(value(name)), Phrase(
                allowed_id, limit=limit, chip=chip.display_name)))
            st.session_state[key(name)] = 0
    return refused


# ---- widgets -----------------------------------------------------------------------------
def _widget(name: str, where, **kwargs):
    st.session_state.setdefault(key(name), value(name))
    if name in CHOICES:
        kwargs["format_func"] = labels(CHOICES[name])
    elif name == "policy":
        lang = state.language()
        kwargs["format_func"] = lambda policy: policy_name(policy, lang)
    return widgets.param_widget(SPECS[name], key(name), where=where,
                                prefix=label_prefix(name), **kwargs)


def _number(name: str, where, hi: float, step: float, extra: str = ""):
    """A number input from the parameter's minimum to ``hi`` (the chip's limit)."""
    spec = SPECS[name]
    return where.number_input(
        widgets.param_label(spec, label_prefix(name)), min_value=spec.kind(spec.min),
        max_value=spec.kind(hi), step=spec.kind(step),
        help=widgets.param_help(spec, extra, prefix=label_prefix(name)),
        **state.bound(key(name), value(name)))


def _lengths(p: dict, where) -> dict:
    """Mean and max length, or the explicit list of lengths."""
    if p["distribution"] == "list":
        spec = SPECS["lengths"]
        p["lengths"] = where.text_input(
            widgets.param_label(spec, label_prefix("lengths")), placeholder="2048, 512, 8192",
            help=widgets.param_help(spec, prefix=label_prefix("lengths")),
            **state.bound(key("lengths"), value("lengths")))
        p["mean_len"] = value("mean_len")
    else:
        p["mean_len"], p["lengths"] = _widget("mean_len", where), value("lengths")
    p["max_len"] = _widget("max_len", where)
    return p


def _workload(where) -> dict:
    """Where the tasks come from and how long the sequences are."""
    where.markdown(f"**{state.tr('ui.balance.group.workload')}**")
    p = {"source": _widget("source", where)}
    if p["source"] == "decode":
        p["model"] = _widget("model", where,
                             format_func=lambda name: load_model(name).display_name)
        p["impl"] = _widget("impl", where)
    else:
        p["model"], p["impl"] = value("model"), value("impl")
    p["batch"] = _widget("batch", where)
    p["distribution"] = _widget("distribution", where)
    p = _lengths(p, where)
    p["kv_heads"] = _widget("kv_heads", where) if p["source"] == "synthetic" \
        else value("kv_heads")
    return p


def _schedule(chip: Chip, p: dict, where) -> dict:
    """Cores, policy, the blog's inter-core cost, cluster size and splitting."""
    where.markdown(f"**{state.tr('ui.balance.group.schedule')}**")
    cores = len(chip.vector_core_ids())
    p["cores"] = _number("cores", where, cores, 1, state.tr(
        "ui.balance.cores_max", cores=cores, chip=chip.display_name))
    p["policy"] = _widget("policy", where)
    p["inter_core_cost"] = _number("inter_core_cost", where, SPECS["inter_core_cost"].max, 50)
    p["cluster_size"] = _number("cluster_size", where, chip.ai_cores, 1, state.tr(
        "ui.balance.cluster_chip", k=chip.cluster_size, chip=chip.display_name))
    if p["source"] == "synthetic":
        p["split"] = _widget("split", where)
    else:
        p["split"] = value("split")
        where.caption(state.tr("ui.balance.split_decode"))
    return p


def controls(chip: Chip) -> dict:
    """Draw the workload and schedule widgets in two bordered columns; the parameters."""
    left, right = (column.container(border=True) for column in st.columns(2))
    return _schedule(chip, _workload(left), right)

"""The sparse-attention page's explanations: what the inputs are (a designed synthetic
structure, its knobs stated, or the user's dump) and the dump's format; what the measured
relation of key norm and attention says about the blog's rule and Devoto et al.'s; the
blog's "keep 30%: 22.3 GB -> 15.2 GB" next to what keeping 30% does; whether the
compression pays for itself; each policy with its paper; how the compression maps to
Ascend C; and what the numbers do and do not cover.

The prose lives in the catalogues (``ui.sparse.*``); here only the live numbers are
computed. Paper references are shown as data (titles as published).
"""
from __future__ import annotations

import math

import streamlit as st

from explorer.core.sparse_step import SparseStep, blog_claim
from explorer.plots.sparse import policy_name
from explorer.plots.style import format_bytes
from explorer.ui import errors, state
from explorer.ui.gemm_explain import literal
from hardware_presets import Chip
from kernels.models import load_model
from kernels.sparse.data import SparseInputs
from kernels.sparse.policies import POLICIES, POLICY_INFO

#: |rho| below this: key norm and attention are called unrelated
RELATED = 0.1
#: message ids: what the measured relation favours, whether compressing pays for itself,
#: each policy's flags and each policy's description
RELATION_IDS = {"norm_low": "ui.sparse.relation.norm_low", "none": "ui.sparse.relation.none",
                "norm_high": "ui.sparse.relation.norm_high"}
FLAG_IDS = {"query_aware": "ui.sparse.flag.query_aware", "indexed": "ui.sparse.flag.indexed"}
POLICY_TEXT_IDS = {
    "norm_high": "ui.sparse.policy_text.norm_high", "norm_low": "ui.sparse.policy_text.norm_low",
    "h2o": "ui.sparse.policy_text.h2o", "streaming": "ui.sparse.policy_text.streaming",
    "quest": "ui.sparse.policy_text.quest", "random": "ui.sparse.policy_text.random",
}


def show_intro(chip: Chip) -> None:
    st.title(state.tr("ui.sparse.title"))
    st.caption(state.tr("ui.sparse.intro", chip=chip.display_name))


def show_format() -> None:
    """The documented .npz layout, with the numpy call that writes it."""
    with st.expander(state.tr("ui.sparse.format_title"), expanded=True):
        st.markdown(state.tr("ui.sparse.format"))
        st.code(literal("ui.sparse.format_code"), language="python")


def show_data(p: dict, data: SparseInputs) -> None:
    """What the inputs are: the designed knobs of synthetic data, or the dump's shape."""
    shape = dict(tokens=f"{data.tokens:,}", heads=data.kv_heads, group=data.group,
                 d=data.k.shape[2])
    if p["source"] == "upload":
        past = data.q_past.shape[0] if data.q_past is not None else 0
        st.caption(state.tr("ui.sparse.data_upload", name=errors.escape(p["upload"].name),
                            past=past, **shape))
        return
    st.caption(state.tr("ui.sparse.data_synthetic", rho=f"{p['norm_relation']:+.1f}",
                        sinks=p["sink_tokens"], sink=f"{p['sink_strength']:g}",
                        heavy=p["heavy_hitters"], strength=f"{p['heavy_strength']:g}",
                        local=f"{p['locality']:g}", span=f"{p['local_span']:g}",
                        outliers=p["outlier_channels"], past=p["past_queries"], **shape))


def verdict(rho: float) -> str:
    """Which rule the measured relation favours: norm_low, none or norm_high."""
    if not math.isfinite(rho) or abs(rho) < RELATED:
        return "none"
    return "norm_low" if rho < 0 else "norm_high"


def show_relation(rho: float) -> None:
    st.caption(state.tr("ui.sparse.caption.norm", rho=f"{rho:+.2f}"))
    st.info(state.tr(RELATION_IDS[verdict(rho)], rho=f"{rho:+.2f}"),
            icon=":material/insights:")


def show_workload(p: dict, s: SparseStep) -> None:
    st.caption(state.tr("ui.sparse.workload", model=load_model(p["model"]).display_name,
                        batch=p["batch"], mean=f"{p['mean_len']:,}", kv=p["kv_dtype"],
                        layers=s.dense.layers,
                        policy=policy_name(p["sparse"], state.language())))


def show_blog(s: SparseStep) -> None:
    """The blog's claim, what keeping 30% of its cache is, and what this scenario keeps."""
    claim, b = blog_claim(), s.bytes
    params = s.sparse.result.params
    with st.expander(state.tr("ui.sparse.blog.title"), expanded=True):
        st.markdown(state.tr(
            "ui.sparse.blog.claim", before=f"{claim['before_GB']:g}",
            after=f"{claim['blog_after_GB']:g}", kept=f"{claim['kept_GB']:.2f}",
            share=f"{claim['blog_share_kept']:.0%}", cut=f"{claim['blog_cut']:.1%}"))
        st.markdown(state.tr(
            "ui.sparse.blog.here", ratio=f"{params['keep_ratio']:.0%}",
            dense=format_bytes(b.dense), stored=format_bytes(b.stored),
            share=f"{b.stored / b.dense:.1%}" if b.dense else "—",
            read=format_bytes(b.read), policy=policy_name(params["sparse"], state.language())))


def show_time(s: SparseStep) -> None:
    """Where the saving comes from and whether the compression pays for itself."""
    values = dict(saving=f"{s.saving_ns / 1e3:,.1f}",
                  share=f"{s.saving_ns / s.dense.step_ns:.1%}" if s.dense.step_ns else "—",
                  dense_attn=f"{s.dense.attention_ns / 1e3:,.1f}",
                  sparse_attn=f"{s.sparse.attention_ns / 1e3:,.1f}",
                  linear=f"{s.dense.layers * s.dense.linear_ns / 1e6:,.2f}")
    st.markdown(state.tr("ui.sparse.time.saving", **values))
    if s.compress is None:
        msg_id = "ui.sparse.time.verdict_none"
    elif not math.isfinite(s.break_even_steps):
        msg_id = "ui.sparse.time.verdict_never"
    elif s.break_even_steps <= s.compress_every:
        msg_id = "ui.sparse.time.verdict_pays"
    else:
        msg_id = "ui.sparse.time.verdict_late"
    st.markdown(state.tr(msg_id, every=s.compress_every,
                         steps=f"{s.break_even_steps:,.1f}",
                         cost=f"{s.sparse.layers * s.compress_ns / 1e3:,.1f}"))


def _policy_line(name: str) -> str:
    info, lang = POLICY_INFO[name], state.language()
    flags = [state.tr(msg_id) for flag, msg_id in FLAG_IDS.items() if getattr(info, flag)]
    return state.tr("ui.sparse.policy_line", name=policy_name(name, lang),
                    text=state.tr(POLICY_TEXT_IDS[name]),
                    reference=state.tr(info.reference_id) if info.reference_id
                    else errors.escape(info.reference),
                    flags="; ".join(flags) or state.tr("ui.sparse.flag.none"))


def explain(rho: float | None) -> None:
    """Each policy with its paper, the norm question, Ascend C, what is measured how."""
    st.subheader(state.tr("ui.sparse.explain.title"))
    st.markdown("\n".join(f"* {_policy_line(name)}" for name in POLICIES))
    measured = state.tr("ui.sparse.explain.measured", rho=f"{rho:+.2f}") \
        if rho is not None else state.tr("ui.sparse.explain.unmeasured")
    st.markdown(state.tr("ui.sparse.explain.devoto", measured=measured))
    st.markdown(state.tr("ui.sparse.explain.ascend"))
    with st.expander(state.tr("ui.sparse.explain.code_title")):
        st.code(literal("ui.sparse.explain.code"), language="cpp")
    st.markdown(state.tr("ui.sparse.explain.honest"))

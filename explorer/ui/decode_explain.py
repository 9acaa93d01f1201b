"""The decode page's explanations: why and how a model is split over cards (one card's
share is what the page emulates), the blog's KV-cache claim recomputed from the model
preset (sizes in the page's binary units, the blog's own figure quoted as it wrote it),
the UB (or L1/L0) plan behind heads_per_pass and the tile with the numbers on screen next
to the blog's formula, why the step gets as close to the HBM roof as it does, and how the
kernel maps to Ascend C (TQue ping-pong, DataCopy, the AIC/AIV split, CrossCoreSetFlag /
WaitFlag, flash-decoding's log-sum-exp combine).

The prose lives in the catalogues (``ui.decode.explain.*``, ``ui.decode.blog.*``); here
only the live numbers are computed. The blog's own figures are quoted as its claims and
never used as inputs.
"""
from __future__ import annotations

import streamlit as st

from explorer.core.decode_step import DecodeStep
from explorer.plots.roofline import ridge_intensity
from explorer.plots.style import format_bytes
from explorer.ui import state
from explorer.ui.gemm_explain import literal
from explorer.ui.pages import page_file
from hardware_presets import Chip
from kernels.decode import params as dp
from kernels.decode.kv_memory import max_batch_that_fits
from kernels.models import ModelShape, load_model

#: the blog's claim (seed section 3.1), quoted; everything else is computed from presets
BLOG_MODEL, BLOG_CONTEXT, BLOG_KV_GB, BLOG_RATIO = "llama3-70b", 8192, 48.7, 1.8
BLOG_UB_BYTES = 256 * 1024  # the blog's UB_CAPACITY
GB = 1e9  # the blog writes decimal GB: its figure becomes bytes here, shown in GiB
#: the name of each buffer of the vector attention's UB plan (``dp.vector_ub_bytes``)
PLAN_PART_IDS = {"kv_tiles": "ui.decode.plan.kv_tiles", "kv_scales": "ui.decode.plan.kv_scales",
                 "fp32_tile": "ui.decode.plan.fp32_tile",
                 "product_scratch": "ui.decode.plan.product_scratch",
                 "scores": "ui.decode.plan.scores", "q_out_stats": "ui.decode.plan.q_out_stats"}


# ---- the blog's KV-cache claim -----------------------------------------------------------
def blog_numbers() -> dict:
    """The claim against the Llama 3 70B preset: bytes per token and per 8K sequence in
    fp16, the weights, the batch the blog's 48.7 GB implies, its real ratio to the weights,
    and what 1.8x the weights would need."""
    model = load_model(BLOG_MODEL)
    per_token = model.kv_bytes_per_token("fp16")
    per_seq = per_token * BLOG_CONTEXT
    weights = model.weight_bytes("fp16")
    return {"model": model, "per_token": per_token, "per_seq": per_seq, "weights": weights,
            "batch": BLOG_KV_GB * GB / per_seq, "ratio": BLOG_KV_GB * GB / weights,
            "kv_at_ratio": BLOG_RATIO * weights,
            "batch_at_ratio": BLOG_RATIO * weights / per_seq}


def show_blog(chip: Chip) -> None:
    """The blog's "48.7 GB, 1.8x the weights" next to what the calculator gives, folded."""
    n = blog_numbers()
    m = n["model"]
    with st.expander(state.tr("ui.decode.blog.title"), icon=":material/menu_book:"):
        st.markdown(state.tr("ui.decode.blog.claim"))
        st.markdown(state.tr(
            "ui.decode.blog.computed", model=m.display_name, layers=m.layers,
            kv_heads=m.kv_heads, head_dim=m.head_dim, per_token=format_bytes(n["per_token"]),
            context=f"{BLOG_CONTEXT:,}", per_seq=format_bytes(n["per_seq"]),
            params=f"{m.params_B:g}", weights=format_bytes(n["weights"]), kv=f"{BLOG_KV_GB}",
            kv_bytes=format_bytes(BLOG_KV_GB * GB), batch=f"{n['batch']:.1f}",
            ratio=f"{n['ratio']:.2f}", claimed=f"{BLOG_RATIO}",
            kv_at_ratio=format_bytes(n["kv_at_ratio"]),
            batch_at_ratio=f"{n['batch_at_ratio']:.1f}"))
        chips = -(-n["weights"] // chip.hbm_bytes)
        st.caption(state.tr("ui.decode.blog.chip", chip=chip.display_name,
                            hbm=format_bytes(chip.hbm_bytes), chips=chips))


# ---- a model split over cards ------------------------------------------------------------
def show_cards(chip: Chip, whole: ModelShape, share: ModelShape, cards: int,
               weight_dtype: str) -> None:
    """Why the model is split (its weights do not fit one chip, when so) and what the page
    emulates: one card's share of the heads, the KV cache and the weights; the all-reduces
    between the cards are the multi-card page's."""
    fit = max_batch_that_fits(whole, chip, 1, weight_dtype=weight_dtype)
    text = state.tr("ui.decode.cards.share", cards=cards,
                    share=format_bytes(share.weight_bytes(weight_dtype)),
                    weights=format_bytes(fit["weight_bytes"]), dtype=weight_dtype)
    if not fit["weights_fit"]:
        text = state.tr("ui.decode.cards.needed", model=whole.display_name, dtype=weight_dtype,
                        weights=format_bytes(fit["weight_bytes"]),
                        hbm=format_bytes(fit["hbm_bytes"]), chip=chip.display_name,
                        chips=fit["min_chips_for_weights"], cards=cards) + " " + text
    st.info(text, icon=":material/hub:")
    st.page_link(page_file("multicard"), label=state.tr("ui.decode.cards.link"),
                 icon=":material/hub:")


# ---- buffer plans ------------------------------------------------------------------------
def _bar(name: str, used: int, total: int) -> None:
    msg_id = "ui.decode.plan.buffer_over" if used > total else "ui.decode.plan.buffer"
    st.progress(min(1.0, used / total), text=state.tr(
        msg_id, buffer=name, used=format_bytes(used), total=format_bytes(total),
        share=f"{used / total:.0%}"))


def _parts(parts: dict[str, int]) -> str:
    return " · ".join(state.tr("ui.decode.plan.part", part=state.tr(PLAN_PART_IDS[k]),
                               bytes=format_bytes(v)) for k, v in parts.items() if v)


def _vector_plan(chip: Chip, p: dict, model) -> None:
    """UB use by buffer, the heads_per_pass formula with its numbers, the blog's formula."""
    T, d, typed = p["tile_tokens"], model.head_dim, dp.DecodeParams.of(p)
    parts = dp.vector_ub_bytes(typed, model, T, p["heads_per_pass"])
    _bar("UB", sum(parts.values()), chip.ub_bytes)
    st.caption(_parts(parts))
    fixed = T * d * dp.FP32
    per_head = sum(dp.vector_ub_bytes(typed, model, T, 1).values()) - fixed
    blog = min(model.kv_heads, BLOG_UB_BYTES // (d * 2 * 2))
    st.markdown(state.tr(
        "ui.decode.plan.formula", T=T, d=d, kv_heads=model.kv_heads, ub=f"{chip.ub_bytes:,}",
        fixed=f"{fixed:,}", per_head=f"{per_head:,}",
        fit=dp.heads_that_fit(chip, typed, model, T), chosen=p["heads_per_pass"],
        buffers=p["buffer_num"], group=model.gqa_group))
    st.markdown(state.tr(
        "ui.decode.plan.blog", d=d, kv_heads=model.kv_heads, blog=blog,
        blog_ub=f"{BLOG_UB_BYTES:,}", ub_kib=f"{chip.ub_KiB:g}", ub=f"{chip.ub_bytes:,}",
        chip=chip.display_name, one=f"{d * 2 * 2:,}"))


def _cube_plan(chip: Chip, p: dict, model) -> None:
    """L1, L0A, L0B, L0C and the AIV's UB as the cube + vector attention fills them."""
    caps = {"L1": chip.l1_bytes, "L0A": chip.l0a_bytes, "L0B": chip.l0b_bytes,
            "L0C": chip.l0c_bytes, "UB": chip.ub_bytes}
    for name, parts in dp.cube_buffers(dp.DecodeParams.of(p), model, p["tile_tokens"]).items():
        _bar(name, sum(parts.values()), caps[name])
    st.markdown(state.tr("ui.decode.plan.cube", T=p["tile_tokens"], group=model.gqa_group,
                         rows=-(-model.gqa_group // dp.CUBE_M0) * dp.CUBE_M0))


def show_plan(chip: Chip, p: dict) -> None:
    """The buffer plan that decided tile_tokens and heads_per_pass (under the caller's
    heading: the page folds it under ``ui.decode.plan.title``)."""
    st.caption(state.tr("ui.decode.plan.resolved", T=p["tile_tokens"],
                        heads=p["heads_per_pass"], split=p["split_tokens"] or "—",
                        cores=dp.DecodeParams.of(p).vector_cores(chip),
                        total=dp.block_dim_limit(chip), chip=chip.display_name))
    model = dp.model_of(p)
    if p["impl"] == "cube_vector":
        _cube_plan(chip, p, model)
    else:
        _vector_plan(chip, p, model)


# ---- why the step is where it is on the roofline -----------------------------------------
def show_bound(s: DecodeStep) -> None:
    """Which pipe limits the attention, with the numbers: busy ratios, flop per HBM byte
    against the vector roof's ridge, and the HBM share achieved."""
    result, p = s.result, s.result.params
    m, chip = result.metrics, result.chip
    # the attention's arithmetic runs in fp32 on the vector unit
    ridge = ridge_intensity(chip.vector_peak_gops("fp32") / 1000.0, chip.hbm_bandwidth_GBps)
    values = dict(vec=f"{m['aiv_vec_ratio']:.0%}", mte2=f"{m['mte2_ratio']:.0%}",
                  cube=f"{m['aic_cube_ratio']:.0%}", group=s.model.gqa_group,
                  intensity=f"{m['arithmetic_intensity']:.1f}", ridge=f"{ridge:.1f}",
                  share=f"{s.attention_hbm_GBps / s.hbm_peak_GBps:.0%}",
                  balance=f"{m['load_balance_mean_max']:.0%}")
    if p["phases"] == "append":
        msg_id = "ui.decode.bound.append"
    elif p["impl"] == "cube_vector":
        msg_id = "ui.decode.bound.cube"
    elif m["aiv_vec_ratio"] >= m["mte2_ratio"]:
        msg_id = "ui.decode.bound.vector"
    else:
        msg_id = "ui.decode.bound.memory"
    st.info(state.tr(msg_id, **values), icon=":material/speed:")


# ---- Ascend C ----------------------------------------------------------------------------
def explain() -> None:
    """How the emulated kernel maps to Ascend C, with a code sketch (under the caller's
    heading: the page folds it under ``ui.decode.explain.title``)."""
    st.markdown(state.tr("ui.decode.explain.step"))
    st.markdown(state.tr("ui.decode.explain.tque"))
    with st.expander(state.tr("ui.decode.explain.code_title")):
        st.code(literal("ui.decode.explain.code"), language="cpp")
    st.markdown(state.tr("ui.decode.explain.cube"))
    st.markdown(state.tr("ui.decode.explain.split"))
    st.markdown(state.tr("ui.decode.explain.append"))
    with st.expander(state.tr("ui.decode.explain.api_title"), expanded=True):
        st.markdown(state.tr("ui.decode.explain.api"))

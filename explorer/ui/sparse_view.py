"""What the sparse-attention page computes and shows: the attention inputs (synthetic or an
uploaded dump), every policy's accuracy against the keep ratio (``sparse_study``), the
tokens each policy keeps for one head next to the dense attention, how key norms relate to
attention on these inputs, and, from emulation (``sparse_step``), the KV bytes and the
decode step with and without the policy, the compression on the timeline, the check.

Inputs, study tables, the study's figures and steps are cached (on the knobs, the upload's
file id or the scenario), so a view change reruns in a blink.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer.core import Scenario
from explorer.core import sparse_study as ss
from explorer.core.sparse_step import SparseStep, simulate_sparse
from explorer.plots import sparse as sp
from explorer.plots import values
from explorer.plots.style import format_bytes
from explorer.ui import decode_view, run_view, state
from explorer.ui import sparse_controls as controls
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.decode import kernel as decode
from kernels.sparse import data as sd
from kernels.sparse.compress import COMPRESSING
from kernels.sparse.policies import POLICIES, budget

SEED = 0  # synthetic inputs, the random policy and the decode lengths are drawn from it
#: keep ratios of the accuracy curves (the chosen one is added)
RATIOS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
TABLE = ("kept", *ss.METRICS)
#: message ids: the accuracy table's column headings, each byte count's (label, help)
COLUMN_IDS = {"policy": "ui.sparse.col.policy", "kept": "ui.sparse.col.kept",
              "mass_recall": "ui.sparse.col.mass_recall",
              "output_error": "ui.sparse.col.output_error",
              "topk_overlap": "ui.sparse.col.topk_overlap"}
BYTES_IDS = {"dense": ("ui.sparse.bytes.dense", "ui.sparse.bytes.dense_help"),
             "stored": ("ui.sparse.bytes.stored", "ui.sparse.bytes.stored_help"),
             "read": ("ui.sparse.bytes.read", "ui.sparse.bytes.read_help")}


# ---- the inputs --------------------------------------------------------------------------
@st.cache_resource(max_entries=8, show_spinner=False)
def synthetic(knobs: tuple) -> sd.SparseInputs:
    return sd.synthetic(np.random.default_rng(SEED), **dict(knobs))


@st.cache_resource(max_entries=2, show_spinner=False)
def uploaded(file_id: str, name: str, _data: bytes) -> sd.SparseInputs:
    """A dump parsed once per upload (the bytes are not hashed: the file id names them)."""
    return sd.load_npz(_data, name)


def read_upload(upload) -> tuple[str, sd.SparseInputs]:
    """(cache key, inputs) of an uploaded file; too large a file is refused before its
    bytes are read, a malformed one by ``load_npz`` (InputError either way)."""
    if upload.size > sd.MAX_FILE_BYTES:
        raise InputError(upload.name, f"{upload.size:,} bytes",
                         f"at most {sd.MAX_FILE_BYTES:,} bytes (64 MiB)")
    return f"upload:{upload.file_id}", uploaded(upload.file_id, upload.name, upload.getvalue())


def inputs(p: dict) -> tuple[str, sd.SparseInputs] | None:
    """(cache key, inputs) of the chosen source; None while no file is uploaded."""
    if p["source"] == "upload":
        return None if p.get("upload") is None else read_upload(p["upload"])
    knobs = tuple((k, p[k]) for k in controls.KNOBS)
    return f"synthetic:{knobs}", synthetic(knobs)


def ratios(p: dict, tokens: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(keep ratios every policy can take, those too small for the sinks and window).
    The chosen ratio must fit: its refusal (an InputError) names the smallest that does."""
    for policy in POLICIES:
        budget(policy, tokens, p["keep_ratio"], p["sinks"], p["window"], p["page_size"])
    fits, dropped = [], []
    for ratio in sorted({*RATIOS, float(p["keep_ratio"])}):
        try:
            for policy in POLICIES:
                budget(policy, tokens, ratio, p["sinks"], p["window"], p["page_size"])
            fits.append(ratio)
        except InputError:
            dropped.append(ratio)
    return tuple(fits), tuple(dropped)


@st.cache_data(max_entries=16, show_spinner=False)
def accuracy(data_key: str, _data: sd.SparseInputs, keep_ratios: tuple, sinks: int,
             window: int, page_size: int) -> pd.DataFrame:
    """``sparse_study.summary`` of every policy at every ratio (mean over the KV heads)."""
    return ss.summary(ss.study(_data, POLICIES, keep_ratios, sinks=sinks, window=window,
                               page_size=page_size, seed=SEED))


@st.cache_data(max_entries=16, show_spinner=False)
def norm_relation(data_key: str, _data: sd.SparseInputs, head: int):
    """(key norms of ``head``, its group-mean dense attention, Spearman's rho between key
    norm and group-mean dense score, averaged over the KV heads): negative means low
    norm, high attention (Devoto et al.), positive the blog's assumption."""
    rhos, picked = [], None
    for h in range(_data.kv_heads):
        q, k, v, _ = _data.head(h)
        scores, probs, _ = ss.dense_head(q, k, v)
        norms = np.linalg.norm(k, axis=1)
        ranks = pd.DataFrame({"norm": norms, "score": scores.mean(axis=0)}).rank()
        rhos.append(ranks["norm"].corr(ranks["score"]))
        if h == head:
            picked = (norms, probs.mean(axis=0))
    return (*picked, float(np.nanmean(rhos)))


# ---- cached figures (a change of the workload or the chip leaves them as they are) -------
@st.cache_resource(max_entries=16, show_spinner=False)
def accuracy_figure(data_key: str, _summary: pd.DataFrame, study: tuple, lang: str,
                    chosen: str, keep_ratio: float) -> go.Figure:
    """``sparse.accuracy_figure`` of the study ``accuracy(data_key, *study)`` returned."""
    return sp.accuracy_figure(_summary, lang, chosen, keep_ratio)


@st.cache_resource(max_entries=16, show_spinner=False)
def kept_figure(data_key: str, _data: sd.SparseInputs, head: int, keep_ratio: float,
                policy: tuple, lang: str, chosen: str) -> go.Figure:
    """The tokens every policy keeps in ``head`` (``policy`` = sinks, window, page size)."""
    sinks, window, page_size = policy
    mask, attention = ss.kept_mask(_data, head, POLICIES, keep_ratio, sinks=sinks,
                                   window=window, page_size=page_size, seed=SEED)
    return sp.kept_figure(mask, attention, lang, chosen, keep_ratio)


# ---- showing the accuracy ----------------------------------------------------------------
def _display(summary: pd.DataFrame, keep_ratio: float) -> pd.DataFrame:
    """The rows of the chosen ratio, headed in the session's language."""
    lang = state.language()
    rows = summary[np.isclose(summary["keep_ratio"], keep_ratio)]
    out = pd.DataFrame({state.tr(COLUMN_IDS["policy"]): [sp.policy_name(p, lang)
                                                         for p in rows["policy"]]})
    for name in TABLE:  # tokens kept and the three scores (0 to 1, as the curves draw them)
        out[state.tr(COLUMN_IDS[name])] = [run_view.metric_value(name, v, values.NUMBER)
                                           for v in rows[name]]
    return out


def show_accuracy(p: dict, found: tuple[str, sd.SparseInputs]) -> None:
    """The three curves for every policy, the chosen ratio's table, what was left out."""
    data_key, data = found
    fits, dropped = ratios(p, data.tokens)
    with st.spinner(state.tr("ui.sparse.studying")):
        summary = accuracy(data_key, data, fits, p["sinks"], p["window"], p["page_size"])
    fig = accuracy_figure(data_key, summary, (fits, p["sinks"], p["window"], p["page_size"]),
                          state.language(), p["sparse"], p["keep_ratio"])
    run_view.show(fig, key="sa_accuracy")
    st.caption(state.tr("ui.sparse.caption.accuracy", heads=data.kv_heads,
                        tokens=f"{data.tokens:,}", group=data.group))
    if dropped:
        st.caption(state.tr("ui.sparse.dropped", ratios=", ".join(f"{r:g}" for r in dropped),
                            need=p["sinks"] + p["window"]))
    st.dataframe(_display(summary, p["keep_ratio"]), hide_index=True, width="stretch")


def show_kept(p: dict, found: tuple[str, sd.SparseInputs],
              explain_relation: Callable[[float], None]) -> float:
    """The heat map of kept tokens for one head, and the norm / attention scatter with what
    the relation means beside it (``explain_relation(rho)``); returns the measured rank
    correlation of key norm and attention."""
    data_key, data = found
    head = controls.head_slider(data.kv_heads)
    lang = state.language()
    run_view.show(kept_figure(data_key, data, head, p["keep_ratio"],
                              (p["sinks"], p["window"], p["page_size"]), lang, p["sparse"]),
                  key="sa_kept")
    st.caption(state.tr("ui.sparse.caption.kept", head=head))
    norms, probs, rho = norm_relation(data_key, data, head)
    figure, words = st.columns(2, vertical_alignment="center")
    with figure:
        run_view.show(sp.norm_figure(norms, probs, lang, rho), key="sa_norm")
    with words:
        explain_relation(rho)
    return rho


# ---- the decode step ---------------------------------------------------------------------
def decode_params(p: dict) -> dict:
    return {k: p[k] for k in (*controls.WORKLOAD, *controls.POLICY)}


def scenario(chip: Chip, p: dict) -> Scenario:
    """The sparse decode scenario, refused (InputError) when the kernel rejects it (a
    budget too small for the sinks and window of the shortest sequence, say), the batch
    does not fit HBM, or the dense or compression run is too big to emulate here."""
    params = decode_params(p)
    checked = decode.check(chip, params)
    lengths, layout = decode.workload(checked, np.random.default_rng(SEED))
    decode.memory_check(chip, decode.DecodeParams.of(checked), lengths, layout)
    runs = [{"sparse": "none"}] + ([{"phases": "compress"}] if p["sparse"] in COMPRESSING
                                   else [])
    for run in runs:
        decode_view.check_size(chip, {**checked, **run}, lengths)
    return Scenario.make(state.preset(), "decode", params, state.overrides(), seed=SEED)


@st.cache_resource(max_entries=8, show_spinner=False, hash_funcs={Scenario: state.scenario_key})
def step(s: Scenario) -> SparseStep:
    return simulate_sparse(s)


def _metric(column, label_id: str, text: str, help_id: str, **values) -> None:
    column.metric(state.tr(label_id), text, border=True, help=state.tr(help_id, **values))


def show_memory(s: SparseStep, where=st) -> None:
    """Dense, stored and read KV bytes of the whole model and batch, as tiles."""
    b = s.bytes
    row = where.columns(3)
    for column, (name, (label_id, help_id)) in zip(row, BYTES_IDS.items()):
        size = getattr(b, name)
        _metric(column, label_id, format_bytes(size), help_id,
                share=f"{size / b.dense:.1%}" if b.dense else "—")


def show_memory_figure(s: SparseStep) -> None:
    """The three byte counts as bars."""
    b = s.bytes
    parts = {"dense": b.dense, "stored": b.stored, "read": b.read}
    run_view.show(sp.memory_figure(parts, state.language()), key="sa_memory")


def _never(steps: float) -> str:
    return state.tr("ui.sparse.never") if not np.isfinite(steps) else f"{steps:,.1f}"


def show_time(s: SparseStep, where=st) -> None:
    """Dense, sparse and amortised step, the compression and its break-even, as tiles."""
    row = where.columns(4)
    _metric(row[0], "ui.sparse.time.dense", f"{s.dense.step_ns / 1e6:,.3f} ms",
            "ui.sparse.time.dense_help", layers=s.dense.layers)
    _metric(row[1], "ui.sparse.time.sparse", f"{s.sparse.step_ns / 1e6:,.3f} ms",
            "ui.sparse.time.sparse_help", saving=f"{s.saving_ns / 1e3:,.1f}")
    _metric(row[2], "ui.sparse.time.amortised", f"{s.amortised_step_ns / 1e6:,.3f} ms",
            "ui.sparse.time.amortised_help", every=s.compress_every)
    _metric(row[3], "ui.sparse.time.break_even", _never(s.break_even_steps),
            "ui.sparse.time.break_even_help", us=f"{s.compress_ns / 1e3:,.1f}",
            layers=s.sparse.layers)


def show_time_figure(s: SparseStep) -> None:
    """Dense against sparse step time, with the amortised compression on top."""
    share = s.sparse.layers * s.compress_ns / s.compress_every
    run_view.show(sp.time_figure(s.dense.step_ns, s.sparse.step_ns, share, state.language()),
                  key="sa_time")


def show_compression(sc: Scenario, s: SparseStep) -> None:
    """The compression phase of one layer on the per-core timeline (when there is one)."""
    if s.compress is None:
        st.info(state.tr("ui.sparse.no_compress",
                         policy=sp.policy_name(s.sparse.result.params["sparse"],
                                               state.language())), icon=":material/info:")
        return
    cores, window = run_view._view_controls(s.compress)
    timeline = run_view.timeline(sc.replace(params={"phases": "compress"}), state.language(),
                                 cores, window)
    run_view.show(timeline, key="sa_timeline")
    st.caption(state.tr("ui.sparse.caption.compress", us=f"{s.compress_ns / 1e3:,.1f}"))
    run_view.show_metrics(s.compress, ("makespan_us", "hbm_GBps", "mte2_ratio",
                                       "aiv_vec_ratio"))


def show_check(sc: Scenario, s: SparseStep) -> None:
    """The sparse run's numerical check (its notes say what it covers), folded, and the
    downloads of the sparse scenario."""
    run_view.show_check_folded(s.sparse, decode_view.show_numerics,
                               s.sparse.result.numerics.passed)
    run_view.show_downloads(sc)

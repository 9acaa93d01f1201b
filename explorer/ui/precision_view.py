"""What the "Mixed precision" page shows: the standard configurations next to the user's
one (Pareto chart and table), error growth with K, the element-error histogram and the
blog's routine against Kahan.

Everything is cached on plain arguments (tuples, strings, ints): one table row per
configuration, so changing the user's formats recomputes one row, not the table; figures
are cached as resources on the same arguments and the language. The core functions are
pure (``explorer.core.precision_study``), so caching them is safe.
"""
from __future__ import annotations

from dataclasses import astuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer.core import precision_study as ps
from explorer.core.i18n import t
from explorer.plots import precision as pp
from explorer.plots import values
from explorer.ui import run_view, state

YOURS = "yours"
#: the captions of the table and of the Pareto chart for each operation family
TABLE_CAPTIONS = {"gemm": "ui.precision.table_gemm", "attention": "ui.precision.table_attention"}
PARETO_CAPTIONS = {"gemm": "ui.precision.pareto_gemm",
                   "attention": "ui.precision.pareto_attention"}
BLOG_VALUES, BLOG_BETA = 4096, 0.5
#: the name of each standard configuration (``precision_study.STANDARD``) and the user's
CONFIG_IDS = {"fp32": "ui.precision.config.fp32", "hf32": "ui.precision.config.hf32",
              "bf16": "ui.precision.config.bf16", "sandwich": "ui.precision.config.sandwich",
              "fp16_acc": "ui.precision.config.fp16_acc",
              "w8_channel": "ui.precision.config.w8_channel",
              "w4_group": "ui.precision.config.w4_group", "w8a8": "ui.precision.config.w8a8",
              "kv8_token": "ui.precision.config.kv8_token",
              "kv8_channel": "ui.precision.config.kv8_channel",
              "kv4_group": "ui.precision.config.kv4_group", YOURS: "ui.precision.config.yours"}
#: a configuration's status in the table (``precision_study.table_row``)
STATUS_IDS = {"ok": "ui.precision.status.ok", "not_on_chip": "ui.precision.status.not_on_chip",
              "impossible": "ui.precision.status.impossible"}


def cfg_tuple(cfg: ps.PrecisionConfig) -> tuple:
    return astuple(cfg)


# ---- cached computations -----------------------------------------------------------------
@st.cache_data(max_entries=512, show_spinner=False)
def row(operation: str, shape: tuple, distribution: str, seed: int, cfg: tuple, preset: str,
        overrides: tuple, name: str) -> dict:
    """One table row (errors, cost, footprint) for a configuration given as a tuple."""
    return ps.table_row(operation, shape, distribution, seed, ps.PrecisionConfig(*cfg), preset,
                        overrides=dict(overrides), name=name)


def chip_args() -> tuple[str, tuple]:
    """(preset, overrides as a sorted tuple): the chip as plain cache arguments."""
    return state.preset(), tuple(sorted(state.overrides().items()))


def table(operation: str, shape: tuple, distribution: str, seed: int, mine: tuple,
          preset: str, overrides: tuple) -> pd.DataFrame:
    """The standard configurations of the operation's family and the user's one (last)."""
    configs = {**{n: cfg_tuple(c) for n, c in ps.STANDARD[ps.family(operation)].items()},
               YOURS: mine}
    rows = [row(operation, shape, distribution, seed, cfg, preset, overrides, name)
            for name, cfg in configs.items()]
    return pd.DataFrame(rows)


@st.cache_data(max_entries=16, show_spinner=False)
def vs_k(compute: str, seed: int) -> pd.DataFrame:
    return ps.error_vs_k(compute, seed=seed)


@st.cache_data(max_entries=16, show_spinner=False)
def blog(seed: int) -> dict:
    return ps.blog_vs_kahan(BLOG_VALUES, seed, beta=BLOG_BETA)


@st.cache_data(max_entries=32, show_spinner=False)
def element_errors(operation: str, shape: tuple, distribution: str, seed: int,
                   cfg: tuple) -> np.ndarray:
    return ps.element_errors(operation, shape, distribution, seed, ps.PrecisionConfig(*cfg))


# ---- the table ---------------------------------------------------------------------------
def config_name(name: str, lang: str) -> str:
    return t(CONFIG_IDS[name], lang)


def note(row_: pd.Series, lang: str) -> str:
    """Why a row has no time (translated), or ""."""
    if not row_["note_id"]:
        return ""
    return t(row_["note_id"], lang, **row_["note_values"])


def with_display(df: pd.DataFrame, lang: str) -> pd.DataFrame:
    out = df.copy()
    out["display"] = [config_name(n, lang) for n in out["name"]]
    return out


def _written(df: pd.DataFrame, name: str, unit: str) -> list[str]:
    """A numeric column as every table writes it."""
    return [run_view.metric_value(name, v, unit) for v in df[name]]


def display_table(df: pd.DataFrame, lang: str) -> pd.DataFrame:
    """The table as shown: translated headers and statuses, numbers as every table writes
    them (the time in the µs its heading names)."""
    col = lambda c: t(f"ui.precision.col.{c}", lang)  # noqa: E731
    source = {"emulator": t("ui.precision.source.emulator", lang),
              "estimate": t("ui.precision.source.estimate", lang), "": "–"}
    number, size = values.NUMBER, "B"
    return pd.DataFrame({
        col("config"): [config_name(n, lang) for n in df["name"]],
        col("formats"): df["label"],
        col("rel_fro"): _written(df, "rel_fro", number),
        col("mean_rel"): _written(df, "mean_rel", number),
        col("max_abs"): _written(df, "max_abs", number),
        col("time_us"): _written(df, "time_us", number),
        col("source"): [source[s] for s in df["time_source"]],
        col("moved"): _written(df, "moved_bytes", size),
        col("footprint"): _written(df, "footprint_bytes", size),
        col("scales"): _written(df, "scale_bytes", size),
        col("status"): [t(STATUS_IDS[s], lang) for s in df["status"]],
        col("why"): [note(r, lang) for _, r in df.iterrows()],
    })


def show_table(df: pd.DataFrame, operation: str) -> None:
    lang = state.language()
    table = display_table(df, lang)
    st.dataframe(table, hide_index=True, width="stretch", key="precision_table",
                 **run_view.wrapped(table))
    st.caption(state.tr(TABLE_CAPTIONS[ps.family(operation)], block=ps.ERROR_BLOCK))


# ---- figures -----------------------------------------------------------------------------
@st.cache_resource(max_entries=32, show_spinner=False)
def pareto(operation: str, shape: tuple, distribution: str, seed: int, mine: tuple,
           preset: str, overrides: tuple, lang: str) -> go.Figure:
    df = with_display(table(operation, shape, distribution, seed, mine, preset, overrides), lang)
    # attention times are a memory-roofline estimate, GEMM times come from the emulator
    return pp.pareto_figure(df, lang, highlight=YOURS,
                            estimate=ps.family(operation) == "attention")


@st.cache_resource(max_entries=16, show_spinner=False)
def vs_k_figure(compute: str, seed: int, highlight: str, lang: str) -> go.Figure:
    return pp.error_vs_k_figure(vs_k(compute, seed), lang, compute=compute,
                                highlight=highlight)


@st.cache_resource(max_entries=16, show_spinner=False)
def histogram(operation: str, shape: tuple, distribution: str, seed: int, mine: tuple,
              lang: str) -> go.Figure:
    errs = element_errors(operation, shape, distribution, seed, mine)
    return pp.error_histogram_figure(errs, lang, label=ps.PrecisionConfig(*mine).short())


@st.cache_resource(max_entries=8, show_spinner=False)
def blog_figure(seed: int, lang: str) -> go.Figure:
    return pp.blog_kahan_figure(blog(seed), lang)


def show_pareto(operation: str, shape: tuple, distribution: str, seed: int, mine: tuple) -> None:
    run_view.show(pareto(operation, shape, distribution, seed, mine, *chip_args(),
                         state.language()), key="pareto")
    st.caption(state.tr(PARETO_CAPTIONS[ps.family(operation)], chip=state.chip().display_name))


def show_vs_k(compute: str, accumulate: str, seed: int) -> None:
    """Error growth with K for the user's compute format (fp16 for int8 compute)."""
    shown = compute if compute != "int8" else "fp16"
    run_view.show(vs_k_figure(shown, seed, accumulate, state.language()), key="vs_k")
    st.caption(state.tr("ui.precision.vs_k_caption"))
    if compute == "int8":
        st.caption(state.tr("ui.precision.vs_k_int8"))


def show_histogram(operation: str, shape: tuple, distribution: str, seed: int,
                   mine: tuple) -> None:
    run_view.show(histogram(operation, shape, distribution, seed, mine, state.language()),
                  key="histogram")
    st.caption(state.tr("ui.precision.hist_caption"))


def show_blog(seed: int) -> None:
    """The figure and, from this very run, what the routine does at beta = 0."""
    result = blog(seed)
    run_view.show(blog_figure(seed, state.language()), key="blog")
    tab = result["table"].set_index("method")
    beta_row = tab.loc[f"blog_beta_{result['beta']:g}"]
    blog_values = dict(n=f"{result['values']:,}", alpha=f"{result['alpha']:g}",
                  beta=f"{result['beta']:g}",
                  max0=f"{tab.loc['blog_beta_0', 'max_abs_compensation']:g}",
                  plain=f"{tab.loc['fp32', 'abs_error']:.3g}",
                  blog0=f"{tab.loc['blog_beta_0', 'abs_error']:.3g}",
                  kahan=f"{tab.loc['kahan', 'abs_error']:.3g}",
                  maxb=f"{beta_row['max_abs_compensation']:.3g}",
                  errb=f"{beta_row['abs_error']:.3g}")
    verdict = result["zero_at_beta0"] and result["returns_alpha_c"]
    (st.warning if verdict else st.error)(
        state.tr("ui.precision.blog.verdict" if verdict else "ui.precision.blog.surprise",
                 **blog_values), icon=":material/science:")
    st.markdown(state.tr("ui.precision.blog.other_beta", **blog_values))

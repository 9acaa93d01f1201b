"""The "Number formats" section of the precision page: the table of every format the
project knows (bits, layout, range, unit roundoff and what it is relative to, the units
of this chip and the presets that take it), then the study of the float formats on the
page's data: the distribution of element errors, what happens to the elements, dot
products in fp32 against their bound, and what the chosen format is.

The core functions (``explorer.core.precision_formats``) are pure, so their results are
cached on plain arguments; figures on the same arguments and the language.
"""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer.core import precision_formats as pf
from explorer.core.i18n import t
from explorer.plots import precision_formats as pfp
from explorer.plots.text import format_number
from explorer.ui import precision_controls, run_view, state
from hardware_presets import Chip
from kernels.common import microscaling

#: what a format's unit roundoff is relative to (``precision_formats.roundoff_kind``)
KIND_IDS = {"element": "ui.precision.formats.kind.element",
            "band": "ui.precision.formats.kind.band",
            "block": "ui.precision.formats.kind.block",
            "none": "ui.precision.formats.kind.none"}
#: the layout of the formats whose fields are said in words
LAYOUT_IDS = {"band": "ui.precision.formats.layout.tapered",
              "none": "ui.precision.formats.layout.int"}
UNIT_IDS = {"cube": "ui.precision.formats.unit.cube",
            "vector": "ui.precision.formats.unit.vector"}
#: what each studied format is, one paragraph each
ABOUT_IDS = {"bf16": "ui.precision.formats.about.bf16", "fp16": "ui.precision.formats.about.fp16",
             "fp8_e4m3": "ui.precision.formats.about.fp8_e4m3",
             "fp8_e5m2": "ui.precision.formats.about.fp8_e5m2",
             "hif8": "ui.precision.formats.about.hif8",
             "mxfp8": "ui.precision.formats.about.mxfp8",
             "mxfp4": "ui.precision.formats.about.mxfp4"}
_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_two(value: float) -> str:
    """2⁻⁴ for 0.0625: every unit roundoff of the table is a power of two."""
    return "2" + str(round(math.log2(value))).translate(_SUP)


# ---- the format table --------------------------------------------------------------------
def _range_cells(row: pd.Series) -> tuple[str, str]:
    """(largest, smallest normal): an MX format's as its element's times the scale's (the
    smallest normal, a power of two times a power of two, as one power of two)."""
    if row["kind"] == "block":
        mx = microscaling.MX_FORMATS[row["format"]]
        emax, emin = microscaling.SCALE_MAX_EXP, microscaling.SCALE_MIN_EXP
        return (f"{mx.element_max:g} × {power_of_two(2.0 ** emax)}",
                power_of_two(float(mx.finfo.smallest_normal) * 2.0 ** emin))
    small = format_number(row["min_normal"]) if row["min_normal"] else "–"
    return format_number(row["max_value"]), small


def display_format_table(df: pd.DataFrame, lang: str) -> pd.DataFrame:
    """The format table as shown: translated headers and words, numbers formatted."""
    col = lambda c: t(f"ui.precision.formats.col.{c}", lang)  # noqa: E731
    ranges = [_range_cells(r) for _, r in df.iterrows()]
    units = [", ".join(t(UNIT_IDS[u], lang) for u in us) or "–" for us in df["units"]]
    return pd.DataFrame({
        col("format"): [f"★ {n}" if new else n for n, new in zip(df["format"], df["new"])],
        col("c_type"): df["c_type"],
        col("bits"): [f"{b:g}" for b in df["bytes"] * 8],
        col("layout"): [r["layout"] or t(LAYOUT_IDS[r["kind"]], lang) for _, r in df.iterrows()],
        col("largest"): [hi for hi, _ in ranges],
        col("smallest"): [lo for _, lo in ranges],
        col("roundoff"): [power_of_two(u) if u else "–" for u in df["unit_roundoff"]],
        col("relative"): [t(KIND_IDS[k], lang) for k in df["kind"]],
        col("units"): units,
        col("presets"): [", ".join(p) or "–" for p in df["presets"]],
    })


@st.cache_data(max_entries=16, show_spinner=False)
def format_table(preset: str, overrides: tuple) -> pd.DataFrame:
    """The format table of the chip (given by preset and overrides, as cache keys)."""
    return pf.format_table(state.chip())


# ---- the study ---------------------------------------------------------------------------
@st.cache_data(max_entries=32, show_spinner=False)
def element(distribution: str, magnitude: int, seed: int) -> pf.ElementStudy:
    return pf.element_study(distribution, magnitude, seed)


@st.cache_data(max_entries=32, show_spinner=False)
def dots(distribution: str, magnitude: int, seed: int) -> pd.DataFrame:
    return pf.dot_study(distribution, magnitude, seed)


@st.cache_resource(max_entries=32, show_spinner=False)
def error_figure(distribution: str, magnitude: int, seed: int, highlight: str,
                 lang: str) -> go.Figure:
    rel = element(distribution, magnitude, seed).rel_errors
    return pfp.element_error_figure(rel, lang, highlight=highlight)


@st.cache_resource(max_entries=32, show_spinner=False)
def outcome_figure(distribution: str, magnitude: int, seed: int, lang: str) -> go.Figure:
    return pfp.outcome_figure(element(distribution, magnitude, seed).table, lang)


@st.cache_resource(max_entries=32, show_spinner=False)
def dot_figure(distribution: str, magnitude: int, seed: int, highlight: str,
               lang: str) -> go.Figure:
    return pfp.dot_figure(dots(distribution, magnitude, seed), lang, highlight=highlight)


def display_summary(table: pd.DataFrame, lang: str) -> pd.DataFrame:
    """One row per format: error statistics, the worst error over the bound, outcomes."""
    col = lambda c: t(f"ui.precision.formats.col.{c}", lang)  # noqa: E731
    share = lambda c: [f"{v:.1%}" for v in table[f"share_{c}"]]  # noqa: E731
    return pd.DataFrame({
        col("format"): table["format"],
        col("median_rel"): [format_number(v) for v in table["median_rel"]],
        col("p99_rel"): [format_number(v) for v in table["p99_rel"]],
        col("rel_rms"): [format_number(v) for v in table["rel_rms"]],
        col("over_bound"): [f"{v:.2f}" for v in table["worst_over_bound"]],
        col("subnormal"): share("subnormal"), col("flushed"): share("flushed"),
        col("saturated"): share("saturated"),
    })


def _chip_note(chip: Chip, fmt: str, table: pd.DataFrame) -> None:
    """Say whether the chip takes the format, and which presets do when it does not."""
    row = table[table["format"] == fmt].iloc[0]
    if row["units"]:
        st.success(state.tr("ui.precision.formats.on_chip", fmt=fmt, chip=chip.display_name,
                            units=", ".join(state.tr(UNIT_IDS[u]) for u in row["units"])),
                   icon=":material/check_circle:")
        return
    st.info(state.tr("ui.precision.formats.off_chip", fmt=fmt, chip=chip.display_name,
                     presets=", ".join(row["presets"]) or "–"), icon=":material/info:")


def show(chip: Chip, p: dict) -> dict:
    """The section; returns ``p`` with the study's two parameters."""
    lang = state.language()
    st.subheader(state.tr("ui.precision.formats.title"))
    st.caption(state.tr("ui.precision.formats.intro"))
    raw = format_table(state.preset(), tuple(sorted(state.overrides().items())))
    table = display_format_table(raw, lang)
    st.dataframe(table, hide_index=True, width="stretch", key="formats_table",
                 **run_view.wrapped(table))
    st.caption(state.tr("ui.precision.formats.table_caption"))
    p = precision_controls.format_controls(chip, p)
    fmt, args = p["format"], (p["distribution"], int(p["magnitude"]), int(p["seed"]))
    _chip_note(chip, fmt, raw)
    st.markdown(state.tr(ABOUT_IDS[fmt]))
    left, right = st.columns(2)
    with left:
        run_view.show(error_figure(*args, fmt, lang), key="format_errors")
    with right:
        run_view.show(outcome_figure(*args, lang), key="format_outcomes")
    summary = display_summary(element(*args).table, lang)
    st.dataframe(summary, hide_index=True, width="stretch", key="formats_summary")
    st.caption(state.tr("ui.precision.formats.summary_caption", n=f"{summary.shape[0]}",
                        elements=f"{pf.ELEMENT_SHAPE[0] * pf.ELEMENT_SHAPE[1]:,}"))
    run_view.show(dot_figure(*args, fmt, lang), key="format_dots")
    st.caption(state.tr("ui.precision.formats.dot_caption", trials=pf.DOT_TRIALS))
    return p

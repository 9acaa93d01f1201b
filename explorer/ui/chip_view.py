"""What the chip page shows about a chip: every field with its provenance, derived peaks,
the override editor and the core block diagram. Kept apart from the page script so each
stays short.

Provenance is the point of this page: a number that is an estimate (or a user override)
must never look like a published figure, so those rows are marked in words and colour.
Everything is in the session's language except the sources, which are documents' titles:
notes and the description come from the file's Chinese texts where it gives them (else the
English ones), and an override's note is worded here from the preset's own provenance.
Sources and notes are too long for a grid's cells, so they are shown in full in a static
table under the compact grid, where they wrap.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import hardware_presets as hp
from explorer import plots
from explorer.ui import errors, state, widgets
from hardware_presets import FIELDS, SECTIONS
from hardware_presets.errors import InputError
from hardware_presets.fields import FOLLOWS

OVERRIDE_ERROR = "chip_override_error"
ROW_COLOURS = {"estimated": "background-color: rgba(230, 159, 0, 0.18)",
                "announced": "background-color: rgba(204, 121, 167, 0.18)",
                "override": "background-color: rgba(0, 114, 178, 0.15)"}
STATUS_MARK = {"estimated": "⚠ ", "announced": "◆ ", "override": "✎ "}
#: message ids: each section's heading, each provenance status (short, and the legend's
#: sentence), each confidence (short, and the legend's sentence) and each column heading of
#: the fields and peaks tables
SECTION_IDS = {"cores": "chip_section.cores", "memory": "chip_section.memory",
               "cube": "chip_section.cube", "vector": "chip_section.vector",
               "transfer": "chip_section.transfer", "package": "chip_section.package"}
STATUS_IDS = {"published": "ui.status.published", "announced": "ui.status.announced",
              "derived": "ui.status.derived",
              "estimated": "ui.status.estimated", "override": "ui.status.override"}
PROVENANCE_IDS = {"published": "provenance.status.published",
                  "announced": "provenance.status.announced",
                  "derived": "provenance.status.derived",
                  "estimated": "provenance.status.estimated",
                  "override": "provenance.status.override"}
CONFIDENCE_IDS = {"H": "ui.confidence.H", "M": "ui.confidence.M", "L": "ui.confidence.L"}
CONFIDENCE_LEGEND_IDS = {"H": "provenance.confidence.H", "M": "provenance.confidence.M",
                         "L": "provenance.confidence.L"}
COLUMN_IDS = {"field": "ui.chip.col.field", "key": "ui.chip.col.key",
              "value": "ui.chip.col.value", "unit": "ui.chip.col.unit",
              "status": "ui.chip.col.status", "confidence": "ui.chip.col.confidence",
              "source": "ui.chip.col.source", "note": "ui.chip.col.note"}
#: the columns of the compact grid (with their widths in pixels: the longest label, key and
#: status fit whole in the main area of a 1400 px wide window), and of the full-text table
#: of sources and notes below it
GRID_COLUMNS = {"field": 290, "key": 250, "value": 70, "unit": 115, "status": 110,
                "confidence": 80}
TEXT_COLUMNS = ("field", "source", "note")


# ---- the override editor -----------------------------------------------------------------
def _on_field_change(key: str) -> None:
    """Store a changed field as an override if the chip stays valid; else keep the error.

    Setting a field back to the preset's value removes its override, so the table's
    status returns to the preset's own provenance.
    """
    value = st.session_state[f"w.field.{key}"]
    new = state.overrides()
    if value == hp.load(state.preset()).values()[key]:
        new.pop(key, None)
    else:
        new[key] = value
    try:
        hp.load(state.preset(), **new)
    except InputError as exc:
        st.session_state[OVERRIDE_ERROR] = exc
        return
    st.session_state.pop(OVERRIDE_ERROR, None)
    state.set_overrides(new)


def _reset() -> None:
    state.set_overrides({})
    st.session_state.pop(OVERRIDE_ERROR, None)


def override_editor(chip: hp.Chip) -> None:
    """Number inputs for every tunable field, one expander per section, and a reset."""
    for i, section in enumerate(SECTIONS):
        specs = [s for s in FIELDS.values() if s.section == section and s.tunable]
        if not specs:
            continue
        with st.expander(state.tr(SECTION_IDS[section]), expanded=i == 0):
            columns = st.columns(3)
            for j, spec in enumerate(specs):
                widgets.field_input(spec, getattr(chip, spec.key), _on_field_change,
                                    where=columns[j % 3])
    st.button(state.tr("ui.chip.reset"), on_click=_reset, disabled=not state.overrides(),
              help=state.tr("ui.chip.reset_help"), key="chip_reset")


def pop_override_error() -> InputError | None:
    """The last refused override (shown once: the inputs already show the chip in use)."""
    return st.session_state.pop(OVERRIDE_ERROR, None)


# ---- tables ------------------------------------------------------------------------------
def _status(status: str) -> str:
    word = state.tr("estimate.label") if status == "estimated" else state.tr(STATUS_IDS[status])
    return STATUS_MARK.get(status, "") + word


def _override_note(key: str) -> str:
    """An override's note in the session's language: what the preset says (value, status,
    source) and, for a value that followed another override, which one it followed.
    The library's own note is English; the chip page's chip is always a preset plus the
    session's overrides, so the preset's provenance is at hand to word it here."""
    base = hp.load(state.preset())
    prev = base.provenance_of(key)
    note = state.tr("provenance.override.note", value=widgets.number(getattr(base, key)),
                    status=state.tr(STATUS_IDS[prev.status]), source=prev.source)
    if key in state.overrides() or key not in FOLLOWS:
        return note
    return state.tr("provenance.override.follows", follows=FOLLOWS[key], note=note)


def _source_and_note(key: str, prov: hp.Provenance) -> tuple[str, str]:
    """The source and note in the session's language. A source is a document's title and
    stays as written; a note is the file's ``note_zh`` in Chinese (its English note when
    the file has none). An override's source and note are worded here instead."""
    if prov.status == "override":
        return state.tr("provenance.override.source"), _override_note(key)
    return prov.source, prov.note_in(state.language())


def fields_table(chip: hp.Chip) -> pd.DataFrame:
    """One row per chip field: label, key, value, unit, provenance (translated words)."""
    rows = []
    for key, spec in FIELDS.items():
        prov = chip.provenance_of(key)
        source, note = _source_and_note(key, prov)
        rows.append({
            "field": state.tr(spec.label_id), "key": key,
            "value": widgets.number(getattr(chip, key)), "unit": widgets.unit(spec.unit),
            "status": _status(prov.status),
            "confidence": state.tr(CONFIDENCE_IDS[prov.confidence]),
            "source": source, "note": note, "_status": prov.status})
    return pd.DataFrame(rows)


def _tinted(table: pd.DataFrame, statuses: pd.Series):
    """``table`` with translated headings, estimated rows tinted amber and overrides blue."""
    colours = [ROW_COLOURS.get(s, "") for s in statuses]
    table = table.set_axis([state.tr(COLUMN_IDS[c]) for c in table.columns], axis=1)
    return table.style.apply(lambda row: [colours[row.name]] * len(row), axis=1)


def show_fields_table(chip: hp.Chip) -> None:
    """The chip's description, the compact grid of every field, and below it the sources
    and notes in full (a static table wraps long texts; a grid's cells would cut them)."""
    st.markdown(errors.escape(chip.description_in(state.language())))
    table = fields_table(chip)
    statuses = table.pop("_status")
    widths = {state.tr(COLUMN_IDS[c]): st.column_config.Column(width=w)
              for c, w in GRID_COLUMNS.items()}
    st.dataframe(_tinted(table[list(GRID_COLUMNS)], statuses), hide_index=True,
                 width="stretch", height="content", column_config=widths, key="chip_fields")
    st.caption(" · ".join(state.tr(PROVENANCE_IDS[s]) for s in hp.STATUSES))
    st.caption(" · ".join(state.tr(CONFIDENCE_LEGEND_IDS[c]) for c in hp.CONFIDENCES))
    with st.expander(state.tr("provenance.detail.title"), expanded=True):
        st.caption(state.tr("provenance.detail.help"))
        text = table[list(TEXT_COLUMNS)].map(errors.escape)  # cells are markdown
        st.table(_tinted(text, statuses), hide_index=True)


def peaks_table(chip: hp.Chip) -> pd.DataFrame:
    """Cube peak and ridge points (HBM and L2) for every cube precision of the chip."""
    rows = [{state.tr("ui.chip.col.precision"): p,
             state.tr("ui.chip.col.peak_tflops"): round(chip.peak_tflops(p), 1),
             state.tr("ui.chip.col.ridge_hbm"): round(chip.ridge_point(p, "hbm"), 1),
             state.tr("ui.chip.col.ridge_l2"): round(chip.ridge_point(p, "l2"), 1)}
            for p in chip.cube_precisions]
    return pd.DataFrame(rows)


def show_peaks(chip: hp.Chip) -> None:
    """Derived figures: vector peaks and bandwidths as metrics, cube peaks as a table."""
    columns = st.columns(4)
    for column, dtype in zip(columns, ("fp16", "fp32")):
        value = chip.vector_peak_gops(dtype) if dtype in chip.vector_dtypes else None
        column.metric(state.tr("ui.chip.vector_peak", dtype=dtype),
                      "—" if value is None else f"{value:,.0f} GOPS",
                      help=state.tr("ui.chip.vector_peak_help"))
    columns[2].metric(state.tr("ui.chip.hbm_bw"), f"{chip.hbm_bandwidth_GBps:,.0f} GB/s",
                      help=state.tr("field.hbm_bandwidth_GBps.help"))
    columns[3].metric(state.tr("ui.chip.l2_bw"), f"{chip.l2_bandwidth_GBps:,.0f} GB/s",
                      help=state.tr("field.l2_bandwidth_GBps.help"))
    st.dataframe(peaks_table(chip), hide_index=True, width="stretch", height="content",
                 key="chip_peaks")
    st.caption(state.tr("ui.chip.peaks_caption"))


# ---- block diagram -----------------------------------------------------------------------
@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs={hp.Chip: hash})
def core_diagram(chip: hp.Chip, lang: str) -> go.Figure:
    """Block diagram of one core (coupled) or one AIC + 2 AIV group (split), built once
    per chip and language (figures are shared, never mutated: plotly_chart only reads)."""
    return plots.core_diagram_figure(chip, lang)


def show_core_diagram(chip: hp.Chip) -> None:
    st.plotly_chart(core_diagram(chip, state.language()), key="core_diagram",
                    config=state.CHART_CONFIG)

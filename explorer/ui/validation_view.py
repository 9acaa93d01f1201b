"""Drawing of the Validation page: the time model's card.

What the emulator models and leaves out (bullet lists from the catalogues), the model
version, the mean and max error per group as metric tiles and every case in one table.
The outcomes come from `explorer.core.validation.model_card` (run once per process, the
same ones the reports summarise), cached here per model version.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.core.i18n import has
from explorer.core.validation import model_card
from explorer.core.validation.cases import MODEL_VERSION, Outcome, summary
from explorer.plots.text import format_number
from explorer.ui import run_view, state

#: what the model includes and what it leaves out, in reading order (message ids)
MODELLED = ("validation.models.pipes", "validation.models.dma", "validation.models.bandwidth",
            "validation.models.l2", "validation.models.cube", "validation.models.vector",
            "validation.models.sync")
NOT_MODELLED = ("validation.omits.bank_conflicts", "validation.omits.icache",
                "validation.omits.l2_merge", "validation.omits.nd_nz", "validation.omits.launch",
                "validation.omits.alignment", "validation.omits.dvfs")
#: message ids: each group's name, each summary tile's (label, help or ""), each column
GROUP_IDS = {"gemm": "validation.group.gemm", "datacopy": "validation.group.datacopy"}
TILE_IDS = {"within": ("validation.metric.within", "validation.metric.within_help"),
            "mean_error": ("validation.metric.mean_error", ""),
            "max_error": ("validation.metric.max_error", ""),
            "mean_ratio": ("validation.metric.mean_ratio", "validation.metric.mean_ratio_help"),
            "max_ratio": ("validation.metric.max_ratio", "validation.metric.max_ratio_help")}
COLUMN_IDS = {
    "case": "validation.col.case", "group": "validation.col.group",
    "preset": "validation.col.preset", "published": "validation.col.published",
    "emulated": "validation.col.emulated", "error": "validation.col.error",
    "tolerance": "validation.col.tolerance", "within": "validation.col.within",
    "ratios": "validation.col.ratios", "source": "validation.col.source",
    "chip": "validation.col.chip", "method": "validation.col.method",
}
TABLE_KEY = "validation_cases"


@st.cache_resource(max_entries=2, show_spinner=False)
def cached_outcomes(version: str) -> tuple[Outcome, ...]:
    """Every case beside the emulator's figure, once per model ``version`` (about 1 s)."""
    return model_card.outcomes()


def outcomes() -> tuple[Outcome, ...]:
    return cached_outcomes(MODEL_VERSION)


def group_name(group: str) -> str:
    """A group's display name (the id itself for a group the catalogues do not know)."""
    msg_id = GROUP_IDS.get(group, "")
    return state.tr(msg_id) if has(msg_id, state.language()) else group


def _percent(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


def _points(fraction: float) -> str:
    return f"{100 * fraction:.1f}"


def show_model() -> None:
    """The two lists: what the emulator models, and what it does not."""
    left, right = st.columns(2)
    with left:
        st.subheader(state.tr("validation.models_h"))
        st.markdown("\n".join(f"- {state.tr(i)}" for i in MODELLED))
    with right:
        st.subheader(state.tr("validation.omits_h"))
        st.markdown("\n".join(f"- {state.tr(i)}" for i in NOT_MODELLED))
        st.caption(state.tr("validation.omits_note"))


def show_summary(done: tuple[Outcome, ...]) -> None:
    """One row of metric tiles per group: within tolerance, mean and max errors."""
    st.subheader(state.tr("validation.summary_h"))
    for group in model_card.groups(done):
        s = summary(list(done), group)
        has_ratios = any(o.case.ratios for o in done if o.case.group == group)
        title = state.tr("validation.group_title", group=group_name(group), cases=s["cases"])
        st.markdown(f"**{title}**")
        tiles = [("within", f"{s['within']} / {s['cases']}"),
                 ("mean_error", _percent(s["mean_error"])),
                 ("max_error", _percent(s["max_error"]))]
        if has_ratios:
            tiles += [("mean_ratio", _points(s["mean_ratio_error"])),
                      ("max_ratio", _points(s["max_ratio_error"]))]
        columns = st.columns(5)
        for column, (name, value) in zip(columns, tiles):
            label_id, help_id = TILE_IDS[name]
            column.metric(state.tr(label_id), value,
                          help=state.tr(help_id) if has(help_id, state.language()) else None)
    st.caption(state.tr("validation.summary_caption"))


def _time(us: float) -> str:
    """A time in the µs the column's heading names, to four significant digits, as
    published figures give it (139.6, 0.096): fewer would misquote the sources."""
    return format_number(us, 4)


def _ratios(o: Outcome) -> str:
    return ", ".join(f"{name} {100 * err:+.0f}" for name, err in o.ratio_errors.items())


def cases_table(done: tuple[Outcome, ...]) -> pd.DataFrame:
    """One row per case, columns in the session's language (the source as published)."""
    yes, no, lang = state.tr("validation.yes"), state.tr("validation.no"), state.language()
    rows = [{"case": o.case.id, "group": group_name(o.case.group), "preset": o.case.preset,
             "published": _time(o.case.published_us), "emulated": _time(o.emulated_us),
             "error": round(100 * o.error, 1), "tolerance": round(100 * o.case.tolerance, 1),
             "within": yes if o.ok else no, "ratios": _ratios(o), "source": o.case.source,
             **dict(zip(("chip", "method"), o.case.described(lang)))} for o in done]
    table = pd.DataFrame(rows, columns=["case", "group", "preset", "published", "emulated",
                                        "error", "tolerance", "within", "ratios", "source",
                                        "chip", "method"])
    table.columns = [state.tr(COLUMN_IDS[c]) for c in table.columns]
    return table


def show_table(done: tuple[Outcome, ...]) -> None:
    """Every case; the errors stay numbers (to sort by), the long texts wrap."""
    st.subheader(state.tr("validation.table_h"))
    col = lambda name: state.tr(COLUMN_IDS[name])  # noqa: E731
    table = cases_table(done)
    wrap = run_view.wrapped(table)
    config = {col("error"): st.column_config.NumberColumn(format="%+.1f"),
              col("tolerance"): st.column_config.NumberColumn(format="%.0f"),
              **{col(c): st.column_config.TextColumn(width="large")
                 for c in ("source", "chip", "method")}, **wrap.pop("column_config", {})}
    st.dataframe(table, hide_index=True, width="stretch", height=560,
                 column_config=config, key=TABLE_KEY, **wrap)
    st.caption(state.tr("validation.table_caption"))

"""Drawing one problem of the troubleshooting lab: what it is in Ascend C terms, the
triggering scenario and what the emulator says about it, the fix and its figures, and
links that open either scenario on its kernel's page.

The outcomes come from ``explorer.core.troubleshoot`` (cached per problem id for the
server's life: they depend on nothing the user sets); every sentence is translated.
"""
from __future__ import annotations

from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from explorer.core import troubleshoot as ts
from explorer.core.i18n import has
from explorer.ui import errors, state
from explorer.ui.kernel_pages import PAGES
from hardware_presets.errors import InputError



@st.cache_resource(show_spinner=False)
def outcome(problem: str) -> ts.Outcome:
    """``run_problem``, once per server: the lab's scenarios are fixed."""
    return ts.run_problem(problem)


def criterion(problem: str) -> str:
    """The problem's detection criterion in words, with the module's thresholds."""
    return state.tr(f"lab.problem.{problem}.criterion", share=f"{ts.STARVED_SHARE:g}",
                    slowdown=f"{ts.SLOWDOWN:g}", clip=f"{ts.CLIP_SHARE:.1%}")


def _text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:,.4g}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def params_table(case: ts.Case) -> pd.DataFrame:
    return pd.DataFrame({state.tr("lab.params"): list(case.params),
                         state.tr("lab.value"): [_text(v) for v in case.params.values()]})


def figures_table(figures: dict) -> pd.DataFrame:
    """Measured figures with translated labels (unknown names stay as they are)."""
    lang = state.language()
    labels = [state.tr(f"lab.fig.{k}") if has(f"lab.fig.{k}", lang) else k for k in figures]
    return pd.DataFrame({state.tr("lab.figure"): labels,
                         state.tr("lab.value"): [_text(v) for v in figures.values()]})


def link(case: ts.Case) -> str | None:
    """A relative URL that opens ``case`` on its kernel's page (None for hand-built
    programs and the quantiser, which no page takes as a scenario)."""
    page = PAGES[case.kernel].path if case.kernel in PAGES else None
    if page is None:
        return None
    query = {"lang": state.language(), "preset": case.preset,
             **{k: _text(v).replace(",", "") for k, v in case.params.items()}}
    return f"./{page}?{urlencode(query)}"


def _says(case: ts.Case) -> None:
    """The refusal, the deadlock or the measured figures of one case."""
    if case.refusal is not None:
        st.markdown(state.tr("lab.refused"))
        errors.show(case.refusal, state.language())
    elif case.deadlock:
        f = case.figures
        st.error(state.tr("lab.deadlock", unfinished=f["unfinished"], op=f["op"],
                          instructions=f["instructions"], core=f["core"]),
                 icon=":material/lock:")
        st.code(case.deadlock, language=None, wrap_lines=True)
    else:
        st.dataframe(figures_table(case.figures), hide_index=True, width="stretch")


def show_case(case: ts.Case, title_id: str, link_id: str) -> None:
    """One side of a problem: parameters, what the emulator says, the page link."""
    st.markdown(f"**{state.tr(title_id)}**")
    if case.preset != ts.NO_PRESET:
        st.caption(state.tr("lab.preset", preset=case.preset))
    st.dataframe(params_table(case), hide_index=True, width="stretch")
    st.markdown(f"*{state.tr('lab.says')}*")
    _says(case)
    url = link(case)
    if url:
        st.markdown(f"[{state.tr(link_id)}]({url})")


def show(problem: str) -> None:
    """The expander of one problem."""
    key = f"lab.problem.{problem}"
    with st.expander(state.tr(f"{key}.title")):
        st.markdown(state.tr(f"{key}.what"))
        try:
            found = outcome(problem)
        except InputError as exc:
            st.error(state.tr("lab.failed", error=errors.message(exc, state.language())))
            return
        left, right = st.columns(2)
        with left:
            show_case(found.trigger, "lab.trigger", "lab.open_link")
            verdict = "lab.detected" if found.detected else "lab.not_detected"
            (st.warning if found.detected else st.info)(
                state.tr(verdict, criterion=criterion(problem)), icon=":material/bug_report:")
        with right:
            show_case(found.fix, "lab.fix", "lab.open_fix")
            st.markdown(state.tr(f"{key}.fix"))
            (st.success if found.fixed else st.warning)(
                state.tr("lab.fixed" if found.fixed else "lab.not_fixed"))

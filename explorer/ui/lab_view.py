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
from explorer.core.emulator import engine
from explorer.core.i18n import has
from explorer.ui import errors, state
from explorer.ui.kernel_pages import PAGES
from hardware_presets.errors import InputError

#: problem -> message ids of its (title, what goes wrong, detection criterion, fix)
PROBLEM_IDS: dict[str, tuple[str, str, str, str]] = {
    "ub_overflow": (
        "lab.problem.ub_overflow.title", "lab.problem.ub_overflow.what",
        "lab.problem.ub_overflow.criterion", "lab.problem.ub_overflow.fix"),
    "misaligned_copy": (
        "lab.problem.misaligned_copy.title", "lab.problem.misaligned_copy.what",
        "lab.problem.misaligned_copy.criterion", "lab.problem.misaligned_copy.fix"),
    "sync_all_blocks": (
        "lab.problem.sync_all_blocks.title", "lab.problem.sync_all_blocks.what",
        "lab.problem.sync_all_blocks.criterion", "lab.problem.sync_all_blocks.fix"),
    "single_buffer": (
        "lab.problem.single_buffer.title", "lab.problem.single_buffer.what",
        "lab.problem.single_buffer.criterion", "lab.problem.single_buffer.fix"),
    "tail_wave": (
        "lab.problem.tail_wave.title", "lab.problem.tail_wave.what",
        "lab.problem.tail_wave.criterion", "lab.problem.tail_wave.fix"),
    "split_k_depth": (
        "lab.problem.split_k_depth.title", "lab.problem.split_k_depth.what",
        "lab.problem.split_k_depth.criterion", "lab.problem.split_k_depth.fix"),
    "int8_overflow": (
        "lab.problem.int8_overflow.title", "lab.problem.int8_overflow.what",
        "lab.problem.int8_overflow.criterion", "lab.problem.int8_overflow.fix"),
}
#: measured figure -> message id of its label (figures without one show their name)
FIGURE_IDS: dict[str, str] = {
    "tile": "lab.fig.tile", "ub_bytes_needed": "lab.fig.ub_bytes_needed",
    "ub_bytes": "lab.fig.ub_bytes", "makespan_us": "lab.fig.makespan_us",
    "instructions": "lab.fig.instructions", "unfinished": "lab.fig.unfinished", "op": "lab.fig.op",
    "core": "lab.fig.core", "aic_cube_ratio": "lab.fig.aic_cube_ratio",
    "mte2_ratio": "lab.fig.mte2_ratio", "mte1_ratio": "lab.fig.mte1_ratio",
    "overlap_ratio": "lab.fig.overlap_ratio", "tasks": "lab.fig.tasks", "cores": "lab.fig.cores",
    "waves": "lab.fig.waves", "tail_tasks": "lab.fig.tail_tasks",
    "idle_cores": "lab.fig.idle_cores", "load_balance_mean_max": "lab.fig.load_balance_mean_max",
    "grid_z": "lab.fig.grid_z", "k_per_split": "lab.fig.k_per_split",
    "makespan_us_no_split": "lab.fig.makespan_us_no_split",
    "makespan_us_most_splits": "lab.fig.makespan_us_most_splits",
    "most_splits": "lab.fig.most_splits", "clipped_share": "lab.fig.clipped_share",
    "max_abs_error": "lab.fig.max_abs_error", "rel_rms_error": "lab.fig.rel_rms_error",
    "max_abs_value": "lab.fig.max_abs_value", "first": "lab.fig.first",
}
#: parameters of the hand-built program and of the quantiser -> message id of their labels
#: (a kernel's parameters take its page's labels)
PARAM_IDS: dict[str, str] = {
    "blocks": "lab.param.blocks", "cores": "lab.param.cores", "scale": "lab.param.scale",
    "shape": "lab.param.shape", "granularity": "ui.precision.param.granularity.label",
    "scheme": "ui.precision.param.scheme.label",
}
#: parameter values in words -> message id of their translation (names and numbers stay)
VALUE_IDS: dict[object, str] = {
    "channel": "ui.precision.granularity.channel", "symmetric": "ui.precision.scheme.symmetric",
    True: "lab.flag.on", False: "lab.flag.off",
}




@st.cache_resource(show_spinner=False)
def outcome(problem: str) -> ts.Outcome:
    """``run_problem``, once per server: the lab's scenarios are fixed."""
    return ts.run_problem(problem)


def criterion(problem: str) -> str:
    """The problem's detection criterion in words, with the module's thresholds."""
    return state.tr(PROBLEM_IDS[problem][2], share=f"{ts.STARVED_SHARE:g}",
                    slowdown=f"{ts.SLOWDOWN:g}", clip=f"{ts.CLIP_SHARE:.1%}")


def _text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:,.4g}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def param_label(case: ts.Case, name: str) -> str:
    """A parameter's label: its kernel page's, or the lab's own for the hand-built program
    and the quantiser; the name itself when there is none."""
    msg_id = PAGES[case.kernel].label_id(name) if case.kernel in PAGES else \
        PARAM_IDS.get(name, "")
    return state.tr(msg_id) if msg_id and has(msg_id, state.language()) else name


def _shown(value: object) -> str:
    """A parameter's value as the table shows it: a word translated, a number formatted."""
    key = value if isinstance(value, (bool, str)) else None
    return state.tr(VALUE_IDS[key]) if key in VALUE_IDS else _text(value)


def params_table(case: ts.Case) -> pd.DataFrame:
    return pd.DataFrame({state.tr("lab.params"): [param_label(case, n) for n in case.params],
                         state.tr("lab.value"): [_shown(v) for v in case.params.values()]})


def figures_table(figures: dict) -> pd.DataFrame:
    """Measured figures with translated labels (unknown names stay as they are)."""
    lang = state.language()
    labels = [state.tr(FIGURE_IDS[k]) if has(FIGURE_IDS.get(k, ""), lang) else k
              for k in figures]
    return pd.DataFrame({state.tr("lab.figure"): labels,
                         state.tr("lab.value"): [_text(v) for v in figures.values()]})


def link(case: ts.Case) -> str | None:
    """A relative URL that opens ``case`` on its kernel's page (None for hand-built
    programs and the quantiser, which no page takes as a scenario). A refused case's page
    shows the same refusal, naming the same field, before it runs the nearest value."""
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
    elif case.deadlock:  # the engine's own sentence, worded from its parts in our language
        said = state.tr(engine.DEADLOCK_ID, **{k: errors.escape(v) for k, v in
                                               case.figures.items()})
        st.error(state.tr("lab.deadlock", message=said), icon=":material/lock:")
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
        if case.refusal is not None:  # what the page does with it: the same refusal, shown
            st.caption(state.tr("inputs.lab_link"))


def show(problem: str) -> None:
    """The expander of one problem."""
    title_id, what_id, _, fix_id = PROBLEM_IDS[problem]
    with st.expander(state.tr(title_id)):
        st.markdown(state.tr(what_id))
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
            st.markdown(state.tr(fix_id))
            (st.success if found.fixed else st.warning)(
                state.tr("lab.fixed" if found.fixed else "lab.not_fixed"))

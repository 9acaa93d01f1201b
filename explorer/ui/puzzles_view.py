"""The parts of the Puzzles page (explorer/ui/pages/puzzles.py), each a small function:
the picker's labels, the editor (a code editor component, or a text box without it), the
hints, the verdict, the per-case table, the timing against the reference, the progress.

**The source the page runs** is one plain session key per puzzle (``source_key``), never a
widget's value: the editor writes it, "Reset" and a restored progress file write it, and
a test sets it directly (AppTest cannot type into a custom component). The editor is
``streamlit-code-editor`` (Ace, Python highlighting, its frontend bundled in the wheel:
nothing is fetched at run time); it reports its text when it loses focus, and on
Ctrl+Enter, which also runs the code. It is mounted with ``editor_seed``, the source at
the moment it mounts, and never given a new text while mounted (that would overwrite what
the student is typing); Reset remounts it under a new key. Without the component the
page falls back to ``st.text_area`` bound to the same key, and says so.

Texts of the grader (``explorer.core.puzzles.Verdict``) are message ids with values; the
values may hold what the student's code wrote (a name, an exception's text), so they are
escaped for Markdown, or kept inside the message's code span (``message``).
"""
from __future__ import annotations

import re
from collections.abc import Mapping

import pandas as pd
import streamlit as st

from explorer.core.i18n import catalogue, has
from explorer.core.puzzles import CaseResult, Timing, Verdict
from explorer.plots import puzzles as puzzle_plots
from explorer.plots.text import format_number
from explorer.plots.timeline import timeline_figure
from explorer.plots.values import format_value
from explorer.ui import errors, state
from explorer.ui.puzzle_progress import Entry
from kernels.ascendc.puzzles import Puzzle

try:  # an optional component: the page works, with a plain text box, without it
    from code_editor import code_editor
except ImportError:  # pragma: no cover - exercised where the component is not installed
    code_editor = None

#: how each verdict is boxed, its heading and its icon
VERDICT_BOX = {"passed": st.success, "slow": st.warning, "wrong": st.error,
               "refused": st.error, "error": st.error, "limit": st.error}
VERDICT_IDS = {"passed": "ui.puzzles.verdict.passed", "slow": "ui.puzzles.verdict.slow",
               "wrong": "ui.puzzles.verdict.wrong", "refused": "ui.puzzles.verdict.refused",
               "error": "ui.puzzles.verdict.error", "limit": "ui.puzzles.verdict.limit"}
VERDICT_ICONS = {"passed": ":material/check_circle:", "slow": ":material/hourglass_bottom:",
                 "wrong": ":material/cancel:", "refused": ":material/block:",
                 "error": ":material/error:", "limit": ":material/timer_off:"}
#: the picker's word for a puzzle's state (solved, or its last run's status)
STATUS_IDS = {"solved": "ui.puzzles.status.solved", "wrong": "ui.puzzles.status.wrong",
              "slow": "ui.puzzles.status.slow", "refused": "ui.puzzles.status.refused",
              "error": "ui.puzzles.status.error", "limit": "ui.puzzles.status.limit",
              "passed": "ui.puzzles.status.solved"}
EDITOR_HEIGHT = [18, 36]  # lines: the editor grows with the code between these
#: completion on Ctrl+Space only: a list popping up while typing takes the Enter key
EDITOR_PROPS = {"enableLiveAutocompletion": False, "enableBasicAutocompletion": True,
                "enableSnippets": False}
_CODE_SPAN = re.compile(r"`[^`]*`")
_FIELD = re.compile(r"\{(\w+)")


# ---- session keys: one set per puzzle ----------------------------------------------------
def source_key(pid: str) -> str:
    """The session key of the source the page runs for puzzle ``pid``."""
    return f"pz_source:{pid}"


def _seed_key(pid: str) -> str:
    return f"pz_seed:{pid}"


def _nonce_key(pid: str) -> str:
    return f"pz_nonce:{pid}"


def _event_key(pid: str) -> str:
    return f"pz_event:{pid}"


def editor_key(pid: str) -> str:
    """The component's key: a new one (Reset, a restored file) mounts a fresh editor."""
    return f"pz_editor:{pid}:{st.session_state.get(_nonce_key(pid), 0)}"


def source(puzzle: Puzzle) -> str:
    """The source the page runs for ``puzzle`` (its starter until the student edits it)."""
    return st.session_state.setdefault(source_key(puzzle.id), puzzle.starter)


def set_source(pid: str, text: str) -> None:
    """Replace the source (Reset, a restored file) and remount the editor with it."""
    st.session_state[source_key(pid)] = text
    st.session_state[_nonce_key(pid)] = st.session_state.get(_nonce_key(pid), 0) + 1


# ---- texts of the grader -----------------------------------------------------------------
def message(msg_id: str, values: Mapping[str, object]) -> str:
    """A grader's message in the session's language, its texts made safe: a value shown
    inside a code span of the message loses its backticks, any other is escaped."""
    if not has(msg_id):
        return errors.escape(msg_id)
    template = catalogue(state.language())[msg_id]
    in_code = {name for span in _CODE_SPAN.findall(template) for name in _FIELD.findall(span)}
    safe = {}
    for name, value in values.items():
        if isinstance(value, str):
            value = value.replace("`", "'") if name in in_code else errors.escape(value)
        elif value is None:
            value = "-"
        safe[name] = value
    try:
        return state.tr(msg_id, **safe)
    except (KeyError, IndexError, ValueError):  # a value the message does not take
        return state.tr(msg_id, **{n: "-" for n in _FIELD.findall(template)})


# ---- the picker --------------------------------------------------------------------------
def status_word(entry: Entry | None) -> str:
    """What the picker says of a puzzle: solved, the last run's status, or nothing."""
    if entry is None or not entry.status and not entry.solved:
        return ""
    return state.tr(STATUS_IDS["solved" if entry.solved else entry.status])


def picker_label(puzzle: Puzzle, entry: Entry | None) -> str:
    """"3. Vector add on every core (solved)": learning order, title, state in words."""
    word = status_word(entry)
    title = puzzle.title(state.language())
    if not word:
        return state.tr("ui.puzzles.option", order=puzzle.order, title=title)
    return state.tr("ui.puzzles.option_status", order=puzzle.order, title=title, status=word)


# ---- the editor --------------------------------------------------------------------------
def editor(puzzle: Puzzle) -> bool:
    """The code editor with the puzzle's source; True when Ctrl+Enter asked for a run."""
    pid = puzzle.id
    current = source(puzzle)
    if code_editor is None:
        st.warning(state.tr("ui.puzzles.fallback"), icon=":material/edit_note:")
        st.text_area(state.tr("ui.puzzles.editor"), height=420,
                     **state.bound(source_key(pid), current))
        return False
    key = editor_key(pid)
    if key not in st.session_state:  # a fresh mount (first draw, back from elsewhere)
        st.session_state[_seed_key(pid)] = current
    seed = st.session_state.setdefault(_seed_key(pid), current)
    with st.container(key="pz_editor_box"):
        reply = code_editor(seed, lang="python", key=key, height=EDITOR_HEIGHT,
                            response_mode=["blur"], allow_reset=False,
                            options={"showLineNumbers": True, "tabSize": 4,
                                     "useSoftTabs": True, "wrap": False},
                            props=EDITOR_PROPS)
    if not isinstance(reply, dict) or not reply.get("id"):
        return False
    if reply["id"] == st.session_state.get(_event_key(pid)):
        return False  # already taken
    st.session_state[_event_key(pid)] = reply["id"]
    text = reply.get("text")
    if isinstance(text, str):
        st.session_state[source_key(pid)] = text
    return reply.get("type") == "submit"


# ---- hints -------------------------------------------------------------------------------
def hints(puzzle: Puzzle, shown: int, on_more) -> None:
    """The hints shown so far, then a button for the next one ("Show hint 2 of 3")."""
    texts = puzzle.hint_list(state.language())
    for index, text in enumerate(texts[:shown]):
        st.info(state.tr("ui.puzzles.hint", n=index + 1) + "\n\n" + text,
                icon=":material/lightbulb:")
    if shown < len(texts):
        st.button(state.tr("ui.puzzles.show_hint", n=shown + 1, total=len(texts)),
                  key="pz_hint", icon=":material/lightbulb:", on_click=on_more,
                  args=(puzzle.id, shown + 1))
    else:
        st.caption(state.tr("ui.puzzles.no_more_hints", total=len(texts)))


# ---- the verdict -------------------------------------------------------------------------
def verdict(result: Verdict) -> None:
    """The verdict boxed (passed, too slow, wrong, refused, error, limit) with its
    message, where it points in the code, and the reasons."""
    status = result.status
    lines = [f"**{state.tr(VERDICT_IDS[status])}**", message(*result.message)]
    if result.line is not None and status in ("refused", "error", "limit"):
        lines.append(state.tr("ui.puzzles.at_line", line=result.line))
    VERDICT_BOX[status]("\n\n".join(lines), icon=VERDICT_ICONS[status])
    for msg_id, values in result.reasons:
        st.markdown(f"- {message(msg_id, values)}")
    for msg_id, values in result.notes:
        st.caption(message(msg_id, values))
    if result.output:
        with st.expander(state.tr("ui.puzzles.output"), icon=":material/terminal:"):
            st.code(result.output[:20_000], language="text")


def table_height(rows: int) -> int:
    """Pixels of a table that shows ``rows`` rows without a scroll bar."""
    return 35 * (rows + 1) + 3


def _number(value: object) -> str:
    if value is None:
        return "-"
    return str(value) if isinstance(value, str) else format_number(value)


def cases_table(cases: tuple[CaseResult, ...]) -> pd.DataFrame:
    """One row per case run: its name, pass / fail, its shape (GM sizes, block_dim,
    tiling), the largest errors, the error allowed at its worst element, the mismatches."""
    rows = []
    for case in cases:
        rows.append({
            state.tr("ui.puzzles.col.case"): case.name,
            state.tr("ui.puzzles.col.result"): state.tr(
                "ui.puzzles.pass" if case.passed else "ui.puzzles.fail"),
            state.tr("ui.puzzles.col.shape"): ", ".join(
                f"{name}: {size:,}" for name, size in case.sizes.items()),
            state.tr("ui.puzzles.col.block_dim"): case.block_dim,
            state.tr("ui.puzzles.col.tiling"): ", ".join(
                f"{k} = {v}" for k, v in case.tiling.items()) or "-",
            state.tr("ui.puzzles.col.max_abs"): _number(case.max_abs_error),
            state.tr("ui.puzzles.col.max_rel"): _number(case.max_rel_error),
            state.tr("ui.puzzles.col.allowed"): _number(case.allowed),
            state.tr("ui.puzzles.col.mismatches"): f"{case.mismatches:,} / {case.elements:,}",
        })
    return pd.DataFrame(rows)


def cases(result: Verdict) -> None:
    """The per-case table (the cases after a failing one did not run)."""
    if not result.cases:
        return
    st.subheader(state.tr("ui.puzzles.cases"))
    st.dataframe(cases_table(result.cases), hide_index=True, width="stretch")
    st.caption(state.tr("ui.puzzles.cases_caption", seed=result.seed))


# ---- timing against the reference --------------------------------------------------------
def ratio_text(ratio: float) -> str:
    """A time ratio or goal as the page writes it: "1.35×" (two decimals, so that a ratio
    just above its goal never reads as equal to it)."""
    return f"{ratio:.2f}×"


def _us(timing: Timing) -> str:
    return format_value(timing.makespan_us, "µs", state.language())


def timing(result: Verdict) -> None:
    """Tiles (your time, the reference's, the ratio against the goal), then the two
    timelines on one time window, then the per-pipe busy ratios side by side."""
    student, reference = result.student, result.reference
    if student is None or reference is None or result.ratio is None:
        return
    lang = state.language()
    st.subheader(state.tr("ui.puzzles.timing"))
    ratio, goal = ratio_text(result.ratio), ratio_text(result.timing_goal)
    met = result.ratio <= result.timing_goal
    cols = st.columns(3)
    cols[0].metric(state.tr("ui.puzzles.your_time"), _us(student),
                   help=state.tr("ui.puzzles.your_time_help"))
    cols[1].metric(state.tr("ui.puzzles.reference_time"), _us(reference),
                   help=state.tr("ui.puzzles.reference_time_help"))
    cols[2].metric(state.tr("ui.puzzles.ratio"), ratio,
                   delta=state.tr("ui.puzzles.goal_met" if met else "ui.puzzles.goal_missed",
                                  goal=goal),
                   delta_color="normal" if met else "inverse", delta_arrow="off",
                   help=state.tr("ui.puzzles.ratio_help", goal=goal))
    window = puzzle_plots.shared_window(student.makespan_ns, reference.makespan_ns)
    for who, heading, run in (("student", "ui.puzzles.student_timeline", student),
                              ("reference", "ui.puzzles.reference_timeline", reference)):
        st.markdown(f"**{state.tr(heading, time=_us(run), cores=run.cores)}**")
        st.plotly_chart(timeline_figure(run.timeline, run.makespan_ns, lang, window=window),
                        config=state.CHART_CONFIG, width="stretch", key=f"pz_timeline_{who}")
    st.plotly_chart(puzzle_plots.ratio_comparison_figure(student.ratios, reference.ratios,
                                                         lang),
                    config=state.CHART_CONFIG, width="stretch", key="pz_ratios")


# ---- progress ----------------------------------------------------------------------------
def progress_rows(puzzles: Mapping[str, Puzzle],
                  progress: Mapping[str, Entry]) -> list[puzzle_plots.ProgressRow]:
    """The progress figure's rows: every puzzle in learning order."""
    lang = state.language()
    return [puzzle_plots.ProgressRow(
        state.tr("ui.puzzles.option", order=p.order, title=p.title(lang)), p.timing_goal,
        progress[pid].best_ratio if pid in progress and progress[pid].solved else None)
        for pid, p in puzzles.items()]


def progress_table(puzzles: Mapping[str, Puzzle], progress: Mapping[str, Entry]) -> pd.DataFrame:
    """Per puzzle: its state in words, the best time and its ratio to the reference."""
    lang = state.language()
    rows = []
    for pid, puzzle in puzzles.items():
        entry = progress.get(pid, Entry())
        rows.append({
            state.tr("ui.puzzles.col.puzzle"): state.tr(
                "ui.puzzles.option", order=puzzle.order, title=puzzle.title(lang)),
            state.tr("ui.puzzles.col.status"): status_word(entry) or state.tr(
                "ui.puzzles.status.new"),
            state.tr("ui.puzzles.col.best"): "-" if entry.best_ns is None else
            format_value(entry.best_ns / 1e3, "µs", lang),
            state.tr("ui.puzzles.col.best_ratio"): "-" if entry.best_ratio is None else
            ratio_text(entry.best_ratio),
            state.tr("ui.puzzles.col.goal"): ratio_text(puzzle.timing_goal),
        })
    return pd.DataFrame(rows)

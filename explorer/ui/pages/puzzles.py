"""Page "Puzzles": small Ascend C kernels a student writes in the Python-shaped DSL, graded
in value (several shapes against float64) and in time (against a reference solution).

From the top: the picker (learning order, each puzzle's state in words), the statement
with its hints revealed one at a time beside the code editor (prefilled with the starter;
"Reset" brings it back), Run, then the verdict (passed / too slow / wrong / refused /
error / limit, with the line it points at), the per-case table and, once the kernel is
right, the student's timeline above the reference's on one time window and their per-pipe
busy ratios side by side. Last, the progress over every puzzle: a figure, a table, a JSON
download and an upload that restores it.

A run is expensive (a sandbox child, the emulator): it happens only on Run (or Ctrl+Enter
in the editor), under a spinner while it waits for a sandbox slot and runs; its verdict is
kept with the source it ran, so a later edit marks the results stale instead of hiding
them. The verdict is stored before anything else is drawn: a rerun the editor asks for
while the run goes on then shows it, rather than losing it. ``?puzzle=<id>`` opens a
puzzle. Streamlit runs this file as the page script (``__name__ == "__main__"``).
"""
from __future__ import annotations

import streamlit as st

import hardware_presets as hp
from explorer.core import puzzles as grader
from explorer.plots import puzzles as puzzle_plots
from explorer.ui import errors, puzzle_progress, puzzles_view, state, uploads, widgets
from explorer.ui.puzzle_progress import Entry
from hardware_presets.errors import InputError
from kernels.ascendc.puzzles import Puzzle, PuzzleFormatError, puzzles

CURRENT = "pz_current"  # the puzzle shown (the picker's truth)
PROGRESS = "pz_progress"  # puzzle id -> puzzle_progress.Entry
LAST_RUN = "pz_last_run"  # {"puzzle", "source", "verdict"} of the session's last run
UPLOAD_KEY = "w.pz_progress_upload"
_UPLOAD_OUTCOME = "pz_upload_outcome"  # the last upload's InputError or restored count
RUN_BUTTON, RESET_BUTTON = "pz_run", "pz_reset"


# ---- progress in the session -------------------------------------------------------------
def progress() -> dict[str, Entry]:
    return st.session_state.setdefault(PROGRESS, {})


def _entry(pid: str) -> Entry:
    return progress().get(pid, Entry())


def _show_more_hints(pid: str, shown: int) -> None:
    progress()[pid] = _entry(pid).with_hints(shown)


def _reset(puzzle_id: str) -> None:
    puzzles_view.set_source(puzzle_id, puzzles()[puzzle_id].starter)


def _on_upload(known: tuple[str, ...]) -> None:
    """Restore the uploaded progress file (refused, translated, unless it is sound)."""
    upload = st.session_state.get(UPLOAD_KEY)
    if upload is None:
        return
    try:
        restored = puzzle_progress.parse(upload.getvalue(), upload.name, known,
                                         state.language())
    except InputError as exc:
        st.session_state[_UPLOAD_OUTCOME] = exc
        return
    st.session_state[PROGRESS] = puzzle_progress.merge(progress(), restored)
    for pid, entry in restored.items():
        if entry.source:
            puzzles_view.set_source(pid, entry.source)
    st.session_state[_UPLOAD_OUTCOME] = len(restored)


# ---- the puzzle shown --------------------------------------------------------------------
def _pick(all_puzzles: dict[str, Puzzle]) -> Puzzle:
    """The picker (with ``?puzzle=<id>`` taken once from the URL; an unknown id is a
    message and the picker keeps its choice)."""
    wanted = state.take_url_params().get("puzzle")
    if wanted is not None:
        if wanted in all_puzzles:
            st.session_state[CURRENT] = wanted
        else:
            errors.show(InputError("puzzle", wanted, state.tr(
                "ui.puzzles.allowed_puzzle", ids=", ".join(all_puzzles))), state.language())
    ids = list(all_puzzles)
    if st.session_state.get(CURRENT) not in all_puzzles:
        st.session_state[CURRENT] = ids[0]
    # the labels made now: a format_func must not read the session later (AppTest calls
    # it outside the run)
    labels = {pid: puzzles_view.picker_label(p, progress().get(pid))
              for pid, p in all_puzzles.items()}
    chosen = st.selectbox(state.tr("ui.puzzles.pick"), ids, format_func=labels.__getitem__,
                          help=state.tr("ui.puzzles.pick_help"), **state.bound(CURRENT, ids[0]))
    return all_puzzles[chosen]


def _statement(puzzle: Puzzle) -> None:
    chip = hp.load(puzzle.preset)
    st.caption(state.tr("ui.puzzles.facts", chip=chip.display_name, kind=puzzle.kernel_type,
                        entry=puzzle.entry, goal=f"{puzzle.timing_goal:g}"))
    with st.container(border=True):
        st.markdown(puzzle.statement(state.language()))
    puzzles_view.hints(puzzle, _entry(puzzle.id).hints, _show_more_hints)


def _keep(pid: str, source: str, verdict: grader.Verdict) -> None:
    """Keep a run's verdict and its progress, before anything is drawn: a rerun the
    editor asked for while the run went on would otherwise lose them."""
    st.session_state[LAST_RUN] = {"puzzle": pid, "source": source, "verdict": verdict}
    student = verdict.student
    progress()[pid] = _entry(pid).after_run(
        verdict.status, source, student.makespan_ns if student else None, verdict.ratio)


def _run(puzzle: Puzzle, source: str) -> None:
    """Grade ``source`` (blocking, under a spinner) and keep the verdict and progress."""
    try:
        with st.spinner(state.tr("ui.puzzles.running"), show_time=True):
            verdict = grader.check(puzzle.id, source)
            _keep(puzzle.id, source, verdict)
    except InputError as exc:
        errors.show(exc, state.language())
        return
    except RuntimeError as exc:  # the puzzle's own reference failed: a bug of the puzzle
        st.error(state.tr("ui.puzzles.broken", detail=errors.escape(str(exc)[:300])),
                 icon=":material/error:")
        return
    st.rerun()  # draw the page again: the picker and the progress show this run


def _editor_and_run(puzzle: Puzzle) -> None:
    submitted = puzzles_view.editor(puzzle)
    with st.container(horizontal=True):
        clicked = st.button(state.tr("ui.puzzles.run"), key=RUN_BUTTON, type="primary",
                            icon=":material/play_arrow:", help=state.tr("ui.puzzles.run_help"))
        st.button(state.tr("ui.puzzles.reset"), key=RESET_BUTTON, icon=":material/restart_alt:",
                  help=state.tr("ui.puzzles.reset_help"), on_click=_reset, args=(puzzle.id,))
    st.caption(state.tr("ui.puzzles.editor_caption"))
    if clicked or submitted:
        _run(puzzle, puzzles_view.source(puzzle))


def _results(puzzle: Puzzle) -> None:
    last = st.session_state.get(LAST_RUN)
    if not last or last["puzzle"] != puzzle.id:
        st.info(state.tr("ui.puzzles.not_run"), icon=":material/play_circle:")
        return
    if last["source"] != puzzles_view.source(puzzle):
        st.warning(state.tr("ui.puzzles.stale"), icon=":material/update:")
    verdict = last["verdict"]
    puzzles_view.verdict(verdict)
    puzzles_view.cases(verdict)
    puzzles_view.timing(verdict)


def _progress(all_puzzles: dict[str, Puzzle]) -> None:
    """The progress over every puzzle, its download and the upload that restores it."""
    st.subheader(state.tr("ui.puzzles.progress_title"))
    done = sum(e.solved for pid, e in progress().items() if pid in all_puzzles)
    st.caption(state.tr("ui.puzzles.progress_caption", solved=done, total=len(all_puzzles)))
    st.plotly_chart(puzzle_plots.progress_figure(
        puzzles_view.progress_rows(all_puzzles, progress()), state.language()),
        config=state.CHART_CONFIG, width="stretch")
    st.dataframe(puzzles_view.progress_table(all_puzzles, progress()), hide_index=True,
                 width="stretch", height=puzzles_view.table_height(len(all_puzzles)))
    ids = tuple(all_puzzles)
    st.download_button(state.tr("ui.puzzles.download"),
                       puzzle_progress.to_json(progress(), ids),
                       file_name="puzzle_progress.json", mime="application/json",
                       key="pz_download", on_click="ignore", icon=":material/download:",
                       help=state.tr("ui.puzzles.download_help"))
    limit = puzzle_progress.max_bytes(len(ids))
    uploads.uploader(st, "ui.puzzles.upload", ("json",), UPLOAD_KEY, max_bytes=limit,
                     help_id="ui.puzzles.upload_help", on_change=_on_upload, args=(ids,))
    outcome = st.session_state.pop(_UPLOAD_OUTCOME, None)
    if isinstance(outcome, InputError):
        errors.show(outcome, state.language())
    elif outcome is not None:
        st.success(state.tr("ui.puzzles.restored", count=outcome),
                   icon=":material/check_circle:")


def main() -> None:
    """Draw the page: picker, statement and editor, results, progress."""
    widgets.sidebar()
    st.title(state.tr("ui.puzzles.title"))
    st.caption(state.tr("ui.puzzles.intro"))
    try:
        all_puzzles = puzzles()
    except PuzzleFormatError as exc:
        st.error(state.tr("ui.puzzles.broken", detail=errors.escape(str(exc))),
                 icon=":material/error:")
        return
    puzzle = _pick(all_puzzles)
    left, right = st.columns([2, 3], gap="large")
    with left:
        _statement(puzzle)
    with right:
        _editor_and_run(puzzle)
    _results(puzzle)
    _progress(all_puzzles)
    state.sync_url({"puzzle": puzzle.id})


if __name__ == "__main__":
    main()

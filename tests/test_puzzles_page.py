"""The Puzzles page under AppTest: every puzzle renders in English and Chinese; the
reference solution passes and shows both timelines, the wrong one names its case, the slow
one its ratio, ``import os`` its refusal and line; hints come one at a time; an edit after a
run marks the results stale; progress downloads as JSON and uploading it restores it, and
a hostile upload (huge, not JSON, unknown puzzle, bad fields) is refused with a message.

AppTest cannot type into the code editor (a custom component): the tests set the session
key the editor writes (``puzzles_view.source_key``), as the page documents. What the page
shows is compared with what the grader decided (the verdict the page kept), never with
fixed numbers.
"""
from __future__ import annotations

import json
import re

import pytest
import streamlit as st

from explorer.core.i18n import catalogue, t
from explorer.plots.values import format_value
from explorer.ui import puzzle_progress, puzzles_view
from explorer.ui.pages import puzzles as page_module
from explorer.ui.puzzle_progress import Entry
from hardware_presets.errors import InputError
from kernels.ascendc.puzzles import get, puzzles
from tests.apptest_helpers import open_page, run, texts

PAGE = "explorer/ui/pages/puzzles.py"
PID = "vector_add_one_core"  # small cases: a run takes a few seconds


def page(lang: str = "en", pid: str = PID):
    return open_page(PAGE, {"lang": lang, "puzzle": pid})


def run_source(at, source: str, pid: str = PID):
    """Put ``source`` where the editor writes it, press Run, wait for the page."""
    at.session_state[puzzles_view.source_key(pid)] = source
    at.button(key=page_module.RUN_BUTTON).click()
    return run(at)


def last_verdict(at):
    return at.session_state[page_module.LAST_RUN]["verdict"]


def shown(at) -> str:
    return "\n".join(texts(getattr(at, kind)) for kind in
                     ("title", "markdown", "caption", "success", "warning", "error", "info"))


def picked(at, pid: str | None = None) -> str:
    """The picker's label of puzzle ``pid`` (the one shown), as the page wrote it."""
    order = get(pid or at.session_state[page_module.CURRENT]).order
    return next(o for o in at.selectbox(key="w." + page_module.CURRENT).options
                if o.startswith(f"{order}. "))


def chart_titles(at) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


# ---- every puzzle, both languages --------------------------------------------------------
@pytest.mark.parametrize("lang", ("en", "zh"))
def test_every_puzzle_renders(lang):
    at = page(lang, next(iter(puzzles())))
    assert t("ui.puzzles.title", lang) in texts(at.title)
    for pid, puzzle in puzzles().items():
        at.session_state[page_module.CURRENT] = pid  # the picker's truth (state.bound)
        run(at)
        body = shown(at)
        first_line = puzzle.statement(lang).strip().splitlines()[0].lstrip("# ").strip()
        assert first_line in body.replace("\\", ""), pid
        assert t("ui.puzzles.not_run", lang) in body
        hints = puzzle.hint_list(lang)
        labels = [b.label for b in at.button]
        assert t("ui.puzzles.show_hint", lang, n=1, total=len(hints)) in labels
        assert t("ui.puzzles.run", lang) in labels
        assert puzzle.title(lang) in picked(at)
        assert at.query_params["puzzle"] in (pid, [pid])
    # the progress figure is there before any run (every page draws a chart)
    assert t("plots.puzzles.progress_title", lang) in " ".join(chart_titles(at))


def test_an_unknown_puzzle_in_the_url_is_a_message():
    at = page("en", "no_such_puzzle")
    assert "no_such_puzzle" in texts(at.error)
    assert at.session_state[page_module.CURRENT] == next(iter(puzzles()))


# ---- runs --------------------------------------------------------------------------------
def test_the_reference_passes_and_shows_both_timelines():
    at = run_source(page(), get(PID).source("reference"))
    verdict = last_verdict(at)
    assert verdict.status == "passed"
    assert t("ui.puzzles.verdict.passed", "en") in texts(at.success)
    student, reference = verdict.student, verdict.reference
    headings = texts(at.markdown)
    for msg_id, timing in (("ui.puzzles.student_timeline", student),
                           ("ui.puzzles.reference_timeline", reference)):
        assert t(msg_id, "en", time=format_value(timing.makespan_us, "µs"),
                 cores=timing.cores) in headings
    keys = [c.proto.id for c in at.get("plotly_chart")]
    assert sum("pz_timeline_" in k for k in keys) == 2
    assert any("pz_ratios" in k for k in keys)
    tiles = {m.label: m.value for m in at.metric}
    assert tiles[t("ui.puzzles.ratio", "en")] == puzzles_view.ratio_text(verdict.ratio)
    # the picker and the progress table say solved
    assert t("ui.puzzles.status.solved", "en") in picked(at)
    assert at.session_state[page_module.PROGRESS][PID].solved


def test_the_wrong_solution_names_its_failing_case():
    at = run_source(page(), get(PID).source("wrong"))
    verdict = last_verdict(at)
    assert verdict.status == "wrong"
    failed = next(c for c in verdict.cases if not c.passed)
    errors = texts(at.error)
    assert t("ui.puzzles.verdict.wrong", "en") in errors and failed.name in errors
    table = at.dataframe[0].value
    assert failed.name in set(table[t("ui.puzzles.col.case", "en")])
    assert t("ui.puzzles.fail", "en") in set(table[t("ui.puzzles.col.result", "en")])
    assert not at.get("plotly_chart")[1:]  # no timelines for a wrong kernel


def test_the_slow_solution_is_too_slow_with_its_ratio():
    at = run_source(page(), get(PID).source("slow"))
    verdict = last_verdict(at)
    assert verdict.status == "slow" and verdict.ratio > verdict.timing_goal
    assert t("ui.puzzles.verdict.slow", "en") in texts(at.warning)
    ratio = next(m for m in at.metric if m.label == t("ui.puzzles.ratio", "en"))
    assert ratio.value == puzzles_view.ratio_text(verdict.ratio)
    assert ratio.proto.delta == t("ui.puzzles.goal_missed", "en",
                                  goal=puzzles_view.ratio_text(verdict.timing_goal))
    entry = at.session_state[page_module.PROGRESS][PID]
    assert entry.status == "slow" and not entry.solved
    assert t("ui.puzzles.status.slow", "en") in picked(at)


@pytest.mark.parametrize("lang", ("en", "zh"))
def test_import_os_is_refused_with_its_line(lang):
    at = run_source(page(lang), "import os\n")
    verdict = last_verdict(at)
    assert verdict.status == "refused" and verdict.line == 1
    errors = texts(at.error)
    assert t("ui.puzzles.verdict.refused", lang) in errors
    assert t("ui.puzzles.at_line", lang, line=1) in errors
    assert "os" in errors


def test_an_edit_after_a_run_marks_the_results_stale_and_reset_brings_the_starter():
    at = run_source(page(), "import os\n")
    assert not at.warning
    at.session_state[puzzles_view.source_key(PID)] = "import os\nx = 1\n"
    run(at)
    assert t("ui.puzzles.stale", "en") in texts(at.warning)
    assert t("ui.puzzles.verdict.refused", "en") in texts(at.error)  # still shown
    at.button(key=page_module.RESET_BUTTON).click()
    run(at)
    assert at.session_state[puzzles_view.source_key(PID)] == get(PID).starter


def test_the_text_box_stands_in_without_the_editor_component(monkeypatch):
    monkeypatch.setattr(puzzles_view, "code_editor", None)
    at = page()
    assert t("ui.puzzles.fallback", "en") in texts(at.warning).replace("\\", "")
    box = at.text_area[0]
    assert box.value == get(PID).starter
    box.set_value("import os\n")
    run(at)
    at.button(key=page_module.RUN_BUTTON).click()
    run(at)
    assert last_verdict(at).status == "refused"


# ---- hints -------------------------------------------------------------------------------
def test_hints_are_revealed_one_at_a_time():
    at = page()
    hints = get(PID).hint_list("en")
    for shown_now in range(len(hints)):
        boxes = [i.value for i in at.info if i.value.startswith("Hint ")]
        assert len(boxes) == shown_now
        button = at.button(key="pz_hint")
        assert button.label == t("ui.puzzles.show_hint", "en", n=shown_now + 1,
                                 total=len(hints))
        button.click()
        run(at)
    boxes = [i.value for i in at.info if i.value.startswith("Hint ")]
    assert len(boxes) == len(hints) and hints[-1] in boxes[-1]
    assert not [b for b in at.button if b.key == "pz_hint"]
    assert t("ui.puzzles.no_more_hints", "en", total=len(hints)) in texts(at.caption)
    assert at.session_state[page_module.PROGRESS][PID].hints == len(hints)


# ---- progress: download, restore, hostile files ------------------------------------------
def test_progress_downloads_and_an_upload_restores_it(monkeypatch):
    offered = {}
    real = st.download_button

    def spy(label, data, *args, **kwargs):
        if kwargs.get("key") == "pz_download":
            offered["data"] = data
        return real(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", spy)
    reference = get(PID).source("reference")
    at = run_source(page(), reference)
    run(at)  # the download offered after the run's progress
    data = offered["data"]
    doc = json.loads(data)
    assert doc["format"] == puzzle_progress.FORMAT
    assert doc["puzzles"][PID]["solved"] is True
    assert doc["puzzles"][PID]["source"] == reference
    assert doc["puzzles"][PID]["best_ns"] == pytest.approx(last_verdict(at).student.makespan_ns)

    fresh = page("zh")
    fresh.file_uploader(key=page_module.UPLOAD_KEY).set_value(
        ("progress.json", data.encode(), "application/json"))
    run(fresh)
    assert t("ui.puzzles.restored", "zh", count=1) in texts(fresh.success)
    assert fresh.session_state[page_module.PROGRESS][PID].solved
    assert fresh.session_state[puzzles_view.source_key(PID)] == reference
    assert t("ui.puzzles.status.solved", "zh") in picked(fresh, PID)


def _hostile() -> dict[str, tuple[bytes, str]]:
    """name -> (file bytes, the id of the message that refuses it)."""
    ids = tuple(puzzles())
    good = json.loads(puzzle_progress.to_json({PID: Entry("wrong", source="x = 1")}, ids))
    unknown = {**good, "puzzles": {"no_such_puzzle": {}}}
    bad_status = {**good, "puzzles": {PID: {"status": "hacked"}}}
    bad_source = {**good, "puzzles": {PID: {"source": ["not", "text"]}}}
    extra_key = {**good, "puzzles": {PID: {"eval": "os.system('x')"}}}
    nan_time = json.dumps({**good, "puzzles": {PID: {"best_ns": 1}}}).replace("1}", "NaN}")
    return {
        "huge": (b" " * (puzzle_progress.max_bytes(len(ids)) + 1),
                 "ui.puzzles.progress.allowed_size"),
        "not_json": (b"{not json", "ui.puzzles.progress.allowed_json"),
        "not_utf8": (b"\xff\xfe\x00", "ui.puzzles.progress.allowed_json"),
        "nested": (b"[" * 100_000 + b"]" * 100_000, "ui.puzzles.progress.allowed_json"),
        "other_format": (json.dumps({"format": "x", "puzzles": {}}).encode(),
                         "ui.puzzles.progress.allowed_format"),
        "unknown_id": (json.dumps(unknown).encode(), "ui.puzzles.progress.allowed_ids"),
        "bad_status": (json.dumps(bad_status).encode(), "ui.puzzles.progress.allowed_status"),
        "bad_source": (json.dumps(bad_source).encode(), "ui.puzzles.progress.allowed_source"),
        "extra_key": (json.dumps(extra_key).encode(), "ui.puzzles.progress.allowed_entry"),
        "nan_time": (nan_time.encode(), "ui.puzzles.progress.allowed_number"),
    }


def said(msg_id: str, lang: str, text: str) -> bool:
    """Whether ``text`` holds the message ``msg_id`` in ``lang``, whatever its values."""
    parts = re.split(r"\{\w+\}", catalogue(lang)[msg_id])
    return re.search(".*?".join(map(re.escape, parts)), text, re.S) is not None


@pytest.mark.parametrize("name", list(_hostile()))
def test_parse_refuses_hostile_files(name):
    data, msg_id = _hostile()[name]
    with pytest.raises(InputError) as refused:
        puzzle_progress.parse(data, "p.json", tuple(puzzles()), "zh")
    assert said(msg_id, "zh", refused.value.allowed)


@pytest.mark.parametrize("name", ("huge", "not_json", "unknown_id", "bad_status"))
def test_a_hostile_upload_is_refused_on_the_page(name):
    data, msg_id = _hostile()[name]
    at = page()
    at.file_uploader(key=page_module.UPLOAD_KEY).set_value(("p.json", data, "application/json"))
    run(at)
    refusal = texts(at.error)
    assert "p.json" in refusal and said(msg_id, "en", refusal)
    assert at.session_state[page_module.PROGRESS] == {}

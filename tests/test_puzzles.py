"""The Ascend C puzzles (kernels/ascendc/puzzles/) and their grader (explorer/core/puzzles.py).

For every puzzle folder present (discovered, so that a new folder is covered at once), in
the sandbox as a student's submission runs: the reference passes, ``wrong.py`` is "wrong",
``slow.py`` is "slow" with its time above the goal, ``starter.py`` does not pass; both
statements exist and the Chinese one is Chinese. Then the grader's own parts: the format
checks, the comparison, the packed Program, and the verdicts of code that fails in other
ways (a DSL error, a missing kernel, a run-time refusal inside a kernel).

Each sandbox run costs a child process (about a second); the cases are small.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import replace

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core import puzzles as grader
from explorer.core.i18n import LANGUAGES, has, t
from hardware_presets.errors import InputError
from kernels.ascendc import compile_student, launch
from kernels.ascendc.puzzles import (
    ROOT,
    Case,
    PuzzleFormatError,
    discover,
    folders,
    get,
    load_puzzle,
    puzzles,
    tolerance,
)
from kernels.ascendc.puzzles.grading import compare, pack_program, unpack_program
from kernels.common.formats import FORMATS

IDS = list(folders())
CJK = re.compile(r"[\u4e00-\u9fff]")
#: one fixed draw per run of the tests (the cases are random shapes; a seed repeats them)
SEED = 11


def test_the_puzzles_are_found_in_learning_order():
    found = puzzles()
    assert list(found) == IDS, "every folder is a valid puzzle, in folder order"
    orders = [p.order for p in found.values()]
    assert orders == sorted(orders) and orders[0] == 1
    assert orders == list(range(1, len(orders) + 1)), "no gap in the learning order"
    for puzzle in found.values():
        assert puzzle.folder.name == f"p{puzzle.order:02d}_{puzzle.id}"
        assert puzzle.timing_goal >= 1.0


@pytest.mark.parametrize("puzzle_id", IDS)
def test_statements_titles_and_hints_in_both_languages(puzzle_id):
    puzzle = get(puzzle_id)
    assert set(puzzle.statements) == set(puzzle.titles) == set(puzzle.hints) == set(LANGUAGES)
    for lang in LANGUAGES:
        assert puzzle.statement(lang).strip() and puzzle.title(lang).strip()
        assert puzzle.hint_list(lang)
    zh = puzzle.statement("zh") + puzzle.title("zh") + "".join(puzzle.hint_list("zh"))
    assert len(CJK.findall(zh)) > 50, "the Chinese statement is written in Chinese"
    assert puzzle.statement("zh") != puzzle.statement("en")
    assert puzzle.entry in puzzle.statement("en") and puzzle.entry in puzzle.statement("zh")
    assert puzzle.entry in puzzle.starter


@pytest.mark.parametrize("puzzle_id", IDS)
def test_the_reference_passes(puzzle_id):
    verdict = grader.check(puzzle_id, get(puzzle_id).source("reference"), seed=SEED)
    assert verdict.status == "passed", [t(m, **v) for m, v in verdict.messages()]
    assert verdict.passed and verdict.ratio == pytest.approx(1.0)
    assert verdict.cases and all(c.passed for c in verdict.cases)
    assert verdict.student.makespan_ns == pytest.approx(verdict.reference.makespan_ns)
    assert verdict.reference is grader.reference_timing(puzzle_id), "computed once"
    assert verdict.message[0] == "puzzle.verdict.passed"


@pytest.mark.parametrize("puzzle_id", IDS)
def test_the_wrong_solution_is_wrong(puzzle_id):
    verdict = grader.check(puzzle_id, get(puzzle_id).source("wrong"), seed=SEED)
    assert verdict.status == "wrong", [t(m, **v) for m, v in verdict.messages()]
    failed = verdict.cases[-1]
    assert not failed.passed and failed.mismatches > 0 and failed.index is not None
    msg_id, values = verdict.message
    assert msg_id == "puzzle.verdict.wrong" and values["case"] == failed.name
    assert verdict.student is None, "a wrong kernel is not timed"


@pytest.mark.parametrize("puzzle_id", IDS)
def test_the_slow_solution_is_right_but_slow(puzzle_id):
    puzzle = get(puzzle_id)
    verdict = grader.check(puzzle_id, puzzle.source("slow"), seed=SEED)
    assert verdict.status == "slow", [t(m, **v) for m, v in verdict.messages()]
    assert all(c.passed for c in verdict.cases)
    assert verdict.ratio > puzzle.timing_goal
    assert verdict.student.makespan_ns > puzzle.timing_goal * verdict.reference.makespan_ns
    ids = [m for m, _ in verdict.reasons]
    assert ids[-1] == "puzzle.slow.pipes", "both runs' pipe ratios are always shown"
    assert len(ids) >= 2, "at least one reason besides the ratios"


@pytest.mark.parametrize("puzzle_id", IDS)
def test_the_starter_does_not_pass(puzzle_id):
    verdict = grader.check(puzzle_id, get(puzzle_id).starter, seed=SEED)
    assert verdict.status in ("wrong", "slow", "error"), verdict.status


def test_every_verdict_message_is_in_both_catalogues():
    for status in grader.STATUSES:
        assert has(f"puzzle.status.{status}")
    for lang in LANGUAGES:
        assert "{student_us}" not in t("puzzle.verdict.slow", lang, student_us=1, ratio=2,
                                       reference_us=0.5, goal=1.2)


# ---- the grader's parts, without a sandbox ---------------------------------------------
def test_tolerance_comes_from_the_format():
    assert tolerance("fp16", 0) == (0.0, 0.0)
    assert tolerance("fp16") == (FORMATS["fp16"].unit_roundoff, FORMATS["fp16"].subnormal_error)
    assert tolerance("fp32", 3)[0] == 3 * 2.0 ** -24


def make_case(expected: np.ndarray) -> Case:
    n = expected.size
    return Case("c", {"z": np.zeros(n, np.float16)}, {"n": n}, 1, ("z",), {"z": expected},
                *tolerance("fp16"))


def test_compare_names_the_worst_and_the_first_wrong_element():
    want = np.array([1.0, 2.0, 3.0, 4.0])
    got = np.array([1.0, 2.5, 3.0, 0.0], np.float16)
    found = compare(make_case(want), {"z": got})
    assert not found["passed"] and found["mismatches"] == 2
    assert found["index"] == 3 and found["got"] == 0.0 and found["expected"] == 4.0
    assert found["first"] == {"output": "z", "index": 1, "got": 2.5, "expected": 2.0}
    assert found["sizes"] == {"z": 4} and found["tiling"] == {"n": 4}
    # one rounding to fp16 is within the tolerance; NaN never is
    exact = np.array([1.0 + 2.0 ** -12, 7.0])
    assert compare(make_case(exact), {"z": exact.astype(np.float16)})["passed"]
    nan = compare(make_case(exact), {"z": np.array([np.nan, 7.0], np.float16)})
    assert not nan["passed"] and nan["got"] == "nan"


def adds_program():
    source = ("def k(x, y, tiling):\n"
              "    xGm, yGm = GlobalTensor(half), GlobalTensor(half)\n"
              "    xGm.SetGlobalBuffer(x)\n    yGm.SetGlobalBuffer(y)\n"
              "    pipe = TPipe()\n    q = TQue(TPosition.VECIN, 1)\n"
              "    pipe.InitBuffer(q, 1, 64)\n    t = q.AllocTensor(half)\n"
              "    DataCopy(t, xGm, 32)\n    q.EnQue(t)\n    t = q.DeQue(half)\n"
              "    DataCopy(yGm, t, 32)\n    q.FreeTensor(t)\n")
    x = np.ones(32, np.float16)
    return launch(compile_student(source)["k"], hp.load("910B2"), 2,
                  {"x": x, "y": np.zeros_like(x)}, {})


def test_a_packed_program_comes_back_the_same():
    run = adds_program()
    chip = hp.load("910B2")
    program, lines, blocks = unpack_program(pack_program(run.program, run.lines, run.blocks),
                                            chip)
    for name, column in run.program.cols.items():
        assert np.array_equal(program.cols[name], column), name
    for name in ("dep_ptr", "dep_idx", "region_bytes", "barrier_size"):
        assert np.array_equal(getattr(program, name), getattr(run.program, name)), name
    assert program.op_names == run.program.op_names
    assert np.array_equal(lines, run.lines) and np.array_equal(blocks, run.blocks)
    assert lines.min() > 0, "every instruction knows the student's line"


@pytest.mark.parametrize("tamper", ["core", "dep", "size", "garbage"])
def test_a_forged_program_is_refused(tamper):
    run = adds_program()
    chip = hp.load("910B2")
    data = pack_program(run.program, run.lines, run.blocks)
    if tamper == "core":
        cols = dict(run.program.cols, core=np.full(len(run.program), 999, np.int16))
        data = pack_program(replace(run.program, cols=cols), run.lines, run.blocks)
    elif tamper == "dep":
        bad = np.full_like(run.program.dep_idx, 10_000) if len(run.program.dep_idx) else \
            np.array([10_000], np.int32)
        ptr = run.program.dep_ptr.copy()
        ptr[-1] = len(bad)
        data = pack_program(replace(run.program, dep_idx=bad, dep_ptr=ptr), run.lines,
                            run.blocks)
    elif tamper == "size":
        data["n"] = data["n"] + 1
    else:
        data["cols"]["pipe"] = "not base64 at all!"
    with pytest.raises(ValueError):
        unpack_program(data, chip)


def test_a_malformed_folder_is_a_clear_error(tmp_path):
    source = ROOT / "p01_copy"
    folder = tmp_path / "p01_copy"
    shutil.copytree(source, folder)
    assert load_puzzle(folder).id == "copy"
    toml = (folder / "puzzle.toml").read_text(encoding="utf-8")
    (folder / "puzzle.toml").write_text(toml.replace("timing_goal = 1.5", "timing_goal = 0.5"),
                                        encoding="utf-8")
    with pytest.raises(PuzzleFormatError, match="p01_copy/puzzle.toml: timing_goal"):
        load_puzzle(folder)
    (folder / "puzzle.toml").write_text(toml, encoding="utf-8")
    (folder / "slow.py").unlink()
    with pytest.raises(PuzzleFormatError, match="slow.py: is missing"):
        load_puzzle(folder)
    shutil.copytree(source, tmp_path / "p02_copy")
    shutil.copy(source / "slow.py", folder / "slow.py")
    with pytest.raises(PuzzleFormatError, match="'copy' used by more than one folder"):
        discover(tmp_path)
    shutil.rmtree(tmp_path / "p02_copy")
    shutil.copytree(source, tmp_path / "p02_other")
    with pytest.raises(PuzzleFormatError, match="id = 'copy' must be the folder's slug"):
        discover(tmp_path)


def test_an_unknown_puzzle_or_bad_input_is_refused():
    with pytest.raises(InputError, match="copy"):
        grader.check("no_such_puzzle", "")
    with pytest.raises(InputError):
        grader.check("copy", b"def copy_kernel(): pass")
    with pytest.raises(InputError):
        grader.check("copy", "", seed=-1)


# ---- other ways to fail, in the sandbox ------------------------------------------------
def test_a_dsl_error_names_its_line_case_and_block():
    source = get("copy").source("reference").replace("DataCopy(xLocal, xGm, length)",
                                                     "DataCopy(xLocal, xGm, length - 1)")
    verdict = grader.check("copy", source, seed=SEED)
    assert verdict.status == "error"
    assert verdict.message[0] == "ascendc.error.copy_unaligned"
    line = source.splitlines().index("    DataCopy(xLocal, xGm, length - 1)") + 1
    assert verdict.line == line and verdict.message[1]["line"] == line
    assert verdict.reasons[0][0] == "puzzle.error.where"
    assert verdict.reasons[0][1]["block"] == 0


def test_a_kernel_over_the_memory_limit_is_a_limit():
    verdict = grader.check("copy", "def copy_kernel(x, y, tiling):\n    n = [0] * 10**9\n",
                           seed=SEED)
    assert verdict.status == "limit"
    assert verdict.message == ("sandbox.limit.memory", grader.PUZZLE_LIMITS.as_dict())


def test_a_missing_kernel_and_a_refusal_inside_a_kernel():
    verdict = grader.check("copy", "def another_kernel(x, y, tiling):\n    pass\n", seed=SEED)
    assert verdict.status == "error"
    assert verdict.message == ("puzzle.error.no_entry", {"line": None, "entry": "copy_kernel"})
    # the sandbox's run-time guard refuses reading a function's attribute: its own message
    # comes back through the DSL's launch, not a generic Python exception
    source = "def helper():\n    pass\n\ndef copy_kernel(x, y, tiling):\n    helper.name\n"
    verdict = grader.check("copy", source, seed=SEED)
    assert verdict.status == "error"
    assert verdict.message[0] == "sandbox.runtime.read" and verdict.line == 5

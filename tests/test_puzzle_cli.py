"""``python -m explorer puzzle list | show | check`` (explorer/cli_puzzle.py): the list in
learning order in both languages, a puzzle's statement and starter, and the exit codes of
``check``: 0 passed, 1 wrong or too slow, 2 refused by the sandbox or bad input."""
from __future__ import annotations

import json

import pytest

from explorer import cli
from explorer.core.i18n import t
from kernels.ascendc.puzzles import get, puzzles

PUZZLE = "copy"  # the quickest to grade


def solution(tmp_path, kind: str) -> str:
    path = tmp_path / f"{kind}.py"
    path.write_text(get(PUZZLE).source(kind), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_list_shows_every_puzzle_in_order(lang, capsys):
    assert cli.main(["puzzle", "list", "--lang", lang]) == cli.EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[0] == t("puzzle.cli.col_id", lang)
    rows = lines[1:]
    assert len(rows) == len(puzzles())
    for row, puzzle in zip(rows, puzzles().values()):
        assert row.split()[:2] == [puzzle.id, str(puzzle.order)]
        assert puzzle.title(lang) in row
        assert t("puzzle.cli.goal", lang, goal=puzzle.timing_goal) in row


def test_show_prints_the_statement_and_the_starter(capsys):
    assert cli.main(["puzzle", "show", PUZZLE, "--lang", "zh"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    puzzle = get(PUZZLE)
    assert puzzle.statement("zh").strip() in out
    assert puzzle.starter.strip() in out
    assert t("puzzle.cli.hints", "zh", count=len(puzzle.hint_list("zh"))) in out
    assert "reference" not in out.lower() or "参考" in out
    assert get(PUZZLE).source("reference").strip() not in out


def test_check_passes_the_reference(tmp_path, capsys):
    assert cli.main(["puzzle", "check", PUZZLE, solution(tmp_path, "reference"),
                     "--seed", "3"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith(t("puzzle.cli.verdict", puzzle=PUZZLE,
                            status=t("puzzle.status.passed")))
    assert t("puzzle.cli.seed", seed=3) in out


def test_check_fails_the_wrong_solution_with_its_reason(tmp_path, capsys):
    assert cli.main(["puzzle", "check", PUZZLE, solution(tmp_path, "wrong"), "--lang", "zh"]
                    ) == 1
    out = capsys.readouterr().out
    assert t("puzzle.status.wrong", "zh") in out.splitlines()[0]
    assert "✗" in out


def test_check_fails_the_slow_solution_with_both_times(tmp_path, capsys):
    assert cli.main(["puzzle", "check", PUZZLE, solution(tmp_path, "slow"), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "slow" and not doc["passed"]
    assert doc["ratio"] > doc["timing_goal"] == get(PUZZLE).timing_goal
    assert doc["student"]["makespan_ns"] > doc["reference"]["makespan_ns"]
    assert doc["messages"][0]["id"] == "puzzle.verdict.slow"
    assert doc["messages"][-1]["id"] == "puzzle.slow.pipes"


def test_check_refuses_forbidden_code_and_bad_input(tmp_path, capsys):
    forbidden = tmp_path / "sneaky.py"
    forbidden.write_text("import os\n", encoding="utf-8")
    assert cli.main(["puzzle", "check", PUZZLE, str(forbidden)]) == cli.EXIT_INPUT
    out = capsys.readouterr().out
    assert t("puzzle.status.refused") in out and "os" in out
    # an unknown puzzle, a missing file, a file that is not UTF-8: one line, exit code 2
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\xff\xfe\x00def")
    for argv in (["no_such_puzzle", str(forbidden)], [PUZZLE, str(tmp_path / "none.py")],
                 [PUZZLE, str(binary)]):
        assert cli.main(["puzzle", "check", *argv]) == cli.EXIT_INPUT, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert cli.main(["puzzle", "show", "no_such_puzzle"]) == cli.EXIT_INPUT

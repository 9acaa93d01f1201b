"""Command line ``python -m explorer puzzle list | show ID | check ID FILE.py``: the Ascend C
puzzles (``kernels.ascendc.puzzles``) and their grader (``explorer.core.puzzles``).

* ``puzzle list [--lang zh]``: id, order, title and timing goal of every puzzle, in
  learning order;
* ``puzzle show ID [--lang zh]``: the statement, the starter code and how many hints;
* ``puzzle check ID FILE.py [--seed N] [--json] [--lang zh]``: grade a solution in the
  sandbox and print the verdict with its reasons, the cases and both timings.

Exit codes: 0 the solution passed (right values, within the timing goal); 1 it is wrong,
too slow, raised an error or hit a limit (the reason is printed); 2 the sandbox refused
the code, or bad input (an unknown puzzle id, an unreadable file, a bad seed). An
instructor grades a folder with
``for f in subs/*.py; do python -m explorer puzzle check ID "$f"; done``.

``explorer.cli`` registers the command with ``add_parser``; this module refers to it as a
module (``cli.EXIT_OK``, ``cli.refusing``) so either may be imported first.
"""
from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable

from hardware_presets import documents
from kernels.ascendc.puzzles import PuzzleFormatError, get, puzzles

from . import cli
from .core.i18n import DEFAULT_LANGUAGE, LANGUAGES, t
from .core.puzzles import Timing, Verdict, check, pipes_text
from .core.sandbox import MAX_SOURCE_CHARS

#: exit code of a solution that is wrong, too slow, raised or hit a limit
EXIT_FAILED = 1
#: a source file larger than this many bytes cannot be within the sandbox's character cap
MAX_SOURCE_BYTES = 4 * MAX_SOURCE_CHARS
#: the message id of each status's label
STATUS_IDS = {"passed": "puzzle.status.passed", "wrong": "puzzle.status.wrong",
              "slow": "puzzle.status.slow", "refused": "puzzle.status.refused",
              "error": "puzzle.status.error", "limit": "puzzle.status.limit"}


def well_formed(command: Callable[[argparse.Namespace], int]
                ) -> Callable[[argparse.Namespace], int]:
    """The command with a malformed puzzle folder (a bug of the puzzle, not of the
    solution) said in one line on stderr, exit code 2, rather than a traceback."""
    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except PuzzleFormatError as exc:
            cli.say(exc)
            return cli.EXIT_INPUT
    return run


def exit_code(verdict: Verdict) -> int:
    """0 passed, 2 refused by the sandbox, 1 anything else the solution did."""
    if verdict.passed:
        return cli.EXIT_OK
    return cli.EXIT_INPUT if verdict.status == "refused" else EXIT_FAILED


@well_formed
@cli.refusing
def cmd_list(args: argparse.Namespace) -> int:
    lang = args.lang
    rows = [(p.id, str(p.order), p.title(lang), t("puzzle.cli.goal", lang, goal=p.timing_goal))
            for p in puzzles().values()]
    head = tuple(t(i, lang) for i in ("puzzle.cli.col_id", "puzzle.cli.col_order",
                                      "puzzle.cli.col_title", "puzzle.cli.col_goal"))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
    for row in [head, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[3])
    return cli.EXIT_OK


@well_formed
@cli.refusing
def cmd_show(args: argparse.Namespace) -> int:
    lang, puzzle = args.lang, get(args.id)
    print(f"# {puzzle.order:02d} {puzzle.title(lang)} ({puzzle.id})\n")
    print(puzzle.statement(lang).rstrip())
    print(f"\n## {t('puzzle.cli.starter', lang)}\n\n```python\n{puzzle.starter.rstrip()}\n```\n")
    print(t("puzzle.cli.hints", lang, count=len(puzzle.hint_list(lang))))
    return cli.EXIT_OK


def _timing_line(who: str, timing: Timing, lang: str) -> str:
    return t("puzzle.cli.timing", lang, who=t(who, lang), time=f"{timing.makespan_us:.4g}",
             instructions=timing.instructions, cores=timing.cores, pipes=pipes_text(timing))


def text_lines(verdict: Verdict, lang: str) -> list[str]:
    """The verdict as the terminal shows it: status, message, reasons, cases, timings."""
    lines = [t("puzzle.cli.verdict", lang, puzzle=verdict.puzzle_id,
               status=t(STATUS_IDS[verdict.status], lang))]
    lines += [f"  {t(msg_id, lang, **values)}" for msg_id, values in verdict.messages()]
    for case in verdict.cases:
        if case.passed:
            lines.append("  ✓ " + t("puzzle.cli.case_ok", lang, name=case.name,
                                    elements=case.elements, block_dim=case.block_dim,
                                    error=f"{case.max_abs_error:.3g}"))
        else:
            lines.append("  ✗ " + t("puzzle.cli.case_wrong", lang, name=case.name,
                                    mismatches=case.mismatches, elements=case.elements,
                                    block_dim=case.block_dim))
    for who, timing in (("puzzle.cli.yours", verdict.student),
                        ("puzzle.cli.reference", verdict.reference)):
        if timing is not None:
            lines.append("  " + _timing_line(who, timing, lang))
    for msg_id, values in verdict.notes:
        lines.append("  " + t("puzzle.cli.note", lang, line=values.get("line"),
                              text=t(msg_id, lang, **values)))
    if verdict.cases:
        lines.append("  " + t("puzzle.cli.seed", lang, seed=verdict.seed))
    if verdict.output:
        lines += ["  " + t("puzzle.cli.printed", lang),
                  *("    " + line for line in verdict.output.splitlines()[:40])]
    return lines


def as_json(verdict: Verdict, lang: str) -> str:
    """The verdict as JSON: status, messages (id, values, text), cases and timings."""
    def timing(value: Timing | None) -> dict | None:
        if value is None:
            return None
        return {"makespan_ns": value.makespan_ns, "ratios": value.ratios,
                "cores": value.cores, "instructions": value.instructions,
                "overlap": value.overlap}

    return json.dumps({
        "puzzle": verdict.puzzle_id, "status": verdict.status, "passed": verdict.passed,
        "messages": [{"id": msg_id, "values": values, "text": t(msg_id, lang, **values)}
                     for msg_id, values in verdict.messages()],
        "line": verdict.line, "cases": [vars(c) for c in verdict.cases],
        "student": timing(verdict.student), "reference": timing(verdict.reference),
        "ratio": verdict.ratio, "timing_goal": verdict.timing_goal, "seed": verdict.seed,
        "notes": [{"id": m, "values": v} for m, v in verdict.notes], "output": verdict.output,
    }, indent=2, ensure_ascii=False, default=str)


@well_formed
@cli.refusing
def cmd_check(args: argparse.Namespace) -> int:
    puzzle = get(args.id)  # an unknown id is refused before the file is read
    source = documents.read_file(args.file, "FILE", "Python source file (UTF-8)",
                                 MAX_SOURCE_BYTES)
    verdict = check(puzzle.id, source, seed=args.seed)
    print(as_json(verdict, args.lang) if args.json else "\n".join(text_lines(verdict,
                                                                             args.lang)))
    return exit_code(verdict)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``puzzle list | show | check`` on the CLI's subparsers."""
    lang = DEFAULT_LANGUAGE
    puzzle = subparsers.add_parser("puzzle", help=t("puzzle.cli.help", lang))
    sub = puzzle.add_subparsers(dest="puzzle_command", required=True)
    listing = sub.add_parser("list", help=t("puzzle.cli.list_help", lang))
    listing.set_defaults(func=cmd_list)
    show = sub.add_parser("show", help=t("puzzle.cli.show_help", lang))
    show.add_argument("id", help=t("puzzle.cli.id_help", lang))
    show.set_defaults(func=cmd_show)
    grade = sub.add_parser("check", help=t("puzzle.cli.check_help", lang))
    grade.add_argument("id", help=t("puzzle.cli.id_help", lang))
    grade.add_argument("file", metavar="FILE.py", help=t("puzzle.cli.file_help", lang))
    grade.add_argument("--seed", type=int, help=t("puzzle.cli.seed_help", lang))
    grade.add_argument("--json", action="store_true", help=t("puzzle.cli.json_help", lang))
    grade.set_defaults(func=cmd_check)
    for command in (listing, show, grade):
        command.add_argument("--lang", choices=LANGUAGES, default=DEFAULT_LANGUAGE,
                             help=t("puzzle.cli.lang_help", lang))
    return puzzle

"""Grading a student's Ascend C puzzle solution: ``check(puzzle_id, source) -> Verdict``.

The puzzles themselves (folders, statements, cases) are ``kernels.ascendc.puzzles``; this
module runs a solution in the sandbox (``explorer.core.sandbox``) with the puzzle scope
and the grader ``kernels.ascendc.puzzles.grading:grade_in_child``, rebuilds the timing
case's Program the child sent back, times it on the emulator, times the reference
solution on the same case (once per process, in this process: it is trusted code), and
decides.

Statuses (``STATUSES``), in the order they are decided:

* ``refused``: the sandbox's checker refused the code before it ran (line + reason);
* ``limit``: a limit stopped the run (CPU, wall clock, memory, steps ..., or the DSL's
  instruction cap / time limit);
* ``error``: the code raised (a DSL error such as an unaligned DataCopy, or a Python
  exception), with its line, block and case; also a missing kernel function;
* ``wrong``: a value check failed: which case, its shape, the worst element;
* ``slow``: every value right, but the emulated time is above ``timing_goal`` x the
  reference's; the reasons compare the two runs (cores used, instruction count, overlap
  of copies and compute, per-pipe busy ratios);
* ``passed``: every value right and the time within the goal.

Everything a page or the CLI shows is a message id with values (``Verdict.message``,
``Verdict.reasons``, ``Verdict.notes``), translated by the caller with
``explorer.core.i18n.t``. Bad input (an unknown puzzle id, a source that is not text, a
bad seed) is an ``InputError``.
"""
from __future__ import annotations

import functools
import secrets
from dataclasses import dataclass

import numpy as np
import pandas as pd

import hardware_presets as hp
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.ascendc import AscendCError, compile_student
from kernels.ascendc.puzzles import Puzzle, get, puzzles
from kernels.ascendc.puzzles.grading import grade_in_child, unpack_program
from kernels.common.program import LANE_NAMES, Program

from . import sandbox
from .emulator.engine import DEADLOCK_ID, DeadlockError
from .emulator.engine import run as emulate
from .i18n import has
from .metrics import compute_metrics
from .tables import per_core_table, timeline_table

#: what a verdict can be (``explorer.ui.puzzle_progress`` keeps the same tuple)
STATUSES = ("passed", "wrong", "slow", "refused", "error", "limit")
#: the grader the sandbox child calls after the student's module ran
GRADER = "kernels.ascendc.puzzles.grading:grade_in_child"
#: what a puzzle's code sees: the DSL's names (preloaded, as ``from ascendc import *``)
#: and ``math``; never ``launch`` or ``compile_student``
PUZZLE_SCOPE = sandbox.Scope(modules={"ascendc": "kernels.ascendc:DSL_NAMES", "math": "math"},
                             preload=("ascendc",))
#: a grading run launches the kernel a few times (cases + timing case) on up to all the
#: chip's vector cores and sends a Program back: more CPU, memory and result room than the
#: sandbox's defaults
PUZZLE_LIMITS = sandbox.Limits(cpu_seconds=30, wall_seconds=60.0, memory_mb=2048,
                               result_bytes=4_000_000)
#: the largest seed ``check`` takes
MAX_SEED = 2 ** 31 - 1
#: slow-run diagnosis: the student issues more than this many times the reference's
#: instructions (many small copies), or overlaps copies and compute this much less
MANY_INSTRUCTIONS = 2.0
OVERLAP_GAP = 0.2


@dataclass(frozen=True, eq=False)
class Timing:
    """One timed run of a puzzle's timing case (the student's or the reference's).

    * ``makespan_ns``: the emulated time of the whole launch;
    * ``ratios``: per trace lane (``kernels.common.program.LANE_NAMES``: "MTE2", "VECTOR",
      "MTE3" ...), its busy time / makespan, averaged over the cores that used it (the
      profiler's aiv_vec_ratio, mte2_ratio ...); lanes nobody used are left out;
    * ``cores``: cores that did work; ``instructions``: instructions issued;
    * ``overlap``: the share of the shorter of compute and transfer time during which both
      ran (``metrics["overlap_ratio"]``: near 0 when copies and compute never overlap);
    * ``timeline``: ``explorer.core.tables.timeline_table`` (one row per instruction;
      what ``explorer.plots.timeline.timeline_figure(timeline, makespan_ns, lang)``
      draws), plus ``line`` (the student's source line, -1 unknown) and ``block``
      (GetBlockIdx) per instruction;
    * ``per_core``: ``explorer.core.tables.per_core_table``; ``metrics``: every metric of
      ``explorer.core.metrics.compute_metrics``;
    * ``chip``, ``program``: what was timed.

    Shared between verdicts (the reference's is cached): treat it as read-only."""

    makespan_ns: float
    ratios: dict[str, float]
    cores: int
    instructions: int
    overlap: float
    timeline: pd.DataFrame
    per_core: pd.DataFrame
    metrics: dict
    chip: Chip
    program: Program

    @property
    def makespan_us(self) -> float:
        return self.makespan_ns / 1e3


@dataclass(frozen=True)
class CaseResult:
    """One value case as the grader ran it: its shape and the comparison with float64.

    ``sizes``: elements of each GM array by the kernel's parameter names; ``tiling``: the
    tiling struct's fields; ``index``, ``got``, ``expected``, ``allowed``: the worst
    element of ``output`` (its error is the largest relative to the allowed error;
    ``got`` may be "nan" or "inf" as text); ``first_*``: the first wrong element in
    order (None when the case passed); ``mismatches`` of ``elements`` were outside the
    tolerance."""

    name: str
    passed: bool
    block_dim: int
    tiling: dict
    sizes: dict
    elements: int
    mismatches: int
    max_abs_error: float
    max_rel_error: float
    output: str = ""
    index: int | None = None
    got: float | str | None = None
    expected: float | str | None = None
    allowed: float | str | None = None
    first_output: str = ""
    first_index: int | None = None
    first_got: float | str | None = None
    first_expected: float | str | None = None


@dataclass(frozen=True, eq=False)
class Verdict:
    """What ``check`` decided about one source.

    * ``status``: one of ``STATUSES``; ``passed`` is True only for "passed";
    * ``message``: (message id, values), the one-line verdict (for "refused", "error" and
      "limit" the sandbox's or the DSL's own message, e.g. ``ascendc.error.copy_unaligned``);
      ``reasons``: further (message id, values) that explain it (where an error happened,
      why a run is slow with both runs' pipe ratios, every further refusal);
      ``messages()`` is both, in order;
    * ``line``: the student's source line the verdict points at (refusal or error), or None;
    * ``cases``: the value cases run (``CaseResult``), up to the first that failed;
    * ``student``, ``reference``: ``Timing`` of the timing case (the student's only when
      every case passed; the reference's whenever the student's is there);
      ``ratio``: student / reference makespan; ``timing_goal``: the puzzle's goal;
    * ``notes``: the DSL's warnings (message id, values with ``line``);
    * ``seed``: the value cases' draw (pass it to ``check`` again to repeat the run);
      ``output``: what the code printed; ``seconds``: the sandbox run's wall time."""

    puzzle_id: str
    status: str
    message: tuple[str, dict]
    reasons: tuple[tuple[str, dict], ...] = ()
    line: int | None = None
    cases: tuple[CaseResult, ...] = ()
    student: Timing | None = None
    reference: Timing | None = None
    ratio: float | None = None
    timing_goal: float = 1.0
    notes: tuple[tuple[str, dict], ...] = ()
    seed: int = 0
    output: str = ""
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def messages(self) -> list[tuple[str, dict]]:
        """The verdict's message, then its reasons."""
        return [self.message, *self.reasons]


def check(puzzle_id: str, source: str, *, seed: int | None = None) -> Verdict:
    """Grade ``source`` (a student's module defining the puzzle's kernel function) on the
    puzzle ``puzzle_id``: run it in a sandbox child on the value cases of ``seed`` (None:
    a fresh random seed, kept in the verdict) and on the timing case, then time it against
    the reference. Blocks for the run (about a second and a half, more while other runs
    hold the sandbox's slots). Raises ``InputError`` for an unknown puzzle id, a source
    that is not text or a bad seed; everything the source does is in the Verdict."""
    puzzle = get(puzzle_id)
    if not isinstance(source, str):
        raise InputError("source", type(source).__name__, "the text of a Python module")
    if seed is None:
        seed = secrets.randbelow(MAX_SEED)
    elif isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise InputError("seed", seed, f"an integer from 0 to {MAX_SEED}")
    outcome = sandbox.run(source, GRADER, {"puzzle": puzzle.id, "seed": seed},
                          PUZZLE_LIMITS, PUZZLE_SCOPE)
    return verdict_of(puzzle, outcome, seed)


def verdict_of(puzzle: Puzzle, outcome: sandbox.Outcome, seed: int) -> Verdict:
    """The verdict of a sandbox outcome of the grader (see ``check``)."""
    base = {"puzzle_id": puzzle.id, "timing_goal": puzzle.timing_goal, "seed": seed,
            "output": outcome.output, "seconds": outcome.seconds}
    if outcome.kind == "refused":
        messages = outcome.messages()
        return Verdict(status="refused", message=messages[0], reasons=tuple(messages[1:]),
                       line=outcome.refusals[0].line or None, **base)
    if outcome.kind == "limit":
        return Verdict(status="limit", message=outcome.message(), **base)
    if outcome.kind == "error":
        line = outcome.error.line if outcome.error is not None else None
        return Verdict(status="error", message=outcome.message(), line=line, **base)
    if outcome.kind != "ok":  # crashed: the server's log has the detail
        return Verdict(status="error", message=outcome.message(), **base)
    try:
        return _graded(puzzle, outcome.value, base)
    except (ValueError, TypeError, KeyError) as exc:  # an answer the grader never writes
        return Verdict(status="error", message=("sandbox.outcome.crashed",
                                                {"reason": str(exc)[:80]}), **base)


def _graded(puzzle: Puzzle, value: object, base: dict) -> Verdict:
    if not isinstance(value, dict):
        raise ValueError("the grader's answer is not a dict")
    cases = tuple(_case(c) for c in value.get("cases") or [])
    notes = tuple(_note(n) for n in value.get("notes") or [] if isinstance(n, dict))
    base = {**base, "cases": cases, "notes": tuple(n for n in notes if n is not None)}
    error = value.get("error")
    if error is not None:
        return _error_verdict(error, base)
    failed = next((c for c in cases if not c.passed), None)
    if failed is not None:
        return Verdict(status="wrong", message=_wrong_message(failed),
                       reasons=_wrong_reasons(failed, cases), **base)
    chip = hp.load(puzzle.preset)
    program, lines, blocks = unpack_program(value.get("timing"), chip)
    try:
        student = timing_of(program, lines, blocks, chip)
    except DeadlockError as exc:  # the DSL refuses what deadlocks; kept as a verdict
        return Verdict(status="error", message=(DEADLOCK_ID, exc.values), **base)
    reference = reference_timing(puzzle.id)
    ratio = student.makespan_ns / reference.makespan_ns if reference.makespan_ns > 0 else 1.0
    values = {"student_us": _us(student), "reference_us": _us(reference),
              "ratio": round(ratio, 2), "goal": puzzle.timing_goal}
    timed = {**base, "student": student, "reference": reference, "ratio": ratio}
    if ratio <= puzzle.timing_goal:
        return Verdict(status="passed", message=("puzzle.verdict.passed", values), **timed)
    return Verdict(status="slow", message=("puzzle.verdict.slow", values),
                   reasons=slow_reasons(student, reference), **timed)


def _error_verdict(error: object, base: dict) -> Verdict:
    if not isinstance(error, dict):
        raise ValueError("the grader's error is not a dict")
    msg_id = str(error.get("msg_id") or "")
    values = dict(error.get("values") or {})
    line = error.get("line") if isinstance(error.get("line"), int) else None
    message = (msg_id, {"line": line, **values}) if has(msg_id) else \
        ("sandbox.outcome.crashed", {"reason": msg_id[:80]})
    case, block = str(error.get("case") or ""), error.get("block")
    block = block if isinstance(block, int) else "-"
    reasons = ()
    if case:
        reasons = ((("puzzle.error.where", {"case": case, "line": line, "block": block})
                    if line is not None else
                    ("puzzle.error.where_noline", {"case": case, "block": block})),)
    status = "limit" if error.get("limit") is True else "error"
    return Verdict(status=status, message=message, reasons=reasons, line=line, **base)


def _case(data: object) -> CaseResult:
    if not isinstance(data, dict):
        raise ValueError("a case result is not a dict")

    def number(value: object) -> float | str | None:
        return value if value is None or isinstance(value, (int, float, str)) else str(value)

    first = data.get("first") if isinstance(data.get("first"), dict) else {}

    return CaseResult(
        name=str(data["name"])[:80], passed=data["passed"] is True,
        block_dim=int(data["block_dim"]), tiling=dict(data.get("tiling") or {}),
        sizes={str(k): int(v) for k, v in dict(data.get("sizes") or {}).items()},
        elements=int(data.get("elements") or 0), mismatches=int(data.get("mismatches") or 0),
        max_abs_error=float(data.get("max_abs_error") or 0.0),
        max_rel_error=float(data.get("max_rel_error") or 0.0),
        output=str(data.get("output") or ""),
        index=data["index"] if isinstance(data.get("index"), int) else None,
        got=number(data.get("got")), expected=number(data.get("expected")),
        allowed=number(data.get("allowed")), first_output=str(first.get("output") or ""),
        first_index=first["index"] if isinstance(first.get("index"), int) else None,
        first_got=number(first.get("got")), first_expected=number(first.get("expected")))


def _note(data: dict) -> tuple[str, dict] | None:
    msg_id = str(data.get("msg_id") or "")
    if not has(msg_id):
        return None
    line = data.get("line") if isinstance(data.get("line"), int) else None
    return msg_id, {**dict(data.get("values") or {}), "line": line}


def _sizes_text(case: CaseResult) -> str:
    return ", ".join(f"{name}: {size}" for name, size in case.sizes.items())


def _tiling_text(case: CaseResult) -> str:
    return ", ".join(f"{name} = {value}" for name, value in case.tiling.items()) or "-"


def _value_text(value: float | str | None) -> str:
    """An element's value as the student reads it: 6 significant digits."""
    return f"{value:.6g}" if isinstance(value, (int, float)) else str(value)


def _wrong_message(case: CaseResult) -> tuple[str, dict]:
    return "puzzle.verdict.wrong", {
        "case": case.name, "output": case.output, "index": case.index,
        "got": _value_text(case.got), "expected": _value_text(case.expected),
        "allowed": _value_text(case.allowed), "mismatches": case.mismatches,
        "elements": case.elements}


def _wrong_reasons(case: CaseResult, cases: tuple[CaseResult, ...]) -> tuple:
    reasons = [("puzzle.wrong.shape", {"case": case.name, "block_dim": case.block_dim,
                                       "sizes": _sizes_text(case),
                                       "tiling": _tiling_text(case)})]
    if case.first_index is not None:
        where = {"output": case.first_output, "index": case.first_index}
        reasons.append(("puzzle.wrong.first", {**where, "got": _value_text(case.first_got),
                                               "expected": _value_text(case.first_expected)}))
        if case.first_got == 0 and case.first_expected != 0:
            reasons.append(("puzzle.wrong.untouched", where))
    passed = sum(c.passed for c in cases)
    if passed:
        reasons.append(("puzzle.wrong.earlier_passed", {"passed": passed}))
    return tuple(reasons)


def _us(timing: Timing) -> float:
    return float(f"{timing.makespan_us:.4g}")


def pipes_text(timing: Timing) -> str:
    """The per-pipe busy ratios as one line: "MTE2 62% · VECTOR 21% · MTE3 31%" (lane
    names stay as Ascend writes them in every language)."""
    return " · ".join(f"{lane} {ratio:.0%}" for lane, ratio in timing.ratios.items()) or "-"


def slow_reasons(student: Timing, reference: Timing) -> tuple[tuple[str, dict], ...]:
    """Why the student's run is slower than the reference's, as far as the two timings
    show it: fewer cores, many more instructions, copies and compute that do not overlap;
    always followed by both runs' per-pipe busy ratios."""
    reasons = []
    if student.cores < reference.cores:
        reasons.append(("puzzle.slow.cores", {"student": student.cores,
                                              "reference": reference.cores}))
    if student.instructions > MANY_INSTRUCTIONS * reference.instructions:
        reasons.append(("puzzle.slow.instructions", {"student": student.instructions,
                                                     "reference": reference.instructions}))
    if reference.overlap - student.overlap > OVERLAP_GAP:
        reasons.append(("puzzle.slow.overlap", {"student": f"{student.overlap:.0%}",
                                                "reference": f"{reference.overlap:.0%}"}))
    if not reasons:
        reasons.append(("puzzle.slow.generic", {}))
    reasons.append(("puzzle.slow.pipes", {"student": pipes_text(student),
                                          "reference": pipes_text(reference)}))
    return tuple(reasons)


def timing_of(program: Program, lines: np.ndarray, blocks: np.ndarray, chip: Chip) -> Timing:
    """Time a puzzle's Program on the emulator and tabulate it (see ``Timing``)."""
    schedule = emulate(program, chip)
    timeline = timeline_table(program, schedule, chip)
    timeline["line"] = np.asarray(lines, np.int64)
    timeline["block"] = np.asarray(blocks, np.int64)
    per_core = per_core_table(timeline, chip, schedule.makespan_ns)
    metrics = compute_metrics(timeline, per_core, chip, float(program.flops().sum()))
    ratios = {}
    for lane in LANE_NAMES:
        busy = per_core[f"busy_ns_{lane}"] > 0
        if busy.any():
            ratios[lane] = float(per_core.loc[busy, f"ratio_{lane}"].mean())
    cores = int((per_core["work_ns"] > 0).sum()) if len(per_core) else 0
    return Timing(float(schedule.makespan_ns), ratios, cores, len(program),
                  float(metrics["overlap_ratio"]), timeline, per_core, metrics, chip, program)


@functools.lru_cache(maxsize=64)
def reference_timing(puzzle_id: str) -> Timing:
    """The reference solution's Timing on the puzzle's timing case, computed once per
    process in this process (the reference is trusted code). A reference that fails is a
    bug of the puzzle: a RuntimeError."""
    puzzle = get(puzzle_id)
    try:
        namespace = compile_student(puzzle.source("reference"))
        graded = grade_in_child(namespace, {"puzzle": puzzle.id, "values": False})
    except AscendCError as exc:
        raise RuntimeError(f"puzzle {puzzle.id}: the reference fails: {exc}") from exc
    if graded["error"] is not None or graded["timing"] is None:
        raise RuntimeError(f"puzzle {puzzle.id}: the reference fails: {graded}")
    chip = hp.load(puzzle.preset)
    return timing_of(*unpack_program(graded["timing"], chip), chip)


def known_ids() -> tuple[str, ...]:
    """Every puzzle id in learning order."""
    return tuple(puzzles())


__all__ = ["CaseResult", "GRADER", "PUZZLE_LIMITS", "PUZZLE_SCOPE", "STATUSES", "Timing",
           "Verdict", "check", "known_ids", "pipes_text", "reference_timing", "slow_reasons",
           "timing_of", "verdict_of"]

"""Ascend C puzzles: small kernels a student writes in the DSL, graded in value and in time.

Each puzzle is one folder ``pNN_<slug>/`` next to this file (NN = the learning order):

* ``puzzle.toml``: ``id`` (= the slug), ``order`` (= NN), ``entry`` (the kernel function
  the student defines), ``kernel_type`` ("AIV" or "AIC"), ``preset`` (the chip),
  ``timing_goal`` (the student's emulated time must be at most goal x the reference's),
  and per language (``[en]``, ``[zh]``) a ``title`` and ``hints`` (revealed one by one);
* ``statement.en.md``, ``statement.zh.md``: the statement (Markdown);
* ``starter.py``: where the student starts (runs, but is incomplete or wrong);
* ``reference.py``: the reference solution (never shown on the page);
* ``wrong.py``: a plausible wrong solution (fails a value check);
* ``slow.py``: a correct solution that misses the timing goal;
* ``cases.py``: trusted code (numpy, ``kernels.ascendc``, ``kernels.common`` only) with
  ``cases(seed) -> list[Case]`` (the value checks) and ``timing_case() -> Case`` (a fixed
  shape, checked in value too and timed against the reference's time on it).

The solution files are student code: they use the DSL's names without importing them (the
sandbox's scope preloads them, as ``from ascendc import *`` would).

``puzzles()`` discovers and validates every folder once per process (a malformed folder
is a :class:`PuzzleFormatError` naming the file and the field); ``get(puzzle_id)`` reads
and validates that one folder (an ``InputError`` for an unknown id). Nothing here is
translated: titles, hints and statements are the puzzle's own texts in each language.
"""
from __future__ import annotations

import functools
import importlib.util
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from hardware_presets import list_presets
from hardware_presets.errors import InputError, Phrase
from kernels.common.formats import FORMATS

ROOT = Path(__file__).resolve().parent
#: the languages every puzzle states itself in (the project's LANGUAGES)
LANGUAGES = ("en", "zh")
KERNEL_TYPES = ("AIV", "AIC")
#: the source files of a puzzle folder, by kind
SOURCE_KINDS = ("starter", "reference", "wrong", "slow")
#: files every puzzle folder holds
REQUIRED_FILES = ("puzzle.toml", "cases.py", *(f"statement.{lang}.md" for lang in LANGUAGES),
                  *(f"{kind}.py" for kind in SOURCE_KINDS))
_FOLDER = re.compile(r"p(\d\d)_([a-z][a-z0-9_]*)")
_TOP_KEYS = {"id", "order", "entry", "kernel_type", "preset", "timing_goal", *LANGUAGES}
_LANG_KEYS = {"title", "hints"}
#: the largest timing goal a puzzle may state (a goal of 10x teaches nothing)
MAX_TIMING_GOAL = 5.0


class PuzzleFormatError(ValueError):
    """A puzzle folder that does not follow the format (a bug of the puzzle, not of the
    student): the folder, the file and what is wrong."""

    def __init__(self, folder: Path | str, file: str, problem: str) -> None:
        self.folder, self.file, self.problem = Path(folder).name, file, problem
        super().__init__(f"puzzle {self.folder}/{file}: {problem}")


@dataclass(frozen=True, eq=False)
class Case:
    """One launch of the student's kernel and what it must produce.

    ``args`` are the GM arrays by the kernel's parameter names (inputs, and the outputs
    zero-filled), passed in that order; ``tiling`` is the host's tiling struct (the kernel
    gets it as an object with attributes, ``tiling.tileLength``); ``outputs`` name the
    arrays compared with ``expected`` (float64) element by element:
    ``|got - expected| <= atol + rtol * |expected|`` (see :func:`tolerance`)."""

    name: str
    args: dict[str, np.ndarray]
    tiling: dict
    block_dim: int
    outputs: tuple[str, ...]
    expected: dict[str, np.ndarray]
    rtol: float
    atol: float


def tolerance(fmt: str, roundings: int = 1) -> tuple[float, float]:
    """(rtol, atol) for a result rounded ``roundings`` times to the format ``fmt`` (e.g.
    "fp16"): each rounding errs by at most the unit roundoff relative to the value, or by
    the subnormal step below the normal range (``kernels.common.formats``). 0 roundings
    (a copy) is exact."""
    form = FORMATS[fmt]
    return roundings * form.unit_roundoff, roundings * form.subnormal_error


@dataclass(frozen=True, eq=False)
class Puzzle:
    """One puzzle folder, validated. ``titles``, ``hints`` and ``statements`` are by
    language; ``starter`` is the student's starting source. The reference, wrong and slow
    solutions are read on demand (``source(kind)``): the grader and the tests use them,
    the page never shows them."""

    id: str
    order: int
    folder: Path
    entry: str
    kernel_type: str
    preset: str
    timing_goal: float
    titles: dict[str, str]
    hints: dict[str, tuple[str, ...]]
    statements: dict[str, str]
    starter: str
    _cases_module: list = field(default_factory=list, repr=False)  # loaded once

    def title(self, lang: str) -> str:
        return self.titles.get(lang, self.titles["en"])

    def statement(self, lang: str) -> str:
        return self.statements.get(lang, self.statements["en"])

    def hint_list(self, lang: str) -> tuple[str, ...]:
        return self.hints.get(lang, self.hints["en"])

    def source(self, kind: str) -> str:
        """The source of ``kind`` (starter, reference, wrong, slow)."""
        if kind not in SOURCE_KINDS:
            raise ValueError(f"kind {kind!r}: one of {SOURCE_KINDS}")
        return (self.folder / f"{kind}.py").read_text(encoding="utf-8")

    def _module(self) -> ModuleType:
        if not self._cases_module:
            self._cases_module.append(_load_cases(self.folder))
        return self._cases_module[0]

    def cases(self, seed: int = 0) -> list[Case]:
        """The value checks for ``seed`` (each a Case, validated)."""
        found = self._module().cases(int(seed))
        if not isinstance(found, list) or not found:
            raise PuzzleFormatError(self.folder, "cases.py", "cases(seed) must return a "
                                    "non-empty list of Case")
        for case in found:
            _check_case(self.folder, case)
        return found

    def timing_case(self) -> Case:
        """The fixed case the time is measured on (and checked in value too)."""
        case = self._module().timing_case()
        _check_case(self.folder, case)
        return case


def _load_cases(folder: Path) -> ModuleType:
    """``cases.py`` of a folder as a module (a folder is no package: loaded by path)."""
    path = folder / "cases.py"
    spec = importlib.util.spec_from_file_location(f"{__name__}._cases_{folder.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("cases", "timing_case"):
        if not isinstance(getattr(module, name, None), Callable):
            raise PuzzleFormatError(folder, "cases.py", f"defines no function {name}()")
    return module


def _check_case(folder: Path, case: object) -> None:
    if not isinstance(case, Case):
        raise PuzzleFormatError(folder, "cases.py", f"{case!r:.60} is not a Case")
    where = f"case {case.name!r}"
    if not case.args or not all(isinstance(a, np.ndarray) for a in case.args.values()):
        raise PuzzleFormatError(folder, "cases.py", f"{where}: args must be numpy arrays")
    if not isinstance(case.tiling, dict) or not all(
            isinstance(k, str) and k.isidentifier() for k in case.tiling):
        raise PuzzleFormatError(folder, "cases.py", f"{where}: tiling must be a dict of "
                                "identifier keys")
    if isinstance(case.block_dim, bool) or not isinstance(case.block_dim, int) or \
            case.block_dim < 1:
        raise PuzzleFormatError(folder, "cases.py", f"{where}: block_dim must be an int >= 1")
    for out in case.outputs:
        if out not in case.args or out not in case.expected:
            raise PuzzleFormatError(folder, "cases.py", f"{where}: output {out!r} needs an "
                                    "array in args and in expected")
        if np.asarray(case.expected[out]).size != case.args[out].size:
            raise PuzzleFormatError(folder, "cases.py", f"{where}: expected {out!r} has "
                                    "another size than its array")
    if not case.outputs or min(case.rtol, case.atol) < 0:
        raise PuzzleFormatError(folder, "cases.py", f"{where}: needs outputs and "
                                "tolerances >= 0")


def _text(folder: Path, name: str) -> str:
    try:
        text = (folder / name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PuzzleFormatError(folder, name, f"cannot be read ({exc})") from None
    if not text.strip():
        raise PuzzleFormatError(folder, name, "is empty")
    return text


def load_puzzle(folder: Path) -> Puzzle:
    """The puzzle of one ``pNN_<slug>`` folder, every field and file checked."""
    folder = Path(folder)
    match = _FOLDER.fullmatch(folder.name)
    if match is None:
        raise PuzzleFormatError(folder, "", "the folder must be named pNN_<slug>")
    for name in REQUIRED_FILES:
        if not (folder / name).is_file():
            raise PuzzleFormatError(folder, name, "is missing")
    try:
        meta = tomllib.loads(_text(folder, "puzzle.toml"))
    except tomllib.TOMLDecodeError as exc:
        raise PuzzleFormatError(folder, "puzzle.toml", f"is not TOML ({exc})") from None

    def bad(problem: str) -> PuzzleFormatError:
        return PuzzleFormatError(folder, "puzzle.toml", problem)

    unknown, missing = set(meta) - _TOP_KEYS, _TOP_KEYS - set(meta)
    if unknown or missing:
        raise bad(f"unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")
    if meta["id"] != match.group(2):
        raise bad(f"id = {meta['id']!r} must be the folder's slug {match.group(2)!r}")
    if meta["order"] != int(match.group(1)):
        raise bad(f"order = {meta['order']!r} must be the folder's number {match.group(1)}")
    if not isinstance(meta["entry"], str) or not meta["entry"].isidentifier() or \
            meta["entry"].startswith("_"):
        raise bad(f"entry = {meta['entry']!r} must be a public Python identifier")
    if meta["kernel_type"] not in KERNEL_TYPES:
        raise bad(f"kernel_type = {meta['kernel_type']!r}: one of {KERNEL_TYPES}")
    if meta["preset"] not in list_presets():
        raise bad(f"preset = {meta['preset']!r} is no chip preset")
    goal = meta["timing_goal"]
    if isinstance(goal, bool) or not isinstance(goal, (int, float)) or \
            not 1.0 <= goal <= MAX_TIMING_GOAL:
        raise bad(f"timing_goal = {goal!r} must be a number from 1 to {MAX_TIMING_GOAL}")
    titles, hints = {}, {}
    for lang in LANGUAGES:
        table = meta[lang]
        if not isinstance(table, dict) or set(table) != _LANG_KEYS:
            raise bad(f"[{lang}] must hold exactly {sorted(_LANG_KEYS)}")
        if not isinstance(table["title"], str) or not table["title"].strip():
            raise bad(f"[{lang}] title must be a non-empty text")
        if not isinstance(table["hints"], list) or not table["hints"] or \
                not all(isinstance(h, str) and h.strip() for h in table["hints"]):
            raise bad(f"[{lang}] hints must be a non-empty list of texts")
        titles[lang], hints[lang] = table["title"], tuple(table["hints"])
    if len({len(h) for h in hints.values()}) != 1:
        raise bad("every language must have the same number of hints")
    statements = {lang: _text(folder, f"statement.{lang}.md") for lang in LANGUAGES}
    for kind in SOURCE_KINDS:
        _text(folder, f"{kind}.py")
    return Puzzle(meta["id"], meta["order"], folder, meta["entry"], meta["kernel_type"],
                  meta["preset"], float(goal), titles, hints, statements,
                  _text(folder, "starter.py"))


def _ordered(found: list[Puzzle], root: Path) -> dict[str, Puzzle]:
    """Puzzles by id in learning order; two folders with one order are an error."""
    found = sorted(found, key=lambda p: p.order)
    orders = [p.order for p in found]
    twice = sorted({o for o in orders if orders.count(o) > 1})
    if twice:
        raise PuzzleFormatError(root, "", f"order used by more than one folder: {twice}")
    return {p.id: p for p in found}


def folders(root: Path = ROOT) -> dict[str, Path]:
    """The puzzle folders under ``root`` by slug (their id), in folder order, unread; two
    folders with one slug are an error."""
    found: dict[str, Path] = {}
    for folder in sorted(root.iterdir(), key=lambda f: f.name):
        match = _FOLDER.fullmatch(folder.name)
        if match is None or not folder.is_dir():
            continue
        if match.group(2) in found:
            raise PuzzleFormatError(root, "", f"id {match.group(2)!r} used by more than one "
                                    f"folder: {found[match.group(2)].name}, {folder.name}")
        found[match.group(2)] = folder
    return found


def discover(root: Path = ROOT) -> dict[str, Puzzle]:
    """Every puzzle folder under ``root``, validated, by id in learning order."""
    return _ordered([load_puzzle(folder) for folder in folders(root).values()], root)


@functools.cache
def puzzles() -> dict[str, Puzzle]:
    """The puzzles of this package, by id in learning order (read once per process)."""
    return _ordered([_load_one(puzzle_id) for puzzle_id in folders()], ROOT)


@functools.cache
def _load_one(puzzle_id: str) -> Puzzle:
    return load_puzzle(folders()[puzzle_id])


def get(puzzle_id: object) -> Puzzle:
    """The puzzle ``puzzle_id`` (only its own folder is read and validated, so that the
    grader's child reads one folder), or an InputError listing the known ids."""
    known = folders()
    if isinstance(puzzle_id, str) and puzzle_id in known:
        return _load_one(puzzle_id)
    raise InputError("puzzle", puzzle_id, Phrase("refusal.one_of", options=", ".join(known)))


__all__ = ["Case", "KERNEL_TYPES", "LANGUAGES", "Puzzle", "PuzzleFormatError",
           "SOURCE_KINDS", "discover", "folders", "get", "load_puzzle", "puzzles", "tolerance"]

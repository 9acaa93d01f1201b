"""A student's progress through the puzzles: kept in the session, downloadable as JSON and
uploadable to restore it (another browser, a later day of the workshop).

Per puzzle: the status of its last run (one of the grader's ``STATUSES``), whether it was
ever solved, the best emulated time of a passing run and its ratio to the reference's,
the last source that ran and how many hints are shown. Nothing is kept on the server
beyond the session: the file is the student's own copy.

An uploaded file is hostile until proven otherwise: ``parse`` refuses (an ``InputError``,
translated) a file over ``MAX_BYTES``, text that is not UTF-8 JSON, another format or
version, a puzzle id the app does not know, a field of the wrong type or out of range, a
source longer than the sandbox accepts; it never evaluates anything it reads.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from explorer.core.i18n import t
from explorer.core.puzzles import STATUSES  # a run's verdict ("" for a puzzle never run)
from explorer.core.sandbox import MAX_SOURCE_CHARS
from hardware_presets.errors import InputError

FORMAT, VERSION = "ascend-explorer-puzzle-progress", 1
#: the largest number of hints a file may say are shown (a puzzle has a few)
MAX_HINTS = 100
#: a UTF-8 character takes at most 4 bytes; the rest of an entry is a few hundred bytes
_ENTRY_BYTES = 4 * MAX_SOURCE_CHARS + 1024
_ENTRY_KEYS = {"status", "solved", "best_ns", "best_ratio", "source", "hints"}


@dataclass(frozen=True)
class Entry:
    """One puzzle's progress. ``best_ns`` / ``best_ratio``: of the fastest passing run
    (None until one passes); ``source``: the last source that ran ("" before a run)."""

    status: str = ""
    solved: bool = False
    best_ns: float | None = None
    best_ratio: float | None = None
    source: str = ""
    hints: int = 0

    def after_run(self, status: str, source: str, makespan_ns: float | None,
                  ratio: float | None) -> Entry:
        """This entry once a run of ``source`` came to ``status`` (passed runs keep the
        best time; a later failing run never unsolves the puzzle)."""
        best_ns, best_ratio = self.best_ns, self.best_ratio
        if status == "passed" and makespan_ns is not None and (
                best_ns is None or makespan_ns < best_ns):
            best_ns, best_ratio = float(makespan_ns), ratio
        return Entry(status, self.solved or status == "passed", best_ns, best_ratio,
                     source, self.hints)

    def with_hints(self, shown: int) -> Entry:
        return Entry(self.status, self.solved, self.best_ns, self.best_ratio, self.source,
                     max(self.hints, shown))


def max_bytes(puzzle_count: int) -> int:
    """The largest progress file for ``puzzle_count`` puzzles: every source at the
    sandbox's cap, in the widest UTF-8."""
    return max(1, puzzle_count) * _ENTRY_BYTES + 1024


def to_json(progress: Mapping[str, Entry], order: Iterable[str]) -> str:
    """The progress file: puzzles in learning order (``order``), those with no progress
    left out."""
    puzzles = {pid: asdict(progress[pid]) for pid in order
               if pid in progress and progress[pid] != Entry()}
    return json.dumps({"format": FORMAT, "version": VERSION, "puzzles": puzzles},
                      ensure_ascii=False, indent=1)


def _refuse(name: str, value: object, msg_id: str, lang: str, **values: object) -> InputError:
    return InputError(name, value, t(msg_id, lang, **values))


def _number(value: object, *, whole: bool = False) -> bool:
    if isinstance(value, bool):
        return False
    kinds = (int,) if whole else (int, float)
    return isinstance(value, kinds) and math.isfinite(value) and value >= 0


def _entry(name: str, pid: str, data: object, lang: str) -> Entry:
    """One puzzle's entry of an uploaded file, every field checked."""
    where = f"{name}: {pid}"
    if not isinstance(data, dict) or set(data) - _ENTRY_KEYS:
        keys = sorted(data)[:5] if isinstance(data, dict) else type(data).__name__
        raise _refuse(where, keys, "ui.puzzles.progress.allowed_entry", lang,
                      keys=", ".join(sorted(_ENTRY_KEYS)))
    status = data.get("status", "")
    if status not in ("", *STATUSES):
        raise _refuse(f"{where}.status", status, "ui.puzzles.progress.allowed_status", lang,
                      statuses=", ".join(STATUSES))
    solved = data.get("solved", False)
    if not isinstance(solved, bool):
        raise _refuse(f"{where}.solved", solved, "ui.puzzles.progress.allowed_flag", lang)
    best = {}
    for key in ("best_ns", "best_ratio"):
        value = data.get(key)
        if value is not None and not _number(value):
            raise _refuse(f"{where}.{key}", value, "ui.puzzles.progress.allowed_number", lang)
        best[key] = None if value is None else float(value)
    source = data.get("source", "")
    if not isinstance(source, str) or len(source) > MAX_SOURCE_CHARS:
        shown = f"{len(source):,} chars" if isinstance(source, str) else type(source).__name__
        raise _refuse(f"{where}.source", shown, "ui.puzzles.progress.allowed_source", lang,
                      limit=f"{MAX_SOURCE_CHARS:,}")
    hints = data.get("hints", 0)
    if not _number(hints, whole=True) or hints > MAX_HINTS:
        raise _refuse(f"{where}.hints", hints, "ui.puzzles.progress.allowed_hints", lang,
                      limit=MAX_HINTS)
    return Entry(status, solved or status == "passed", best["best_ns"], best["best_ratio"],
                 source, int(hints))


def parse(data: bytes, name: str, known: Iterable[str], lang: str = "en") -> dict[str, Entry]:
    """The progress in an uploaded file ``name``, for puzzles ``known`` (their ids), or an
    InputError saying what the file must be, in ``lang``."""
    known = tuple(known)
    limit = max_bytes(len(known))
    if len(data) > limit:
        raise _refuse(name, f"{len(data):,} bytes", "ui.puzzles.progress.allowed_size", lang,
                      limit=f"{limit:,}")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _refuse(name, "(file)", "ui.puzzles.progress.allowed_json", lang) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or \
            doc.get("version") != VERSION or not isinstance(doc.get("puzzles"), dict):
        raise _refuse(name, "(file)", "ui.puzzles.progress.allowed_format", lang,
                      format=FORMAT, version=VERSION)
    unknown = sorted(str(pid)[:40] for pid in doc["puzzles"] if pid not in known)
    if unknown:
        raise _refuse(f"{name}: puzzles", ", ".join(unknown[:5]),
                      "ui.puzzles.progress.allowed_ids", lang, ids=", ".join(known))
    return {pid: _entry(name, pid, entry, lang) for pid, entry in doc["puzzles"].items()}


def merge(current: Mapping[str, Entry], restored: Mapping[str, Entry]) -> dict[str, Entry]:
    """The session's progress after restoring a file: the file's entries replace the
    session's puzzle by puzzle, except that a puzzle solved in either stays solved and
    keeps the better of the two best times."""
    merged = dict(current)
    for pid, new in restored.items():
        old = current.get(pid, Entry())
        best = min((e for e in (old, new) if e.best_ns is not None),
                   key=lambda e: e.best_ns, default=new)
        merged[pid] = Entry(new.status, old.solved or new.solved, best.best_ns,
                            best.best_ratio, new.source or old.source,
                            max(old.hints, new.hints))
    return merged

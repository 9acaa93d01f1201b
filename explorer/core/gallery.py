"""The gallery: built-in scenarios that each teach one thing, as plain scenario files in
``explorer/scenarios/`` (package data: an installed explorer has them too; the same TOML a
user downloads or uploads), and in the ``examples`` folder a kernel's record names.

A file stem is the scenario's id. Two files ``<lesson>_a.toml`` and ``<lesson>_b.toml``
form a pair (the same workload before and after one change) that the Compare page opens
side by side; any other file is a single scenario whose lesson is its own id. What each
lesson teaches is translated text (``gallery.<lesson>`` and ``gallery.<lesson>_help`` in
the ``compare`` catalogues), since a scenario file holds data only.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple

import kernels
from hardware_presets.errors import InputError, Phrase

from .scenario import Scenario

GALLERY_DIR = Path(__file__).resolve().parents[1] / "scenarios"
SIDES = ("a", "b")


class Entry(NamedTuple):
    """One gallery file: id (its stem), path, kernel, and the other side's id when it is
    one half of a pair (else None)."""

    id: str
    path: Path
    kernel: str
    pair: str | None

    @property
    def lesson(self) -> str:
        """The lesson id: the stem without ``_a``/``_b`` for a pair, the id otherwise."""
        return self.id[:-2] if self.pair else self.id

    @property
    def side(self) -> str | None:
        """"a" or "b" for half of a pair, None for a single scenario."""
        return self.id[-1] if self.pair else None

    @property
    def title_id(self) -> str:
        """Message id of this file's own title (``gallery.<id>``: a half of a pair says
        what its side changes)."""
        return f"gallery.{self.id}"


def _pair_of(stem: str, stems: set[str]) -> str | None:
    """The other half's stem when ``stem`` ends in _a/_b and its partner exists."""
    head, _, side = stem.rpartition("_")
    if head and side in SIDES:
        other = f"{head}_{'b' if side == 'a' else 'a'}"
        return other if other in stems else None
    return None


@functools.cache
def _scan(folder: Path) -> tuple[Entry, ...]:
    paths = sorted(folder.glob("*.toml"))
    stems = {p.stem for p in paths}
    return tuple(Entry(p.stem, p, _read(p).kernel, _pair_of(p.stem, stems)) for p in paths)


def _read(path: Path) -> Scenario:
    return Scenario.from_toml(path.read_text(encoding="utf-8"), f"{path.parent.name}/{path.name}")


def entries() -> list[Entry]:
    """Every gallery scenario, sorted by id (``a`` before ``b`` in a pair): the shared
    folder's, then each kernel's own examples (its record's ``examples`` folder)."""
    folders = [GALLERY_DIR] + [r.examples for r in kernels.KERNELS.values() if r.examples]
    return [e for folder in folders for e in _scan(folder)]


def lesson_ids(lesson: str) -> tuple[str, str]:
    """Message ids of a lesson's title and what it teaches (``gallery.<lesson>``,
    ``gallery.<lesson>_help``): made from the file names, so tests/test_message_ids.py
    checks them for every lesson ``lessons()`` finds."""
    return f"gallery.{lesson}", f"gallery.{lesson}_help"


def ids() -> list[str]:
    return [e.id for e in entries()]


def entry(scenario_id: str) -> Entry:
    """The entry called ``scenario_id``; an InputError listing the ids otherwise."""
    for found in entries():
        if found.id == scenario_id:
            return found
    raise InputError("gallery", scenario_id, Phrase("refusal.one_of", options=", ".join(ids())))


@functools.cache
def load(scenario_id: str) -> Scenario:
    """The validated scenario of one gallery file (kernel defaults filled in)."""
    return _read(entry(scenario_id).path)


def pairs() -> list[tuple[str, str, str]]:
    """(lesson, A id, B id) of every pair, in file order."""
    return [(e.lesson, e.id, e.pair) for e in entries() if e.side == "a"]


def lessons() -> list[str]:
    """Every lesson id once: pairs and single scenarios, in file order."""
    return list(dict.fromkeys(e.lesson for e in entries()))

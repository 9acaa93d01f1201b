"""The time model's card: every validation case emulated once per process, and the mean
and max error per group (``cases.summary``), for the Validation page and the reports.

Running the cases takes about a second, so both are cached with ``functools.lru_cache``:
a report names the model version and its errors without re-running anything, and the
page (which adds its own Streamlit cache keyed by ``MODEL_VERSION``) shares the same
outcomes. Groups keep the order of the case files (GEMM first, then DataCopy).
"""
from __future__ import annotations

import functools

from .cases import MODEL_VERSION, Outcome, cases, emulate, summary


@functools.lru_cache(maxsize=1)
def outcomes() -> tuple[Outcome, ...]:
    """Every case of ``cases()`` beside the emulator's figure."""
    return tuple(emulate(case) for case in cases())


def groups(chosen: tuple[Outcome, ...] | list[Outcome]) -> tuple[str, ...]:
    """The groups of some outcomes, in order of first appearance."""
    return tuple(dict.fromkeys(o.case.group for o in chosen))


@functools.lru_cache(maxsize=1)
def validation_summary() -> dict:
    """The model version, the number of cases and ``summary`` per group (cached and
    shared: read it, never change it)."""
    done = outcomes()
    return {"version": MODEL_VERSION, "cases": len(done),
            "groups": {group: summary(list(done), group) for group in groups(done)}}

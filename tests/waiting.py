"""How the suite waits: for a condition the app signals, never for a fixed time.

``DEADLINE_S`` is the one deadline of every wait in the suite (AppTest runs, browser waits,
subprocesses, background sweeps, the app server's health check). It exists only to turn a
hang into a failure, so it is generous: a wait that meets it on a loaded 2-core CI machine
is a bug, not slowness. ``poll_until`` is the suite's only polling loop (and its only
sleep); pytest-timeout's per-test limit (pytest.ini) is the backstop behind both.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

#: seconds any single wait may take before it fails the test
DEADLINE_S = 180.0
DEADLINE_MS = DEADLINE_S * 1000
#: how often ``poll_until`` looks again
POLL_INTERVAL_S = 0.05

T = TypeVar("T")


def poll_until(read: Callable[[], T], done: Callable[[T], bool], what: str,
               deadline_s: float = DEADLINE_S) -> T:
    """Call ``read()`` until ``done(value)`` holds and return that value; after
    ``deadline_s`` fail with ``what`` and the last value seen."""
    give_up = time.monotonic() + deadline_s
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > give_up:
            raise AssertionError(f"waited {deadline_s:.0f} s for {what}; last seen: {value!r}")
        time.sleep(POLL_INTERVAL_S)

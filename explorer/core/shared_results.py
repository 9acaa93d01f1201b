"""Results shared by every session of a server: one computation per scenario, bounded.

A class that opens the same gallery scenario should emulate it once. ``SharedResults``
maps a key (the scenario's canonical JSON) to the future of its result: the first request
submits the work to a ``WorkerPool``, later and concurrent ones get the same future and wait
on it. Finished results stay in a least-recently-used table bounded by a number of entries
and a byte budget (``EXPLORER_SHARED_RESULTS``, ``EXPLORER_SHARED_MB``); a failed request
is forgotten, so that it runs again next time. Results are handed out as they are, never
copied: callers must treat them as read-only.
"""
from __future__ import annotations

import collections
import concurrent.futures as cf
import dataclasses
import os
import threading
from collections.abc import Callable
from typing import Any

from hardware_presets.errors import InputError, Phrase

from .worker_pool import WorkerPool, default_pool

ENTRIES_ENV, MB_ENV = "EXPLORER_SHARED_RESULTS", "EXPLORER_SHARED_MB"
DEFAULT_ENTRIES, DEFAULT_MB = 64, 256


def frame_bytes(result: object) -> int:
    """Bytes held by the DataFrames among a dataclass's fields (what the budget counts)."""
    frames = (getattr(result, f.name) for f in dataclasses.fields(result))
    return sum(int(df.memory_usage(index=True, deep=True).sum())
               for df in frames if hasattr(df, "memory_usage"))


def _setting(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise InputError(name, text, Phrase("refusal.workers.results"))
    return int(text)


class SharedResults:
    """A bounded table of result futures keyed by scenario, filled through a pool."""

    def __init__(self, pool: WorkerPool, max_entries: int, max_bytes: int,
                 sizeof: Callable[[Any], int] = frame_bytes) -> None:
        self.pool, self.max_entries, self.max_bytes = pool, max_entries, max_bytes
        self._sizeof = sizeof
        self._lock = threading.Lock()
        self._futures: collections.OrderedDict[str, cf.Future] = collections.OrderedDict()
        self._sizes: dict[str, int] = {}  # of the finished entries

    @classmethod
    def from_settings(cls, pool: WorkerPool) -> SharedResults:
        return cls(pool, _setting(ENTRIES_ENV, DEFAULT_ENTRIES),
                   _setting(MB_ENV, DEFAULT_MB) * 2**20)

    def get(self, key: str, fn: Callable, *args: Any) -> cf.Future:
        """The future of ``fn(*args)`` for ``key``: the stored one, or a new submission."""
        with self._lock:
            future = self._futures.get(key)
            if future is not None:
                self._futures.move_to_end(key)
                return future
            future = self._futures[key] = cf.Future()
        future.add_done_callback(lambda done: self._settle(key, done))
        self.pool.submit(fn, *args, future=future)
        return future

    def _settle(self, key: str, future: cf.Future) -> None:
        """A finished entry: forget it if it failed, else count its bytes and evict."""
        failed = future.cancelled() or future.exception() is not None
        size = 0 if failed else self._sizeof(future.result())
        with self._lock:
            if self._futures.get(key) is not future:
                return
            if failed:
                del self._futures[key]
                return
            self._sizes[key] = size
            self._evict()

    def _evict(self) -> None:
        """Drop the least recently used finished entries until both bounds hold (pending
        ones stay: their waiters hold them anyway, and they have no size yet)."""
        for key in list(self._futures):
            if len(self._sizes) <= self.max_entries and self.nbytes() <= self.max_bytes:
                return
            if key in self._sizes:
                del self._futures[key], self._sizes[key]

    def nbytes(self) -> int:
        """Bytes of the finished results kept."""
        return sum(self._sizes.values())

    def __len__(self) -> int:
        return len(self._futures)

    def clear(self) -> None:
        with self._lock:
            self._futures.clear()
            self._sizes.clear()


_default: SharedResults | None = None
_default_lock = threading.Lock()


def default_results() -> SharedResults:
    """The process's shared results, over the process's pool (a new table when tests or a
    CLI replace that pool, see ``worker_pool.set_default_pool``)."""
    global _default
    pool = default_pool()
    with _default_lock:
        if _default is None or _default.pool is not pool:
            _default = SharedResults.from_settings(pool)
        return _default

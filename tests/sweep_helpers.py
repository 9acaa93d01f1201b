"""Executors for sweep tests: the executor contract run in this process, in order."""
from __future__ import annotations


class InlineExecutor:
    """The executor contract in this process: records what it was asked to run."""

    def __init__(self) -> None:
        self.calls: list[list] = []

    def before_point(self) -> None:
        """Called before each point runs (a subclass may block here)."""

    def map(self, fn, items, progress=None, cancelled=None) -> dict:
        self.calls.append(list(items))
        out = {}
        for index, item in enumerate(items):
            self.before_point()
            if cancelled and cancelled():
                break
            out[index] = fn(item)
            if progress:
                progress(len(out), len(items))
        return out

"""Mapping the event loop's results back to program ids while the loop still runs.

The loop is one sequential pass, so during it the side thread would idle. Internal ids are
laid out by how far through its lane each instruction is (``_jit.graph.interleave``), so
they finish about in order: the loop counts completions per block of ids
(``_jit.progress``), and the side thread maps each block back as soon as it is complete,
then drops the block's internal times (``drop_pages``), which nothing reads again: the
schedule's pages come as those go, and the peak stays where mapping afterwards put it.
Blocks still open when the loop ends (the last few; or a deadlock's) are shared by both
threads then."""
from __future__ import annotations

import threading

import numpy as np

from kernels.common.memory import drop_pages

from ._jit.progress import complete_blocks
from ._jit.scatter import by_program, schedule_arrays
from .schedule import Schedule

#: internal ids per block: 2^16 (at ~100 ns an instruction, a block every ~7 ms)
BLOCK_BITS = 16
#: how long the side thread sleeps when no block is complete (a block takes ~7 ms)
POLL_S = 0.001


class MapBack:
    """The loop's output arrays (by internal id, in its ``LoopState``), their completion
    counts per block, and the schedule's arrays (by program id) they are mapped into, a
    block at a time."""

    def __init__(self, inp, state) -> None:
        n, block_bits = inp.n, BLOCK_BITS
        self.inp, self.n, self.block_bits = inp, n, block_bits
        self.start, self.end, self.served = state.start, state.end, state.served
        self.done = np.zeros((n >> block_bits) + 1, np.int64)  # completions per block
        self.times, self.by_program = schedule_arrays(n)
        self._taken = np.zeros(len(self.done), np.bool_)
        self._lock = threading.Lock()
        self.loop_over = threading.Event()
        self._loop_thread = threading.get_ident()

    def while_running(self) -> None:
        """Map blocks back as the loop completes them, then share what is left. Does nothing
        on the loop's own thread (a side thread that could not start runs its call at once:
        the blocks are then all mapped after the loop)."""
        if threading.get_ident() == self._loop_thread:
            return
        while not self.loop_over.is_set():
            if not self._map(self._claim(complete_only=True)):
                self.loop_over.wait(POLL_S)
        self.rest()

    def rest(self) -> None:
        """Map every block not taken yet (the loop is over)."""
        while self._map(self._claim(complete_only=False)):
            pass

    def schedule(self, segments: np.ndarray) -> Schedule:
        return Schedule(*self.times, self.by_program, segments)

    def _claim(self, complete_only: bool) -> int | None:
        """A block not taken yet: a complete one, or with ``complete_only`` false any."""
        with self._lock:
            ready = complete_blocks(self.done, self.block_bits, self.n, self._taken)
            if not len(ready) and not complete_only:
                ready = np.flatnonzero(~self._taken)
            if not len(ready):
                return None
            self._taken[ready[0]] = True
            return int(ready[0])

    def _map(self, block: int | None) -> bool:
        """Map ``block`` back (False: there was none) and, while the loop still runs,
        drop its internal times."""
        if block is None:
            return False
        lo = block << self.block_bits
        hi = min(lo + (1 << self.block_bits), self.n)
        inp = self.inp
        by_program(inp.order, inp.route, inp.issue_ns, self.start, self.end, self.served,
                   self.times, self.by_program, lo, hi)
        if not self.loop_over.is_set():  # (once it is, the arrays are soon dropped whole)
            drop_pages(self.start, lo, hi)
            drop_pages(self.end, lo, hi)
        return True

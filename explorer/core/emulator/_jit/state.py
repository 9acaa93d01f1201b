"""The event loop's state per instruction, set up a range of internal ids at a time.

``run`` hands the gather of the later internal ids to the side thread and starts the loop
before it is done (``lowering.Gathering``): whichever thread gathers a range also sets up
the loop's state for it (``set_up``), so that its pages are first touched, and its NaN
written, beside the loop and not before it. The loop touches an instruction's state only
once it has reached the instruction, which is then gathered."""
from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np
from numba import njit

from ..config import JIT_OPTIONS


class LoopState(NamedTuple):
    """By internal id: the loop's results (start, end, served) and its lists' links."""

    start: np.ndarray  # float64 issue start, NaN: never started
    end: np.ndarray  # float64 done, NaN: never; a copy's moment of entry until it is done
    served: np.ndarray  # int8 SERVED_* of a GM copy
    link: np.ndarray  # int32 the next in the list the instruction waits in, -1: none
    pend: np.ndarray  # int8 where a copy waits to stream (events.PENDING, FILL_WAIT), 0
    join_head: np.ndarray  # int32 a multicast leader's first joiner (empty: no clusters)
    join_next: np.ndarray  # int32 the next joiner of the same leader
    inflight_next: np.ndarray  # int32 the next leader in flight for the same region


@njit(**JIT_OPTIONS)
def _arrays(n, clustered):
    """Made by numba, not numpy (no huge pages: see ``graph.gather_arrays``), and left
    untouched until ``set_up``."""
    m = n if clustered else 0
    return (np.empty(n), np.empty(n), np.empty(n, np.int8), np.empty(n, np.int32),
            np.empty(n, np.int8), np.empty(m, np.int32), np.empty(m, np.int32),
            np.empty(m, np.int32))


def loop_state(n: int, clustered: bool) -> LoopState:
    """Room for the state of ``n`` instructions (multicast lists only if ``clustered``)."""
    return LoopState(*_arrays(n, clustered))


class OnDemand:
    """A ``LoopState`` made when it is first asked for (``made``, ``set_up``: from either
    thread), not ahead: made before the lowering, its untouched arrays slowed the lane
    sort and layout from 190 to 270 ms at 10^7 instructions (measured; why, not found)."""

    def __init__(self, n: int, clustered: bool) -> None:
        self.n, self.clustered, self._state = n, clustered, None
        self._lock = threading.Lock()

    def made(self) -> LoopState:
        with self._lock:
            if self._state is None:
                self._state = loop_state(self.n, self.clustered)
            return self._state

    def set_up(self, lo: int, hi: int) -> None:
        set_up(self.made(), lo, hi)


@njit(**JIT_OPTIONS)
def set_up(state, lo, hi):
    """The state of internal ids lo..hi-1 before the loop reaches them."""
    for i in range(lo, hi):
        state.start[i] = np.nan
        state.end[i] = np.nan
        state.served[i] = 0
        state.link[i] = -1
        state.pend[i] = 0
    if len(state.join_head):
        for i in range(lo, hi):
            state.join_head[i] = -1
            state.join_next[i] = -1
            state.inflight_next[i] = -1

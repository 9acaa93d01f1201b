"""Mapping an engine's arrays, indexed by internal id, back to program ids in one compiled
pass: numpy would take a temporary per array and a scatter each (at 10^7 instructions,
about 90 ns per instruction, a third of the event loop's time)."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..config import JIT_OPTIONS


@njit(**JIT_OPTIONS)
def schedule_arrays(n):
    """Room for ``by_program``'s output, made by numba, not numpy: numpy asks for huge pages
    from 4 MB up, and a process's first use of one costs ~8 ns a byte on a virtual machine
    (see ``graph.gather_arrays``); at 10^7 instructions the mapping back took 9 to 69 ns
    an instruction with numpy's arrays, by how many huge pages were new."""
    return np.empty((3, n)), np.empty(n, np.int8)


@njit(**JIT_OPTIONS)
def by_program(order, route, issue_ns, start, end, served, out, out_served, lo, hi):
    """Internal ids lo..hi-1 written at their program ids (``order[i]``): start, end and
    issue end in the rows of ``out``, served in ``out_served``. A GM copy (a route) frees
    its pipe when its issue ends; anything else holds it to its end. Ranges that do not
    overlap may be filled at once, from two threads."""
    for i in range(lo, hi):
        p = order[i]
        out[0, p] = start[i]
        out[1, p] = end[i]
        out[2, p] = start[i] + issue_ns[i] if route[i] >= 0 else end[i]
        out_served[p] = served[i]

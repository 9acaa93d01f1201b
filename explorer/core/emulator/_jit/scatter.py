"""Mapping an engine's arrays, indexed by internal id, back to program ids in one compiled
pass: numpy would take a temporary per array and a scatter each (at 10^7 instructions,
about 90 ns per instruction, a third of the event loop's time)."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..config import JIT_OPTIONS


@njit(**JIT_OPTIONS)
def by_program(order, route, issue_ns, start, end, served):
    """start, end, issue end and served by program id (``order[i]``: program id of internal
    id i). A GM copy (a route) frees its pipe when its issue ends; anything else holds it to
    its end."""
    n = len(order)
    out_start, out_end, out_issued = np.empty(n), np.empty(n), np.empty(n)
    out_served = np.empty(n, np.int8)
    for i in range(n):
        p = order[i]
        out_start[p] = start[i]
        out_end[p] = end[i]
        out_issued[p] = start[i] + issue_ns[i] if route[i] >= 0 else end[i]
        out_served[p] = served[i]
    return out_start, out_end, out_issued, out_served

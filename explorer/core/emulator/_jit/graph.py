"""Lowering a program's dependency graph to internal ids, in one pass over its edges.

The event loop needs, per instruction in lane order, how many instructions it waits for and
which ones wait for it (a CSR of successors, each list ascending, as the twin's). numpy would
take several sorts and gathers of the edge arrays; this is two linear passes.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..config import JIT_OPTIONS


@njit(**JIT_OPTIONS)
def dependencies(dep_ptr, dep_idx, order):
    """``order[i]`` is the program id of internal id ``i``; returns, by internal id, the
    number of dependencies and the successors' CSR (int32 pointers and ids)."""
    n = len(order)
    inverse = np.empty(n, np.int32)
    for i in range(n):
        inverse[order[i]] = i
    dep_count = np.empty(n, np.int32)
    succ_ptr = np.zeros(n + 1, np.int32)
    for i in range(n):
        p = order[i]
        dep_count[i] = dep_ptr[p + 1] - dep_ptr[p]
        for q in range(dep_ptr[p], dep_ptr[p + 1]):
            succ_ptr[inverse[dep_idx[q]] + 1] += 1
    for i in range(n):
        succ_ptr[i + 1] += succ_ptr[i]
    fill = succ_ptr[:-1].copy()
    succ_idx = np.empty(succ_ptr[n], np.int32)
    for i in range(n):  # ascending i: every successor list comes out ascending
        p = order[i]
        for q in range(dep_ptr[p], dep_ptr[p + 1]):
            d = inverse[dep_idx[q]]
            succ_idx[fill[d]] = i
            fill[d] += 1
    return dep_count, succ_ptr, succ_idx

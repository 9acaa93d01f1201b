"""The cost model's compiled passes (explorer/core/emulator/cost.py applies them): one scan
costs the GM copies and scalars and sorts every other row into the group of its formula in
kernels.common.cycles; a second numbers each copy's bandwidth classes from a small table of
routes x cores. Also the codes they write, which the engines read."""
from __future__ import annotations

import numpy as np
from numba import njit

from hardware_presets.fields import DMA_PATHS
from kernels.common.cycles import ONCHIP_PATHS
from kernels.common.program import Kind, Level, Pipe

from ..config import JIT_OPTIONS

GM_NONE, GM_READ, GM_WRITE = 0, 1, 2
POOL_HBM, POOL_L2 = 0, 1

#: groups of rows costed by a formula of kernels.common.cycles: MMADs, vector instructions,
#: on-chip moves of each path of ONCHIP_PATHS, then on-chip moves of no known path
MMAD, VECTOR, ONCHIP = 0, 1, 2
N_GROUPS = ONCHIP + len(ONCHIP_PATHS) + 1
PATH_OF = np.full((len(Level), len(Level)), len(ONCHIP_PATHS), np.int8)  # (src, dst) -> path
PATH_OF[tuple(zip(*ONCHIP_PATHS))] = range(len(ONCHIP_PATHS))
#: routes of a GM copy: the bandwidth caps (HBM, L2) of a read into L1 and of one elsewhere
#: differ, so a route is a DMA path (index in DMA_PATHS) refined by that
ROUTES = (("gm_read", "gm_read_hbm_bytes_per_cycle", "gm_read_l2_bytes_per_cycle"),
           ("gm_read", "gm_read_hbm_bytes_per_cycle", "gm_read_l1_bytes_per_cycle"),
           ("gm_write", "gm_write_bytes_per_cycle", "gm_write_bytes_per_cycle"),
           ("fixpipe_gm", "fixpipe_gm_bytes_per_cycle", "fixpipe_gm_bytes_per_cycle"))
READ, READ_L1, WRITE, FIXPIPE = range(len(ROUTES))
ROUTE_GM = (GM_READ, GM_READ, GM_WRITE, GM_WRITE)  # what each route does to GM
ROUTE_PATH = np.array([DMA_PATHS.index(path) for path, _, _ in ROUTES], np.int64)


@njit(inline="always", **JIT_OPTIONS)
def formula_group(kind, src, dst, i):
    """The formula group of row ``i`` (-1: a GM copy, scalar or barrier, costed in the scan)."""
    k = kind[i]
    if k == Kind.MMAD:
        return MMAD
    if k == Kind.VECTOR:
        return VECTOR
    if k != Kind.TRANSFER or src[i] == Level.GM or dst[i] == Level.GM:
        return -1
    s, d = src[i], dst[i]
    if 0 <= s < PATH_OF.shape[0] and 0 <= d < PATH_OF.shape[1]:
        return ONCHIP + PATH_OF[s, d]
    return N_GROUPS - 1


@njit(**JIT_OPTIONS)
def scan(kind, core, src, dst, pipe, nbytes, scalar_cycles, clock, dma, burst_bytes):
    """Cost the GM copies (issue: fixed + per burst; their route, whose table gives the
    rest) and the scalars, in ns of their core's clock; zero the rest. Returns the issue
    times and routes (arrays made by numba, which does not ask for huge pages: see
    ``graph.gather_arrays``), the rows of each formula group (ascending within it, the
    group starts) and the (route, core) pairs copies use."""
    n = len(kind)
    issue, route = np.empty(n), np.empty(n, np.int8)
    count = np.zeros(N_GROUPS + 1, np.int64)
    used = np.zeros((len(ROUTE_PATH), len(clock)), np.bool_)
    for i in range(n):
        cr = core[i]
        issue[i], route[i] = 0.0, -1
        g = formula_group(kind, src, dst, i)
        if g >= 0:
            count[g + 1] += 1
        elif kind[i] == Kind.SCALAR:
            issue[i] = np.float64(scalar_cycles[i]) * 1000.0 / clock[cr]
        elif kind[i] == Kind.TRANSFER:
            if src[i] == Level.GM:
                r = READ_L1 if dst[i] == Level.L1 else READ
            else:
                r = FIXPIPE if pipe[i] == Pipe.FIX else WRITE
            p = ROUTE_PATH[r]
            cycles = dma[p, 0] + np.ceil(nbytes[i] / burst_bytes) * dma[p, 1]
            issue[i] = cycles * 1000.0 / clock[cr]
            route[i], used[r, cr] = r, True
    starts = np.cumsum(count)
    rows, fill = np.empty(starts[-1], np.int32), starts[:-1].copy()
    for i in range(n):
        g = formula_group(kind, src, dst, i)
        if g >= 0:
            rows[fill[g]] = i
            fill[g] += 1
    return issue, route, rows, starts, used

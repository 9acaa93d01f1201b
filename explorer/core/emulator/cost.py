"""The cost model: how long each instruction takes on a given chip, before any contention.

Compute and on-chip moves get a fixed duration, ``fixed cycles + work / throughput`` in the
core's own clock (DESIGN.md §4 rule 3): they hold their pipe for all of it. GM transfers are
DMA copies (rule 1): they hold their pipe only for an issue cost, are then in flight for a
latency, and their bytes flow through the shared memory system under a per-core path cap;
the engine times the flowing part. All times are nanoseconds and all rates bytes per
nanosecond (= GB/s).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from hardware_presets.fields import DMA_PATHS
from kernels.common.cycles import ONCHIP_PATHS, mmad_cycles, onchip_cycles, vector_cycles
from kernels.common.program import DTYPE_BYTES, DTYPES, Kind, Level, Pipe, Program

from .config import JIT_OPTIONS

GM_NONE, GM_READ, GM_WRITE = 0, 1, 2
POOL_HBM, POOL_L2 = 0, 1

@dataclass(frozen=True, eq=False)
class Costs:
    """Per-instruction timing inputs for the engine (indexed like the columns given). A GM
    copy's per-core path cap is that of its bandwidth class, when served by HBM and by L2:
    flows of one pool with one cap share a rate (classes numbered by (pool, cap) ascending,
    as the jit engine's water-filling wants them; -1: not a GM copy)."""

    issue_ns: np.ndarray  # time the pipe is held: the whole duration, or a copy's issue cost
    latency_ns: np.ndarray  # GM copies: from the end of the issue until the bytes flow
    max_outstanding: np.ndarray  # int8: copies its pipe may hold in flight (1: one at a time)
    gm: np.ndarray  # int8: GM_NONE / GM_READ / GM_WRITE
    cls_hbm: np.ndarray  # int8 bandwidth class when served by HBM
    cls_l2: np.ndarray  # int8 bandwidth class when served by L2
    class_cap: np.ndarray  # bytes/ns per class
    class_pool: np.ndarray  # int8 POOL_HBM / POOL_L2 per class
    sync_ns: float  # SyncAll cost after the last core arrives

    @property
    def cap_hbm(self) -> np.ndarray:
        """bytes/ns cap of each copy's path when served by HBM (0: not a GM copy)."""
        return self._caps(self.cls_hbm)

    @property
    def cap_l2(self) -> np.ndarray:
        """... when served by L2."""
        return self._caps(self.cls_l2)

    def _caps(self, cls: np.ndarray) -> np.ndarray:
        caps = np.append(self.class_cap, 0.0)  # class -1 reads the appended 0
        return caps[cls]


def compute_costs(program: Program, chip: Chip) -> Costs:
    """Durations, GM classification and path caps for every instruction of ``program``."""
    return costs_of(program.cols, chip)


def costs_of(c: dict[str, np.ndarray], chip: Chip) -> Costs:
    """``compute_costs`` on instruction columns. One compiled pass costs the DMA copies and
    scalars and sorts the other rows into groups, each then costed by its formula of
    kernels.common.cycles on its rows only; a second pass numbers the copies' classes, found
    on a small table of routes x cores. No full-length temporaries."""
    n = len(c["core"])
    n_cores = len(chip.core_kinds())
    if n and (c["core"].min() < 0 or c["core"].max() >= n_cores):
        raise InputError("core", int(c["core"].max()),
                         Phrase("refusal.emulator.core", last=n_cores - 1, chip=chip.display_name))
    clock = np.asarray(chip.core_clocks_MHz(), dtype=float)
    dma = np.array([[getattr(chip, f"{p}_{f}") for f in ("issue_cycles", "burst_cycles",
                                                          "latency_cycles")] for p in DMA_PATHS],
                   float)
    depth = np.array([getattr(chip, f"{p}_max_outstanding") for p in DMA_PATHS], np.int8)
    issue, latency = np.empty(n), np.empty(n)
    max_out, gm, cls_hbm, cls_l2 = (np.empty(n, np.int8) for _ in range(4))
    # cls_hbm holds each copy's route (-1: not a copy) until _number gives its classes
    rows, starts, used = _scan(c["kind"], c["core"], c["src"], c["dst"], c["pipe"],
                               c["nbytes"], c["cycles"], clock, dma, float(chip.dma_burst_bytes),
                               depth, issue, latency, max_out, gm, cls_hbm)
    group = [rows[a:b] for a, b in zip(starts[:-1], starts[1:])]
    _set_ns(issue, group[_MMAD], _mmad_cycles(c, group[_MMAD], chip), clock, c["core"])
    vec = group[_VECTOR]
    width = np.array([DTYPE_BYTES[d] for d in DTYPES])[np.maximum(c["dtype"][vec], 0)]
    _set_ns(issue, vec, vector_cycles(chip, c["elems"][vec], width, c["vclass"][vec]), clock,
            c["core"])
    _onchip(c, group[_ONCHIP:], chip, issue, clock)
    if used[_FIXPIPE].any() and not chip.has_fixpipe:
        raise InputError("pipe", "FIX", Phrase("refusal.emulator.fixpipe", chip=chip.display_name))
    table, class_cap, class_pool = _classes(used, chip, clock)
    _number(cls_hbm, cls_l2, c["core"], table)
    return Costs(issue, latency, max_out, gm, cls_hbm, cls_l2, class_cap, class_pool,
                 chip.sync_all_cycles * 1000.0 / chip.clock_MHz)


#: groups of rows costed by a formula of kernels.common.cycles: MMADs, vector instructions,
#: on-chip moves of each path of ONCHIP_PATHS, then on-chip moves of no known path
_MMAD, _VECTOR, _ONCHIP = 0, 1, 2
_N_GROUPS = _ONCHIP + len(ONCHIP_PATHS) + 1
_PATH_OF = np.full((len(Level), len(Level)), len(ONCHIP_PATHS), np.int8)  # (src, dst) -> path
_PATH_OF[tuple(zip(*ONCHIP_PATHS))] = range(len(ONCHIP_PATHS))
#: routes of a GM copy: the bandwidth caps (HBM, L2) of a read into L1 and of one elsewhere
#: differ, so a route is a DMA path (index in DMA_PATHS) refined by that
_ROUTES = (("gm_read", "gm_read_hbm_bytes_per_cycle", "gm_read_l2_bytes_per_cycle"),
           ("gm_read", "gm_read_hbm_bytes_per_cycle", "gm_read_l1_bytes_per_cycle"),
           ("gm_write", "gm_write_bytes_per_cycle", "gm_write_bytes_per_cycle"),
           ("fixpipe_gm", "fixpipe_gm_bytes_per_cycle", "fixpipe_gm_bytes_per_cycle"))
_READ, _READ_L1, _WRITE, _FIXPIPE = range(len(_ROUTES))
_ROUTE_PATH = np.array([DMA_PATHS.index(path) for path, _, _ in _ROUTES], np.int64)


@njit(inline="always", **JIT_OPTIONS)
def _group(kind, src, dst, i):
    """The formula group of row ``i`` (-1: a GM copy, scalar or barrier, costed in the scan)."""
    k = kind[i]
    if k == Kind.MMAD:
        return _MMAD
    if k == Kind.VECTOR:
        return _VECTOR
    if k != Kind.TRANSFER or src[i] == Level.GM or dst[i] == Level.GM:
        return -1
    s, d = src[i], dst[i]
    if 0 <= s < _PATH_OF.shape[0] and 0 <= d < _PATH_OF.shape[1]:
        return _ONCHIP + _PATH_OF[s, d]
    return _N_GROUPS - 1


@njit(**JIT_OPTIONS)
def _scan(kind, core, src, dst, pipe, nbytes, scalar_cycles, clock, dma, burst_bytes, depth,
          issue, latency, max_out, gm, route):
    """Cost the GM copies (issue: fixed + per burst, latency, queue depth, route) and the
    scalars, in ns of their core's clock; zero the rest. Returns the rows of each formula
    group (ascending within it, the group starts) and the (route, core) pairs copies use."""
    n = len(kind)
    count = np.zeros(_N_GROUPS + 1, np.int64)
    used = np.zeros((len(_ROUTE_PATH), len(clock)), np.bool_)
    for i in range(n):
        cr = core[i]
        issue[i], latency[i], max_out[i], gm[i], route[i] = 0.0, 0.0, 1, GM_NONE, -1
        g = _group(kind, src, dst, i)
        if g >= 0:
            count[g + 1] += 1
        elif kind[i] == Kind.SCALAR:
            issue[i] = np.float64(scalar_cycles[i]) * 1000.0 / clock[cr]
        elif kind[i] == Kind.TRANSFER:
            if src[i] == Level.GM:
                r, gm[i] = (_READ_L1 if dst[i] == Level.L1 else _READ), GM_READ
            else:
                r, gm[i] = (_FIXPIPE if pipe[i] == Pipe.FIX else _WRITE), GM_WRITE
            p = _ROUTE_PATH[r]
            cycles = dma[p, 0] + np.ceil(nbytes[i] / burst_bytes) * dma[p, 1]
            issue[i] = cycles * 1000.0 / clock[cr]
            latency[i] = dma[p, 2] * 1000.0 / clock[cr]
            max_out[i], route[i], used[r, cr] = depth[p], r, True
    starts = np.cumsum(count)
    rows, fill = np.empty(starts[-1], np.int64), starts[:-1].copy()
    for i in range(n):
        g = _group(kind, src, dst, i)
        if g >= 0:
            rows[fill[g]] = i
            fill[g] += 1
    return rows, starts, used


@njit(**JIT_OPTIONS)
def _number(cls_hbm, cls_l2, core, table):
    """Each copy's route (held in cls_hbm) -> its classes when served by HBM and by L2."""
    for i in range(len(cls_hbm)):
        r = cls_hbm[i]
        if r >= 0:
            cls_hbm[i], cls_l2[i] = table[r, POOL_HBM, core[i]], table[r, POOL_L2, core[i]]
        else:
            cls_l2[i] = -1


def _set_ns(issue: np.ndarray, rows: np.ndarray, cycles, clock: np.ndarray, core) -> None:
    """issue[rows] = cycles in ns of each row's core clock (cycles x 1000 / MHz)."""
    cycles = np.asarray(cycles, dtype=np.float64)  # MMAD cycles are integers
    cycles *= 1000.0
    cycles /= clock[core[rows]]
    issue[rows] = cycles


def _classes(used: np.ndarray, chip: Chip, clock: np.ndarray):
    """Bandwidth classes of the GM copies (see ``Costs``): the per-core caps (bytes/ns) of
    each route, pool and core, the (pool, cap) pairs of the used ones numbered in ascending
    order, and the class of each (route, pool, core) (-1: unused)."""
    caps = np.array([[getattr(chip, f) for f in fields] for _, *fields in _ROUTES], float)
    caps = caps[:, :, None] * (clock / 1000.0)  # B/cycle x cycles per ns
    pairs = list(zip(*np.nonzero(used)))
    keys = sorted({(pool, float(caps[r, pool, cr])) for r, cr in pairs
                   for pool in (POOL_HBM, POOL_L2)})
    number = {key: k for k, key in enumerate(keys)}
    table = np.full(caps.shape, -1, np.int8)
    for r, cr in pairs:
        for pool in (POOL_HBM, POOL_L2):
            table[r, pool, cr] = number[(pool, float(caps[r, pool, cr]))]
    return (table, np.array([cap for _, cap in keys], float),
            np.array([pool for pool, _ in keys], np.int8))


def _mmad_cycles(c: dict, rows: np.ndarray, chip: Chip) -> np.ndarray:
    """Cube issue model (kernels.common.cycles.mmad_cycles) for the MMAD instructions."""
    k0 = np.array([getattr(chip, f"cube_k0_{d}", 0) if d in chip.cube_precisions else 0
                   for d in DTYPES], dtype=np.int64)[np.maximum(c["dtype"][rows], 0)]
    if (k0 == 0).any():
        name = DTYPES[int(c["dtype"][rows][np.argmax(k0 == 0)])]
        raise InputError("precision", name, Phrase(
            "refusal.emulator.precision", options=", ".join(chip.cube_precisions),
            chip=chip.display_name))
    return mmad_cycles(chip, c["m"][rows], c["n"][rows], c["k"][rows], k0)


def _onchip(c: dict, groups: list, chip: Chip, issue: np.ndarray, clock: np.ndarray) -> None:
    """On-chip moves, each path's rows in one call (groups in ONCHIP_PATHS order, then the
    moves of no known path), refusing a path the chip lacks."""
    for ((s, d), (rate, _)), rows in zip(ONCHIP_PATHS.items(), groups):
        if len(rows):
            if getattr(chip, rate) <= 0:
                raise InputError("transfer path", f"{s.name}->{d.name}", Phrase(
                    "refusal.emulator.path", chip=chip.display_name, rate=rate))
            _set_ns(issue, rows, onchip_cycles(chip, s, d, c["nbytes"][rows]), clock, c["core"])
    if len(groups[-1]):
        i = groups[-1][0]
        path = f"{Level(int(c['src'][i])).name}->{Level(int(c['dst'][i])).name}"
        raise InputError("transfer path", path, Phrase("refusal.emulator.paths", paths=", ".join(
            f"{s.name}->{d.name}" for s, d in ONCHIP_PATHS)))

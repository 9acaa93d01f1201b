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

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from hardware_presets.fields import DMA_PATHS
from kernels.common.cycles import ONCHIP_PATHS, mmad_cycles, onchip_cycles, vector_cycles
from kernels.common.program import DTYPE_BYTES, DTYPES, Level, Program

from ._jit.costing import (
    FIXPIPE,
    GM_NONE,
    GM_READ,
    GM_WRITE,
    MMAD,
    ONCHIP,
    POOL_HBM,
    POOL_L2,
    ROUTE_GM,
    ROUTE_PATH,
    ROUTES,
    VECTOR,
    scan,
)

#: the codes the engines read (defined with the compiled scan that writes them)
__all__ = ["GM_NONE", "GM_READ", "GM_WRITE", "POOL_HBM", "POOL_L2", "Costs", "check_cores",
           "compute_costs", "costs_of"]

#: rows costed at a time by one formula (``_chunks``)
COST_CHUNK = 1 << 15


@dataclass(frozen=True, eq=False)
class Costs:
    """Per-instruction timing inputs for the engine (indexed like the columns given): how
    long each holds its pipe, and for a GM copy its route (a DMA path, reads into L1 apart),
    whose tables, by route + 1 (row 0: not a copy) and core, give the rest: latency, queue
    depth, what it does to GM, and its bandwidth classes when served by HBM and by L2 (flows
    of one pool with one per-core cap share a rate; classes numbered by (pool, cap)
    ascending, as the jit engine's water-filling wants them; -1: none). Four per-instruction
    arrays less to gather and read than storing each: the properties expand them."""

    issue_ns: np.ndarray  # time the pipe is held: the whole duration, or a copy's issue cost
    route: np.ndarray  # int8 GM copy's route (index in ROUTES), -1: not a GM copy
    core: np.ndarray  # each instruction's core (the program's column)
    route_latency_ns: np.ndarray  # [route + 1, core]: from the end of issue until bytes flow
    route_depth: np.ndarray  # int8 [route + 1]: copies its pipe may hold in flight
    route_gm: np.ndarray  # int8 [route + 1]: GM_NONE / GM_READ / GM_WRITE
    route_class: np.ndarray  # int8 [route + 1, pool, core]: bandwidth class
    class_cap: np.ndarray  # bytes/ns per class
    class_pool: np.ndarray  # int8 POOL_HBM / POOL_L2 per class
    sync_ns: float  # SyncAll cost after the last core arrives

    @property
    def latency_ns(self) -> np.ndarray:
        return by_route(self.route_latency_ns, self.route, self.core)

    @property
    def max_outstanding(self) -> np.ndarray:
        return by_route(self.route_depth, self.route)

    @property
    def gm(self) -> np.ndarray:
        return by_route(self.route_gm, self.route)

    @property
    def cls_hbm(self) -> np.ndarray:
        return by_route(self.route_class, self.route, POOL_HBM, self.core)

    @property
    def cls_l2(self) -> np.ndarray:
        return by_route(self.route_class, self.route, POOL_L2, self.core)

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


def by_route(table: np.ndarray, route: np.ndarray, *where) -> np.ndarray:
    """Each instruction's entry of a route table: row route + 1 (row 0: not a GM copy), then
    ``where`` (a pool, each instruction's core or lane)."""
    return table[(route + 1, *where)]


def compute_costs(program: Program, chip: Chip) -> Costs:
    """Durations, GM classification and path caps for every instruction of ``program``."""
    return costs_of(program.cols, chip)


def costs_of(c: dict[str, np.ndarray], chip: Chip) -> Costs:
    """``compute_costs`` on instruction columns. One compiled pass costs the DMA copies and
    scalars and sorts the other rows into groups, each then costed by its formula of
    kernels.common.cycles on its rows only; the routes' tables (routes x cores) give the
    copies the rest. No full-length temporaries."""
    check_cores(c["core"], chip)
    clock = np.asarray(chip.core_clocks_MHz(), dtype=float)
    dma = np.array([[getattr(chip, f"{p}_{f}") for f in ("issue_cycles", "burst_cycles",
                                                          "latency_cycles")] for p in DMA_PATHS],
                   float)
    depth = np.array([getattr(chip, f"{p}_max_outstanding") for p in DMA_PATHS], np.int8)
    issue, route, rows, starts, used = scan(c["kind"], c["core"], c["src"], c["dst"], c["pipe"],
                                            c["nbytes"], c["cycles"], clock, dma,
                                            float(chip.dma_burst_bytes))
    group = [rows[a:b] for a, b in zip(starts[:-1], starts[1:])]
    for part in _chunks(group[MMAD]):
        _set_ns(issue, part, _mmad_cycles(c, part, chip), clock, c["core"])
    widths = np.array([DTYPE_BYTES[d] for d in DTYPES])
    for part in _chunks(group[VECTOR]):
        width = widths[np.maximum(c["dtype"][part], 0)]
        _set_ns(issue, part, vector_cycles(chip, c["elems"][part], width, c["vclass"][part]),
                clock, c["core"])
    _onchip(c, group[ONCHIP:], chip, issue, clock)
    if used[FIXPIPE].any() and not chip.has_fixpipe:
        raise InputError("pipe", "FIX", Phrase("refusal.emulator.fixpipe", chip=chip.display_name))
    table, class_cap, class_pool = _classes(used, chip, clock)
    none = np.full((1, *table.shape[1:]), -1, np.int8)  # row 0: not a copy
    latency = np.zeros((len(ROUTES) + 1, len(clock)))
    latency[1:] = dma[ROUTE_PATH, 2][:, None] * 1000.0 / clock  # cycles x 1000 / MHz
    return Costs(issue, route, c["core"], latency,
                 np.concatenate([[1], depth[ROUTE_PATH]]).astype(np.int8),
                 np.array([GM_NONE, *ROUTE_GM], np.int8), np.concatenate([none, table]),
                 class_cap, class_pool, chip.sync_all_cycles * 1000.0 / chip.clock_MHz)


def check_cores(core: np.ndarray, chip: Chip) -> None:
    """Refuse a program that names a core the chip does not have."""
    n_cores = len(chip.core_kinds())
    if len(core) and (core.min() < 0 or core.max() >= n_cores):
        raise InputError("core", int(core.max()),
                         Phrase("refusal.emulator.core", last=n_cores - 1, chip=chip.display_name))


def _chunks(rows: np.ndarray):
    """``rows`` a stretch at a time, for the formulas of kernels.common.cycles: each makes
    several numpy temporaries of its rows' length, which at this length stay in cache and
    below the size from which numpy asks for huge pages (4 MB; a process's first use of one
    costs ~8 ns a byte on a virtual machine, and the cost model of a 10^7-instruction
    program took 175 to 800 ms by how many were new)."""
    return (rows[lo:lo + COST_CHUNK] for lo in range(0, len(rows), COST_CHUNK))


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
    caps = np.array([[getattr(chip, f) for f in fields] for _, *fields in ROUTES], float)
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
            for part in _chunks(rows):
                _set_ns(issue, part, onchip_cycles(chip, s, d, c["nbytes"][part]), clock,
                        c["core"])
    if len(groups[-1]):
        i = groups[-1][0]
        path = f"{Level(int(c['src'][i])).name}->{Level(int(c['dst'][i])).name}"
        raise InputError("transfer path", path, Phrase("refusal.emulator.paths", paths=", ".join(
            f"{s.name}->{d.name}" for s, d in ONCHIP_PATHS)))

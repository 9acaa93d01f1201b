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
import pandas as pd

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from hardware_presets.fields import DMA_PATHS
from kernels.common.cycles import ONCHIP_PATHS, mmad_cycles, onchip_cycles, vector_cycles
from kernels.common.program import DTYPE_BYTES, DTYPES, Kind, Level, Pipe, Program

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
    """``compute_costs`` on instruction columns. Each kind of instruction is costed on its
    own rows only (one pass over the kinds, then the formulas on each subset), so a large
    program costs a few passes over its columns, not one per formula."""
    n, kind = len(c["core"]), c["kind"]
    n_cores = len(chip.core_kinds())
    if n and (c["core"].min() < 0 or c["core"].max() >= n_cores):
        raise InputError("core", int(c["core"].max()),
                         Phrase("refusal.emulator.core", last=n_cores - 1, chip=chip.display_name))
    cycles, latency = np.zeros(n), np.zeros(n)
    max_out, gm = np.ones(n, np.int8), np.zeros(n, np.int8)
    cap_hbm, cap_l2 = np.zeros(n), np.zeros(n)
    mmad = np.flatnonzero(kind == Kind.MMAD)
    cycles[mmad] = _mmad_cycles(c, mmad, chip)
    vec = np.flatnonzero(kind == Kind.VECTOR)
    width = np.array([DTYPE_BYTES[d] for d in DTYPES])[np.maximum(c["dtype"][vec], 0)]
    cycles[vec] = vector_cycles(chip, c["elems"][vec], width, c["vclass"][vec])
    scalar = np.flatnonzero(kind == Kind.SCALAR)
    cycles[scalar] = c["cycles"][scalar]
    moves = np.flatnonzero(kind == Kind.TRANSFER)
    gm[moves] = _gm_kind(c, moves)
    _onchip_cycles(c, moves[gm[moves] == GM_NONE], chip, cycles)
    for prefix, rows in _dma_paths(c, moves, gm[moves]).items():
        _dma_path(c, rows, chip, prefix, (cycles, latency, max_out, cap_hbm, cap_l2))
    clock = np.asarray(chip.core_clocks_MHz(), dtype=float)[c["core"]]
    per_ns = clock / 1000.0  # cycles per ns
    cap_hbm *= per_ns
    cap_l2 *= per_ns
    del per_ns
    classes = _classes(gm != GM_NONE, cap_hbm, cap_l2)
    del cap_hbm, cap_l2
    cycles *= 1000.0
    cycles /= clock
    latency *= 1000.0
    latency /= clock
    return Costs(cycles, latency, max_out, gm, *classes,
                 chip.sync_all_cycles * 1000.0 / chip.clock_MHz)


def _classes(copy: np.ndarray, cap_hbm: np.ndarray, cap_l2: np.ndarray):
    """Bandwidth classes of the GM copies (see ``Costs``). The few distinct caps are found
    by hashing (pandas.factorize), not by sorting every instruction's."""
    found = {}
    for pool, caps in ((POOL_HBM, cap_hbm), (POOL_L2, cap_l2)):
        codes, values = pd.factorize(caps, sort=False)
        used = np.bincount(codes[copy], minlength=len(values)) > 0
        found[pool] = (codes, values, used)
    keys = sorted((pool, float(v)) for pool, (_, values, used) in found.items()
                  for v in values[used])
    number = {key: k for k, key in enumerate(keys)}
    cls = []
    for pool, (codes, values, _) in found.items():
        table = np.array([number.get((pool, float(v)), -1) for v in values], np.int8)
        cls.append(np.where(copy, table[codes], np.int8(-1)).astype(np.int8))
    return (cls[0], cls[1], np.array([cap for _, cap in keys], float),
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


def _gm_kind(c: dict, moves: np.ndarray) -> np.ndarray:
    """GM_READ (from GM), GM_WRITE (to GM) or GM_NONE (on chip) of each move."""
    src, dst = c["src"][moves], c["dst"][moves]
    return np.where(src == Level.GM, GM_READ,
                    np.where(dst == Level.GM, GM_WRITE, GM_NONE)).astype(np.int8)


def _dma_paths(c: dict, moves: np.ndarray, gm: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of the GM copies of each DMA path (field prefix of DMA_PATHS)."""
    fix = (gm == GM_WRITE) & (c["pipe"][moves] == Pipe.FIX)
    return dict(zip(DMA_PATHS, (moves[gm == GM_READ], moves[(gm == GM_WRITE) & ~fix],
                                moves[fix])))


def _dma_path(c: dict, rows: np.ndarray, chip: Chip, prefix: str, out: tuple) -> None:
    """One DMA path's copies: issue cycles (fixed + per burst), latency, queue depth and
    per-core caps (B/cycle) when served by HBM and by L2."""
    if not len(rows):
        return
    cycles, latency, max_out, cap_hbm, cap_l2 = out
    if prefix == "fixpipe_gm" and not chip.has_fixpipe:
        raise InputError("pipe", "FIX", Phrase("refusal.emulator.fixpipe", chip=chip.display_name))
    bursts = np.ceil(c["nbytes"][rows] / chip.dma_burst_bytes)
    cycles[rows] += getattr(chip, f"{prefix}_issue_cycles") + \
        bursts * getattr(chip, f"{prefix}_burst_cycles")
    latency[rows] = getattr(chip, f"{prefix}_latency_cycles")
    max_out[rows] = getattr(chip, f"{prefix}_max_outstanding")
    if prefix == "gm_read":
        cap_hbm[rows] = chip.gm_read_hbm_bytes_per_cycle
        cap_l2[rows] = np.where(c["dst"][rows] == Level.L1, chip.gm_read_l1_bytes_per_cycle,
                                chip.gm_read_l2_bytes_per_cycle)
    else:
        cap_hbm[rows] = cap_l2[rows] = getattr(chip, f"{prefix}_bytes_per_cycle")


def _onchip_cycles(c: dict, rows: np.ndarray, chip: Chip, cycles: np.ndarray) -> None:
    """Fixed cycles of on-chip moves (in place), refusing a path the chip lacks."""
    src, dst = c["src"][rows], c["dst"][rows]
    left = np.ones(len(rows), bool)
    for (s, d), (rate, _) in ONCHIP_PATHS.items():
        sel = left & (src == s) & (dst == d)
        if sel.any() and getattr(chip, rate) <= 0:
            raise InputError("transfer path", f"{s.name}->{d.name}",
                             Phrase("refusal.emulator.path", chip=chip.display_name, rate=rate))
        cycles[rows[sel]] += onchip_cycles(chip, s, d, c["nbytes"][rows[sel]])
        left &= ~sel
    if left.any():
        i = int(np.argmax(left))
        path = f"{Level(int(src[i])).name}->{Level(int(dst[i])).name}"
        raise InputError("transfer path", path, Phrase("refusal.emulator.paths", paths=", ".join(
            f"{s.name}->{d.name}" for s, d in ONCHIP_PATHS)))

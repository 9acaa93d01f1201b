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
from hardware_presets.errors import InputError
from hardware_presets.fields import DMA_PATHS
from kernels.common.cycles import ONCHIP_PATHS, mmad_cycles, onchip_cycles, vector_cycles
from kernels.common.program import DTYPE_BYTES, DTYPES, Kind, Level, Pipe, Program

GM_NONE, GM_READ, GM_WRITE = 0, 1, 2
POOL_HBM, POOL_L2 = 0, 1

@dataclass(frozen=True, eq=False)
class Costs:
    """Per-instruction timing inputs for the engine (indexed by program instruction id)."""

    issue_ns: np.ndarray  # time the pipe is held: the whole duration, or a copy's issue cost
    latency_ns: np.ndarray  # GM copies: from the end of the issue until the bytes flow
    max_outstanding: np.ndarray  # int64: copies its pipe may hold in flight (1: one at a time)
    gm: np.ndarray  # GM_NONE / GM_READ / GM_WRITE
    cap_hbm: np.ndarray  # bytes/ns cap of this core's path when served by HBM
    cap_l2: np.ndarray  # bytes/ns cap when served by L2 (reads)
    sync_ns: float  # SyncAll cost after the last core arrives


def _cycles_to_ns(cycles: np.ndarray, clock_mhz: np.ndarray) -> np.ndarray:
    return cycles * 1000.0 / clock_mhz


def compute_costs(program: Program, chip: Chip) -> Costs:
    """Durations, GM classification and path caps for every instruction of ``program``."""
    c = program.cols
    n_cores = len(chip.core_kinds())
    if len(c["core"]) and (c["core"].min() < 0 or c["core"].max() >= n_cores):
        bad = int(c["core"].max())
        raise InputError("core", bad, f"0..{n_cores - 1} (cores of {chip.display_name})")
    clock = np.asarray(chip.core_clocks_MHz(), dtype=float)[c["core"]]
    cycles = np.zeros(len(c["core"]))
    cycles += _mmad_cycles(c, chip)
    cycles += _vector_cycles(c, chip)
    cycles += np.where(c["kind"] == Kind.SCALAR, c["cycles"], 0.0)
    gm, caps, paths = _transfer_cycles(c, chip, cycles)
    latency, max_out = _dma_queues(c, chip, paths, cycles)
    per_ns = clock / 1000.0  # cycles per ns
    return Costs(_cycles_to_ns(cycles, clock), _cycles_to_ns(latency, clock), max_out, gm,
                 caps[0] * per_ns, caps[1] * per_ns,
                 chip.sync_all_cycles * 1000.0 / chip.clock_MHz)


def _mmad_cycles(c: dict, chip: Chip) -> np.ndarray:
    """Cube issue model (kernels.common.cycles.mmad_cycles) for the MMAD instructions."""
    is_mmad = c["kind"] == Kind.MMAD
    if not is_mmad.any():
        return 0.0
    k0 = np.array([getattr(chip, f"cube_k0_{d}", 0) if d in chip.cube_precisions else 0
                   for d in DTYPES], dtype=np.int64)[np.maximum(c["dtype"], 0)]
    lacking = is_mmad & (k0 == 0)
    if lacking.any():
        name = DTYPES[int(c["dtype"][np.argmax(lacking)])]
        raise InputError("precision", name, f"one of {chip.cube_precisions} on the "
                         f"{chip.display_name} cube")
    return np.where(is_mmad, mmad_cycles(chip, c["m"], c["n"], c["k"], np.maximum(k0, 1)), 0.0)


def _vector_cycles(c: dict, chip: Chip) -> np.ndarray:
    """Vector instructions (kernels.common.cycles.vector_cycles): fixed issue cost + 256-byte
    repeats (simple ops), a fixed element rate for transcendental ops (perf-tables), or
    several cycles per repeat for sorts (msKPP estimate)."""
    is_vec = c["kind"] == Kind.VECTOR
    if not is_vec.any():
        return 0.0
    width = np.array([DTYPE_BYTES[d] for d in DTYPES])[np.maximum(c["dtype"], 0)]
    return np.where(is_vec, vector_cycles(chip, c["elems"], width, c["vclass"]), 0.0)


def _dma_paths(c: dict, gm: np.ndarray) -> dict[str, np.ndarray]:
    """Which GM copies take which DMA path (field prefix of DMA_PATHS)."""
    fix = (gm == GM_WRITE) & (c["pipe"] == Pipe.FIX)
    return dict(zip(DMA_PATHS, (gm == GM_READ, (gm == GM_WRITE) & ~fix, fix)))


def _dma_queues(c: dict, chip: Chip, paths: dict, cycles: np.ndarray):
    """Issue cycles of GM copies (added in place), their latency and the queue depth."""
    latency = np.zeros(len(cycles))
    max_out = np.ones(len(cycles), np.int64)
    bursts = np.ceil(c["nbytes"].astype(float) / chip.dma_burst_bytes)
    for prefix, sel in paths.items():
        if not sel.any():
            continue
        cycles[sel] += getattr(chip, f"{prefix}_issue_cycles") + \
            bursts[sel] * getattr(chip, f"{prefix}_burst_cycles")
        latency[sel] = getattr(chip, f"{prefix}_latency_cycles")
        max_out[sel] = getattr(chip, f"{prefix}_max_outstanding")
    return latency, max_out


def _transfer_cycles(c: dict, chip: Chip, cycles: np.ndarray):
    """Fixed cycles of on-chip moves (in place); GM kind, per-core caps (B/cycle) and the
    DMA path of every GM copy."""
    is_tr = c["kind"] == Kind.TRANSFER
    src, dst, nbytes = c["src"], c["dst"], c["nbytes"].astype(float)
    gm = np.where(is_tr & (src == Level.GM), GM_READ,
                  np.where(is_tr & (dst == Level.GM), GM_WRITE, GM_NONE)).astype(np.int8)
    cap_hbm = np.zeros(len(src))
    cap_l2 = np.zeros(len(src))
    paths = _dma_paths(c, gm)
    reads, fix_write, other_write = paths["gm_read"], paths["fixpipe_gm"], paths["gm_write"]
    cap_hbm[reads] = chip.gm_read_hbm_bytes_per_cycle
    cap_l2[reads] = np.where(dst[reads] == Level.L1, chip.gm_read_l1_bytes_per_cycle,
                             chip.gm_read_l2_bytes_per_cycle)
    if fix_write.any() and not chip.has_fixpipe:
        raise InputError("pipe", "FIX", f"no fixpipe on {chip.display_name} (coupled)")
    cap_hbm[fix_write] = cap_l2[fix_write] = chip.fixpipe_gm_bytes_per_cycle
    cap_hbm[other_write] = cap_l2[other_write] = chip.gm_write_bytes_per_cycle
    onchip = is_tr & (gm == GM_NONE)
    for (s, d), (rate, _) in ONCHIP_PATHS.items():
        sel = onchip & (src == s) & (dst == d)
        if sel.any() and getattr(chip, rate) <= 0:
            raise InputError("transfer path", f"{s.name}->{d.name}",
                             f"a path {chip.display_name} has ({rate} is 0)")
        cycles[sel] += onchip_cycles(chip, s, d, nbytes[sel])
        onchip &= ~sel
    if onchip.any():
        i = int(np.argmax(onchip))
        path = f"{Level(int(src[i])).name}->{Level(int(dst[i])).name}"
        raise InputError("transfer path", path, "a path the chip has: GM<->L1/UB/L0, "
                         + ", ".join(f"{s.name}->{d.name}" for s, d in ONCHIP_PATHS))
    return gm, (cap_hbm, cap_l2), paths

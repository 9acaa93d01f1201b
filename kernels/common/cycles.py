"""The cost model's cycle formulas, in the lowest layer that both need them: kernels
estimate before any emulation (task costs for the scheduling policies, a tiling's per-step
budget) and the emulator's cost model (explorer/core/emulator/cost.py) applies the same
functions and path table to every instruction, so an estimate and the emulated duration of
an instruction without contention agree by construction. What only the emulator knows
(DMA queues, shared bandwidth) stays there.
"""
from __future__ import annotations

import numpy as np

from hardware_presets import Chip
from kernels.common.program import Level, VClass

#: on-chip paths: (src, dst) -> (throughput field, fixed-cycles field) of the chip preset
ONCHIP_PATHS = {
    (Level.L1, Level.L0A): ("mte1_l0a_bytes_per_cycle", "mte1_fixed_cycles"),
    (Level.L1, Level.L0B): ("mte1_l0b_bytes_per_cycle", "mte1_fixed_cycles"),
    (Level.L0C, Level.L1): ("fixpipe_l1_bytes_per_cycle", "fixpipe_fixed_cycles"),
    (Level.L0C, Level.UB): ("ub_copy_bytes_per_cycle", "vector_fixed_cycles"),
    (Level.UB, Level.UB): ("ub_copy_bytes_per_cycle", "vector_fixed_cycles"),
    (Level.UB, Level.L1): ("ub_copy_bytes_per_cycle", "mte1_fixed_cycles"),
    (Level.L1, Level.UB): ("ub_copy_bytes_per_cycle", "mte1_fixed_cycles"),
}


def vector_cycles(chip: Chip, elems, width_bytes, vclass=VClass.SIMPLE) -> np.ndarray:
    """One vector instruction: a fixed issue cost plus, by class, one vector_bytes_per_cycle
    repeat per cycle (simple ops), vector_special_elems_per_cycle elements per cycle (exp,
    ln, div...), or vector_sort_cycles_per_repeat cycles per repeat (Sort32, MrgSort)."""
    elems = np.asarray(elems, dtype=np.float64)
    vclass = np.asarray(vclass)
    repeats = np.ceil(elems * np.asarray(width_bytes) / chip.vector_bytes_per_cycle)
    special = np.ceil(elems / chip.vector_special_elems_per_cycle)
    work = np.where(vclass == VClass.SPECIAL, special,
                    np.where(vclass == VClass.SORT, repeats * chip.vector_sort_cycles_per_repeat,
                             repeats))
    return chip.vector_fixed_cycles + work


def mmad_cycles(chip: Chip, m, n, k, k0) -> np.ndarray:
    """One Mmad: dT + ceil16(m) x ceil16(n) x ceil_k0(k) fractal steps."""
    steps = (-(-np.asarray(m) // chip.cube_m0)) * (-(-np.asarray(n) // chip.cube_n0)) * \
        (-(-np.asarray(k) // np.asarray(k0)))
    return chip.cube_fixed_cycles + steps


def onchip_cycles(chip: Chip, src: Level, dst: Level, nbytes) -> np.ndarray:
    """An on-chip move (MTE1 LoadData, a fixpipe or UB copy): the path's fixed cycles plus
    its bytes at the path's throughput."""
    rate, fixed = ONCHIP_PATHS[(src, dst)]
    return getattr(chip, fixed) + np.asarray(nbytes, dtype=np.float64) / getattr(chip, rate)


def gm_read_cycles(chip: Chip, nbytes, sharing_cores: int) -> np.ndarray:
    """A GM read served by HBM with ``sharing_cores`` cores streaming at once: the read
    latency plus the bytes at the smaller of the per-core cap and a fair share of HBM
    (an estimate: the emulator shares bandwidth as transfers actually overlap)."""
    share = chip.hbm_bytes_per_ns * 1000.0 / chip.clock_MHz / max(1, sharing_cores)
    rate = min(chip.gm_read_hbm_bytes_per_cycle, share)
    return chip.gm_read_latency_cycles + np.asarray(nbytes, dtype=np.float64) / rate

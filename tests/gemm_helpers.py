"""Shared helpers of the GEMM tests: an independent statement of the tiling arithmetic
(how many base tiles, K splits, K steps and L1 chunks a GEMM has), per-op totals of a
built program, and where its GM reads were served from.

The arithmetic here is written from the tiling's definition, not from kernels/gemm/kernel.py:
C is cut into base_m x base_n tiles; K into Z splits of k_per_z (ceil(K / grid_z) rounded
up to whole base_k steps, so Z may come out below grid_z); each split into base_k steps;
and the steps of a split into L1 chunks of depth_k steps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.core.emulator.schedule import SERVED_HBM, SERVED_L2, SERVED_MULTICAST
from kernels.common.program import Level, Program


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Tiling:
    """The tiling of a GEMM counted by hand."""

    row_tiles: int  # ceil(M / base_m)
    col_tiles: int  # ceil(N / base_n)
    k_ranges: tuple[tuple[int, int], ...]  # [k_lo, k_hi) of every split z
    chunks: tuple[tuple[int, int], ...]  # (k0, size) of every L1 chunk, over all splits
    steps_per_c_tile: int  # base_k steps of one C tile summed over its splits

    @property
    def Z(self) -> int:
        return len(self.k_ranges)

    @property
    def c_tiles(self) -> int:
        return self.row_tiles * self.col_tiles

    @property
    def chunks_per_c_tile(self) -> int:
        return len(self.chunks)


def tiling(p: dict) -> Tiling:
    """Count tiles, splits, steps and chunks of the (validated) parameters ``p``."""
    M, N, K, bm, bn, bk, depth = (p[k] for k in ("M", "N", "K", "base_m", "base_n",
                                                 "base_k", "depth_k"))
    k_per_z = ceil_div(ceil_div(K, p["grid_z"]), bk) * bk
    ranges = tuple((lo, min(K, lo + k_per_z)) for lo in range(0, K, k_per_z))
    chunks, steps = [], 0
    for lo, hi in ranges:
        steps += ceil_div(hi - lo, bk)
        for k0 in range(lo, hi, depth * bk):
            chunks.append((k0, min(depth * bk, hi - k0)))
    return Tiling(ceil_div(M, bm), ceil_div(N, bn), ranges, tuple(chunks), steps)


def col_widths(p: dict) -> list[int]:
    """Widths of the column tiles of C (the last one may be partial)."""
    return [min(p["base_n"], p["N"] - c0) for c0 in range(0, p["N"], p["base_n"])]


# ---- per-op views of a program ------------------------------------------------------------
def op_of(program: Program) -> np.ndarray:
    """The op label of every instruction."""
    return np.asarray(program.op_names, dtype=object)[program.cols["op"]]


def ids_of(program: Program, label: str) -> np.ndarray:
    """Instruction ids with op label ``label``, in id order."""
    return np.flatnonzero(op_of(program) == label)


def counts(program: Program) -> dict[str, int]:
    """Instructions per op label."""
    labels, n = np.unique(op_of(program), return_counts=True)
    return {str(k): int(v) for k, v in zip(labels, n)}


def bytes_of(program: Program, label: str) -> int:
    """Bytes moved by all instructions with op label ``label``."""
    return int(program.cols["nbytes"][ids_of(program, label)].sum())


def mmad_flops(program: Program) -> int:
    """2 m n k summed over the cube instructions."""
    c = program.cols
    mm = np.flatnonzero(np.char.startswith(op_of(program).astype(str), "Mmad"))
    return int((2 * c["m"][mm] * c["n"][mm] * c["k"][mm]).sum())


def gm_read_bytes(program: Program, schedule=None, served: int | None = None) -> int:
    """Bytes of all GM reads, or of those served from ``served`` (SERVED_HBM / _L2 / ...)."""
    c = program.cols
    sel = c["src"] == Level.GM
    if served is not None:
        sel &= schedule.served == served
    return int(c["nbytes"][sel].sum())


def served_split(program: Program, schedule) -> dict[str, int]:
    """GM read bytes by where they were served from."""
    return {name: gm_read_bytes(program, schedule, code) for name, code in
            (("hbm", SERVED_HBM), ("l2", SERVED_L2), ("multicast", SERVED_MULTICAST))}

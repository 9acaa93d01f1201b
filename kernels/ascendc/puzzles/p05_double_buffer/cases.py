"""Puzzle 05: z = x + y (half) on blockDim cores, double-buffered tiles (BUFFER_NUM = 2)."""
from __future__ import annotations

import numpy as np

from kernels.ascendc.puzzles import Case, tolerance

BLOCK = 16  # halves per 32-byte block
BUFFER_NUM = 2


def make(name: str, block_dim: int, tile_num: int, half_tile: int,
         rng: np.random.Generator) -> Case:
    block_length = tile_num * BUFFER_NUM * half_tile
    n = block_dim * block_length
    x, y = (rng.uniform(-100.0, 100.0, n).astype(np.float16) for _ in "xy")
    rtol, atol = tolerance("fp16", roundings=1)
    expected = x.astype(np.float64) + y.astype(np.float64)
    return Case(name, {"x": x, "y": y, "z": np.zeros(n, np.float16)},
                {"blockLength": block_length, "tileNum": tile_num}, block_dim, ("z",),
                {"z": expected}, rtol, atol)


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    shapes = [(int(rng.integers(2, 6)), int(rng.integers(1, 9)), BLOCK * int(rng.integers(1, 48))),
              (int(rng.integers(6, 17)), int(rng.integers(1, 5)), BLOCK * int(rng.integers(1, 32)))]
    return [make(f"{d} cores x {t} tiles x {2 * h}", d, t, h, rng) for d, t, h in shapes]


def timing_case() -> Case:
    return make("timing", 8, 8, 2048, np.random.default_rng(2024))

"""Puzzle 04: z = x + y (half) on blockDim cores, each block in tileNum tiles."""
from __future__ import annotations

import numpy as np

from kernels.ascendc.puzzles import Case, tolerance

BLOCK = 16  # halves per 32-byte block


def make(name: str, block_dim: int, tile_num: int, tile_length: int,
         rng: np.random.Generator) -> Case:
    block_length = tile_num * tile_length
    n = block_dim * block_length
    x, y = (rng.uniform(-100.0, 100.0, n).astype(np.float16) for _ in "xy")
    rtol, atol = tolerance("fp16", roundings=1)
    expected = x.astype(np.float64) + y.astype(np.float64)
    return Case(name, {"x": x, "y": y, "z": np.zeros(n, np.float16)},
                {"blockLength": block_length, "tileNum": tile_num}, block_dim, ("z",),
                {"z": expected}, rtol, atol)


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    small = (int(rng.integers(2, 6)), int(rng.integers(2, 9)), BLOCK * int(rng.integers(1, 64)))
    # one core whose block (65536 halves, 3 x 128 KB of buffers) cannot fit the UB at once
    large = (1, 16, 4096)
    return [make(f"{d} cores x {t} tiles x {n}", d, t, n, rng) for d, t, n in (small, large)]


def timing_case() -> Case:
    return make("timing", 8, 16, 2048, np.random.default_rng(2024))

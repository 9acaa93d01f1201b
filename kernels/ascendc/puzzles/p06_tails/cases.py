"""Puzzle 06: z = x + y (half) on blockDim cores in tiles of tileLength, each block with a
tail of blockLength % tileLength elements (a multiple of 16 halves, never 0)."""
from __future__ import annotations

import numpy as np

from kernels.ascendc.puzzles import Case, tolerance

BLOCK = 16  # halves per 32-byte block


def make(name: str, block_dim: int, block_length: int, tile_length: int,
         rng: np.random.Generator) -> Case:
    n = block_dim * block_length
    x, y = (rng.uniform(-100.0, 100.0, n).astype(np.float16) for _ in "xy")
    rtol, atol = tolerance("fp16", roundings=1)
    expected = x.astype(np.float64) + y.astype(np.float64)
    return Case(name, {"x": x, "y": y, "z": np.zeros(n, np.float16)},
                {"blockLength": block_length, "tileLength": tile_length}, block_dim, ("z",),
                {"z": expected}, rtol, atol)


def draw(rng: np.random.Generator, block_dim: int, max_tiles: int) -> tuple[int, int, int]:
    """(block_dim, blockLength, tileLength) with a tail that is neither 0 nor a full tile."""
    tile = BLOCK * int(rng.integers(2, 64))
    tail = BLOCK * int(rng.integers(1, tile // BLOCK))
    return block_dim, tile * int(rng.integers(0, max_tiles + 1)) + tail, tile


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    shapes = [draw(rng, int(rng.integers(2, 5)), 6), draw(rng, int(rng.integers(5, 13)), 3)]
    return [make(f"{d} cores x {b} in tiles of {t}", d, b, t, rng) for d, b, t in shapes]


def timing_case() -> Case:
    return make("timing", 8, 31 * 1024 + 512, 2048, np.random.default_rng(2024))

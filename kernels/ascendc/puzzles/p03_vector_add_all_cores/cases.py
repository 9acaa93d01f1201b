"""Puzzle 03: z = x + y (half) on blockDim cores, one block of blockLength per core."""
from __future__ import annotations

import numpy as np

from kernels.ascendc.puzzles import Case, tolerance

BLOCK = 16  # halves per 32-byte block
MAX_BLOCK_LENGTH = 16384


def make(name: str, block_dim: int, block_length: int, rng: np.random.Generator) -> Case:
    n = block_dim * block_length
    x, y = (rng.uniform(-100.0, 100.0, n).astype(np.float16) for _ in "xy")
    rtol, atol = tolerance("fp16", roundings=1)
    expected = x.astype(np.float64) + y.astype(np.float64)
    return Case(name, {"x": x, "y": y, "z": np.zeros(n, np.float16)},
                {"blockLength": block_length}, block_dim, ("z",), {"z": expected}, rtol, atol)


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    found = []
    for block_dim in (int(rng.integers(2, 5)), int(rng.integers(5, 13))):
        length = BLOCK * int(rng.integers(1, 128))
        found.append(make(f"{block_dim} cores x {length}", block_dim, length, rng))
    return found


def timing_case() -> Case:
    return make("timing", 48, 4096, np.random.default_rng(2024))

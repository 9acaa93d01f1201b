"""Puzzle 01: y = x (half), one core, the whole vector in one UB buffer."""
from __future__ import annotations

import numpy as np

from kernels.ascendc.puzzles import Case, tolerance

BLOCK = 16  # halves per 32-byte block
MAX_LENGTH = 16384


def make(name: str, length: int, rng: np.random.Generator) -> Case:
    x = rng.uniform(-1000.0, 1000.0, length).astype(np.float16)
    rtol, atol = tolerance("fp16", roundings=0)  # a copy is exact
    return Case(name, {"x": x, "y": np.zeros(length, np.float16)}, {"length": length}, 1,
                ("y",), {"y": x.astype(np.float64)}, rtol, atol)


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    # multiples of two blocks, so that half a vector is still whole blocks (the wrong
    # solution copies half of it: a value error, not an alignment error)
    lengths = [2 * BLOCK * int(rng.integers(1, 32)),
               2 * BLOCK * int(rng.integers(32, MAX_LENGTH // (2 * BLOCK) + 1))]
    return [make(f"length {n}", n, rng) for n in lengths]


def timing_case() -> Case:
    return make("timing", MAX_LENGTH, np.random.default_rng(2024))

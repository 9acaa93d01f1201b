"""Puzzle 02: z = x + y (half), one core, the whole vector in one UB buffer each."""
from __future__ import annotations

import numpy as np

from kernels.ascendc.puzzles import Case, tolerance

BLOCK = 16  # halves per 32-byte block
MAX_LENGTH = 16384


def make(name: str, n: int, rng: np.random.Generator) -> Case:
    x, y = (rng.uniform(-100.0, 100.0, n).astype(np.float16) for _ in "xy")
    rtol, atol = tolerance("fp16", roundings=1)  # one rounding of the exact sum
    expected = x.astype(np.float64) + y.astype(np.float64)
    return Case(name, {"x": x, "y": y, "z": np.zeros(n, np.float16)}, {"totalLength": n}, 1,
                ("z",), {"z": expected}, rtol, atol)


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    lengths = [BLOCK * int(rng.integers(1, 64)),
               BLOCK * int(rng.integers(64, MAX_LENGTH // BLOCK + 1))]
    return [make(f"totalLength {n}", n, rng) for n in lengths]


def timing_case() -> Case:
    return make("timing", MAX_LENGTH, np.random.default_rng(2024))

"""Cases of RMSNorm: ``y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * gamma`` with fp16 x, gamma
and y, computed in fp32 (rows split over the cores as in the softmax: formerNum cores of
formerRows rows, the others tailRows = formerRows - 1).

Row scales range from 0.01 to about 300: the small rows make eps matter, the large ones
overflow fp16 when squared (300^2 > 65504), so the squares and their sum must be fp32.

Tolerance, relative per element: one rounding of the result to fp16 (u16), plus the fp32
work (u32 each): the squares, their sum (a random walk of roundings, 4 u32 sqrt(cols)
allowed), the mean, + eps and the reciprocal square root (which halves the relative error
of its argument), the scaling by it and by gamma: rtol = u16 + u32 (4 sqrt(cols) + 8).
Results in fp16's subnormal range are compared absolutely, within two of its rounding
errors.
"""
from __future__ import annotations

import math

import numpy as np

from kernels.ascendc.puzzles import Case
from kernels.common.formats import FORMATS

FP16, FP32 = FORMATS["fp16"], FORMATS["fp32"]
ALIGN = 16  # fp16 elements per 32-byte block
EPS = 1e-5


def split_rows(rows: int, block_dim: int) -> dict:
    tail_rows = rows // block_dim
    former_num = rows - tail_rows * block_dim
    return {"formerNum": former_num, "formerRows": tail_rows + 1, "tailRows": tail_rows}


def make_case(name: str, rows: int, cols: int, block_dim: int, rng) -> Case:
    assert cols % ALIGN == 0
    scale = 10.0 ** rng.uniform(-2.0, 2.5, (rows, 1))
    x = (scale * rng.normal(0.0, 1.0, (rows, cols))).astype(np.float16)
    gamma = rng.uniform(0.5, 1.5, cols).astype(np.float16)
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt(np.mean(x64 * x64, axis=1, keepdims=True) + EPS) * gamma.astype(np.float64)
    return Case(
        name=name,
        args={"x": x.ravel(), "gamma": gamma, "y": np.zeros(rows * cols, np.float16)},
        tiling={"rows": rows, "cols": cols, "eps": EPS, **split_rows(rows, block_dim)},
        block_dim=block_dim,
        outputs=("y",),
        expected={"y": y.ravel()},
        rtol=FP16.unit_roundoff + FP32.unit_roundoff * (4.0 * math.sqrt(cols) + 8.0),
        atol=2.0 * FP16.subnormal_error,
    )


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    out = []
    for name, block_dim in (("eight_cores", 8), ("twenty_cores", 20), ("all_cores", 48)):
        while True:
            rows = int(rng.integers(block_dim + 1, 4 * block_dim))
            if rows % block_dim:
                break
        cols = int(rng.integers(4, 41)) * ALIGN
        out.append(make_case(name, rows, cols, block_dim, rng))
    return out


def timing_case() -> Case:
    return make_case("timing", 16 * 24 + 5, 1024, 16, np.random.default_rng(9))

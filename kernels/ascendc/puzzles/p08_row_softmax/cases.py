"""Cases of the row softmax: ``y[r] = exp(x[r] - max x[r]) / sum exp(x[r] - max x[r])``
in fp32, rows split over the cores (formerNum cores of formerRows rows, the others
tailRows = formerRows - 1).

Rows carry a random offset from -40 to 120, as logits do: exp(x) overflows fp32 above
88.7, so a softmax that does not subtract the row's maximum first gives inf / inf = NaN
on those rows.

Tolerance, relative per element, with u fp32's unit roundoff and D the row's largest
max - x: x - max is rounded once (error u D in the exponent, so a relative u D in the
exponential), Exp rounds once, the row's sum of cols terms gains about u sqrt(cols)
(a random walk of roundings; 4 u sqrt(cols) allowed) plus the terms' own errors, the
scaling by 1 / sum (or the division) at most 2 u: rtol = u (2 D + 4 sqrt(cols) + 4).
Results below fp32's normal range are compared absolutely, within a few (4) of the
subnormal rounding error.
"""
from __future__ import annotations

import math

import numpy as np

from kernels.ascendc.puzzles import Case
from kernels.common.formats import FORMATS

FP32 = FORMATS["fp32"]
ALIGN = 8  # fp32 elements per 32-byte block: a row is a whole number of blocks


def split_rows(rows: int, block_dim: int) -> dict:
    """The host's tiling: former cores take one row more than the tail cores."""
    tail_rows = rows // block_dim
    former_num = rows - tail_rows * block_dim
    return {"formerNum": former_num, "formerRows": tail_rows + 1, "tailRows": tail_rows}


def make_case(name: str, rows: int, cols: int, block_dim: int, rng) -> Case:
    assert cols % ALIGN == 0
    shift = rng.uniform(-40.0, 120.0, (rows, 1))
    x = (shift + rng.normal(0.0, 3.0, (rows, cols))).astype(np.float32)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    spread = float((x64.max(axis=1) - x64.min(axis=1)).max())
    return Case(
        name=name,
        args={"x": x.ravel(), "y": np.zeros(rows * cols, np.float32)},
        tiling={"rows": rows, "cols": cols, **split_rows(rows, block_dim)},
        block_dim=block_dim,
        outputs=("y",),
        expected={"y": y.ravel()},
        rtol=FP32.unit_roundoff * (2.0 * spread + 4.0 * math.sqrt(cols) + 4.0),
        atol=4.0 * FP32.subnormal_error,
    )


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    out = []
    for name, block_dim in (("eight_cores", 8), ("twenty_cores", 20), ("all_cores", 48)):
        while True:  # rows not a multiple of the cores: some cores take one row more
            rows = int(rng.integers(block_dim + 1, 4 * block_dim))
            if rows % block_dim:
                break
        cols = int(rng.integers(8, 65)) * ALIGN
        out.append(make_case(name, rows, cols, block_dim, rng))
    return out


def timing_case() -> Case:
    return make_case("timing", 48 * 10 + 13, 1024, 48, np.random.default_rng(8))

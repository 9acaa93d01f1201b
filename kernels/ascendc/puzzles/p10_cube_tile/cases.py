"""Cases of the cube tile: ``c = a @ b`` for one (m x k) x (k x n) fp16 tile with fp32
accumulation, on one cube core (AIC).

Sizes are multiples of 16 (the cube's fractal edge) that fit the L0 buffers of 910B:
m * k and k * n halves in L0A / L0B (64 KB each), m * n floats in L0C (128 KB).

Tolerance: the products of two fp16 values are exact in fp32; the accumulation rounds to
fp32 at most once per 16-wide step of k (an Mmad, or the cube's inner loop), so each
element is within gamma_s (|a| @ |b|) of the exact value (Higham's bound for a sum of s
terms, s = k / 16 + 1 roundings, gamma_s = s u / (1 - s u), u = fp32's unit roundoff);
atol = gamma_s times the largest element of |a| @ |b|.
"""
from __future__ import annotations

import numpy as np

from kernels.ascendc.puzzles import Case
from kernels.common.formats import FORMATS, gamma

U = FORMATS["fp32"].unit_roundoff
EDGE = 16


def make_case(name: str, m: int, n: int, k: int, rng) -> Case:
    assert m % EDGE == 0 and n % EDGE == 0 and k % EDGE == 0
    assert m * k <= 32768 and k * n <= 32768 and m * n <= 32768
    a = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float16)
    b = rng.uniform(-1.0, 1.0, (k, n)).astype(np.float16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    magnitude = float((np.abs(a64) @ np.abs(b64)).max())
    return Case(
        name=name,
        args={"a": a.ravel(), "b": b.ravel(), "c": np.zeros(m * n, np.float32)},
        tiling={"m": m, "n": n, "k": k},
        block_dim=1,
        outputs=("c",),
        expected={"c": (a64 @ b64).ravel()},
        rtol=0.0,
        atol=gamma(k // EDGE + 1, U) * magnitude,
    )


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    out = []
    for name in ("tile_a", "tile_b", "tile_c"):
        while True:
            m, n, k = (int(v) * EDGE for v in rng.integers(1, 17, 3))
            if m * k <= 32768 and k * n <= 32768 and m * n <= 32768 and m != n:
                break
        out.append(make_case(name, m, n, k, rng))
    return out


def timing_case() -> Case:
    return make_case("timing", 128, 128, 256, np.random.default_rng(10))

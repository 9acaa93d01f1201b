"""Cases of the tiled GEMM: ``c = a @ b`` with fp16 a (M x K), b (K x N) and c (M x N),
fp32 accumulation, over the cube cores (AIC). The host's tiling cuts C into baseM x baseN
tiles and K into baseK chunks; core i takes the row blocks i, i + blockDim, ... of C.

Tolerance per element: the fp16 products are exact in fp32 and the accumulation rounds at
most once per 16-wide step of k, so the fp32 result is within gamma_s (|a| @ |b|) of the
exact one (Higham's bound, s = K / 16 + 1, u32 = fp32's unit roundoff); Fixpipe's
conversion to fp16 then rounds once more (u16 relative). atol = gamma_s max(|a| @ |b|)
(plus fp16's subnormal rounding error), rtol = u16.
"""
from __future__ import annotations

import numpy as np

from kernels.ascendc.puzzles import Case
from kernels.common.formats import FORMATS, gamma

FP16, FP32 = FORMATS["fp16"], FORMATS["fp32"]
EDGE = 16


def make_case(name: str, row_blocks: int, col_tiles: int, chunks: int, base: tuple,
              block_dim: int, rng) -> Case:
    base_m, base_n, base_k = base
    M, N, K = row_blocks * base_m, col_tiles * base_n, chunks * base_k
    a = rng.uniform(-1.0, 1.0, (M, K)).astype(np.float16)
    b = rng.uniform(-1.0, 1.0, (K, N)).astype(np.float16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    magnitude = float((np.abs(a64) @ np.abs(b64)).max())
    return Case(
        name=name,
        args={"a": a.ravel(), "b": b.ravel(), "c": np.zeros(M * N, np.float16)},
        tiling={"M": M, "N": N, "K": K, "baseM": base_m, "baseN": base_n, "baseK": base_k},
        block_dim=block_dim,
        outputs=("c",),
        expected={"c": (a64 @ b64).ravel()},
        rtol=FP16.unit_roundoff,
        atol=gamma(K // EDGE + 1, FP32.unit_roundoff) * magnitude + FP16.subnormal_error,
    )


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    out = []
    for name, block_dim in (("four_cores", 4), ("seven_cores", 7), ("all_cores", 24)):
        base = tuple(int(v) for v in rng.choice([16, 32, 48, 64], 3))
        # more row blocks than cores: the first ones take two
        row_blocks = block_dim + int(rng.integers(1, min(block_dim, 6) + 1))
        col_tiles = int(rng.integers(2, 5))
        chunks = int(rng.integers(2, 4))
        out.append(make_case(name, row_blocks, col_tiles, chunks, base, block_dim, rng))
    return out


def timing_case() -> Case:
    return make_case("timing", 24, 12, 2, (128, 16, 128), 24, np.random.default_rng(11))

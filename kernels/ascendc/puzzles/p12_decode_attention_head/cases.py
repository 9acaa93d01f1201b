"""Cases of one decode-attention head: ``o = softmax(K q / sqrt(d)) V`` for one query q
(d, fp16) against a KV cache K, V (L x d, fp16), o in fp32, on one vector core. The
cache is cut into blocks of blockLen rows; L is not a multiple of it (a tail block).

The largest score is put in the last (tail) block: one cached key is a multiple of q.
The running maximum then changes at the last block, so an online softmax that does not
rescale what it accumulated before is wrong on every case.

Tolerance (absolute, u = fp32's unit roundoff), from the fp32 work: a score s_j is a sum
of d products (q * scale, each product and the sum rounded: error within
u (4 sqrt(d) + 2) S, S = max_j sum_i |q_i k_ji| scale, the sum's roundings growing like
a random walk), s_j - max is rounded (u D, D the largest max - s_j), Exp rounds (u); each
weight p_j so carries a relative error e = u ((4 sqrt(d) + 2) S + D + 1), and the output
o = sum p_j v_j / sum p_j moves by at most 2 e max|v|. The weighted sums over L rows add
about u sqrt(L) (4 allowed) and the final scaling a few u, relative to max|v|:
atol = max|v| u (2 ((4 sqrt(d) + 2) S + D + 1) + 4 sqrt(L) + 8). The rescaling factors
exp(old max - new max) multiply the numerator and the denominator alike and cancel.
"""
from __future__ import annotations

import math

import numpy as np

from kernels.ascendc.puzzles import Case
from kernels.common.formats import FORMATS

U = FORMATS["fp32"].unit_roundoff
ALIGN = 16  # fp16 elements per 32-byte block: a row of d halves is whole blocks


def make_case(name: str, L: int, d: int, block_len: int, rng) -> Case:
    assert d % ALIGN == 0 and L % block_len
    scale = 1.0 / math.sqrt(d)
    q = rng.normal(0.0, 1.0, d)
    k = rng.normal(0.0, 1.0, (L, d))
    k[L - 1 - int(rng.integers(0, L % block_len))] = q * 1.5  # the largest score: tail block
    v = rng.normal(0.0, 1.0, (L, d))
    q, k, v = (x.astype(np.float16) for x in (q, k, v))
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    s = k64 @ q64 * scale
    w = np.exp(s - s.max())
    o = w @ v64 / w.sum()
    S = float((np.abs(k64) @ np.abs(q64)).max() * scale)
    D = float(s.max() - s.min())
    atol = float(np.abs(v64).max()) * U * (
        2.0 * ((4.0 * math.sqrt(d) + 2.0) * S + D + 1.0) + 4.0 * math.sqrt(L) + 8.0)
    return Case(
        name=name,
        args={"q": q, "k": k.ravel(), "v": v.ravel(), "o": np.zeros(d, np.float32)},
        tiling={"L": L, "d": d, "blockLen": block_len, "scale": scale},
        block_dim=1,
        outputs=("o",),
        expected={"o": o},
        rtol=0.0,
        atol=atol,
    )


def cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    out = []
    for name, d, block_len in (("short", 64, 32), ("medium", 128, 32), ("long", 64, 64)):
        blocks = int(rng.integers(2, 7))
        tail = int(rng.integers(1, block_len))
        out.append(make_case(name, blocks * block_len + tail, d, block_len, rng))
    return out


def timing_case() -> Case:
    return make_case("timing", 15 * 64 + 40, 128, 64, np.random.default_rng(12))

"""Tiled decode attention with an online softmax (flash-decoding), split-KV and its
element-wise error bound: the order of operations the decode kernel's program follows.

One KV head's group of g query heads (q [g, d]) attends over n cached tokens, read tile by
tile through ``load(t0, t1) -> (K_t, V_t)`` (the working values: dequantised to fp32 for
the vector unit, rounded to the cube's format for the cube). Per tile, every operation is
one rounding to ``Arith.dtype`` (float32 = the kernel; float64 = a near-exact twin):

* scores s = (q . K_t) x dtype(1 / sqrt(d)): on the vector, products rounded and summed
  over d by a pairwise tree (as ReduceSum reduces a row; the hardware's exact tree is not
  published, any tree of depth ceil(log2 d) has the same bound); on the cube,
  ``gemm_k_loop`` with the cube's k0 = 16 steps and fp32 accumulation;
* m_new = max(m, max_t s); alpha = exp(m - m_new); p = exp(s - m_new);
  l = l alpha + tree_sum(p); o = o alpha + PV with PV = sum_t p_t V_t (vector: products
  rounded, tree over the tile's rows; cube: P rounded to the cube format, gemm_k_loop);
* split-KV runs that per chunk of ``split`` tokens from a fresh state and combines the
  partials with log-sum-exp rescaling: m = max m_c, w_c = exp(m_c - m), l = sum w_c l_c,
  o = sum w_c o_c in chunk order. One chunk combines exactly (w = exp(0) = 1).
* out = o / l in dtype (the caller rounds it to the output format).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from kernels.common.accumulate import gemm_k_loop, pairwise_sum
from kernels.common.attention_math import (
    EXP_REL_ERROR,
    accumulation_error,
    decode_attention_reference,
    score_error,
)
from kernels.common.formats import ROUNDING, SUBNORMAL_ERROR, UNIT_ROUNDOFF, after_rounding, gamma
from kernels.common.precision import round_to

CUBE_K0 = 16  # the cube's fractal depth: one MMAD step sums 16 products
_U32 = UNIT_ROUNDOFF["fp32"]
#: absolute slack for every fp32 underflow (each rounding in the subnormal range is off
#: by at most 2**-150, an exp result by 2**-149; fewer than 2**40 of them per element)
_TINY = 2.0 ** -100

Loader = Callable[[int, int], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Arith:
    """How one implementation rounds: ``dtype`` of the vector arithmetic (float32 for the
    kernel, float64 for the reference twin) and ``cube`` = "" (dot products on the vector)
    or the cube's input format ("fp16" / "bf16"; needs dtype float32)."""

    dtype: type = np.float32
    cube: str = ""


VECTOR = Arith()
EXACT = Arith(np.float64)


class Partial(NamedTuple):
    """Unnormalised state of an online softmax: o [g, d], running max m and sum l [g, 1]
    (``denom``: the divisor of the output)."""

    o: np.ndarray
    m: np.ndarray
    denom: np.ndarray


def spans(t0: int, t1: int, size: int) -> list[tuple[int, int]]:
    """[t0, t1) cut into pieces of ``size`` (the last one shorter): tiles or chunks."""
    return [(a, min(t1, a + size)) for a in range(t0, t1, size)]


def tree_sum(x: np.ndarray, axis: int) -> np.ndarray:
    """Sum along ``axis`` by a pairwise tree, each add rounded to x's own dtype."""
    return pairwise_sum(np.moveaxis(x, axis, 0))


def _scores(q: np.ndarray, K: np.ndarray, arith: Arith) -> np.ndarray:
    """Scaled scores [g, T] of one tile, in arith.dtype."""
    scale = arith.dtype(1.0 / np.sqrt(q.shape[1]))
    if arith.cube:
        raw = gemm_k_loop(q, K.T, compute=arith.cube, accumulate="fp32", base_k=CUBE_K0)
        return raw.astype(np.float32) * scale
    prods = q.astype(arith.dtype)[:, None, :] * K.astype(arith.dtype)[None, :, :]
    return tree_sum(prods, axis=2) * scale


def _pv(p: np.ndarray, V: np.ndarray, arith: Arith) -> np.ndarray:
    """sum_t p_t V_t [g, d] of one tile (cube: P rounded to the cube format)."""
    if arith.cube:
        pv = gemm_k_loop(p, V, compute=arith.cube, accumulate="fp32", base_k=CUBE_K0)
        return pv.astype(np.float32)
    return tree_sum(p[:, :, None] * V.astype(arith.dtype)[None, :, :], axis=1)


def step(part: Partial, q: np.ndarray, K: np.ndarray, V: np.ndarray,
         arith: Arith) -> Partial:
    """One tile of the online softmax (see the module docstring)."""
    s = _scores(q, K, arith)
    m = np.maximum(part.m, s.max(axis=1, keepdims=True))
    alpha = np.exp(part.m - m)  # the first tile: exp(-inf) = 0 times o = l = 0
    p = np.exp(s - m)
    denom = part.denom * alpha + tree_sum(p, axis=1)[:, None]
    o = part.o * alpha + _pv(p, V, arith)
    return Partial(o, m, denom)


def attend(q: np.ndarray, load: Loader, tiles: Iterable[tuple[int, int]],
           arith: Arith = VECTOR) -> Partial:
    """The unnormalised partial of q over ``tiles`` (ranges of positions), fresh state."""
    g, d = q.shape
    dt = arith.dtype
    part = Partial(np.zeros((g, d), dt), np.full((g, 1), -np.inf, dt), np.zeros((g, 1), dt))
    for t0, t1 in tiles:
        K, V = load(t0, t1)
        part = step(part, q, K, V, arith)
    return part


def combine(parts: list[Partial]) -> Partial:
    """Split-KV combine in the partials' dtype: log-sum-exp rescaling, sums in chunk
    order (one partial comes back unchanged: w = exp(0) = 1)."""
    m = np.maximum.reduce([pt.m for pt in parts])
    o = denom = None
    for pt in parts:
        w = np.exp(pt.m - m)
        o = w * pt.o if o is None else o + w * pt.o
        denom = w * pt.denom if denom is None else denom + w * pt.denom
    return Partial(o, m, denom)


def attention(q: np.ndarray, load: Loader, n: int, *, tile: int, split: int = 0,
              arith: Arith = VECTOR) -> np.ndarray:
    """o / l [g, d] in arith.dtype for n tokens in tiles of ``tile``; with ``split`` > 0,
    per chunk of ``split`` tokens (a multiple of ``tile``) and combined."""
    chunks = spans(0, n, split) if split else [(0, n)]
    parts = [attend(q, load, spans(a, b, tile), arith) for a, b in chunks]
    part = combine(parts)
    return part.o / part.denom


# ---- error bound ---------------------------------------------------------------------
def _depth(n: int) -> int:
    """Adds a term passes through in a pairwise tree of n terms: ceil(log2 n)."""
    return (int(n) - 1).bit_length()


def _max_changes(s: np.ndarray, delta: np.ndarray, chunks, tile: int) -> np.ndarray:
    """Per row, the most tiles of one chunk (after its first) that may raise the running
    max: tile k can only if its largest exact score + 2 delta reaches the largest score
    of the tiles before it (computed scores are within delta of exact ones). Elsewhere
    alpha = exp(0) = 1 and o alpha, l alpha are exact."""
    most = np.zeros((s.shape[0], 1))
    for a, b in chunks:
        tm = np.maximum.reduceat(s[:, a:b], np.arange(0, b - a, tile), axis=1)
        pm = np.maximum.accumulate(tm, axis=1)[:, :-1]
        slack = 2 * delta + 2.0 ** -40 * (np.abs(tm[:, 1:]) + np.abs(pm))
        most = np.maximum(most, (tm[:, 1:] + slack >= pm).sum(axis=1, keepdims=True))
    return most


def error_bound(q, K, V, Kw, Vw, *, tile: int, split: int = 0, cube: str = "",
                out: str = "") -> np.ndarray:
    """Element-wise bound [g, d] on |attention(...) (rounded to ``out``) - reference|,
    the reference being softmax(q K^T / sqrt(d)) V in float64 on the unquantized K, V.
    Kw, Vw are the working values the arithmetic multiplies (after storage, dequantisation
    and casts); q is used as given (vector) or rounded to ``cube`` (qw).

    Split |out - ref| <= |out - out_w| + |out_w - ref|, out_w = softmax(qw Kw^T / sqrt(d))
    Vw in float64. The storage error |out_w - ref| is deterministic given the cache and
    enters exactly (both in float64), not through a bound; only the arithmetic is bounded.

    Arithmetic (per row; the terms of ``attention_math.decode_attention_bound``): delta
    bounds |s^_t - s_t| for the working scores (``score_error`` without a data term; the
    accumulation is gamma_{1 + ceil(log2 d)}(u32) on the vector, ``accumulation_error(d, 16,
    "fp32")`` on the cube). Write the computed o and l as sums over tokens of
    w_t = exp(s_t - m) times per-term factors: each rounding in a sum, a product or a
    rescaling multiplies the terms beneath it by (1 + eps), |eps| <= u, i.e. e^{+-u/(1-u)};
    an exp adds e^{+-E} (E = EXP_REL_ERROR); the rounded exp arguments s^_t - m_j,
    m_{k-1} - m_k (and m_c - m) telescope to at most u32 (spread(s) + 2 delta). With J
    tiles per chunk, C the tiles that may raise the running max (``_max_changes``; only
    they round: alpha = exp(0) = 1 elsewhere) and nc chunks (when nc > 1 the combine adds
    one exp, one product and nc - 1 adds):
      F = (1 + C + [nc > 1]) E + u32 (spread + 2 delta)            (shared by o and l)
      B = (ceil(log2 T) + J + C + nc [nc > 1]) u                   (l: tree, adds, alpha)
      A = (1 + ceil(log2 T) + J + C + nc [nc > 1] + 1) u          (o: p V, tree, division)
      cube: A = (ceil(T/16) + J + C + nc [nc > 1] + 1) u + u_c/(1 - u_c) + gamma_16(2**-53)
    The computed weights are p_t e^{+-R}, R = 2 delta + 2F + A + B (o and l perturbed
    independently), so with p the probabilities of out_w:
      |out - out_w| <= (e^R - 1) sum_t p_t |Vw_t| + e^R eta_c sum_t |Vw_t|
                       + 2**-100 (1 + sum_t |Vw_t|)
    (eta_c: the subnormal rounding of P to the cube format, with l >= 1; the last term all
    fp32 underflow), plus ``_f64_error`` for each float64 softmax (out_w, ref). The
    rounding to ``out`` adds u_out (|ref| + err) + eta_out (``after_rounding``); a 2**-30
    relative margin covers this bound's own float64 arithmetic. Assumes no overflow
    (|scores| far below the fp32 range).
    """
    q, K, V, Kw, Vw = (np.asarray(a, np.float64) for a in (q, K, V, Kw, Vw))
    n, d = K.shape
    qw = round_to(q, cube) if cube else q
    acc = accumulation_error(d, CUBE_K0, "fp32") if cube else gamma(1 + _depth(d), _U32)
    delta = score_error(qw, qw, Kw, Kw, acc) + _TINY
    work, ref = decode_attention_reference(qw, Kw, Vw), decode_attention_reference(q, K, V)
    R = _log_factor(work["scores"], delta, n, tile, split, cube)
    pv, vsum = work["probs"] @ np.abs(Vw), np.abs(Vw).sum(axis=0)
    eta = SUBNORMAL_ERROR[cube] if cube else 0.0
    err = (np.abs(work["out"] - ref["out"]) + np.expm1(R) * pv + np.exp(R) * eta * vsum
           + _TINY * (1 + vsum) + _f64_error(qw, Kw, Vw, work) + _f64_error(q, K, V, ref))
    if out:
        err = after_rounding(err, np.abs(ref["out"]), ROUNDING[out])
    return err * (1 + 2.0 ** -30)


def _f64_error(q: np.ndarray, K: np.ndarray, V: np.ndarray, res: dict) -> np.ndarray:
    """Bound on the float64 error of a reference softmax ``res`` of q, K, V (scores, exp,
    sum, division and P V): 2**-50 (n + (d + 4)(1 + M) + 8) sum_t p_t |V_t|, with M the
    largest |q| . |K_t| / sqrt(d) (what the float64 dot products' errors scale with)."""
    n, d = K.shape
    M = (np.abs(q) @ np.abs(K).T).max(axis=1, keepdims=True) / np.sqrt(d)
    return 2.0 ** -50 * (n + (d + 4) * (1 + M) + 8) * (res["probs"] @ np.abs(V))


def _log_factor(s: np.ndarray, delta: np.ndarray, n: int, tile: int, split: int,
                cube: str) -> np.ndarray:
    """R of ``error_bound``'s derivation, [g, 1]."""
    chunks = spans(0, n, split) if split else [(0, n)]
    T = min(tile, n)
    J = -(-min(split or n, n) // tile)
    C = _max_changes(s, delta, chunks, tile)
    nc = len(chunks)
    split_r = nc if nc > 1 else 0
    e, u = EXP_REL_ERROR / (1 - EXP_REL_ERROR), _U32 / (1 - _U32)
    spread = s.max(axis=1, keepdims=True) - s.min(axis=1, keepdims=True) + 2 * delta
    F = (1 + C + (nc > 1)) * e + _U32 * spread
    B = (_depth(T) + J + C + split_r) * u
    if cube:
        uc = UNIT_ROUNDOFF[cube]
        A = ((-(-T // CUBE_K0)) + J + C + split_r + 1) * u + uc / (1 - uc) \
            + gamma(CUBE_K0, 2.0 ** -53)
    else:
        A = (1 + _depth(T) + J + C + split_r + 1) * u
    return 2 * delta + 2 * F + A + B

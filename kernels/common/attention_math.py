"""Decode-attention math for the precision study: one query head group attending over a
KV cache stored in a chosen format, computed in a chosen compute format and accumulator.

Order of operations (what an incremental-decode kernel on the cube and vector does):
1. K and V are stored in ``kv_format``: float formats rounded to it, int8 / int4
   quantized (symmetric by default) per token (each row of [tokens, d]), per channel
   (each column of d), per tensor or per group of ``group_size`` along d, and
   dequantized (antiquant) before use.
2. raw = q K^T on the cube: q and the stored K rounded to ``compute``, dot products over
   d accumulated per ``accumulate`` in blocks of ``base_k`` (default 1: every add in the
   accumulator; see ``accumulate.gemm_k_loop``).
3. scores = fp32(raw * fp32(1 / sqrt(d))).
4. softmax in fp32: max-subtracted, fp32 exp, fp32 sequential sum, fp32 division.
5. out = P V on the cube: P rounded to ``compute`` (as flash attention casts P), V as in
   step 2, accumulated over the tokens per ``accumulate``.

``decode_attention_bound`` gives an element-wise bound on |out - reference out| that holds
for every configuration (quantization, rounding and accumulation errors together).
"""
from __future__ import annotations

import numpy as np

from hardware_presets.errors import InputError, Phrase
from kernels.common.accumulate import STRATEGIES, gemm_k_loop, strategy_unit, sum_sequence
from kernels.common.formats import SUBNORMAL_ERROR, gamma
from kernels.common.precision import FLOAT_FORMATS, FORMATS, format_of, quantize, round_to

KV_GRANULARITIES = ("token", "channel", "tensor", "group")
#: relative accuracy assumed of numpy's float32 exp (8 ulps; its SIMD versions are < 4)
EXP_REL_ERROR = 2.0 ** -20
_U32 = 2.0 ** -24


def stored_kv(x, kv_format: str = "fp16", granularity: str = "token",
              group_size: int = 128, scheme: str = "symmetric") -> np.ndarray:
    """The values a [tokens, d] cache holds in ``kv_format``, as float64: float formats
    rounded, int8 / int4 quantized with ``granularity`` (token: per row, channel: per
    column of d, tensor, group: ``group_size`` along d) and dequantized."""
    fmt = format_of(kv_format)
    if granularity not in KV_GRANULARITIES:
        raise InputError("KV granularity", granularity,
                         Phrase("refusal.one_of", options=", ".join(KV_GRANULARITIES)))
    x = np.asarray(x, np.float64)
    if fmt.kind == "float":
        return round_to(x, kv_format)
    return quantize(x, kv_format, scheme, granularity, axis=-1,
                    group_size=group_size).dequantize()


def _check(q, K, V, compute: str, accumulate: str):
    """Validated float64 (q [heads, d], K [tokens, d], V [tokens, dv])."""
    if format_of(compute).kind != "float":
        raise InputError("compute", compute,
                         Phrase("refusal.float_format", names=", ".join(FLOAT_FORMATS)))
    if accumulate not in STRATEGIES:
        raise InputError("accumulate", accumulate,
                         Phrase("refusal.one_of", options=", ".join(STRATEGIES)))
    q, K, V = (np.asarray(a, np.float64) for a in (q, K, V))
    q = q[None, :] if q.ndim == 1 else q
    ok = (q.ndim == 2 and K.ndim == 2 and V.ndim == 2 and q.shape[1] == K.shape[1]
          and K.shape[0] == V.shape[0] and min(q.shape + K.shape + V.shape) > 0)
    if not ok:
        raise InputError("q, K, V shapes", (q.shape, K.shape, V.shape),
                         Phrase("refusal.shapes.qkv"))
    for name, a in (("q", q), ("K", K), ("V", V)):
        if not np.all(np.isfinite(a)):
            raise InputError(name, Phrase("refusal.value.non_finite"), Phrase("refusal.finite"))
    return q, K, V


def _softmax_fp32(scores: np.ndarray) -> np.ndarray:
    """Row softmax in fp32: z = s - max, e = exp(z), one fp32 sequential sum, e / sum."""
    s = scores.astype(np.float32)
    z = s - s.max(axis=-1, keepdims=True)
    e = np.exp(z)
    total = sum_sequence(e, "fp32", axis=-1).astype(np.float32)
    return (e / total[:, None]).astype(np.float64)


def decode_attention(q, K, V, *, kv_format: str = "fp16", compute: str = "fp16",
                     accumulate: str = "fp32", granularity: str = "token",
                     group_size: int = 128, scheme: str = "symmetric",
                     base_k: int = 1) -> dict[str, np.ndarray]:
    """softmax(q K^T / sqrt(d)) V for q [heads, d], K [tokens, d], V [tokens, dv] with
    the KV cache in ``kv_format`` (see the module docstring for the order of
    operations). Returns {"scores": [heads, tokens], "probs": [heads, tokens], "out":
    [heads, dv]} as float64 holders of the emulated values."""
    q, K, V = _check(q, K, V, compute, accumulate)
    Ks = stored_kv(K, kv_format, granularity, group_size, scheme)
    Vs = stored_kv(V, kv_format, granularity, group_size, scheme)
    raw = gemm_k_loop(q, Ks.T, compute=compute, accumulate=accumulate, base_k=base_k)
    inv = float(np.float32(1.0 / np.sqrt(q.shape[1])))
    scores = round_to(raw * inv, "fp32")
    probs = _softmax_fp32(scores)
    out = gemm_k_loop(probs, Vs, compute=compute, accumulate=accumulate, base_k=base_k)
    return {"scores": scores, "probs": probs, "out": out}


def decode_attention_reference(q, K, V) -> dict[str, np.ndarray]:
    """The same quantities in float64 on the unquantized inputs."""
    q, K, V = _check(q, K, V, "fp32", "fp32")
    scores = q @ K.T / np.sqrt(q.shape[1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = e / e.sum(axis=-1, keepdims=True)
    return {"scores": scores, "probs": probs, "out": probs @ V}


def accumulation_error(n: int, base_k: int, accumulate: str) -> float:
    """Bound on |gemm_k_loop dot product - exact| / sum |terms| for n terms: each block
    (float64 sum, <= base_k 2**-53 relative, then one fp32 rounding) and the nb - 1 adds
    across blocks (gamma of the accumulator's u; pairwise and Kahan are covered by the
    sequential bound, Kahan's 2u + O(nb u**2) with 2 nb adds to spare)."""
    bk = min(base_k, n)
    nb = -(-n // bk)
    u = strategy_unit(accumulate)
    adds = {"kahan": 2 * nb, "pairwise": max(nb - 1, 0)}.get(accumulate, nb - 1)
    if adds * u >= 0.5:
        return np.inf
    block = _U32 + bk * 2.0 ** -52
    return block + gamma(adds, u) * (1.0 + block) if adds else block


def score_error(q, qc, K, Kc, acc: float) -> np.ndarray:
    """Bound [heads, 1] on max over tokens of |computed score - exact score|, where the
    kernel multiplies qc [heads, d] and Kc [tokens, d] (q, K after storage and casts),
    accumulates each dot product with error ``acc`` relative to sum |terms| and scales it
    by fp32(1 / sqrt(d)) in fp32. Terms: the data error |qc.Kc_t - q.K_t| / sqrt(d)
    (computed; (d + 2) 2**-52 of the magnitudes covers the float64 arithmetic of both dot
    products), the accumulation, and the two fp32 roundings of the scaling, 2.1 u32 (1 + acc).
    Shared by the one-pass bound below and the tiled one (``online_attention``)."""
    root = np.sqrt(q.shape[1])
    mag = np.abs(qc) @ np.abs(Kc).T / root
    slack = (q.shape[1] + 2) * 2.0 ** -52 * (mag + np.abs(q) @ np.abs(K).T / root)
    data = np.abs(qc @ Kc.T - q @ K.T) / root + slack
    return (data + (acc + 2.1 * _U32 * (1 + acc)) * mag).max(axis=-1, keepdims=True)


def decode_attention_bound(q, K, V, *, kv_format: str = "fp16", compute: str = "fp16",
                           accumulate: str = "fp32", granularity: str = "token",
                           group_size: int = 128, scheme: str = "symmetric",
                           base_k: int = 1) -> np.ndarray:
    """Element-wise bound [heads, dv] on |decode_attention(...)["out"] - reference out|.

    With qc, Kc, Vc the values the cube multiplies (stored, then rounded to compute),
    a_n the accumulation bound for n terms (``accumulation_error``) and s the exact scores:
    * score error  delta = max_t |qc.Kc_t - q.K_t| / sqrt(d) + (a_d + 2.1 u32 (1 + a_d))
      |qc|.|Kc_t| / sqrt(d)   (data, accumulation, the two roundings of the scaling);
    * softmax: every computed probability is p_t e^{+-R} (+ eta), R = 2 delta + 2 u32
      max|s - max| + 2 EXP_REL_ERROR + gamma_T(u32) + 2 u32 + u_compute (exp argument,
      exp, fp32 sum and division, the rounding of P to compute), eta the absolute error
      of a rounding to compute (or fp32) in its subnormal range;
    * out: (e^R - 1) sum_t p_t |Vc_tj| + sum_t p_t |Vc_tj - V_tj| + eta sum_t |Vc_tj|
      + a_T (e^R sum_t p_t |Vc_tj| + eta sum_t |Vc_tj|), plus 1e-12 of the reference's
      magnitude for its own float64 arithmetic.
    Assumes no overflow (inf where an accumulation bound does not exist, e.g. fp16
    accumulation with (n - 1) 2**-11 >= 1/2).
    """
    q, K, V = _check(q, K, V, compute, accumulate)
    d, T = q.shape[1], K.shape[0]
    qc = round_to(q, compute)
    Kc = round_to(stored_kv(K, kv_format, granularity, group_size, scheme), compute)
    Vc = round_to(stored_kv(V, kv_format, granularity, group_size, scheme), compute)
    ad, aT = accumulation_error(d, base_k, accumulate), accumulation_error(T, base_k, accumulate)
    delta = score_error(q, qc, K, Kc, ad)
    ref = decode_attention_reference(q, K, V)
    s = ref["scores"]
    spread = (s.max(axis=-1, keepdims=True) - s.min(axis=-1, keepdims=True)) + 2 * delta
    uc = FORMATS[compute].unit_roundoff
    R = (2 * delta + 2 * _U32 * spread + 2 * EXP_REL_ERROR + 1.01 * gamma(T, _U32)
         + 2 * _U32 + uc / (1 - uc))
    eta = SUBNORMAL_ERROR[compute] + 2.0 ** -140
    p = ref["probs"]
    pv = p @ np.abs(Vc)
    out_err = (np.expm1(R) * pv + p @ np.abs(Vc - V) + eta * np.abs(Vc).sum(axis=0)
               + aT * (np.exp(R) * pv + eta * np.abs(Vc).sum(axis=0)))
    return out_err * (1 + 1e-12) + 1e-12 * (p @ np.abs(V))

"""Tiled online-softmax decode attention, split-KV and its error bound
(kernels/decode/online_attention.py).

Exactness is checked in float64 against the one-pass reference; the fp32 kernel against a
scalar loop written here (same order, np.float32 scalars) and against its error bound on
random and adversarial inputs (scores rising tile after tile, huge score ranges).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernels.common import attention_math as am
from kernels.common.precision import quantize, round_to
from kernels.decode import online_attention as oa

F32 = np.float32


def loader(K, V):
    return lambda a, b: (K[a:b], V[a:b])


def data(seed: int, g: int, n: int, d: int, q_scale: float = 1.0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((g, d)) * q_scale
    return q, rng.standard_normal((n, d)), rng.standard_normal((n, d))


def test_spans_cover_the_range_in_pieces():
    assert oa.spans(0, 10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert oa.spans(3, 5, 8) == [(3, 5)]
    assert oa.spans(0, 0, 4) == []


def test_tree_sum_is_accumulates_pairwise_strategy():
    x = np.random.default_rng(1).standard_normal((3, 37)).astype(F32)
    from kernels.common.accumulate import sum_sequence
    np.testing.assert_array_equal(oa.tree_sum(x, axis=1), sum_sequence(x, "pairwise", axis=1))
    assert oa.tree_sum(x.astype(np.float64), axis=1).dtype == np.float64


# ---- float64: tiling and splitting change nothing but rounding --------------------------
@given(n=st.integers(1, 120), tile=st.integers(1, 40), chunks=st.integers(0, 4),
       g=st.integers(1, 3), d=st.integers(1, 24), seed=st.integers(0, 2 ** 16))
def test_float64_tiled_and_split_equal_one_pass(n, tile, chunks, g, d, seed):
    q, K, V = data(seed, g, n, d, q_scale=2.0)
    ref = am.decode_attention_reference(q, K, V)["out"]
    got = oa.attention(q, loader(K, V), n, tile=tile, split=chunks * tile, arith=oa.EXACT)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(V).max())


@given(n=st.integers(2, 200), tile=st.integers(1, 16), chunks=st.integers(1, 6),
       seed=st.integers(0, 2 ** 16))
def test_split_combine_is_exact_in_float64(n, tile, chunks, seed):
    q, K, V = data(seed, 2, n, 8, q_scale=3.0)
    whole = oa.attention(q, loader(K, V), n, tile=tile, arith=oa.EXACT)
    split = oa.attention(q, loader(K, V), n, tile=tile, split=chunks * tile, arith=oa.EXACT)
    np.testing.assert_allclose(split, whole, rtol=0, atol=1e-12 * np.abs(V).max())


def test_one_chunk_combines_exactly_in_fp32():
    q, K, V = data(3, 2, 50, 16)
    ld = loader(K.astype(F32), V.astype(F32))
    part = oa.attend(q, ld, oa.spans(0, 50, 8))
    same = oa.combine([part])
    for a, b in zip(part, same):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(oa.attention(q, ld, 50, tile=8, split=64),
                                  oa.attention(q, ld, 50, tile=8))


# ---- the fp32 order of operations, written out with scalars ------------------------------
def scalar_tree(values: list) -> F32:
    """Pairwise: neighbours paired level by level, an odd last element moves up."""
    while len(values) > 1:
        pairs = [values[i] + values[i + 1] for i in range(0, len(values) - 1, 2)]
        values = pairs + values[len(pairs) * 2:]
    return values[0]


def scalar_vector_attention(q, K, V, tile: int) -> np.ndarray:
    """The vector impl of one query row in np.float32 scalars (module docstring order)."""
    d = len(q)
    scale = F32(1.0 / np.sqrt(d))
    m, denom, o = F32(-np.inf), F32(0), [F32(0)] * V.shape[1]
    for t0 in range(0, len(K), tile):
        rows = range(t0, min(len(K), t0 + tile))
        s = [scalar_tree([F32(q[k]) * F32(K[t, k]) for k in range(d)]) * scale for t in rows]
        m_new = max([m] + s)
        alpha = np.exp(F32(m - m_new)) if np.isfinite(m) else F32(0)
        p = [np.exp(F32(x - m_new)) for x in s]
        denom = denom * alpha + scalar_tree(p)
        pv = [scalar_tree([p[i] * F32(V[t, j]) for i, t in enumerate(rows)])
              for j in range(V.shape[1])]
        o = [o[j] * alpha + pv[j] for j in range(V.shape[1])]
        m = m_new
    return np.array([x / denom for x in o], F32)


@pytest.mark.parametrize("n, tile", [(1, 4), (13, 4), (16, 16), (29, 5)])
def test_vector_fp32_follows_the_documented_order_bit_for_bit(n, tile):
    q, K, V = data(n, 2, n, 6)
    K32, V32 = K.astype(F32), V.astype(F32)
    got = oa.attention(q, loader(K32, V32), n, tile=tile)
    assert got.dtype == F32
    for row in range(2):
        np.testing.assert_array_equal(got[row], scalar_vector_attention(q[row], K32, V32, tile))


# ---- the error bound -------------------------------------------------------------------
def working(K, storage: str, cube: str):
    """(stored values as float64, working values) of K in ``storage``."""
    if storage == "fp32":
        stored = K.astype(F32)
    elif storage == "int8":
        qz = quantize(K, "int8", "symmetric", "token")
        stored = qz.codes.astype(F32) * qz.scale.astype(F32)
    else:
        stored = round_to(K, storage).astype(F32)
    return round_to(stored, cube) if cube else stored


def check_bound(q, K, V, *, tile, split, cube, storage, out):
    Kw, Vw = working(K, storage, cube), working(V, storage, cube)
    qk = round_to(q, out or "fp16")
    raw = oa.attention(qk, loader(Kw, Vw), len(K), tile=tile, split=split,
                       arith=oa.Arith(F32, cube))
    got = round_to(raw, out) if out else raw.astype(np.float64)
    ref = am.decode_attention_reference(qk, K, V)["out"]
    bound = oa.error_bound(qk, K, V, Kw, Vw, tile=tile, split=split, cube=cube, out=out)
    assert bound.shape == ref.shape
    assert np.all(np.abs(got - ref) <= bound), np.max(np.abs(got - ref) / bound)
    return bound, ref


@given(n=st.integers(1, 150), tile=st.sampled_from([1, 3, 8, 16, 32]),
       chunks=st.integers(0, 3), g=st.integers(1, 3), d=st.integers(1, 40),
       q_scale=st.sampled_from([0.1, 1.0, 4.0, 12.0]),
       order=st.sampled_from(["random", "rising", "falling"]),
       cube=st.sampled_from(["", "fp16", "bf16"]),
       storage=st.sampled_from(["fp32", "fp16", "bf16", "int8"]),
       out=st.sampled_from(["", "fp16", "bf16"]), seed=st.integers(0, 2 ** 16))
def test_kernel_stays_within_its_bound(n, tile, chunks, g, d, q_scale, order, cube, storage,
                                       out, seed):
    """Rising scores raise the running max at every tile (every alpha rounds); a large
    q makes score ranges of hundreds, so most exps underflow to subnormals or zero."""
    q, K, V = data(seed, g, n, d, q_scale)
    if order != "random":
        idx = np.argsort(K @ q[0])
        perm = idx if order == "rising" else idx[::-1]
        K, V = K[perm], V[perm]
    check_bound(q, K, V, tile=tile, split=chunks * tile, cube=cube, storage=storage, out=out)


@pytest.mark.parametrize("cube", ["", "fp16"])
def test_bound_is_not_vacuous_for_fp16(cube):
    q, K, V = data(7, 4, 200, 32)
    bound, ref = check_bound(q, K, V, tile=16, split=64, cube=cube, storage="fp16",
                             out="fp16")
    assert bound.max() < 5e-3 * np.abs(ref).max()


def test_arithmetic_bound_is_fp32_sized_without_storage_error():
    q, K, V = data(8, 2, 300, 32)
    K32, V32 = K.astype(F32), V.astype(F32)
    bound = oa.error_bound(q, K32, V32, K32, V32, tile=16)
    assert bound.max() < 1e-4 * np.abs(V).max()


def test_max_changes_counts_tiles_that_can_raise_the_max():
    s = np.arange(12, dtype=np.float64)[None, :]
    zero = np.zeros((1, 1))
    assert oa._max_changes(s, zero, [(0, 12)], 4)[0, 0] == 2  # rising: every later tile
    assert oa._max_changes(s[:, ::-1], zero, [(0, 12)], 4)[0, 0] == 0
    assert oa._max_changes(s[:, ::-1], np.full((1, 1), 5.0), [(0, 12)], 4)[0, 0] == 2
    assert oa._max_changes(s, zero, [(0, 4), (4, 12)], 4)[0, 0] == 1  # per chunk

"""Accumulation strategies (kernels/common/accumulate.py), the seed blog's "Kahan" routine, the
error bounds, and the decode-attention math (kernels/common/attention_math.py).

Expectations are explicit scalar loops written here (np.float32 / np.float16 arithmetic,
exact sums by math.fsum and fractions), hand-worked cases, and error bounds from the
rounding model, not the module's own code.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from hardware_presets import InputError
from kernels.common import accumulate as ac
from kernels.common import attention_math as am

F16, F32 = np.float16, np.float32


def fsum_columns(x: np.ndarray) -> np.ndarray:
    """Exact (correctly rounded) sum of each column of x."""
    x = np.asarray(x, np.float64)
    return np.array([math.fsum(col) for col in x.reshape(x.shape[0], -1).T])


def rel_err(got, exact) -> np.ndarray:
    return np.abs(np.asarray(got, np.float64).ravel() - exact) / np.abs(exact)


# ---- sequential fp16 / fp32 ---------------------------------------------------------------
def test_fp16_accumulation_stagnates_at_2048():
    assert F16(2048) + F16(1) == F16(2048)  # numpy's own half arithmetic agrees
    assert ac.sum_sequence(np.array([2048.0, 1.0]), "fp16") == 2048.0
    ones = np.ones(5000)
    assert ac.sum_sequence(ones, "fp16") == 2048.0  # stuck: 2048 + 1 rounds back to 2048
    for s in ("fp32", "pairwise", "kahan"):
        assert ac.sum_sequence(ones, s) == 5000.0
    assert ac.sum_sequence(np.array([2048.0, 1.0, 1.0]), "fp32") == 2050.0


def test_fp32_is_left_to_right_with_an_fp32_accumulator():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 400)) * 10.0 ** rng.integers(-3, 4, (3, 400))).astype(F32)
    got = ac.sum_sequence(x, "fp32", axis=1)
    for row, value in zip(x, got):
        acc = F32(0)
        for v in row:
            acc = F32(acc + v)
        assert value == float(acc)


def test_fp16_rounds_the_running_sum_once_per_add():
    """fp16 accumulator, fp32 terms: each step is fp16(exact acc + v); the exact sum is a
    float64 here (checked with fractions), so float64 -> fp16 is the one rounding."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((300, 2)) * 30).astype(F32)
    got = ac.sum_sequence(x, "fp16")
    for j in range(2):
        acc = F16(0)
        for v in x[:, j]:
            exact = Fraction(float(acc)) + Fraction(float(v))
            assert Fraction(float(exact)) == exact
            acc = F16(float(exact))
        assert got[j] == float(acc)


def test_values_are_rounded_to_fp32_first():
    x = np.array([1.0, 2.0 ** -30, 2.0 ** -30])  # 1 + 2**-30 is not an fp32 value
    assert ac.sum_sequence(x, "fp32") == 1.0
    assert ac.sum_sequence(x[1:], "fp32") == 2.0 ** -29


# ---- Kahan, pairwise ----------------------------------------------------------------------
def kahan_loop(values) -> float:
    s = c = F32(0)
    for v in values:
        y = F32(v) - c
        t = s + y
        c = (t - s) - y
        s = t
    return float(s)


def test_kahan_is_the_classic_algorithm_in_fp32():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((500, 3)) * 10.0 ** rng.integers(-4, 5, (500, 3))).astype(F32)
    got = ac.sum_sequence(x, "kahan")
    np.testing.assert_array_equal(got, [kahan_loop(x[:, j]) for j in range(3)])


def test_kahan_beats_naive_summation_on_an_ill_conditioned_sum():
    """4096 + (3000 values in [0.1, 1]) - 4096: fp16's ulp at 4096 is 4, so every small
    term is lost; fp32 loses a little on each; Kahan carries the lost parts."""
    rng = np.random.default_rng(3)
    x = np.concatenate([[4096.0], rng.uniform(0.1, 1.0, 3000), [-4096.0]]).astype(F32)
    exact = math.fsum(x.astype(np.float64))
    err = {s: rel_err(ac.sum_sequence(x, s), exact)[0] for s in ac.STRATEGIES}
    assert err["fp16"] > 0.5
    assert err["kahan"] < err["fp32"] / 50
    assert err["kahan"] <= 2.0 ** -24  # the fp32 value nearest the exact sum
    cond = np.abs(x.astype(np.float64)).sum() / abs(exact)
    assert err["kahan"] <= ac.strategy_bound("kahan", x.size) * cond


def test_pairwise_error_grows_slower_than_sequential():
    rng = np.random.default_rng(4)
    errs = {}
    for n in (2 ** 10, 2 ** 16):
        x = rng.uniform(0.0, 1.0, (n, 16)).astype(F32)
        exact = fsum_columns(x)
        for s in ("fp32", "pairwise"):
            e = rel_err(ac.sum_sequence(x, s), exact)
            assert np.all(e <= ac.strategy_bound(s, n))  # positive data: sum|x| = |sum|
            errs[s, n] = e.mean()
    assert errs["fp32", 2 ** 16] > 3 * errs["fp32", 2 ** 10]
    assert errs["pairwise", 2 ** 16] < 2 * errs["pairwise", 2 ** 10]
    assert errs["pairwise", 2 ** 16] < errs["fp32", 2 ** 16] / 10


def test_pairwise_by_hand():
    """fp32 spacing at 2**24 is 2, and ties go to the even neighbour:
    sequential ((2**24 + 1) + 1) + 2: each + 1 ties back to 2**24, then 2**24 + 2;
    pairwise (2**24 + 1) + (1 + 2) = 2**24 + 3, a tie -> 2**24 + 4, the exact sum."""
    x = np.array([2.0 ** 24, 1.0, 1.0, 2.0])
    assert ac.sum_sequence(x, "fp32") == 2.0 ** 24 + 2
    assert ac.sum_sequence(x, "pairwise") == 2.0 ** 24 + 4
    assert ac.sum_sequence(x, "kahan") == 2.0 ** 24 + 4
    # five terms: ((a + b) + (c + d)) + e, the odd last term joins at the top
    y = np.array([1.0, 1.0, 2.0 ** 24, 0.0, 1.0])  # (2 + 2**24) + 1: a tie -> 2**24 + 4
    assert ac.sum_sequence(y, "pairwise") == 2.0 ** 24 + 4


@pytest.mark.parametrize("strategy", ac.STRATEGIES)
def test_streaming_accumulator_matches_sum_sequence(strategy):
    rng = np.random.default_rng(5)
    for n in list(range(1, 40)) + [63, 64, 65, 100]:
        x = rng.standard_normal((n, 3)).astype(F32)
        acc = ac.Accumulator(strategy, (3,))
        for row in x:
            acc.add(row)
        np.testing.assert_array_equal(acc.result(), ac.sum_sequence(x, strategy))


@pytest.mark.parametrize("strategy", ac.STRATEGIES)
def test_one_long_sequence_sums_like_a_column(strategy):
    """A 1-D sum (the scalar loop) equals the same column of a vectorised 2-D sum."""
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((700, 3)) * 10.0 ** rng.integers(-2, 3, (700, 3))).astype(F32)
    both = ac.sum_sequence(x, strategy)
    for j in range(3):
        assert ac.sum_sequence(x[:, j], strategy) == both[j]
        assert ac.sum_sequence(x[:, j:j + 1], strategy)[0] == both[j]


@pytest.mark.parametrize("strategy", ac.STRATEGIES)
def test_every_strategy_within_its_bound(strategy):
    rng = np.random.default_rng(6)
    n = 1000
    x = (rng.standard_normal((n, 8)) * 0.05).astype(F32)  # fp16 stays far from overflow
    exact = fsum_columns(x)
    total = np.abs(x.astype(np.float64)).sum(axis=0)
    err = np.abs(ac.sum_sequence(x, strategy) - exact)
    assert np.all(err <= ac.strategy_bound(strategy, n) * total)


def test_sum_sequence_axis_empty_and_refusals():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    for s in ac.STRATEGIES:
        np.testing.assert_array_equal(ac.sum_sequence(x, s, axis=1), x.sum(axis=1))
        np.testing.assert_array_equal(ac.sum_sequence(x, s, axis=-1), x.sum(axis=-1))
        np.testing.assert_array_equal(ac.sum_sequence(np.zeros((0, 2)), s), [0.0, 0.0])
    with pytest.raises(InputError, match="strategy"):
        ac.sum_sequence(x, "fp64")
    with pytest.raises(InputError, match="axis"):
        ac.sum_sequence(x, "fp32", axis=3)


# ---- GEMM K loop --------------------------------------------------------------------------
def test_gemm_k_loop_follows_the_mmad_blocks():
    rng = np.random.default_rng(7)
    A, B = rng.standard_normal((5, 200)), rng.standard_normal((200, 3))
    a = A.astype(F16).astype(np.float64)
    b = B.astype(F16).astype(np.float64)
    got = ac.gemm_k_loop(A, B, compute="fp16", accumulate="fp32", base_k=64)
    for i in range(5):
        for j in range(3):
            acc = F32(0)
            for k0 in range(0, 200, 64):  # blocks 64, 64, 64, 8
                block = math.fsum(a[i, k0:k0 + 64] * b[k0:k0 + 64, j])  # products exact
                acc = F32(acc + F32(block))
            assert abs(got[i, j] - float(acc)) <= 2.0 ** -40 * abs(acc)  # float64 BLAS order
    one = ac.gemm_k_loop(A, B, compute="fp32", base_k=200)  # one MMAD: a single rounding
    np.testing.assert_array_equal(one, (A.astype(F32).astype(np.float64) @
                                        B.astype(F32).astype(np.float64)).astype(F32))


def test_gemm_k_loop_element_level_is_sum_sequence_of_products():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal(300), rng.standard_normal(300)
    products = (a.astype(F16).astype(np.float64) * b.astype(F16).astype(np.float64))
    for s in ac.STRATEGIES:
        got = ac.gemm_k_loop(a[None, :], b[:, None], accumulate=s, base_k=1)
        assert got[0, 0] == ac.sum_sequence(products, s)


def test_gemm_k_loop_fp16_accumulation_is_worse_and_bounded():
    rng = np.random.default_rng(9)
    K = 2048
    A, B = rng.standard_normal((8, K)), rng.standard_normal((K, 8))
    a = A.astype(F16).astype(np.float64)
    b = B.astype(F16).astype(np.float64)
    ref, mag = a @ b, np.abs(a) @ np.abs(b)
    errs = {}
    for s in ac.STRATEGIES:
        for bk in (1, 64):
            got = ac.gemm_k_loop(A, B, accumulate=s, base_k=bk)
            nb = -(-K // bk)
            u = ac.strategy_unit(s)
            bound = (2.0 ** -24 + bk * 2.0 ** -52 + (nb * u + 2 * nb * nb * u * u)) * mag
            assert np.all(np.abs(got - ref) <= bound), (s, bk)
            errs[s, bk] = np.abs(got - ref).max()
    assert errs["fp16", 1] > 100 * errs["fp32", 1]
    assert errs["fp16", 64] < errs["fp16", 1]  # fewer fp16 roundings with 64-long blocks
    assert errs["kahan", 1] < errs["fp32", 1]


def test_gemm_k_loop_refusals():
    A, B = np.ones((2, 4)), np.ones((4, 3))
    with pytest.raises(InputError, match="compute"):
        ac.gemm_k_loop(A, B, compute="int8")
    with pytest.raises(InputError, match="accumulate"):
        ac.gemm_k_loop(A, B, accumulate="int32")
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputError, match="base_k"):
            ac.gemm_k_loop(A, B, base_k=bad)
    with pytest.raises(InputError, match="shape"):
        ac.gemm_k_loop(A, np.ones((5, 3)))


# ---- the blog's routine -------------------------------------------------------------------
def test_blog_routine_at_beta_zero_is_just_alpha_times_c():
    rng = np.random.default_rng(10)
    C = (rng.standard_normal((64, 96)) * 10.0 ** rng.integers(-3, 4, (64, 96))).astype(F32)
    for alpha in (1.0, 0.7, -3.3, 1e-3):
        out, comp = ac.blog_routine(C, alpha=alpha, beta=0.0)
        assert comp.shape == (C.size,) and not comp.any()  # exactly zero, every element
        want = C * F32(alpha)  # numpy's fp32 multiply: one rounding
        assert out.dtype == F32 and out.shape == C.shape
        np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))
    out, comp = ac.blog_routine(C)  # the seed's defaults alpha = 1, beta = 0
    np.testing.assert_array_equal(out.view(np.uint32), C.view(np.uint32))


def test_blog_routine_compensation_with_beta_nonzero():
    rng = np.random.default_rng(11)
    C = rng.standard_normal(2000).astype(F32)
    out, comp = ac.blog_routine(C, alpha=1.0, beta=0.3)
    assert np.count_nonzero(comp) > 100
    # the first element, by hand in fp32: no compensation carried in yet
    c0, a, b = C[0], F32(1.0), F32(0.3)
    y = c0 * a
    t = b * c0 + y
    assert out[0] == t and comp[0] == (t - b * c0) - y
    # each output is (alpha + beta) C[i] up to the rounding fed in from the element before
    assert np.allclose(out, C * F32(1.3), rtol=1e-6, atol=1e-6)


def test_blog_routine_is_not_kahan_summation():
    """On values whose sum Kahan gets right, the routine sums nothing at all."""
    x = np.concatenate([[4096.0], np.full(1000, 0.25), [-4096.0]]).astype(F32)
    assert ac.sum_sequence(x, "kahan") == 250.0
    out, comp = ac.blog_routine(x)
    np.testing.assert_array_equal(out, x)
    assert not comp.any()


# ---- bounds -------------------------------------------------------------------------------
def test_bounds_and_units():
    u = 2.0 ** -24
    worst, prob = ac.bounds(np.array([1, 100, 10000]), u)
    np.testing.assert_array_equal(worst, [u, 100 * u, 10000 * u])
    np.testing.assert_array_equal(prob, [u, 10 * u, 100 * u])
    w, p = ac.bounds(4096, 2.0 ** -11)
    assert (w, p) == (2.0, 2.0 ** -5)
    assert [ac.strategy_unit(s) for s in ac.STRATEGIES] == [u, 2.0 ** -11, u, u]
    np.testing.assert_allclose(ac.strategy_bound("fp32", [1, 2, 11]),
                               [0, u / (1 - u), 10 * u / (1 - 10 * u)], rtol=1e-15)
    assert ac.strategy_bound("fp16", 5000) == np.inf
    np.testing.assert_allclose(ac.strategy_bound("pairwise", 1024), 10 * u / (1 - 10 * u))
    assert ac.strategy_bound("kahan", 100) == 2 * u + 100 * u * u
    with pytest.raises(InputError):
        ac.bounds(-1, u)
    with pytest.raises(InputError):
        ac.strategy_unit("fp8")


# ---- decode attention ---------------------------------------------------------------------
def attention_inputs(seed: int = 12, heads: int = 4, tokens: int = 256, d: int = 64):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((heads, d)), rng.standard_normal((tokens, d)),
            rng.standard_normal((tokens, d)))


def test_decode_attention_in_fp32_is_close_to_the_reference():
    q, K, V = attention_inputs()
    cfg = dict(kv_format="fp32", compute="fp32", accumulate="fp32")
    got = am.decode_attention(q, K, V, **cfg)
    ref = am.decode_attention_reference(q, K, V)
    assert set(got) == {"scores", "probs", "out"}
    for key in got:
        assert got[key].dtype == np.float64 and got[key].shape == ref[key].shape
    np.testing.assert_allclose(got["scores"], ref["scores"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(got["probs"].sum(axis=1), 1.0, atol=1e-5)
    err = np.abs(got["out"] - ref["out"])
    assert err.max() < 1e-5
    assert np.all(err <= am.decode_attention_bound(q, K, V, **cfg))


def test_int8_kv_costs_more_error_than_fp16_kv_within_the_bound():
    q, K, V = attention_inputs()
    ref = am.decode_attention_reference(q, K, V)["out"]
    errs = {}
    for kv, gran in (("fp16", "token"), ("int8", "token"), ("int8", "channel"),
                     ("int4", "token"), ("int4", "group")):
        cfg = dict(kv_format=kv, granularity=gran, group_size=16)
        err = np.abs(am.decode_attention(q, K, V, **cfg)["out"] - ref)
        bound = am.decode_attention_bound(q, K, V, **cfg)
        assert np.all(err <= bound), (kv, gran)
        errs[kv, gran] = err.max()
    assert errs["int8", "token"] > 2 * errs["fp16", "token"]
    assert errs["int4", "token"] > 5 * errs["int8", "token"]
    assert errs["int4", "group"] < errs["int4", "token"]  # a scale per 16 of d


@pytest.mark.parametrize("accumulate", ac.STRATEGIES)
def test_decode_attention_every_accumulator_within_the_bound(accumulate):
    q, K, V = attention_inputs(tokens=128, d=32)
    cfg = dict(compute="bf16", accumulate=accumulate, base_k=16)
    err = np.abs(am.decode_attention(q, K, V, **cfg)["out"]
                 - am.decode_attention_reference(q, K, V)["out"])
    assert np.all(err <= am.decode_attention_bound(q, K, V, **cfg))


def test_stored_kv():
    K = attention_inputs()[1]
    np.testing.assert_array_equal(am.stored_kv(K, "bf16"), am.round_to(K, "bf16"))
    per_token = am.stored_kv(K, "int8", "token")
    step = np.abs(K).max(axis=1, keepdims=True) / 127
    assert np.all(np.abs(per_token - K) <= step / 2 * (1 + 1e-12))


def test_decode_attention_refusals():
    q, K, V = attention_inputs(tokens=8, d=12)
    bad = [dict(compute="int8"), dict(accumulate="bf16"), dict(kv_format="fp8"),
           dict(granularity="row"), dict(kv_format="int8", granularity="group", group_size=5)]
    for kw in bad:
        with pytest.raises(InputError):
            am.decode_attention(q, K, V, **kw)
    for args in ((q, K[:, :6], V), (q, K, V[:4]), (q, K[:0], V[:0])):
        with pytest.raises(InputError, match="shape"):
            am.decode_attention(*args)
    with pytest.raises(InputError, match="K"):
        am.decode_attention(q, np.where(K > 1, np.nan, K), V)

"""GEMM numerics (kernels/gemm/numerics.py, kernels/common/formats.py): rounding to the formats,
2-of-4 pruning, the verified block and inputs, execute against the float64 reference
within the element-wise error bound, and the bound's honesty (it holds, and it is tight
enough that a broken accumulation breaks it).

Expectations are computed here from the hardware description (DESIGN of the GEMM: fp32
L0C accumulation per K step, split-K by workspace or atomic adds, fixpipe bias and cast),
not from the kernel's code.
"""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from kernels.common.formats import round_fp32_bits
from kernels.common.sizes import ceil_div, round_up
from kernels.gemm import numerics as gn
from kernels.gemm.params import GemmValueParams

BF16 = ml_dtypes.bfloat16
OUT_DTYPE = {"fp16": np.float16, "bf16": BF16, "fp32": np.float32, "int32": np.int32,
             "int8": np.int8}


def params(**kw) -> dict:
    """A small GEMM whose M, N, K are not multiples of the base tile (edge tiles)."""
    p = {"M": 37, "N": 53, "K": 300, "dtype_in": "fp16", "dtype_out": "fp16",
         "bias": False, "quant_scale": 0.05, "sparsity": "dense", "base_m": 16,
         "base_n": 32, "base_k": 64, "grid_z": 1, "split_k_mode": "workspace"}
    return {**p, **kw}


def typed(**kw) -> GemmValueParams:
    """``params(**kw)`` as the numerics see it inside."""
    return GemmValueParams.of(params(**kw))


def run(p: dict, seed: int = 0, inputs: dict | None = None):
    """(real-valued C, reference, bound, inputs) for ``p``."""
    inputs = gn.make_inputs(p, np.random.default_rng(seed)) if inputs is None else inputs
    C = gn.execute(p, inputs)["C"]
    ref = gn.reference(inputs)["C"]
    return gn.dequantize(GemmValueParams.of(p), C), ref, gn.error_bound(p, inputs), inputs


def f32(bits: int) -> np.float32:
    return np.array([bits], np.uint32).view(np.float32)[0]


def cast(x: np.ndarray, dtype) -> np.ndarray:
    """numpy's / ml_dtypes' own conversion (overflow to inf is expected, not a warning)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dtype)


def bits32(x) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32)


# ---- round_to -----------------------------------------------------------------------------
def _edge_values(fmt_dtype) -> np.ndarray:
    """Random values plus ties between neighbours, subnormals, overflow, inf, nan."""
    rng = np.random.default_rng(7)
    finfo = np.finfo(fmt_dtype)
    grid = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-8, 6, 2000),
                           rng.uniform(-4, 4, 500) * float(finfo.smallest_subnormal)])
    lo = cast(grid, fmt_dtype).astype(np.float64)
    hi = np.nextafter(cast(lo, fmt_dtype), fmt_dtype(np.inf)).astype(np.float64)
    ties = (lo + hi) / 2  # exact in float64: midpoints of neighbouring values
    sub = float(finfo.smallest_subnormal) * np.arange(-6, 7) / 2
    big = float(finfo.max)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, big, -big, big * (1 + 2.0 ** -12),
               big * 1.01, 1e300, -1e300, 1e-300]
    return np.concatenate([grid, ties[np.isfinite(ties)], sub, special])


@pytest.mark.parametrize("fmt, dtype", [("fp16", np.float16), ("fp32", np.float32)])
def test_round_to_matches_numpy_bit_for_bit(fmt, dtype):
    x = _edge_values(dtype)
    uint = np.uint16 if dtype == np.float16 else np.uint32
    for source in (x, cast(x, np.float32)):
        got = gn.round_to(source, fmt)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.view(uint), cast(source, dtype).view(uint))


def test_round_to_rounds_float64_once():
    """A double rounding via fp32 would lose the bits that break these ties."""
    assert gn.round_to(np.float64(1 + 2.0 ** -11 + 2.0 ** -40), "fp16") == 1 + 2.0 ** -10
    assert gn.round_to(np.float64(1 + 2.0 ** -8 + 2.0 ** -40), "bf16") == 1 + 2.0 ** -7
    assert gn.round_to(np.float64(1 + 2.0 ** -11), "fp16") == 1.0  # a tie: to even


def test_round_to_bf16_matches_ml_dtypes():
    x = _edge_values(BF16)
    rng = np.random.default_rng(3)
    patterns = rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32)
    for source in (x, cast(x, np.float32), patterns.view(np.float32)):
        got = gn.round_to(source, "bf16")
        assert got.dtype == BF16
        np.testing.assert_array_equal(got.view(np.uint16), cast(source, BF16).view(np.uint16))


def test_bit_rounding_is_bf16_for_7_bits():
    """The uint32 routine that makes hf32 reproduces ml_dtypes' bf16 on every kind of
    fp32 bit pattern (normals, subnormals, ties, near-overflow, inf, nan)."""
    rng = np.random.default_rng(4)
    patterns = rng.integers(0, 2 ** 32, 500_000, dtype=np.uint64).astype(np.uint32)
    ties = (patterns & np.uint32(0xFFFF_0000)) | np.uint32(0x8000)  # exact halfway cases
    edge = np.array([0x7F7F_FFFF, 0x7F7F_8000, 0x7F7F_7FFF, 0x0000_8000, 0x0001_8000,
                     0x7F80_0000, 0x7F80_0001, 0xFFC0_0001, 0x8000_0000], np.uint32)
    x = np.concatenate([patterns, ties, edge]).view(np.float32)
    got = round_fp32_bits(x, 7)
    want = cast(x, BF16).astype(np.float32)
    np.testing.assert_array_equal(bits32(got), bits32(want))


HF32_CASES = [  # (input bits, expected bits): 12 low bits dropped, ties to even
    (0x3F80_0000, 0x3F80_0000),  # 1.0
    (0x3F80_1000, 0x3F80_1000),  # 1 + 2**-11: the last kept bit
    (0x3F80_0800, 0x3F80_0000),  # 1 + 2**-12: a tie, the kept lsb is even -> down
    (0x3F80_1800, 0x3F80_2000),  # 1 + 3 * 2**-12: a tie, odd -> up
    (0x3F80_0801, 0x3F80_1000),  # just above the tie -> up
    (0x3F80_07FF, 0x3F80_0000),  # just below the tie -> down
    (0x3FFF_F800, 0x4000_0000),  # carry into the exponent
    (0xBF80_1800, 0xBF80_2000),  # the sign is kept
    (0x7F7F_F000, 0x7F7F_F000),  # largest hf32
    (0x7F7F_F7FF, 0x7F7F_F000),
    (0x7F7F_F800, 0x7F80_0000),  # tie at the top, odd -> infinity
    (0x7F7F_FFFF, 0x7F80_0000),
    (0x0000_0800, 0x0000_0000),  # subnormal tie, even -> 0
    (0x0000_1800, 0x0000_2000),  # subnormal tie, odd -> up
    (0x0000_0801, 0x0000_1000),
    (0x807F_F800, 0x8080_0000),  # largest subnormal rounds up to the smallest normal
    (0x7F80_0000, 0x7F80_0000),  # inf
    (0xFF80_0000, 0xFF80_0000),  # -inf
]


@pytest.mark.parametrize("given, expected", HF32_CASES)
def test_hf32_hand_made_bit_patterns(given, expected):
    got = gn.round_to(np.array([f32(given)]), "hf32")
    assert got.dtype == np.float32
    assert int(bits32(got)[0]) == expected


def test_hf32_nan_stays_nan_and_keeps_11_bits():
    nans = np.array([0x7F80_0001, 0x7FC0_0000, 0xFF80_0FFF], np.uint32).view(np.float32)
    got = gn.round_to(nans, "hf32")
    assert np.isnan(got).all() and np.array_equal(np.signbit(got), [False, False, True])
    x = np.random.default_rng(5).standard_normal(100_000).astype(np.float32)
    h = gn.round_to(x, "hf32")
    assert not (bits32(h) & np.uint32(0xFFF)).any()
    step = np.spacing(np.abs(h)) * 2 ** 12  # the hf32 ulp at |h|
    assert np.all(np.abs(h.astype(np.float64) - x) <= step / 2)  # nearest
    # from float64: via fp32, as the hardware converts fp32 data
    y = np.random.default_rng(6).standard_normal(1000)
    np.testing.assert_array_equal(gn.round_to(y, "hf32"), gn.round_to(y.astype(np.float32), "hf32"))


def test_int8_rounds_half_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 126.5, 127.4, 127.6, 300, -128.4, -1e9,
                  np.inf, -np.inf, np.nan, 3.49])
    want = [0, 2, 2, 0, -2, 126, 127, 127, 127, -128, -128, 127, -128, 0, 3]
    got = gn.round_to(x, "int8")
    assert got.dtype == np.int8 and got.tolist() == want
    assert gn.round_to(np.array([200, -200, 5]), "int8").tolist() == [127, -128, 5]


# ---- prune_2_of_4 -------------------------------------------------------------------------
@pytest.mark.parametrize("K", [8, 64, 66, 3])
@pytest.mark.parametrize("dtype", [np.float16, np.int8, BF16])
def test_prune_keeps_the_two_largest_of_every_four(K, dtype):
    rng = np.random.default_rng(K)
    b = rng.integers(1, 100, (K, 9)) * rng.choice([-1, 1], (K, 9))
    b = b.astype(dtype)
    out = gn.prune_2_of_4(b)
    assert out.dtype == b.dtype and out.shape == b.shape
    kept = out != 0
    np.testing.assert_array_equal(out[kept], b[kept])  # kept values unchanged
    for g0 in range(0, K, 4):
        grp, keep = np.abs(b[g0:g0 + 4].astype(np.float64)), kept[g0:g0 + 4]
        assert np.all(keep.sum(axis=0) == min(2, len(grp)))
        for j in range(b.shape[1]):
            if (~keep[:, j]).any():
                assert grp[keep[:, j], j].min() >= grp[~keep[:, j], j].max()


def test_prune_ties_keep_the_lower_index():
    b = np.array([[1, 3, 0, 5, -2], [1, -3, 0, 5, 2], [1, 1, 0, 5, 2], [1, 3, 7, 4, -2]],
                 np.float32)
    want = np.array([[1, 3, 0, 5, -2], [1, -3, 0, 5, 2], [0, 0, 0, 0, 0], [0, 0, 7, 0, 0]],
                    np.float32)
    np.testing.assert_array_equal(gn.prune_2_of_4(b), want)


# ---- verified block and inputs ------------------------------------------------------------
def test_verified_block():
    assert gn.verified_block(typed(M=250, N=262)) == (250, 262)  # 65500 <= 2**16: all
    assert gn.verified_block(typed(M=500, N=524)) == (256, 256)  # whole 128 x 256 tiles
    assert gn.verified_block(typed(M=4096, N=4096, K=65536, base_m=128, base_n=256)) == (256, 256)
    assert gn.verified_block(typed(M=600, N=1000, base_m=96, base_n=1024)) == (192, 256)
    assert gn.verified_block(typed(M=1, N=65536, K=65536)) == (1, 256)  # inputs bounded
    assert gn.verified_block(typed(M=200, N=2000, base_n=48)) == (200, 240)


@pytest.mark.parametrize("dtype_in", ["fp16", "bf16", "fp32", "hf32", "int8"])
def test_make_inputs(dtype_in):
    sparse = {"int8": "4:2", "fp16": "2:4", "bf16": "2:4"}.get(dtype_in, "dense")
    p = params(dtype_in=dtype_in, M=700, N=600, bias=True, sparsity=sparse,
               dtype_out="int32" if dtype_in == "int8" else "fp32")
    inp = gn.make_inputs(p, np.random.default_rng(1))
    rows, cols = gn.verified_block(GemmValueParams.of(p))
    assert (inp["rows"], inp["cols"], inp["M"], inp["N"]) == (rows, cols, 700, 600)
    assert inp["A"].shape == (rows, p["K"]) and inp["B"].shape == (p["K"], cols)
    assert inp["bias"].shape == (cols,)
    assert inp["bias"].dtype == (np.int32 if dtype_in == "int8" else np.float32)
    np.testing.assert_array_equal(gn.round_to(inp["A"], dtype_in), inp["A"])  # representable
    if sparse != "dense":
        np.testing.assert_array_equal(gn.prune_2_of_4(inp["B"]), inp["B"])
        assert np.count_nonzero(inp["B"]) <= inp["B"].size // 2
    if dtype_in == "int8":
        assert np.abs(inp["A"].astype(int)).max() <= 127
    again = gn.make_inputs(p, np.random.default_rng(1))
    np.testing.assert_array_equal(again["B"], inp["B"])
    assert "bias" not in gn.make_inputs(params(), np.random.default_rng(1))


# ---- execute vs reference within the bound ------------------------------------------------
PAIRS = [("fp16", "fp16"), ("fp16", "fp32"), ("fp16", "int8"), ("bf16", "bf16"),
         ("bf16", "fp32"), ("hf32", "fp32"), ("hf32", "fp16"), ("fp32", "fp32"),
         ("fp32", "bf16"), ("int8", "int32"), ("int8", "fp16"), ("int8", "int8")]
SWEEP = [(i, o, z, mode, bias) for (i, o), z, mode, bias in
         itertools.product(PAIRS, (1, 2, 3), ("workspace", "atomic"), (False, True))
         if not (o == "int8" and mode == "atomic" and z > 1)]


@pytest.mark.parametrize("dtype_in, dtype_out, Z, mode, bias", SWEEP)
def test_execute_within_bound(dtype_in, dtype_out, Z, mode, bias):
    sparse = {"int8": "4:2", "fp16": "2:4", "bf16": "2:4"}.get(dtype_in, "dense")
    for sparsity in ("dense", sparse):
        p = params(dtype_in=dtype_in, dtype_out=dtype_out, grid_z=Z, split_k_mode=mode,
                   bias=bias, sparsity=sparsity, base_k=128 if dtype_in == "int8" else 64)
        got, ref, bound, inp = run(p, seed=Z)
        C = gn.execute(p, inp)["C"]
        assert C.shape == (37, 53) and C.dtype == OUT_DTYPE[dtype_out]
        assert np.all(np.isfinite(bound)) and np.all(np.abs(got - ref) <= bound)
        if dtype_in == "int8" and dtype_out == "int32":
            np.testing.assert_array_equal(got, ref)
            assert not bound.any()


def test_int8_to_int32_is_exact_and_wraps():
    for Z, mode in ((1, "workspace"), (3, "workspace"), (3, "atomic")):
        p = params(dtype_in="int8", dtype_out="int32", K=1000, base_k=128, grid_z=Z,
                   split_k_mode=mode, bias=True, sparsity="4:2")
        got, ref, bound, inp = run(p)
        np.testing.assert_array_equal(got, ref)
        assert not bound.any()
    p = params(dtype_in="int8", dtype_out="int32", M=1, N=1, K=1, bias=True)
    inp = {"A": np.ones((1, 1), np.int8), "B": np.ones((1, 1), np.int8),
           "bias": np.array([2 ** 31 - 1], np.int32)}
    assert gn.execute(p, inp)["C"][0, 0] == -2 ** 31  # int32 wraps
    assert np.isinf(gn.error_bound(p, inp)).all()  # the bound says it cannot vouch


def _tile_by_tile(p: dict, A: np.ndarray, B: np.ndarray, bias) -> np.ndarray:
    """The hardware description written out plainly, one base tile and K step at a time.
    Block products in float64, then rounded to fp32 (exact for the inputs used here)."""
    M, N, K, bm, bn, bk = (p[k] for k in ("M", "N", "K", "base_m", "base_n", "base_k"))
    kz = round_up(ceil_div(K, p["grid_z"]), bk)
    C = np.zeros((M, N), OUT_DTYPE[p["dtype_out"]])
    for r0, c0 in itertools.product(range(0, M, bm), range(0, N, bn)):
        rs, cs = slice(r0, r0 + bm), slice(c0, c0 + bn)
        partials = []
        for k_lo in range(0, K, kz):
            acc = np.zeros((len(range(M)[rs]), len(range(N)[cs])), np.float32)
            for k in range(k_lo, min(K, k_lo + kz), bk):
                ks = slice(k, min(k + bk, k_lo + kz, K))
                blk = A[rs, ks].astype(np.float64) @ B[ks, cs].astype(np.float64)
                acc = (acc + blk.astype(np.float32)).astype(np.float32)
            partials.append(acc)
        b = 0 if bias is None else bias[cs]
        if p["split_k_mode"] == "workspace" or len(partials) == 1:
            total = partials[0]
            for part in partials[1:]:
                total = (total + part).astype(np.float32)
            C[rs, cs] = gn.round_to(np.float32(total + b), p["dtype_out"])
        else:
            c = gn.round_to(np.float32(partials[0] + b), p["dtype_out"])
            for part in partials[1:]:
                add = c.astype(np.float64) + gn.round_to(part, p["dtype_out"]).astype(np.float64)
                c = gn.round_to(add, p["dtype_out"])
            C[rs, cs] = c
    return C


@pytest.mark.parametrize("dtype_in, dtype_out, Z, mode", [
    ("fp16", "fp16", 1, "workspace"), ("fp16", "fp32", 3, "workspace"),
    ("bf16", "bf16", 3, "atomic"), ("hf32", "fp32", 2, "atomic"), ("fp32", "fp16", 3, "atomic"),
    ("fp16", "fp32", 4, "atomic")])
def test_execute_follows_the_tile_and_step_order_exactly(dtype_in, dtype_out, Z, mode):
    """Inputs whose block products are exact in fp32 (small integers times one power of two
    per K step, products from 2**-24 to 2**4) but whose fp32 accumulation rounds: execute
    must reproduce the plain tile-by-tile description bit for bit."""
    p = params(M=21, N=40, K=200, base_m=16, base_n=16, base_k=32, dtype_in=dtype_in,
               dtype_out=dtype_out, grid_z=Z, split_k_mode=mode, bias=True)
    rng = np.random.default_rng(Z)
    steps = -(-p["K"] // p["base_k"])
    ea, eb = (np.repeat(rng.integers(-12, 3, steps), p["base_k"])[:p["K"]] for _ in "ab")
    A = gn.round_to(rng.integers(-8, 9, (21, 200)) * 2.0 ** ea, dtype_in)
    B = gn.round_to(rng.integers(-8, 9, (200, 40)) * 2.0 ** eb[:, None], dtype_in)
    bias = (rng.standard_normal(40) * 100).astype(np.float32)
    inp = {"A": A, "B": B, "bias": bias}
    C = np.asarray(gn.execute(p, inp)["C"], np.float64)
    np.testing.assert_array_equal(C, np.asarray(_tile_by_tile(p, A, B, bias), np.float64))
    ref = gn.reference(inp)["C"]
    assert np.all(np.abs(C - ref) <= gn.error_bound(p, inp))
    if dtype_out == "fp32":  # the fp32 accumulation really rounded (the order matters)
        assert np.any(C != ref.astype(np.float32))


def test_split_k_changes_the_sum_order():
    """2**24 then three 1s, one per K step: fp32 accumulation loses each 1 against 2**24
    (ties to even); with Z = 2 the second half sums to 2 first, which survives."""
    p = params(M=1, N=1, K=64, base_k=16, dtype_out="fp32")
    A = np.zeros((1, 64), np.float16)
    B = np.zeros((64, 1), np.float16)
    A[0, [0, 16, 32, 48]] = [2 ** 12, 1, 1, 1]
    B[[0, 16, 32, 48], 0] = [2 ** 12, 1, 1, 1]
    inp = {"A": A, "B": B}
    results = {}
    for Z, mode in ((1, "workspace"), (2, "workspace"), (2, "atomic"), (4, "atomic")):
        q = {**p, "grid_z": Z, "split_k_mode": mode}
        results[Z, mode] = float(gn.execute(q, inp)["C"][0, 0])
        assert abs(results[Z, mode] - (2 ** 24 + 3)) <= gn.error_bound(q, inp)[0, 0]
    assert results == {(1, "workspace"): 2 ** 24, (2, "workspace"): 2 ** 24 + 2,
                       (2, "atomic"): 2 ** 24 + 2, (4, "atomic"): 2 ** 24}


def test_split_k_changes_random_results_within_the_bound():
    base = params(M=64, N=64, K=2048, dtype_out="fp32")
    outs = {}
    for Z, mode in ((1, "workspace"), (3, "workspace"), (3, "atomic")):
        p = {**base, "grid_z": Z, "split_k_mode": mode}
        got, ref, bound, _ = run(p, seed=11)
        assert np.all(np.abs(got - ref) <= bound)
        outs[Z, mode] = got
    assert np.any(outs[1, "workspace"] != outs[3, "workspace"])


def test_accumulation_is_fp32_not_fp16():
    """4096 products of 1 x (1 + 2**-10): fp32 holds every partial sum exactly (4100);
    an fp16 accumulator would stall at 2048 + ..., far outside the bound."""
    for dtype_out in ("fp32", "fp16"):
        p = params(M=2, N=3, K=4096, dtype_out=dtype_out)
        inp = {"A": np.ones((2, 4096), np.float16),
               "B": np.full((4096, 3), 1 + 2.0 ** -10, np.float16)}
        C = gn.execute(p, inp)["C"]
        assert np.all(C.astype(np.float64) == 4100.0)
        fp16_acc = np.float16(0)
        for _ in range(4096):
            fp16_acc = np.float16(fp16_acc + np.float16(1 + 2.0 ** -10))
        assert abs(float(fp16_acc) - 4100) > gn.error_bound(p, inp).max()


def test_bound_is_not_vacuous():
    """fp16 output, K = 8192: the largest error uses a sizeable part of the bound, and
    accumulating in fp16 after every K step (instead of fp32) breaks it."""
    p = params(M=64, N=64, K=8192, base_m=32, base_n=64)
    got, ref, bound, inp = run(p, seed=2)
    ratio = np.abs(got - ref) / bound
    assert 0.3 <= ratio.max() <= 1.0
    A, B = inp["A"].astype(np.float32), inp["B"].astype(np.float32)
    acc = np.zeros((64, 64), np.float16)
    for k in range(0, 8192, 64):
        acc = (acc.astype(np.float32) + A[:, k:k + 64] @ B[k:k + 64]).astype(np.float16)
    assert np.any(np.abs(acc.astype(np.float64) - ref) > bound)
    assert np.all(gn.error_bound({**p, "dtype_out": "fp32"}, inp) < bound)


def test_int8_output_quantises_half_even_and_saturates():
    p = params(M=1, N=6, K=1, dtype_out="int8", quant_scale=1.0)
    inp = {"A": np.ones((1, 1), np.float16),
           "B": np.array([[2.5, 3.5, -2.5, 300, -300, 0.4]], np.float16)}
    C = gn.execute(p, inp)["C"]
    assert C.dtype == np.int8 and C.tolist() == [[2, 4, -2, 127, -128, 0]]
    half = GemmValueParams.of({**p, "quant_scale": 0.5})
    np.testing.assert_allclose(gn.dequantize(half, C), C * 2.0)
    bound = gn.error_bound(p, inp)
    assert np.all(np.abs(C - gn.reference(inp)["C"]) <= bound)
    assert np.all(bound[0, :3] <= 0.5 + 1e-4) and np.all(bound[0, 3:5] > 128)
    p = params(dtype_out="int8", quant_scale=0.05)  # generated inputs never saturate
    got, ref, bound, _ = run(p)
    assert np.all(bound < 1.0 / 0.05) and np.abs(got).max() > 20 / 0.05


def test_refused_combinations():
    inp = gn.make_inputs(params(K=128), np.random.default_rng(0))
    with pytest.raises(ValueError, match="atomic"):
        gn.execute(params(K=128, dtype_out="int8", grid_z=2, split_k_mode="atomic"), inp)
    with pytest.raises(ValueError, match="int32"):
        gn.execute(params(K=128, dtype_out="int32"), inp)


def test_as_real_and_unit_roundoff():
    p = params(dtype_out="int8", quant_scale=0.25)
    out = gn.as_real(p, {"C": np.array([[4, -8]], np.int8)})
    np.testing.assert_array_equal(out["C"], [[16.0, -32.0]])
    assert gn.unit_roundoff(params(dtype_out="fp16")) == 2.0 ** -11
    assert gn.unit_roundoff(params(dtype_out="int32")) == 0.0

"""Formats library (kernels/common/precision.py): rounding to the float formats bit for bit
against numpy / ml_dtypes, the Format table against independent values, int8 / int4
quantization (error within half a step for every scheme and granularity, the cases where
one choice beats another) and which formats each chip's units take, with the refusals.

Expectations come from numpy's and ml_dtypes' own conversions and finfo tables, from bit
patterns written out here, or from arithmetic on the data, never from the module's code.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hardware_presets import PRECISION_BYTES, InputError, load
from kernels.common import precision as pr

BF16 = ml_dtypes.bfloat16
NUMPY_DTYPE = {"fp16": np.float16, "fp32": np.float32, "bf16": BF16}


def cast(x: np.ndarray, dtype) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dtype)


def edge_values(dtype) -> np.ndarray:
    """Random values over many decades, ties between neighbours, subnormals, overflow
    (the largest value, the tie above it, beyond), inf, nan, signed zeros."""
    rng = np.random.default_rng(11)
    fi = ml_dtypes.finfo(dtype) if dtype is BF16 else np.finfo(dtype)
    tiny, big = float(fi.smallest_subnormal), float(fi.max)
    grid = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.integers(-9, 7, 3000),
                           rng.uniform(-5, 5, 500) * tiny])
    lo = cast(grid, dtype).astype(np.float64)
    hi = cast(np.nextafter(cast(lo, dtype), dtype(np.inf)), np.float64)
    ties = (lo + hi) / 2  # exact in float64
    sub = tiny * np.arange(-8, 9) / 2  # subnormals and the ties between them
    top_tie = big + (big - float(np.nextafter(dtype(big), dtype(0)))) / 2
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, big, -big, top_tie, -top_tie,
               np.nextafter(top_tie, 0), big * 1.01, 1e300, -1e300, 1e-300, -1e-300]
    return np.concatenate([grid, ties[np.isfinite(ties)], sub, special])


def same_bits(a: np.ndarray, b: np.ndarray) -> None:
    """float64 arrays equal bit for bit (any nan equals any nan of the same sign)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b))
    np.testing.assert_array_equal(np.signbit(a[nan]), np.signbit(b[nan]))
    np.testing.assert_array_equal(a[~nan].view(np.uint64), b[~nan].view(np.uint64))


# ---- rounding -----------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["fp16", "fp32", "bf16"])
def test_round_to_matches_numpy_and_ml_dtypes_bit_for_bit(fmt):
    dtype = NUMPY_DTYPE[fmt]
    x = edge_values(dtype)
    for source in (x, cast(x, np.float32)):
        got = pr.round_to(source, fmt)
        assert got.dtype == np.float64 and got.shape == source.shape
        same_bits(got, cast(cast(source, dtype), np.float64))


def test_round_to_fp16_edges_by_hand():
    sub = 2.0 ** -24  # smallest fp16 subnormal
    x = np.array([sub / 2, 3 * sub / 2, 5 * sub / 2, sub / 2 * (1 + 2.0 ** -30), 65504.0,
                  65519.99, 65520.0, -65520.0, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
                  1 + 2.0 ** -11 + 2.0 ** -40, -0.0])
    want = [0.0, 2 * sub, 2 * sub, sub, 65504.0, 65504.0, np.inf, -np.inf, 1.0,
            1 + 2.0 ** -9, 1 + 2.0 ** -10, -0.0]
    same_bits(pr.round_to(x, "fp16"), want)


def test_round_to_rounds_float64_once():
    """Through fp32 first, the 2**-40 would be lost and the tie would go to even."""
    assert pr.round_to(1 + 2.0 ** -8 + 2.0 ** -40, "bf16") == 1 + 2.0 ** -7
    assert pr.round_to(1 + 2.0 ** -24 + 2.0 ** -50, "fp32") == 1 + 2.0 ** -23
    assert pr.round_to(1 + 2.0 ** -24, "fp32") == 1.0


def hf32_reference(x: np.ndarray) -> np.ndarray:
    """fp32, then 11 explicit mantissa bits by frexp/ldexp and numpy's half-even rint
    (normal range only)."""
    x32 = x.astype(np.float32).astype(np.float64)
    m, e = np.frexp(x32)  # x = m 2**e, 0.5 <= |m| < 1: 12 significant bits = m * 2**12
    return np.ldexp(np.rint(np.ldexp(m, 12)), e - 12)


def test_hf32_keeps_11_mantissa_bits():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(20000) * 10.0 ** rng.integers(-30, 30, 20000)
    got = pr.round_to(x, "hf32")
    np.testing.assert_array_equal(got, hf32_reference(x))
    low12 = got.astype(np.float32).view(np.uint32) & np.uint32(0xFFF)
    assert not low12.any()  # the 12 dropped fraction bits are zero
    assert np.all(np.abs(got - x) <= 2.0 ** -12 * np.abs(x) * (1 + 2.0 ** -20))
    kept = np.array([1 + 2.0 ** -11, 1.5, -3.0, 2.0 ** -126, 0.0])  # already hf32
    np.testing.assert_array_equal(pr.round_to(kept, "hf32"), kept)
    assert pr.round_to(1 + 2.0 ** -12, "hf32") == 1.0  # tie to even
    assert pr.round_to(1 + 3 * 2.0 ** -12, "hf32") == 1 + 2.0 ** -10
    same_bits(pr.round_to([np.inf, -np.inf, np.nan, float(np.finfo(np.float32).max)], "hf32"),
              [np.inf, -np.inf, np.nan, np.inf])


def test_round_to_refuses_integer_formats_and_unknown_names():
    for fmt in ("int8", "int4"):
        with pytest.raises(InputError, match="quantize") as err:
            pr.round_to([1.0], fmt)
        assert err.value.field == "format"
    with pytest.raises(InputError) as err:
        pr.round_to([1.0], "fp8")
    assert "fp32" in err.value.allowed and "int4" in err.value.allowed


# ---- the Format table ---------------------------------------------------------------------
def test_format_table_matches_finfo():
    assert list(pr.FORMATS) == ["fp32", "hf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2",
                                "hif8", "mxfp8", "mxfp4", "int8", "int4"]
    for name, dtype in NUMPY_DTYPE.items():
        f, fi = pr.FORMATS[name], (ml_dtypes.finfo(dtype) if dtype is BF16 else np.finfo(dtype))
        assert (f.name, f.kind, f.bits, f.bytes) == (name, "float", fi.bits,
                                                     np.dtype(dtype).itemsize)
        assert f.unit_roundoff == float(fi.eps) / 2
        assert f.max_value == float(fi.max)
        assert f.min_normal == float(fi.smallest_normal)
        assert f.mantissa_bits == fi.nmant
    hf = pr.FORMATS["hf32"]
    largest = float(np.array([0x7F7F_F000], np.uint32).view(np.float32)[0])
    assert (hf.kind, hf.bits, hf.bytes, hf.mantissa_bits) == ("float", 32, 4.0, 11)
    assert hf.unit_roundoff == 2.0 ** -12 and hf.max_value == largest
    assert hf.min_normal == float(np.finfo(np.float32).smallest_normal)
    for name, hi, nbytes in (("int8", np.iinfo(np.int8).max, 1.0), ("int4", 7, 0.5)):
        f = pr.format_of(name)
        assert (f.kind, f.bits, f.bytes, f.max_value) == ("int", int(nbytes * 8), nbytes, hi)
        assert f.unit_roundoff == f.min_normal == f.mantissa_bits == 0
    for name, f in pr.FORMATS.items():
        assert f.bytes == PRECISION_BYTES[name]


def test_format_of_unknown():
    with pytest.raises(InputError) as err:
        pr.format_of("fp64")
    assert err.value.field == "format" and "bf16" in err.value.allowed


# ---- quantization -------------------------------------------------------------------------
def within_half_step(q: pr.Quantized, x: np.ndarray) -> None:
    """|dequantize - x| <= scale / 2 for every element, up to float64 arithmetic."""
    scale = q.expand(q.scale) * np.ones_like(x)
    zp = q.expand(q.zero_point) * np.ones_like(x)
    slack = 4 * 2.0 ** -53 * (np.abs(x) + np.abs(zp * scale))
    err = np.abs(q.dequantize() - x)
    assert np.all(err <= scale / 2 * (1 + 2.0 ** -40) + slack), (err / scale).max()


def code_range(fmt: str, scheme: str) -> tuple[int, int]:
    if scheme == "symmetric":
        return (-127, 127) if fmt == "int8" else (-7, 7)
    return (-128, 127) if fmt == "int8" else (0, 15)


@st.composite
def quantize_cases(draw):
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    n = math.prod(shape)
    mag = draw(st.sampled_from([1e-6, 1.0, 1e3, 1e12]))
    values = draw(st.lists(st.floats(-1.0, 1.0, allow_subnormal=False), min_size=n,
                           max_size=n))
    x = np.array(values).reshape(shape) * mag
    if draw(st.booleans()):  # one-sided data far from 0
        x = np.abs(x) + mag * draw(st.sampled_from([0.0, 0.5, 10.0]))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    length = shape[axis]
    group = draw(st.sampled_from([d for d in range(1, length + 1) if length % d == 0]))
    fmt = draw(st.sampled_from(["int8", "int4"]))
    scheme = draw(st.sampled_from(pr.SCHEMES))
    gran = draw(st.sampled_from(pr.GRANULARITIES))
    return x, fmt, scheme, gran, axis, group


@given(quantize_cases())
def test_quantize_dequantize_within_half_a_step(case):
    x, fmt, scheme, gran, axis, group = case
    q = pr.quantize(x, fmt, scheme, gran, axis=axis, group_size=group)
    lo, hi = code_range(fmt, scheme)
    assert q.codes.dtype == np.int8 and q.codes.shape == x.shape
    assert lo <= q.codes.min() and q.codes.max() <= hi
    assert np.all(q.scale > 0) and q.scale.ndim == x.ndim
    within_half_step(q, x)
    per = 8 if scheme == "asymmetric" else 4
    assert q.nbytes == x.size * pr.FORMATS[fmt].bits / 8 + per * q.scale.size


def test_scale_shapes_per_granularity():
    x = np.random.default_rng(0).standard_normal((4, 6, 8))
    shapes = {"tensor": (1, 1, 1), "channel": (1, 1, 8), "token": (4, 6, 1),
              "group": (4, 6, 2)}
    for gran, shape in shapes.items():
        q = pr.quantize(x, "int8", "symmetric", gran, group_size=4)
        assert q.scale.shape == shape and q.zero_point.shape == shape
    q = pr.quantize(x, "int4", "asymmetric", "channel", axis=1)
    assert q.scale.shape == (1, 6, 1)
    q = pr.quantize(x, "int8", "symmetric", "group", axis=0, group_size=2)
    assert q.scale.shape == (2, 6, 8)
    # the scale of a symmetric per-token quantization is max|row| / 127, by hand
    w = np.array([[1.0, -2.0, 0.5], [0.0, 0.25, -0.125]])
    q = pr.quantize(w, "int8", "symmetric", "token")
    np.testing.assert_array_equal(q.scale[:, 0], [2.0 / 127, 0.25 / 127])
    np.testing.assert_array_equal(q.codes, [[64, -127, 32], [0, 127, -64]])


def test_asymmetric_spans_min_to_max():
    x = np.array([[-1.0, 0.0, 3.0, 2.0]])
    for fmt, (lo, hi) in (("int8", (-128, 127)), ("int4", (0, 15))):
        q = pr.quantize(x, fmt, "asymmetric", "tensor")
        assert q.scale.item() == 4.0 / (hi - lo)
        assert q.codes[0, 0] == lo and q.codes[0, 2] == hi
        np.testing.assert_allclose(q.dequantize()[0, [0, 2]], [-1.0, 3.0], rtol=1e-15)


def test_asymmetric_beats_symmetric_on_one_sided_data():
    x = np.random.default_rng(1).uniform(0.0, 1.0, (64, 128))  # e.g. after a ReLU
    for fmt in ("int8", "int4"):
        sym = np.abs(pr.quantize(x, fmt, "symmetric").dequantize() - x).mean()
        asym = np.abs(pr.quantize(x, fmt, "asymmetric").dequantize() - x).mean()
        assert asym < 0.6 * sym  # twice the codes over the data's range


def test_per_channel_beats_per_tensor_with_outlier_channels():
    rng = np.random.default_rng(2)
    W = rng.standard_normal((256, 64))  # GEMM B = W[K, N]
    W[:, [3, 40]] *= 100.0  # two outlier output channels
    tensor = np.abs(pr.quantize(W, "int8", granularity="tensor").dequantize() - W)
    channel = np.abs(pr.quantize(W, "int8", granularity="channel").dequantize() - W)
    normal = np.ones(64, bool)
    normal[[3, 40]] = False
    assert channel[:, normal].mean() < 0.05 * tensor[:, normal].mean()
    assert channel.max() <= tensor.max()
    group = np.abs(pr.quantize(W, "int8", granularity="group", axis=0,
                               group_size=32).dequantize() - W)
    assert group.mean() <= channel.mean() * 1.001  # finer still: a scale per 32 K


def test_zero_and_constant_groups_are_exact():
    x = np.array([[0.0, 0.0, 0.0], [2.5, 2.5, 2.5], [-1e-3, -1e-3, -1e-3]])
    for fmt in ("int8", "int4"):
        for scheme in pr.SCHEMES:
            q = pr.quantize(x, fmt, scheme, "token")
            np.testing.assert_array_equal(q.dequantize(), x)
            assert np.all(np.isfinite(q.scale)) and np.all(q.scale > 0)
    q = pr.quantize(np.zeros((3, 4)), "int8")
    assert q.scale.item() == 1.0 and not q.codes.any()


def test_quantize_refusals():
    x = np.ones((4, 6))
    with pytest.raises(InputError) as err:
        pr.quantize(x, "int8", granularity="group", group_size=4)  # 6 % 4 != 0
    assert err.value.field == "group_size" and "1, 2, 3, 6" in err.value.allowed
    for bad in (0, -2, 7):
        with pytest.raises(InputError, match="group_size"):
            pr.quantize(x, "int8", granularity="group", group_size=bad)
    pr.quantize(x, "int8", granularity="tensor", group_size=4)  # only used by "group"
    for kw, field in ((dict(fmt="fp16"), "format"), (dict(fmt="int2"), "format"),
                      (dict(scheme="affine"), "scheme"), (dict(granularity="row"), "granularity"),
                      (dict(granularity="channel", axis=2), "axis")):
        with pytest.raises(InputError) as err:
            pr.quantize(x, **kw)
        assert field in err.value.field
    for bad in (np.array([1.0, np.inf]), np.array([np.nan, 1.0]), np.zeros((0, 3)),
                np.float64(1.0)):
        with pytest.raises(InputError):
            pr.quantize(bad)


# ---- formats per chip ---------------------------------------------------------------------
def test_chip_formats():
    b2 = pr.chip_formats(load("910B2"))
    assert b2 == {"cube": ("fp16", "bf16", "int8", "int4", "fp32", "hf32"),
                  "vector": ("fp16", "fp32", "int16", "int32")}
    for name in ("910", "310P3"):
        f = pr.chip_formats(load(name))
        assert f["cube"] == ("fp16", "int8")
        assert "bf16" not in f["vector"] and "fp16" in f["vector"]


def test_require_refuses_what_the_chip_lacks():
    b2, old = load("910B2"), load("910")
    for fmt in ("fp16", "bf16", "int8", "int4", "fp32", "hf32"):
        pr.require(b2, fmt)
    pr.require(old, "int8", "cube")
    pr.require(b2, "fp32", "vector")
    with pytest.raises(InputError) as err:
        pr.require(old, "bf16", "cube")
    assert old.display_name in err.value.field and "cube" in err.value.field
    assert err.value.value == "bf16" and "fp16, int8" in err.value.allowed
    with pytest.raises(InputError) as err:
        pr.require(load("310P3"), "hf32")
    assert "fp16, int8" in err.value.allowed
    with pytest.raises(InputError) as err:
        pr.require(b2, "bf16", "vector")  # the preset's vector unit does not list bf16
    assert "vector" in err.value.field and "fp32" in err.value.allowed
    with pytest.raises(InputError, match="unit"):
        pr.require(b2, "fp16", "scalar")

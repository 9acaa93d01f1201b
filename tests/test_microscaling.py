"""OCP MX block formats (kernels/common/microscaling.py): the E2M1 element values, the
shared scale of a block (floor(log2 amax) - emax_elem, clamped to E8M0), elements scaled,
rounded to nearest even and saturated, an outlier flushing its block's small elements to
zero, NaN and zero blocks, blocks along any axis, and the error bound relative to the
block's largest magnitude.

Expected values are worked out by hand from the OCP MX v1.0 rules.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.common import microscaling as mx


def test_e2m1_has_the_eight_magnitudes_of_the_spec():
    codes = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn)
    values = set(np.abs(codes.astype(np.float64)))
    assert values == {0, 0.5, 1, 1.5, 2, 3, 4, 6}


def test_emax_and_block_roundoff():
    fp8, fp4 = mx.MX_FORMATS["mxfp8"], mx.MX_FORMATS["mxfp4"]
    assert (fp8.emax, fp8.element_max, fp8.element_name) == (8, 448.0, "E4M3")
    assert (fp4.emax, fp4.element_max, fp4.element_name) == (2, 6.0, "E2M1")
    assert (fp8.block_unit_roundoff, fp4.block_unit_roundoff) == (1 / 8, 1 / 4)


def block_with(values: dict[int, float]) -> np.ndarray:
    x = np.zeros(32)
    for i, v in values.items():
        x[i] = v
    return x


def test_a_block_whose_amax_is_1000():
    """floor(log2 1000) = 9. MXFP8: s = 9 - 8 = 1, X = 2: 1000 / 2 = 500 saturates to 448
    (-> 896), -500 / 2 = -250 rounds to -256 (-> -512), 3 / 2 = 1.5 and 1 / 2 = 0.5 are
    exact. MXFP4: s = 9 - 2 = 7, X = 128: 1000 / 128 = 7.8 saturates to 6 (-> 768), -500 /
    128 = -3.9 rounds to -4 (-> -512), 3 and 1 fall below half of 0.5 x 128 and flush to 0."""
    x = block_with({0: 1000.0, 1: -500.0, 2: 3.0, 3: 1.0})
    q8 = mx.quantize(x, "mxfp8")
    assert q8.scales.dtype == np.dtype(ml_dtypes.float8_e8m0fnu)
    assert float(q8.scales[0]) == 2.0 and q8.scale_exponents[0] == 1
    np.testing.assert_array_equal(q8.elements[0, :4].astype(float), [448, -256, 1.5, 0.5])
    np.testing.assert_array_equal(mx.round_mx(x, "mxfp8")[:4], [896, -512, 3, 1])
    q4 = mx.quantize(x, "mxfp4")
    assert float(q4.scales[0]) == 128.0
    np.testing.assert_array_equal(q4.elements[0, :4].astype(float), [6, -4, 0, 0])
    np.testing.assert_array_equal(mx.round_mx(x, "mxfp4")[:4], [768, -512, 0, 0])


def test_an_outlier_flushes_the_small_elements_of_its_block():
    """Alone, values of about 1 keep about 2 bits in MXFP4 (X = 1/4 for amax 1.9); next to
    an outlier of 1000 they share X = 128 and every one becomes 0. The other block, without
    the outlier, keeps them. Same for MXFP8 with values of about 1e-2 (below 2^-9 x 2)."""
    rng = np.random.default_rng(0)
    small = rng.uniform(0.5, 1.9, 64) * rng.choice([-1, 1], 64)
    x = small.copy()
    x[5] = 1000.0  # the outlier, in the first block only
    got = mx.round_mx(x, "mxfp4")
    assert np.all(got[:32][np.arange(32) != 5] == 0)
    assert np.count_nonzero(got[32:]) == 32
    assert np.all(np.abs(got[32:] - x[32:]) <= 0.25 * np.abs(x[32:]).max())
    tiny = np.full(32, 1e-3)
    tiny[0] = 1000.0
    assert np.all(mx.round_mx(tiny, "mxfp8")[1:] == 0)


def test_zero_and_nan_blocks():
    x = np.concatenate([np.zeros(32), block_with({3: np.nan, 4: 2.0}), block_with({0: 2.0})])
    q = mx.quantize(x, "mxfp8")
    assert q.scale_exponents[0] == -127 and np.isnan(q.scale_exponents[1])
    got = mx.round_mx(x, "mxfp8")
    assert np.all(got[:32] == 0) and np.all(np.isnan(got[32:64]))
    assert got[64] == 2.0 and np.all(got[65:] == 0)
    assert np.all(np.isnan(mx.round_mx(block_with({1: np.inf}), "mxfp8")))


def test_scale_is_clamped_to_e8m0():
    x = np.array([2.0 ** -140, 2.0 ** -141])  # floor(log2) - 8 = -148 -> -127
    q = mx.quantize(x, "mxfp8")
    assert q.scale_exponents[0] == -127
    assert np.all(mx.round_mx(x, "mxfp8") == 0)  # below 2^-9 x 2^-127 / 2: flushed


def test_blocks_run_along_the_axis_and_a_short_last_block_stands_alone():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 70)) * np.logspace(0, 3, 70)
    along_rows = mx.round_mx(a, "mxfp4", axis=1)
    np.testing.assert_array_equal(mx.round_mx(a.T, "mxfp4", axis=0), along_rows.T)
    for r in range(3):  # blocks 0-31, 32-63 and the last six
        expected = np.concatenate([mx.round_mx(a[r, i:i + 32], "mxfp4")
                                   for i in (0, 32, 64)])
        np.testing.assert_array_equal(along_rows[r], expected)
    amax = mx.block_amax(a, axis=1)
    assert amax[0, 65] == np.abs(a[0, 64:]).max() and amax.shape == a.shape


def test_unknown_format():
    with pytest.raises(ValueError):
        mx.quantize(np.ones(4), "mxfp6")


_VALUES = st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=96)


@settings(max_examples=30, deadline=None)
@given(_VALUES, st.sampled_from(sorted(mx.MX_FORMATS)), st.integers(-20, 20))
def test_bound_idempotence_and_power_of_two_scaling(values, name, k):
    """|round(x) - x| <= u_blk amax(block) + eta; rounding twice changes nothing; scaling a
    block by 2^k scales its rounding by 2^k (the shared scale absorbs it)."""
    x = np.array(values)
    got = mx.round_mx(x, name)
    assert np.all(np.abs(got - x) <= mx.error_bound(x, name))
    np.testing.assert_array_equal(mx.round_mx(got, name), got)
    np.testing.assert_array_equal(mx.round_mx(np.ldexp(x, k), name), np.ldexp(got, k))

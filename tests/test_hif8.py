"""HiFloat8 (kernels/common/hifloat8.py) against its paper (Luo et al., "Ascend HiFloat8
Format for Deep Learning", arXiv 2409.16626) and Ascend C's hifloat8_t pages: the dot-field
table (which exponents have how many mantissa bits), the range and special values,
hand-worked encodings, every code round-tripping, monotone rounding with ties away from
zero, and the rounding error within its binade's bound.

Expected values are written out by hand from the format's definition, never computed
with the module's own tables.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels.common import hifloat8 as h8


def binade_counts() -> Counter:
    """How many positive finite values each binade 2^e <= v < 2^(e+1) holds."""
    positive = h8.SORTED_VALUES[h8.SORTED_VALUES > 0]
    return Counter(math.floor(math.log2(v)) for v in positive)


def test_dot_field_table_of_the_paper():
    """Normal values: 7 exponents with 3 mantissa bits (|E| <= 3), 8 with 2 (4 <= |E| <=
    7), 16 with 1 (8 <= |E| <= 15; at E = 15 the second value is Inf); denormals add the 7
    binades 2^-22 .. 2^-16 with one value each: 31 + 7 = 38 binades."""
    counts = binade_counts()
    expected = {e: 8 for e in range(-3, 4)}
    expected |= {e: 4 for e in (*range(-7, -3), *range(4, 8))}
    expected |= {e: 2 for e in (*range(-15, -7), *range(8, 15))}
    expected |= {15: 1} | {e: 1 for e in range(-22, -15)}
    assert dict(counts) == expected
    assert len(counts) == 38
    by_bits = Counter(int(math.log2(n)) for e, n in expected.items() if -15 <= e <= 14)
    assert by_bits == {3: 7, 2: 8, 1: 15}  # + E = 15 (one finite value): 16 with 1 bit


def test_bands_match_the_decoded_values():
    for lo, hi, bits in h8.BANDS:
        for e in range(lo, hi + 1):
            assert binade_counts()[e] == (2 ** bits if e != 15 else 1), e


def test_range_and_special_values():
    values = h8.VALUES
    assert values[0x00] == 0.0 and np.isnan(values[0x80])
    assert (values[0x6F], values[0xEF]) == (np.inf, -np.inf)
    assert values[0x6E] == 32768.0 and values[0xEE] == -32768.0  # 0 11 0111 0: 2^15
    assert values[0x7E] == 2.0 ** -15  # 0 11 1111 0: E = -15, the smallest normal
    assert values[0x01] == 2.0 ** -22 and values[0x07] == 2.0 ** -16  # denormals 2^(M-23)
    finite = values[np.isfinite(values)]
    assert finite.size == 253 and np.unique(finite).size == 253  # one zero, no -0
    assert not np.any(np.signbit(finite[finite == 0]))
    assert (h8.MAX, h8.MIN_NORMAL, h8.MIN_DENORMAL) == (2.0 ** 15, 2.0 ** -15, 2.0 ** -22)


@pytest.mark.parametrize(("value", "code"), [
    (14.0, 0x2E),     # Ascend C's example: S 0, dot 01, E field 01 (+3), M 110: 1.75 x 2^3
    (1.0, 0x08),      # dot 0001: E = 0, M 000
    (-1.0, 0x88),
    (1.875, 0x0F),    # dot 0001, M 111
    (0.5, 0x18),      # dot 001, E sign 1 (-1), M 000
    (0.75, 0x1C),     # dot 001, E -1, M 100
    (2.0, 0x10),      # dot 001, E sign 0 (+1), M 000
    (4.0, 0x20),      # dot 01, E field 00 (+2)
    (0.125, 0x38),    # dot 01, E field 11 (-3)
    (16.0, 0x40),     # dot 10, E field 000 (+4), M 00
    (224.0, 0x4F),    # dot 10, E 011 (+7), M 11: 1.75 x 2^7
    (256.0, 0x60),    # dot 11, E 0000 (+8), M 0
    (2.0 ** -15 * 1.5, 0x7F),
    (2.0 ** -20, 0x03),  # denormal M = 3: 2^(3 - 23)
])
def test_hand_worked_encodings(value, code):
    assert h8.encode(value) == code
    assert h8.decode(np.uint8(code)) == value


def test_every_code_round_trips():
    codes = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(h8.encode(h8.decode(codes)), codes)


def test_ties_go_away_from_zero():
    """TA, not ties-to-even: 1.0625 lies halfway between 1 (M 000, even) and 1.125;
    round-to-nearest-even would give 1, HiF8's rounding gives 1.125. Also at the ends:
    2^-23 (halfway to the smallest denormal) and 1.25 x 2^15 (halfway to Inf's slot)."""
    x = np.array([1.0625, -1.0625, 1.1875, 2.0 ** -23, -(2.0 ** -23), 40960.0, 1.5 * 2.0 ** -16])
    np.testing.assert_array_equal(
        h8.round_hif8(x), [1.125, -1.125, 1.25, 2.0 ** -22, -(2.0 ** -22), np.inf, 2.0 ** -15])
    below = np.nextafter(x, 0)
    np.testing.assert_array_equal(
        h8.round_hif8(below), [1.0, -1.0, 1.125, 0.0, 0.0, 32768.0, 2.0 ** -16])


def test_overflow_saturation_and_special_inputs():
    x = np.array([1e6, -1e6, np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30])
    np.testing.assert_array_equal(h8.round_hif8(x),
                                  [np.inf, -np.inf, np.inf, -np.inf, np.nan, 0, 0, 0])
    np.testing.assert_array_equal(h8.round_hif8(x, saturate=True),
                                  [32768, -32768, np.inf, -np.inf, np.nan, 0, 0, 0])
    assert list(h8.encode(np.array([0.0, -0.0]))) == [0, 0]  # one zero, never 0x80 (NaN)


def test_decode_takes_only_codes():
    with pytest.raises(TypeError):
        h8.decode(np.array([1.0]))


def test_mantissa_bits_per_band():
    x = np.array([1.5, 9.0, 17.0, 300.0, 0.1, 2.0 ** -10, 2.0 ** -18, 2.0 ** -30, 5e4])
    assert list(h8.mantissa_bits(x)) == [3, 3, 2, 1, 2, 1, 0, -1, -1]


_FINITE = st.floats(-40000, 40000, allow_nan=False) | st.floats(-1e-4, 1e-4)


@settings(max_examples=40, deadline=None)
@given(st.lists(_FINITE, min_size=2, max_size=64))
def test_rounding_is_nearest_monotone_idempotent_and_within_the_band_bound(values):
    x = np.array(values)
    got = h8.round_hif8(x)
    assert np.all(np.abs(got - x) <= h8.error_bound(x))
    # nearest: no finite HiF8 value is strictly closer than the chosen one
    gaps = np.abs(h8.SORTED_VALUES[None, :] - x[:, None]).min(axis=1)
    np.testing.assert_array_equal(np.abs(got - x), gaps)
    np.testing.assert_array_equal(h8.round_hif8(got), got)
    order = np.argsort(x, kind="stable")
    assert np.all(np.diff(got[order]) >= 0)

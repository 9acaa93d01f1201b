"""The one table of number formats (kernels/common/formats.py): every entry against numpy's
and ml_dtypes' own finfo / iinfo, hf32 against its definition (fp32 with 11 mantissa bits,
checked through the rounding it names), the FP8 formats' ranges, overflow and saturation
by hand, hif8 and the MX formats from their definitions, every float format's rounding
within its own bound (``rounding_bound``), the derived views (bytes per program dtype,
roundoffs) against the table, the chip question answered from the preset's fields, and
every consumer of a unit roundoff returning the table's value.

Expected values come from numpy / ml_dtypes or from bit patterns written out here, never
from the module's own arithmetic.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardware_presets import InputError, load
from kernels.common import accumulate, formats, microscaling, precision
from kernels.common.params import validate_params
from kernels.common.program import DTYPE_BYTES, DTYPES, ProgramBuilder
from kernels.gemm import numerics as gemm_numerics
from kernels.gemm import params as gemm_params
from kernels.vector_add import kernel as vector_add

FLOATS = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32,
          "fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2}
INTS = {"int8": np.int8, "int4": ml_dtypes.int4, "int16": np.int16, "int32": np.int32}


@pytest.mark.parametrize("name", FLOATS)
def test_float_entries_are_numpy_and_ml_dtypes_finfo(name):
    f, fi = formats.FORMATS[name], ml_dtypes.finfo(FLOATS[name])
    assert (f.kind, f.is_integer, f.bits, f.bytes) == ("float", False, fi.bits,
                                                      np.dtype(FLOATS[name]).itemsize)
    assert (f.mantissa_bits, f.exponent_bits) == (fi.nmant, fi.nexp)
    assert f.unit_roundoff == float(fi.eps) / 2
    assert f.subnormal_error == float(fi.smallest_subnormal) / 2
    assert (f.max_value, f.min_value) == (float(fi.max), float(fi.min))
    assert f.min_normal == float(fi.smallest_normal)
    assert f.storage == np.dtype(FLOATS[name])


@pytest.mark.parametrize("name", INTS)
def test_integer_entries_are_iinfo_and_exact(name):
    f, ii = formats.FORMATS[name], ml_dtypes.iinfo(INTS[name])
    assert (f.kind, f.is_integer, f.bits) == ("int", True, ii.bits)
    assert (f.max_value, f.min_value) == (ii.max, ii.min)
    assert f.bytes == ii.bits / 8 and f.rounding == (0.0, 0.0)
    assert (f.unit_roundoff, f.mantissa_bits, f.exponent_bits, f.min_normal) == (0, 0, 0, 0)


def test_int4_packs_two_per_byte_and_whole_sizes_are_ints():
    assert formats.FORMATS["int4"].bytes == 0.5
    assert all(isinstance(f.bytes, int) for n, f in formats.FORMATS.items()
               if n != "int4" and not f.is_block)


def test_hf32_is_fp32_with_eleven_mantissa_bits():
    """Read off the rounding itself: 1 + 2**-11 is an hf32 value, 1 + 2**-12 a tie that
    goes to even (so u = 2**-12), the largest value has the bit pattern 0x7F7FF000, and
    the exponent range and storage are fp32's."""
    hf, fi = formats.FORMATS["hf32"], np.finfo(np.float32)
    assert (hf.mantissa_bits, hf.exponent_bits, hf.bytes) == (11, fi.nexp, 4)
    one_ulp = 1 + 2.0 ** -11
    assert formats.round_to(np.float64(one_ulp), "hf32") == one_ulp
    assert formats.round_to(np.float64(1 + hf.unit_roundoff), "hf32") == 1.0
    assert formats.round_to(np.float64(1 + 3 * hf.unit_roundoff), "hf32") == 1 + 2.0 ** -10
    assert hf.max_value == float(np.array([0x7F7F_F000], np.uint32).view(np.float32)[0])
    assert hf.min_normal == float(fi.smallest_normal) and hf.storage == np.float32
    assert hf.subnormal_error == 2.0 ** -138  # half the quantum 2**-126 * 2**-11


def test_every_program_dtype_is_in_the_table_with_its_bytes():
    assert set(DTYPES) <= set(formats.FORMATS)
    assert DTYPE_BYTES == {d: formats.FORMATS[d].bytes for d in DTYPES}
    with pytest.raises(ValueError):
        ProgramBuilder("x").vector(0, "Add", 8, "fp64", 0)  # not a program dtype


def test_kernels_dtypes_are_in_the_table():
    assert set(vector_add.DTYPES) | set(gemm_params.IN_BYTES) | set(gemm_params.OUT_BYTES) \
        <= set(formats.FORMATS)
    wide = {"fp16": 2, "bf16": 2, "fp32": 4, "hf32": 4, "int8": 1}
    assert {k: gemm_params.IN_BYTES[k] for k in wide} == wide
    assert all(b == formats.BYTES[k] for k, b in gemm_params.IN_BYTES.items())  # 8/4-bit too
    assert gemm_params.OUT_BYTES == {"fp16": 2, "bf16": 2, "fp32": 4, "int32": 4, "int8": 1}
    assert {d: vector_add.elem_bytes(d) for d in vector_add.DTYPES} == \
        {d: np.dtype(vector_add.NUMPY_DTYPES[d]).itemsize for d in vector_add.DTYPES}


def test_views_are_the_table():
    for name, f in formats.FORMATS.items():
        assert formats.BYTES[name] == f.bytes and formats.STORAGE[name] == f.storage
        assert formats.ROUNDING[name] == (f.unit_roundoff, f.subnormal_error)
    floats = ("fp32", "hf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "hif8", "mxfp8", "mxfp4")
    assert formats.UNIT_ROUNDOFF == {n: formats.FORMATS[n].unit_roundoff for n in floats}
    assert all(precision.FORMATS[n] is formats.FORMATS[n] for n in precision.FORMATS)
    assert list(precision.FORMATS) == [*floats, "int8", "int4"]
    assert formats.FP64_UNIT_ROUNDOFF == 2.0 ** -53


def test_format_of_names_the_known_formats():
    assert formats.format_of("int16").bits == 16
    with pytest.raises(InputError) as err:
        formats.format_of("fp8")
    assert "int32" in err.value.allowed
    with pytest.raises(InputError) as err:
        precision.format_of("int32")  # the study quantises to int8 / int4 only
    assert "int4" in err.value.allowed and "int32" not in err.value.allowed


@pytest.mark.parametrize("preset", ["910B2", "910", "310P3"])
def test_which_units_take_a_format_comes_from_the_preset(preset):
    chip = load(preset)
    for name in formats.FORMATS:
        units = formats.units_with(chip, name)
        assert ("cube" in units) == (name in chip.cube_precisions)
        assert ("vector" in units) == (name in chip.vector_dtypes)
    assert precision.chip_formats is formats.chip_formats


# ---- every roundoff consumer returns the table's value -----------------------------------
def test_accumulation_strategies_use_their_adders_roundoff():
    u16, u32 = float(np.finfo(np.float16).eps) / 2, float(np.finfo(np.float32).eps) / 2
    assert {s: accumulate.strategy_unit(s) for s in accumulate.STRATEGIES} == \
        {"fp32": u32, "fp16": u16, "pairwise": u32, "kahan": u32}


@pytest.mark.parametrize("dtype", vector_add.DTYPES)
def test_vector_add_bound_is_one_rounding_of_the_table(dtype):
    u = formats.FORMATS[dtype].unit_roundoff
    extra = formats.FORMATS["fp32"].unit_roundoff if dtype == "bf16" else 0.0  # fp32 add
    assert vector_add.unit_roundoff({"dtype": dtype}) == u + extra
    if dtype in FLOATS:
        assert u == float(ml_dtypes.finfo(FLOATS[dtype]).eps) / 2


@pytest.mark.parametrize("out", ["fp16", "bf16", "fp32", "int32", "int8"])
def test_gemm_output_roundoff_is_the_tables(out):
    got = gemm_numerics.unit_roundoff(validate_params(gemm_params.PARAMS, {"dtype_out": out}))
    if out == "int8":  # half a quantisation step of the full scale
        assert got == 0.5 / ml_dtypes.iinfo(np.int8).max
    else:
        assert got == formats.FORMATS[out].unit_roundoff


def test_quantisation_ranges_are_the_integer_formats():
    x = np.linspace(-3.0, 5.0, 64)
    for fmt in precision.INT_FORMATS:
        f = formats.FORMATS[fmt]
        sym = precision.quantize(x, fmt)
        assert sym.codes.max() == f.max_value and sym.codes.min() >= -f.max_value
        asym = precision.quantize(x, fmt, "asymmetric")
        lowest = f.min_value if fmt == "int8" else 0  # int4 asymmetric codes are unsigned
        assert asym.codes.min() == lowest and asym.codes.max() == lowest + 2 ** f.bits - 1
        assert sym.nbytes == x.size * f.bytes + formats.BYTES["fp32"]


# ---- the 8-bit and block formats -----------------------------------------------------------
def test_fp8_ranges_by_hand():
    """OCP FP8: E4M3 (no infinity) tops at 1.75 x 2^8 = 448, E5M2 at 1.75 x 2^15 = 57344;
    u = 2^-(t+1) with 3 and 2 mantissa bits; smallest subnormals 2^-9 and 2^-16."""
    e4, e5 = formats.FORMATS["fp8_e4m3"], formats.FORMATS["fp8_e5m2"]
    assert (e4.max_value, e4.min_normal, e4.unit_roundoff) == (448.0, 2.0 ** -6, 2.0 ** -4)
    assert (e5.max_value, e5.min_normal, e5.unit_roundoff) == (57344.0, 2.0 ** -14, 2.0 ** -3)
    assert (e4.subnormal_error, e5.subnormal_error) == (2.0 ** -10, 2.0 ** -17)
    assert (e4.bits, e4.bytes, e4.c_type, e5.c_type) == (8, 1, "fp8_e4m3fn_t", "fp8_e5m2_t")


@pytest.mark.parametrize(("name", "tie", "tie_to", "over"), [
    ("fp8_e4m3", 464.0, 448.0, np.nan), ("fp8_e5m2", 61440.0, np.inf, np.inf)])
def test_fp8_overflow_and_saturation(name, tie, tie_to, over):
    """Past the largest value E4M3 overflows to NaN (it has no inf) and E5M2 to inf; the tie
    above the largest value goes to even (448's mantissa 110 is even, 57344's 11 odd);
    ``saturate`` clamps every finite value to the largest one and keeps inf and NaN."""
    top = formats.FORMATS[name].max_value
    x = np.array([top, tie, tie * 1.001, -tie * 1.001, 1e30, np.inf, np.nan])
    got = formats.round_to(x, name).astype(np.float64)
    np.testing.assert_array_equal(got, [top, tie_to, over, -over, over, over, np.nan])
    sat = formats.round_to(x, name, saturate=True).astype(np.float64)
    np.testing.assert_array_equal(sat, [top, top, top, -top, top, over, np.nan])


@pytest.mark.parametrize("name", ["fp8_e4m3", "fp8_e5m2"])
def test_fp8_rounds_float64_once_to_nearest_even(name):
    """1 + 2^-(t+1) (a tie) goes to 1.0 (even), a hair above it to 1 + 2^-t: the float64 is
    not rounded to fp32 first (that would make the hair vanish and give 1.0)."""
    t = formats.FORMATS[name].mantissa_bits
    x = np.array([1 + 2.0 ** -(t + 1), 1 + 2.0 ** -(t + 1) + 2.0 ** -40, 1 + 3 * 2.0 ** -(t + 1)])
    got = formats.round_to(x, name).astype(np.float64)
    assert list(got) == [1.0, 1 + 2.0 ** -t, 1 + 2.0 ** -(t - 1)]


def test_hif8_and_mx_entries_come_from_their_definitions():
    hif8, mx8, mx4 = (formats.FORMATS[n] for n in ("hif8", "mxfp8", "mxfp4"))
    assert (hif8.bits, hif8.bytes, hif8.max_value, hif8.min_normal) == (8, 1, 2.0 ** 15,
                                                                        2.0 ** -15)
    assert hif8.tapered and hif8.unit_roundoff == 2.0 ** -2  # the 1-mantissa-bit bands
    assert hif8.subnormal_error == 2.0 ** -23 and hif8.c_type == "hifloat8_t"
    # MX: element bits, plus 1/32 of the 8-bit scale per element; u relative to the
    # block's amax: E4M3's saturation 1 - 448/512, E2M1's half ulp 2^-2 (= 1 - 6/8)
    assert (mx8.bits, mx8.bytes, mx8.block_size, mx8.unit_roundoff) == (8, 1 + 1 / 32, 32, 1 / 8)
    assert (mx4.bits, mx4.bytes, mx4.block_size, mx4.unit_roundoff) == (4, 0.5 + 1 / 32, 32,
                                                                        1 / 4)
    assert mx8.max_value == 448.0 * 2.0 ** 127 and mx4.max_value == 6.0 * 2.0 ** 127
    assert not hif8.is_block and mx8.is_block and not formats.FORMATS["fp8_e4m3"].is_block


_REALS = st.floats(-1e5, 1e5, allow_nan=False, width=64) | st.floats(-1e-3, 1e-3, width=64)


@settings(max_examples=30, deadline=None)
@given(st.lists(_REALS, min_size=1, max_size=80), st.sampled_from(formats.FLOAT_FORMATS))
def test_rounding_stays_within_its_bound_and_is_idempotent(values, name):
    """For every float format: |round(x) - x| <= rounding_bound(x) wherever the bound is
    finite, and rounding a rounded array changes nothing."""
    x = np.array(values)
    with np.errstate(over="ignore", invalid="ignore"):
        once = formats.round_to(x, name).astype(np.float64)
        twice = formats.round_to(once, name).astype(np.float64)
    bound = formats.rounding_bound(x, name)
    finite = np.isfinite(bound)
    assert np.all(np.abs(once - x)[finite] <= bound[finite])
    np.testing.assert_array_equal(twice, once)


@settings(max_examples=25, deadline=None)
@given(st.lists(_REALS, min_size=2, max_size=60),
       st.sampled_from([n for n in formats.FLOAT_FORMATS if not formats.FORMATS[n].is_block]))
def test_scalar_rounding_is_monotone(values, name):
    x = np.sort(np.array(values))
    with np.errstate(over="ignore", invalid="ignore"):
        got = formats.round_to(x, name, saturate=True).astype(np.float64)
    assert np.all(np.diff(got) >= 0)


def test_gemm_k_loop_takes_mx_blocks_along_k():
    """A block-scaled Mmad takes A [M, K] and B [K, N] in blocks of 32 along K."""
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((4, 64)), rng.standard_normal((64, 5))
    A[:, 3] *= 100  # an outlier column of A: its rows' first block loses its small values
    got = accumulate.gemm_k_loop(A, B, compute="mxfp4", accumulate="fp32", base_k=64)
    a, b = microscaling.round_mx(A, "mxfp4", 1), microscaling.round_mx(B, "mxfp4", 0)
    np.testing.assert_array_equal(got, (a @ b).astype(np.float32))


def test_rounding_bound_refuses_integers():
    with pytest.raises(ValueError):
        formats.rounding_bound([1.0], "int8")

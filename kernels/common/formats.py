"""Number formats: the one table of every element type the project names, rounding to
the float formats, and 2-of-4 pruning.

* ``FORMATS``: one frozen ``Format`` per element type (fp32, hf32, bf16, fp16, fp8_e4m3,
  fp8_e5m2, hif8, mxfp8, mxfp4, int8, int4, int16, int32): bits and bytes per element,
  mantissa / exponent bits, unit roundoff, range. The float entries are read from
  ``ml_dtypes.finfo`` and the integer ones from ``ml_dtypes.iinfo``, so no figure is typed
  by hand; hf32 (no numpy type) is fp32's finfo with Ascend's 11 explicit mantissa bits;
  hif8 comes from its own decoder (``hifloat8``), the MX block formats from their element
  and scale types (``microscaling``). Every other table of bytes or roundoffs
  (``DTYPE_BYTES``, ``UNIT_ROUNDOFF``, ``ROUNDING`` ...) is a view derived from it.
* Which chips take a format is not a fact of the format but of the chip preset
  (``cube_precisions``, ``vector_dtypes``): ``chip_formats`` / ``units_with`` ask the chip.
* fp16 and fp32 round with numpy's own conversions, bf16, fp8_e4m3 and fp8_e5m2 with
  ml_dtypes'; each is one round-to-nearest-even of the given value (a float64 is not
  rounded to fp32 first). fp8_e4m3 (E4M3FN) has no infinity: past 464 it overflows to NaN,
  fp8_e5m2 to +-inf; ``saturate=True`` clamps finite values to +-max first (the "satfinite"
  conversions quantisation uses). hif8 rounds to nearest with ties away from zero (its
  paper's TA, Ascend C's CAST_ROUND). The MX formats round a whole block at a time.
* hf32 is Ascend's reduced-precision fp32 (``SetHF32Mode`` / ``SetHF32TransMode(0)``):
  the fp32 exponent range with 11 explicit mantissa bits, round to nearest even. The
  hardware converts fp32 data, so the value is first rounded to fp32 and then to hf32 by
  integer arithmetic on its uint32 bit pattern (see ``round_fp32_bits``).
* int8 is the fixpipe's quantised output: round half to even, saturated to [-128, 127].

What the unit roundoff u means differs by kind of format (``rounding_bound`` gives the
per-element bound of each): for the IEEE-like floats (fp32 ... fp8) |fl(x) - x| <= u|x|
in the normal range, u = 2^-(t+1); for the tapered hif8 u depends on the binade (3, 2 or 1
mantissa bits), and the table's u is the worst band's (2^-2); for the MX block formats u
bounds the error relative to the largest magnitude of the element's block of 32, not to
the element (``microscaling``).
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from hardware_presets.errors import InputError, Phrase
from kernels.common import hifloat8, microscaling

#: explicit mantissa bits of hf32, the cube's reduced-precision fp32 mode (``SetHF32Mode``)
HF32_MANTISSA_BITS = 11


@dataclass(frozen=True)
class Format:
    """One element type. ``unit_roundoff`` u bounds the relative error of one rounding in
    the normal range (|fl(x) - x| <= u |x|), ``subnormal_error`` eta the absolute error of
    one rounding below it (half the smallest subnormal); both are 0 for integers, whose
    adds are exact (int32 wraps). ``storage`` is the numpy dtype that holds one value
    (hf32, hif8: float32; int4: ml_dtypes.int4, one per byte in numpy, two per byte in GM;
    MX: float64, a scale times an element can pass fp32's range).

    Tapered (hif8): ``mantissa_bits`` / ``exponent_bits`` are the widest fields, and u is
    the worst band's. Block (MX, ``block_size`` > 0): ``bits`` are the element's,
    ``bytes`` add the element's share of the 8-bit scale, u bounds the error relative to
    the block's largest magnitude, the range is the element's times the scale's."""

    name: str
    kind: str  # "float" | "int"
    c_type: str  # the Ascend C element type (half, bfloat16_t, int4b_t ...)
    bits: int
    bytes: float  # bits / 8: an int where whole, 0.5 for int4
    storage: np.dtype
    mantissa_bits: int  # explicit (stored) fraction bits; 0 for integers
    exponent_bits: int  # 0 for integers
    unit_roundoff: float
    subnormal_error: float
    max_value: float  # the largest finite value
    min_value: float  # the most negative finite value
    min_normal: float  # the smallest positive normal; 0 for integers
    tapered: bool = False  # precision varies with the binade (hif8)
    block_size: int = 0  # elements sharing one scale (MX: 32); 0 for scalar formats

    @property
    def is_integer(self) -> bool:
        return self.kind == "int"

    @property
    def is_block(self) -> bool:
        return self.block_size > 0

    @property
    def rounding(self) -> tuple[float, float]:
        """(u, eta) of one rounding to this format, as ``after_rounding`` takes it."""
        return self.unit_roundoff, self.subnormal_error


def _bytes(bits: int) -> float:
    return bits // 8 if bits % 8 == 0 else bits / 8


def _float(name: str, c_type: str, dtype, mantissa: int | None = None) -> Format:
    """A binary float format from ``ml_dtypes.finfo(dtype)``; ``mantissa`` narrows the
    fraction (hf32: fp32's exponent range and storage, fewer explicit bits)."""
    fi = ml_dtypes.finfo(dtype)
    t = fi.nmant if mantissa is None else mantissa
    top = float(fi.max) if mantissa is None else float((2.0 - 2.0 ** -t) * 2.0 ** (fi.maxexp - 1))
    return Format(name, "float", c_type, fi.bits, _bytes(fi.bits), np.dtype(dtype), t, fi.nexp,
                  2.0 ** -(t + 1), 2.0 ** (fi.minexp - t - 1), top, -top,
                  float(fi.smallest_normal))


def _int(name: str, c_type: str, dtype) -> Format:
    ii = ml_dtypes.iinfo(dtype)
    return Format(name, "int", c_type, ii.bits, _bytes(ii.bits), np.dtype(dtype), 0, 0, 0.0, 0.0,
                  float(ii.max), float(ii.min), 0.0)


def _hif8() -> Format:
    """HiF8 from its decoded codes: 8 bits, 3 mantissa bits at most, u of its worst band."""
    worst = min(t for _, _, t in hifloat8.BANDS if t > 0)
    return Format("hif8", "float", "hifloat8_t", 8, 1, np.dtype(np.float32), 3, 4,
                  2.0 ** -(worst + 1), hifloat8.SUBNORMAL_ERROR, hifloat8.MAX, -hifloat8.MAX,
                  hifloat8.MIN_NORMAL, tapered=True)


def _mx(name: str, c_type: str) -> Format:
    """An MX block format from its element type and the E8M0 scale's range."""
    mx = microscaling.MX_FORMATS[name]
    fi, top = mx.finfo, mx.element_max * 2.0 ** microscaling.SCALE_MAX_EXP
    return Format(name, "float", c_type, fi.bits, fi.bits / 8 + 1 / mx.block_size,
                  np.dtype(np.float64), fi.nmant, fi.nexp, mx.block_unit_roundoff,
                  mx.subnormal_error, top, -top,
                  float(fi.smallest_normal) * 2.0 ** microscaling.SCALE_MIN_EXP,
                  block_size=mx.block_size)


#: every element type, in display order (widest float first, then the integers)
FORMATS: dict[str, Format] = {f.name: f for f in (
    _float("fp32", "float", np.float32),
    _float("hf32", "float", np.float32, HF32_MANTISSA_BITS),  # fp32 data, the cube's mode
    _float("bf16", "bfloat16_t", ml_dtypes.bfloat16),
    _float("fp16", "half", np.float16),
    _float("fp8_e4m3", "fp8_e4m3fn_t", ml_dtypes.float8_e4m3fn),
    _float("fp8_e5m2", "fp8_e5m2_t", ml_dtypes.float8_e5m2),
    _hif8(),
    _mx("mxfp8", "fp8_e4m3fn_t + fp8_e8m0_t"),
    _mx("mxfp4", "fp4x2_e2m1_t + fp8_e8m0_t"),
    _int("int8", "int8_t", np.int8),
    _int("int4", "int4b_t", ml_dtypes.int4),
    _int("int16", "int16_t", np.int16),
    _int("int32", "int32_t", np.int32),
)}
FLOAT_FORMATS = tuple(k for k, f in FORMATS.items() if not f.is_integer)
#: float64, the host's reference arithmetic (not a device format): its unit roundoff
FP64_UNIT_ROUNDOFF = float(np.finfo(np.float64).eps) / 2

# ---- views of the table, under the names the kernels use -----------------------------
#: storage dtype of each format (hf32 values are held in float32)
STORAGE = {k: f.storage for k, f in FORMATS.items()}
#: bytes per element of each format
BYTES = {k: f.bytes for k, f in FORMATS.items()}
#: explicit mantissa bits of the floating-point formats
MANTISSA_BITS = {k: FORMATS[k].mantissa_bits for k in FLOAT_FORMATS}
#: unit roundoff u (|round(x) - x| <= u |x| in the normal range) and the largest absolute
#: error of a rounding in the subnormal range (half the smallest subnormal)
UNIT_ROUNDOFF = {k: FORMATS[k].unit_roundoff for k in FLOAT_FORMATS}
SUBNORMAL_ERROR = {k: FORMATS[k].subnormal_error for k in FLOAT_FORMATS}
#: (u, eta) of one rounding to each format; integers (int32 wrap-around adds): exact, 0
ROUNDING = {k: f.rounding for k, f in FORMATS.items()}
UNITS = ("cube", "vector")


def format_of(name: str, table: dict[str, Format] = FORMATS) -> Format:
    """The Format called ``name`` in ``table``, or an InputError listing the known ones."""
    try:
        return table[name]
    except (KeyError, TypeError):
        raise InputError("format", name, Phrase("refusal.one_of", options=", ".join(table))) \
            from None


def chip_formats(chip) -> dict[str, tuple[str, ...]]:
    """{"cube": the precisions the chip's cube takes (``chip.cube_precisions``),
    "vector": the element types its vector unit lists (``chip.vector_dtypes``; bf16 only
    where the preset lists it)}: the preset decides, this table never copies it."""
    return {"cube": tuple(chip.cube_precisions), "vector": tuple(chip.vector_dtypes)}


def units_with(chip, name: str) -> tuple[str, ...]:
    """The units of ``chip`` ("cube", "vector") that take the format ``name``."""
    return tuple(unit for unit, names in chip_formats(chip).items() if name in names)


_SIGN, _ABS, _EXP = np.uint32(0x8000_0000), np.uint32(0x7FFF_FFFF), np.uint32(0x7F80_0000)
_QNAN = np.uint32(0x7FC0_0000)


def round_fp32_bits(x32: np.ndarray, explicit_bits: int) -> np.ndarray:
    """float32 ``x32`` rounded to ``explicit_bits`` mantissa bits (fp32 exponent range,
    round to nearest, ties to even), computed on the uint32 bit patterns.

    Adding ``2**(d-1) - 1`` plus the lowest kept bit and clearing the ``d`` dropped bits is
    round-to-nearest-even; a carry out of the mantissa correctly bumps the exponent (and
    turns the largest values into infinity), and subnormals need no special case because
    their quantum is fixed. NaN becomes the quiet NaN of the same sign (as ml_dtypes does
    for bf16), infinities and zeros are kept. ``explicit_bits`` = 7 is bf16, 11 is hf32.
    """
    drop = FORMATS["fp32"].mantissa_bits - explicit_bits
    bits = np.ascontiguousarray(x32, dtype=np.float32).view(np.uint32)
    if drop <= 0:
        return bits.view(np.float32).copy()
    lsb = (bits >> np.uint32(drop)) & np.uint32(1)
    rounded = (bits + np.uint32((1 << (drop - 1)) - 1) + lsb) & ~np.uint32((1 << drop) - 1)
    nan = (bits & _ABS) > _EXP
    out = np.where(nan, (bits & _SIGN) | _QNAN, rounded)
    return out.astype(np.uint32).view(np.float32)


def _saturated(x: np.ndarray, top: float) -> np.ndarray:
    """Finite values clamped to [-top, top]; infinities and NaN kept."""
    return np.where(np.isfinite(x), np.clip(x, -top, top), x)


def _round_float(x: np.ndarray, dtype: str, saturate: bool, axis: int) -> np.ndarray:
    fmt = FORMATS[dtype]
    if fmt.is_block:
        return microscaling.round_mx(x, dtype, axis)
    if fmt.tapered:
        return hifloat8.round_hif8(x, saturate=saturate).astype(np.float32)
    if saturate:
        x = _saturated(x.astype(np.float64), fmt.max_value)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the rule
        if dtype != "hf32":
            return x.astype(STORAGE[dtype])
        x32 = x.astype(np.float32)
    return round_fp32_bits(x32, MANTISSA_BITS["hf32"]).reshape(x.shape)


def round_to(x, dtype: str, *, saturate: bool = False, axis: int = -1) -> np.ndarray:
    """``x`` rounded once to ``dtype`` and stored in its numpy dtype (``STORAGE``).

    fp16 -> float16, bf16 -> ml_dtypes.bfloat16, fp32 -> float32, fp8_e4m3 / fp8_e5m2 ->
    ml_dtypes float8 (nearest even; ``saturate`` clamps finite values to +-max instead of
    overflowing to NaN / inf), hf32 -> float32 holding hf32 values (x rounded to fp32, then
    to hf32, as the hardware converts fp32 data), hif8 -> float32 holding HiF8 values
    (ties away from zero; ``saturate``: +-32768 instead of +-inf), mxfp8 / mxfp4 -> float64
    holding the block-rounded values (blocks of 32 along ``axis``, always saturating),
    int8 -> int8 (round half to even, saturated to [-128, 127], NaN -> 0).
    """
    x = np.asarray(x)
    if dtype in FLOAT_FORMATS:
        return _round_float(x, dtype, saturate, axis)
    if dtype == "int8":
        lo, hi = FORMATS["int8"].min_value, FORMATS["int8"].max_value
        if x.dtype.kind in "iub":
            return np.clip(x, lo, hi).astype(np.int8)
        r = np.rint(np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=hi, neginf=lo))
        return np.clip(r, lo, hi).astype(np.int8)
    raise ValueError(f"round_to: unknown dtype {dtype!r}; one of "
                     f"{', '.join(FLOAT_FORMATS)}, int8")


def rounding_bound(x, dtype: str, *, axis: int = -1) -> np.ndarray:
    """The largest |round_to(x, dtype) - x| the format allows for each element of ``x``
    (float64, ``x``'s shape): u |x| + eta for the IEEE-like floats (inf from the overflow
    threshold, max + half an ulp, on), the binade's bound for hif8, u times the block's
    largest magnitude plus eta for the MX formats (blocks along ``axis``)."""
    fmt = format_of(dtype)
    if fmt.is_integer:
        raise ValueError(f"rounding_bound: {dtype!r} is not a float format")
    x = np.asarray(x, dtype=np.float64)
    if fmt.is_block:
        return microscaling.error_bound(x, dtype, axis)
    if fmt.tapered:
        return hifloat8.error_bound(x)
    top_exp = np.floor(np.log2(fmt.max_value))
    overflow = fmt.max_value + 2.0 ** (top_exp - fmt.mantissa_bits - 1)
    bound = fmt.unit_roundoff * np.abs(x) + fmt.subnormal_error
    return np.where(np.abs(x) < overflow, bound, np.inf)


def _magnitude(b: np.ndarray) -> np.ndarray:
    """|b| in a type that holds every magnitude exactly and compares like the values."""
    if b.dtype.kind in "iu":
        return np.abs(b.astype(np.int64 if b.dtype.itemsize >= 4 else np.int32))
    return np.abs(b.astype(np.float64 if b.dtype.itemsize > 4 else np.float32))


def prune_2_of_4(b: np.ndarray) -> np.ndarray:
    """``b`` (K x ...) with, in every group of 4 consecutive K elements of each column,
    the 2 of largest magnitude kept (ties: the lower K index wins) and the others zeroed.

    This is the 4:2 structure of ``MmadWithSparse`` (int8) and of the 2:4 what-if
    (fp16/bf16). K is padded with zeros to a multiple of 4 for the grouping only.
    An element's rank in its group is the number of others that beat it (larger
    magnitude, or equal magnitude and lower index); it is kept when the rank is below 2.
    """
    b = np.asarray(b)
    K = b.shape[0]
    groups = -(-K // 4)
    mag = _magnitude(b)
    if groups * 4 != K:
        mag = np.concatenate([mag, np.zeros((groups * 4 - K,) + b.shape[1:], mag.dtype)])
    mag = mag.reshape((groups, 4) + b.shape[1:])
    keep = np.empty(mag.shape, dtype=bool)
    for i in range(4):
        rank = np.zeros(mag.shape[:1] + mag.shape[2:], np.int8)
        for j in range(4):
            if j != i:
                beats = mag[:, j] >= mag[:, i] if j < i else mag[:, j] > mag[:, i]
                rank += beats
        keep[:, i] = rank < 2
    keep = keep.reshape((groups * 4,) + b.shape[1:])[:K]
    return np.where(keep, b, np.zeros((), b.dtype))


def gamma(n: float, u: float) -> float:
    """gamma_n = n u / (1 - n u): a product of n factors (1 + d) with |d| <= u is 1 + t,
    |t| <= gamma_n (Higham, Accuracy and Stability of Numerical Algorithms, 3.1)."""
    return n * u / (1.0 - n * u)


def after_rounding(E, mag, rounding: tuple[float, float]):
    """Error bound after one more rounding (u, eta) of a computed value that carries error
    ``E`` and whose exact counterpart has magnitude ``mag``: |fl(x) - x| <= u |x| + eta and
    |x| <= mag + E, so the error becomes E + u (mag + E) + eta."""
    u, eta = rounding
    return E + u * (mag + E) + eta

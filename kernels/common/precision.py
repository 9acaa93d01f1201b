"""Number formats as a measured dimension: what each format is, rounding to the float
formats, quantization to the integer formats, and which formats each chip's units take.

* ``FORMATS``: fp32, hf32, bf16, fp16, fp8_e4m3, fp8_e5m2, hif8, mxfp8, mxfp4, int8,
  int4: the study's view of the one table ``kernels.common.formats.FORMATS`` (unit
  roundoff, range, bytes per element). hf32 is the cube's reduced-mantissa fp32 mode (fp32
  exponent range, 11 explicit mantissa bits); it is held in 4 bytes like fp32.
* ``round_to(x, name)``: one rounding of ``x`` to a float format, returned as float64
  values (fp16 keeps subnormals and overflows to inf). The rounding itself is numpy's
  (fp16, fp32) and ml_dtypes' (bf16, fp8) conversion, for hf32 fp32 then 11 bits on the
  uint32 pattern, hif8's and the MX formats' own modules (``hifloat8``,
  ``microscaling``), as ``kernels.common.formats.round_to`` does.
* ``quantize(x, fmt, scheme, granularity)``: int8 / int4 codes plus scales (and zero
  points), symmetric or asymmetric, per tensor / channel / token / group. Dequantizing
  gives every in-range element back within half a quantization step (scale / 2).
* ``chip_formats(chip)`` / ``require(chip, fmt, unit)``: the formats a preset's cube and
  vector units take, and a clear refusal for the others.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardware_presets.errors import InputError, Phrase
from kernels.common import formats as _formats
from kernels.common.formats import Format, chip_formats

__all__ = ["FLOAT_FORMATS", "FORMATS", "Format", "GRANULARITIES", "INT_FORMATS", "SCHEMES",
           "UNITS", "Quantized", "chip_formats", "format_of", "quantize", "require",
           "round_to"]


#: the formats of the study (display order): every float, and the integer formats whose
#: codes an int8 holds (int16 / int32 are accumulator types, not quantisation targets)
FORMATS: dict[str, Format] = {k: f for k, f in _formats.FORMATS.items()
                              if not f.is_integer or f.bits <= 8}
FLOAT_FORMATS = tuple(k for k, f in FORMATS.items() if not f.is_integer)
INT_FORMATS = tuple(k for k, f in FORMATS.items() if f.is_integer)
SCHEMES = ("symmetric", "asymmetric")
GRANULARITIES = ("tensor", "channel", "token", "group")
UNITS = _formats.UNITS
#: scales and zero points are fp32
_SCALE_BYTES = _formats.BYTES["fp32"]


def format_of(name: str) -> Format:
    """The Format called ``name``, or an InputError listing the study's formats."""
    return _formats.format_of(name, FORMATS)


def round_to(x, name: str, *, saturate: bool = False, axis: int = -1) -> np.ndarray:
    """``x`` rounded once (to nearest, ties to even; hif8: ties away) to the float format
    ``name``, as a float64 array of exactly representable values. Overflow gives +-inf
    (fp8_e4m3: NaN) unless ``saturate``, NaN stays NaN; hf32 rounds to fp32 first, as the
    hardware converts fp32 data; the MX formats round blocks of 32 along ``axis``."""
    fmt = format_of(name)
    if fmt.kind != "float":
        raise InputError("format", name, Phrase("refusal.float_format",
                                                names=", ".join(FLOAT_FORMATS)),
                         hint=Phrase("refusal.hint.quantize_codes", fmt=name, name=repr(name)))
    x = np.asarray(x)
    if x.dtype.kind not in "fiub" and x.dtype.name != "bfloat16":
        raise InputError("x", str(x.dtype), Phrase("refusal.real_array"))
    if x.dtype.kind in "iub":
        x = x.astype(np.float64)
    return _formats.round_to(x, name, saturate=saturate, axis=axis).astype(np.float64)


# ---- quantization -----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Quantized:
    """Integer codes with their scales: ``dequantize() = (codes - zero_point) * scale``.

    ``codes`` is int8: int8 symmetric [-127, 127] (the code -128 is not used), int8
    asymmetric [-128, 127] (the unsigned code 0..255 minus 128), int4 symmetric [-7, 7],
    int4 asymmetric [0, 15]. ``scale`` and ``zero_point`` (float64; zeros for symmetric)
    have ``codes.ndim`` dimensions and broadcast against the codes, except for "group"
    where ``axis`` holds one entry per group of ``group_size`` (``expand`` repeats them).
    The zero point is in the codes' own domain: the (generally fractional) code that
    stands for 0.0, i.e. a float offset as in Ascend's ``AscendAntiQuant`` (dst = (src +
    offset) * scale, offset = -zero_point), not an integer zero point: it keeps the codes
    spanning exactly [min, max] even for data far from 0.
    """

    codes: np.ndarray
    scale: np.ndarray
    zero_point: np.ndarray
    fmt: str
    scheme: str
    granularity: str
    axis: int
    group_size: int

    def expand(self, a: np.ndarray) -> np.ndarray:
        """A per-scale array (``scale`` or ``zero_point``) broadcastable to the codes."""
        if self.granularity == "group":
            return np.repeat(a, self.group_size, axis=self.axis)
        return a

    def dequantize(self) -> np.ndarray:
        """The represented values, float64."""
        codes = self.codes.astype(np.float64)
        return (codes - self.expand(self.zero_point)) * self.expand(self.scale)

    @property
    def nbytes(self) -> float:
        """Storage: codes at the format's bits (int4 packs two per byte; an odd count
        leaves half a byte), plus 4 bytes (fp32) per scale and, for asymmetric, per zero
        point."""
        per_scale = _SCALE_BYTES * (2 if self.scheme == "asymmetric" else 1)
        return self.codes.size * FORMATS[self.fmt].bytes + per_scale * self.scale.size


def _check_choice(field: str, value, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InputError(field, value, Phrase("refusal.one_of", options=", ".join(allowed)))


def _divisors(n: int, limit: int = 12) -> str:
    ds = [d for d in range(1, n + 1) if n % d == 0]
    shown = ds if len(ds) <= limit else ds[:limit // 2] + ["..."] + ds[-limit // 2:]
    return ", ".join(str(d) for d in shown)


def _check_quantize(x: np.ndarray, fmt: str, scheme: str, granularity: str, axis: int,
                    group_size: int) -> int:
    """Validate the request; returns the normalised axis."""
    _check_choice("quantization format", fmt, INT_FORMATS)
    _check_choice("quantization scheme", scheme, SCHEMES)
    _check_choice("quantization granularity", granularity, GRANULARITIES)
    if x.size == 0 or x.ndim == 0:
        raise InputError("x", x.shape, Phrase("refusal.array_nonempty"))
    if not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise InputError("axis", axis, Phrase("refusal.axis_of", low=-x.ndim, high=x.ndim - 1,
                                              shape=x.shape))
    axis = int(axis) % x.ndim
    if granularity == "group":
        n = x.shape[axis]
        if not isinstance(group_size, (int, np.integer)) or group_size < 1 or n % group_size:
            raise InputError("group_size", group_size,
                             Phrase("refusal.divisor_of_axis", n=n, divisors=_divisors(n)),
                             hint=Phrase("refusal.hint.tile_groups"))
    if not np.all(np.isfinite(x)):
        raise InputError("x", Phrase("refusal.value.non_finite_inf"),
                         Phrase("refusal.finite_scale"))
    return axis


def _reduce_axes(x: np.ndarray, granularity: str, axis: int) -> tuple[np.ndarray, tuple]:
    """(array arranged for the reduction, axes to reduce with keepdims)."""
    if granularity == "tensor":
        return x, tuple(range(x.ndim))
    if granularity == "channel":
        return x, tuple(a for a in range(x.ndim) if a != axis)
    if granularity == "token":
        return x, (x.ndim - 1,)
    raise AssertionError(granularity)


def _group_stats(x: np.ndarray, granularity: str, axis: int, group_size: int):
    """(min, max) per scale, each with x.ndim dimensions (group: axis = n_groups)."""
    if granularity == "group":
        shape = x.shape[:axis] + (x.shape[axis] // group_size, group_size) + x.shape[axis + 1:]
        g = x.reshape(shape)
        lo, hi = g.min(axis=axis + 1), g.max(axis=axis + 1)
        return lo, hi
    arr, axes = _reduce_axes(x, granularity, axis)
    return arr.min(axis=axes, keepdims=True), arr.max(axis=axes, keepdims=True)


def _safe_scale(scale: np.ndarray, reach: np.ndarray, qmax: float) -> np.ndarray:
    """Nudge ``scale`` up by ulps until ``reach / scale <= qmax`` holds in float64, so
    that the largest magnitude never rounds past the last code (matters only where the
    division of tiny values is inexact)."""
    for _ in range(4):
        with np.errstate(divide="ignore", over="ignore"):
            over = reach / scale > qmax
        if not over.any():
            break
        scale = np.where(over, np.nextafter(scale, np.inf), scale)
    return scale


def _steps_above(x: np.ndarray, lo: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(x - lo) / scale, also where x - lo overflows (ranges near the float64 limit)."""
    with np.errstate(over="ignore", invalid="ignore"):
        d = (x - lo) / scale
    bad = ~np.isfinite(d)
    if bad.any():
        d = np.where(bad, (x * 0.5 - lo * 0.5) / (scale * 0.5), d)
    return d


def quantize(x, fmt: str = "int8", scheme: str = "symmetric", granularity: str = "tensor",
             *, axis: int = -1, group_size: int = 128) -> Quantized:
    """``x`` as int8 / int4 codes with scales.

    symmetric: scale = max|x| / qmax (qmax = 127 for int8, 7 for int4), codes =
    clip(round_half_even(x / scale), -qmax, qmax), zero point 0.
    asymmetric: scale = (max - min) / (2**bits - 1), codes = qmin + round_half_even((x -
    min) / scale) with qmin the lowest code (-128 for int8, 0 for int4), zero point =
    qmin - min / scale: min maps to the lowest code, max to the highest.
    Granularity (one scale per ...): "tensor" the whole array; "channel" each index
    along ``axis`` (for a GEMM B = W[K, N], axis=-1: each output column); "token" each
    vector along the last axis (for [tokens, dim]: each row); "group" each contiguous run
    of ``group_size`` elements along ``axis`` (separately for every other index).
    A group whose values are all equal gets scale |value| (or 1 for zeros), so it is
    exact. Non-finite inputs, unknown names and a group size that does not divide the
    axis are refused with an InputError.
    """
    x = np.asarray(x)
    if x.dtype.kind not in "fiub" and x.dtype.name != "bfloat16":
        raise InputError("x", str(x.dtype), Phrase("refusal.real_array"))
    x = x.astype(np.float64)
    axis = _check_quantize(x, fmt, scheme, granularity, axis, group_size)
    bits = FORMATS[fmt].bits
    lo, hi = _group_stats(x, granularity, axis, group_size)
    if scheme == "symmetric":
        qmax = FORMATS[fmt].max_value  # 2**(bits - 1) - 1
        reach = np.maximum(np.abs(lo), np.abs(hi))
        scale = _safe_scale(np.where(reach > 0, reach / qmax, 1.0), reach, qmax)
        zp = np.zeros_like(scale)
        q = Quantized(np.empty(0, np.int8), scale, zp, fmt, scheme, granularity, axis,
                      group_size)
        steps, qmin = x / q.expand(scale), -qmax
    else:
        levels = float(2 ** bits - 1)
        qmin = FORMATS[fmt].min_value if fmt == "int8" else 0.0  # int4: unsigned codes
        qmax = qmin + levels
        span = hi / levels - lo / levels  # (hi - lo) / levels without overflow
        scale = np.where(span > 0, span, np.where(lo != 0, np.abs(lo), 1.0))
        zp = qmin - lo / scale
        q = Quantized(np.empty(0, np.int8), scale, zp, fmt, scheme, granularity, axis,
                      group_size)
        steps = _steps_above(x, q.expand(lo), q.expand(scale)) + qmin
    codes = np.clip(np.rint(steps), qmin, qmax).astype(np.int8)
    return Quantized(codes, scale, zp, fmt, scheme, granularity, axis, group_size)


# ---- which unit takes which format ------------------------------------------------------
def require(chip, fmt: str, unit: str = "cube") -> None:
    """Refuse ``fmt`` on ``unit`` of ``chip`` when the preset does not list it."""
    _check_choice("unit", unit, UNITS)
    allowed = chip_formats(chip)[unit]
    if fmt not in allowed:
        name = getattr(chip, "display_name", None) or chip.name
        raise InputError(f"{name} {unit} format", fmt,
                         Phrase("refusal.one_of", options=", ".join(allowed)),
                         hint=Phrase("refusal.hint.unit_format", chip=name, unit=unit, fmt=fmt))

"""Low-precision operands as kernels store them, and what an operand loses to its format.

Two ways a tensor is held in an 8- or 4-bit float format (the formats themselves are
``kernels.common.formats``'):

* **scaled** (``SCALED_FORMATS``: fp8_e4m3, fp8_e5m2, hif8): each row, column or channel
  has an fp32 scale s = fp32(amax / target) and its elements are stored as
  round(x / s) in the format, saturating (``round_to(..., saturate=True)``); the value is
  code x s. This is aclnnQuantMatmulV5's "K-C" mode on Ascend 950 (x1Scale per row of x1,
  x2Scale per column of x2, both FLOAT32: out = (x1 @ x2 + bias) x x2Scale x x1Scale), and
  the per-channel antiquant scale of a KV cache. ``target`` is the format's largest value
  for the IEEE-like fp8 formats (the scale a dynamic quantisation takes: amax / 448 for
  E4M3); for the tapered hif8 it is 2^4, the top of its 3-mantissa-bit band (a choice of
  this explorer: mapping amax to hif8's 32768 would put most values in its 1- and 2-bit
  bands).
* **block** (``BLOCK_FORMATS``: mxfp8, mxfp4): OCP MX, an E8M0 scale per 32 consecutive
  elements along one axis (``microscaling``); held here as the dequantised values, which
  are exact in float32 for every scale this project draws.

``QuantError`` measures an operand against its real values: the norm-wise relative error
||q - x|| / ||x|| (next to bf16's, the format users compare with), the largest element
error, its ratio to the format's own per-element bound (``rounding_bound``: relative for
the scalar formats, relative to the block's amax for MX), and the nonzero elements that
became 0 (what an outlier does to the small elements of its MX block).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from kernels.common import hifloat8
from kernels.common.formats import (
    FORMATS,
    FP64_UNIT_ROUNDOFF,
    round_to,
    rounding_bound,
    units_with,
)

SCALED_FORMATS = ("fp8_e4m3", "fp8_e5m2", "hif8")
BLOCK_FORMATS = ("mxfp8", "mxfp4")
LOW_FORMATS = SCALED_FORMATS + BLOCK_FORMATS
#: elements converted at a time (bounds the float64 temporaries of a large operand)
CHUNK_ELEMS = 1 << 21


def on_chip(chip, fmt: str) -> bool:
    """Whether a kernel may store data in ``fmt`` on ``chip``: the wider formats and int8
    everywhere (every vector unit converts them), an 8- or 4-bit float only where one of
    the chip's units takes it (``units_with``: the 950's arch-3510 cube, whose vector
    units also convert these formats, as CANN's arch35 kernels do)."""
    return fmt not in LOW_FORMATS or bool(units_with(chip, fmt))


def scale_target(fmt: str) -> float:
    """The value a scaled row's largest magnitude maps to (see the module docstring)."""
    if FORMATS[fmt].tapered:
        top = max(t for _, _, t in hifloat8.BANDS)
        return 2.0 ** (max(hi for _, hi, t in hifloat8.BANDS if t == top) + 1)
    return FORMATS[fmt].max_value


def row_scales(x: np.ndarray, fmt: str, axis: int) -> np.ndarray:
    """fp32 scales of ``x`` reduced over ``axis`` (keepdims): fp32(amax / target), 1 where
    the row is all zeros."""
    amax = np.max(np.abs(x), axis=axis, keepdims=True).astype(np.float64)
    return np.where(amax > 0, amax / scale_target(fmt), 1.0).astype(np.float32)


def scaled_codes(x: np.ndarray, scale: np.ndarray, fmt: str) -> np.ndarray:
    """round(x / scale) in ``fmt``, saturating, in the format's storage dtype."""
    return round_to(np.asarray(x, np.float64) / scale.astype(np.float64), fmt, saturate=True)


def scaled_bound(x: np.ndarray, scale: np.ndarray, fmt: str) -> np.ndarray:
    """Allowed |code x scale - x| per element: scale x the format's bound at x / scale,
    plus the float64 division's own rounding (2^-53 relative)."""
    s = scale.astype(np.float64)
    xs = np.asarray(x, np.float64) / s
    return s * (rounding_bound(xs, fmt) + 2 * FP64_UNIT_ROUNDOFF * np.abs(xs))


@dataclass(frozen=True)
class QuantError:
    """An operand against its real values (see the module docstring); sums kept so that
    chunks merge exactly."""

    fmt: str
    elements: int
    nonzero: int
    flushed: int  # nonzero elements stored as 0
    max_abs: float
    bound_ratio: float  # max |q - x| / allowed; <= 1 when the format's bound holds
    err_sq: float  # sum (q - x)^2
    ref_sq: float  # sum x^2
    bf16_err_sq: float  # sum (bf16(x) - x)^2

    @property
    def norm_rel(self) -> float:
        """||q - x|| / ||x|| (0 for an all-zero operand)."""
        return float(np.sqrt(self.err_sq / self.ref_sq)) if self.ref_sq else 0.0

    @property
    def bf16_norm_rel(self) -> float:
        """The same for bf16, the format these are compared with."""
        return float(np.sqrt(self.bf16_err_sq / self.ref_sq)) if self.ref_sq else 0.0

    def merge(self, other: QuantError) -> QuantError:
        """Both chunks together."""
        return QuantError(self.fmt, self.elements + other.elements,
                          self.nonzero + other.nonzero, self.flushed + other.flushed,
                          max(self.max_abs, other.max_abs),
                          max(self.bound_ratio, other.bound_ratio),
                          self.err_sq + other.err_sq, self.ref_sq + other.ref_sq,
                          self.bf16_err_sq + other.bf16_err_sq)

    def summary(self) -> dict:
        """The numbers a page or report shows (plain floats and ints)."""
        out = asdict(self)
        out.update(norm_rel=self.norm_rel, bf16_norm_rel=self.bf16_norm_rel)
        return out


def measure(x, q, allowed, fmt: str) -> QuantError:
    """``q`` (the stored values, any float dtype) against the real ``x`` with the
    per-element ``allowed`` error."""
    x = np.asarray(x, np.float64)
    err = np.abs(np.asarray(q, np.float64) - x)
    ratio = np.divide(err, allowed, out=np.where(err > 0, np.inf, 0.0), where=allowed > 0)
    bf = np.asarray(round_to(x, "bf16"), np.float64) - x
    nonzero = x != 0
    return QuantError(fmt, int(x.size), int(nonzero.sum()),
                      int((nonzero & (np.asarray(q, np.float64) == 0)).sum()),
                      float(err.max(initial=0.0)), float(ratio.max(initial=0.0)),
                      float((err * err).sum()), float((x * x).sum()), float((bf * bf).sum()))


def quantize_rows(x: np.ndarray, fmt: str, k_axis: int):
    """``x`` (2-D) in ``fmt`` with K along ``k_axis``: (the values the kernel multiplies,
    fp32 scales per row / column or None, QuantError). Scaled formats return codes (their
    storage dtype) and one scale per index of the other axis (K reduced); MX formats
    return the dequantised values (float32) with blocks of 32 along K. Converted in
    chunks of whole rows (columns) so temporaries stay bounded."""
    other = 1 - k_axis
    n = x.shape[other]
    per = max(1, CHUNK_ELEMS // max(1, x.shape[k_axis]))
    scaled = fmt in SCALED_FORMATS
    out = np.empty(x.shape, FORMATS[fmt].storage if scaled else np.float32)
    scales = np.empty((n, 1) if other == 0 else (1, n), np.float32) if scaled else None
    error = None
    for c0 in range(0, n, per):
        cut = slice(c0, c0 + per)
        sl = (cut, slice(None)) if other == 0 else (slice(None), cut)
        part = np.asarray(x[sl], np.float64)
        if scaled:
            s = row_scales(part, fmt, k_axis)
            q = scaled_codes(part, s, fmt)
            scales[sl] = s
            deq, allowed = q.astype(np.float64) * s, scaled_bound(part, s, fmt)
        else:
            q = deq = round_to(part, fmt, axis=k_axis)
            allowed = rounding_bound(part, fmt, axis=k_axis)
        out[sl] = q
        e = measure(part, deq, allowed, fmt)
        error = e if error is None else error.merge(e)
    return out, scales, error

"""OCP microscaling (MX) block formats: MXFP8 and MXFP4, quantized and rounded.

OCP Microscaling Formats (MX) Specification v1.0 (2023): a block of k = 32 consecutive
elements shares one scale X = 2^s stored as E8M0 (an 8-bit exponent, s in [-127, 127],
0xFF is NaN); each element P_i is stored in a small float format and stands for X * P_i.
MXFP8 elements are FP8 E4M3 (``ml_dtypes.float8_e4m3fn``, largest 448 = 1.75 x 2^8), MXFP4
elements are FP4 E2M1 (``ml_dtypes.float4_e2m1fn``: 0, 0.5, 1, 1.5, 2, 3, 4, 6); the scale
is ``ml_dtypes.float8_e8m0fnu``.

Conversion, as section 6.3 of the spec gives it:
  s = floor(log2(max_i |V_i|)) - emax_elem   (emax_elem: 8 for E4M3, 2 for E2M1),
  clamped to E8M0's [-127, 127] (an all-zero block gets s = -127);
  P_i = V_i / 2^s rounded to the element format, to nearest even, saturating at the
  element's largest value (the block maximum can land above it: amax / X lies in
  [2^emax, 2^(emax+1)), while E4M3 stops at 1.75 x 2^8 and E2M1 at 1.5 x 2^2).
A block holding Inf or NaN gets the NaN scale, so all of its elements read as NaN (the
spec leaves this choice to the implementation). Blocks run along ``axis``; a last,
shorter block is scaled on its own elements.

What "unit roundoff" means for a block format: the error of an element is bounded
relative to its *block's* largest magnitude, not to the element itself:
  |round(V_i) - V_i| <= u_blk * max_j |V_j| + eta,
  u_blk = max(2^-(t+1), 1 - elem_max / 2^(emax+1))
with t the element's mantissa bits: the first term is half an ulp of the top binade,
the second the saturation of the block maximum. MXFP8: u_blk = max(2^-4, 1 - 448/512) =
1/8; MXFP4: max(2^-2, 1 - 6/8) = 1/4. eta = half the element's smallest subnormal times
2^-127 covers blocks whose scale is clamped at 2^-127. A small element next to a large
one has no relative bound at all: below the element's smallest subnormal (2^-9 for E4M3,
0.5 for E2M1) times X it flushes to zero; that is what an outlier does to its block.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

BLOCK = 32
SCALE_DTYPE = np.dtype(ml_dtypes.float8_e8m0fnu)
SCALE_MIN_EXP, SCALE_MAX_EXP = -127, 127


@dataclass(frozen=True)
class MXFormat:
    """One MX format: its element type and block size, and the constants of its bound."""

    name: str
    element: np.dtype  # the ml_dtypes element type
    element_name: str  # as the OCP spec names it
    block_size: int = BLOCK

    @property
    def finfo(self):
        return ml_dtypes.finfo(self.element)

    @property
    def emax(self) -> int:
        """The exponent of the element's largest binade (8 for E4M3, 2 for E2M1)."""
        return int(self.finfo.maxexp) - 1

    @property
    def element_max(self) -> float:
        return float(self.finfo.max)

    @property
    def block_unit_roundoff(self) -> float:
        """u_blk: the largest error of an element relative to its block's amax."""
        half_ulp = 2.0 ** -(int(self.finfo.nmant) + 1)
        return max(half_ulp, 1.0 - self.element_max / 2.0 ** (self.emax + 1))

    @property
    def subnormal_error(self) -> float:
        """eta: half the element's smallest subnormal at the smallest scale 2^-127."""
        return float(self.finfo.smallest_subnormal) / 2 * 2.0 ** SCALE_MIN_EXP


MX_FORMATS = {
    "mxfp8": MXFormat("mxfp8", np.dtype(ml_dtypes.float8_e4m3fn), "E4M3"),
    "mxfp4": MXFormat("mxfp4", np.dtype(ml_dtypes.float4_e2m1fn), "E2M1"),
}


@dataclass(frozen=True, eq=False)
class MXBlocks:
    """A quantized array: ``elements`` (the element dtype) and ``scales`` (E8M0), laid
    out with the blocked axis last: elements [..., blocks, block_size], scales
    [..., blocks]. ``dequantize()`` gives back an array of the original shape."""

    elements: np.ndarray
    scales: np.ndarray
    fmt: MXFormat
    axis: int
    length: int  # the blocked axis' length before padding to whole blocks

    def dequantize(self) -> np.ndarray:
        """X * P_i for every element, float64, in the original shape."""
        values = self.elements.astype(np.float64) * self.scales.astype(np.float64)[..., None]
        flat = values.reshape(values.shape[:-2] + (-1,))[..., :self.length]
        return np.moveaxis(flat, -1, self.axis)

    @property
    def scale_exponents(self) -> np.ndarray:
        """s of every block (its scale is 2^s), float64; NaN for a NaN block."""
        with np.errstate(invalid="ignore"):
            return np.log2(self.scales.astype(np.float64))


def mx_format(name: str) -> MXFormat:
    try:
        return MX_FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown MX format {name!r}; one of {', '.join(MX_FORMATS)}") \
            from None


def _blocks(x: np.ndarray, axis: int, block: int) -> np.ndarray:
    """x with ``axis`` last, zero-padded to whole blocks, shaped [..., blocks, block]."""
    moved = np.moveaxis(x, axis, -1)
    pad = -moved.shape[-1] % block
    if pad:
        moved = np.concatenate([moved, np.zeros(moved.shape[:-1] + (pad,))], axis=-1)
    return moved.reshape(moved.shape[:-1] + (-1, block))


def shared_exponents(amax: np.ndarray, fmt: MXFormat) -> np.ndarray:
    """s = floor(log2(amax)) - emax_elem clamped to [-127, 127] (exact, via frexp; an
    all-zero block gets -127)."""
    _, e = np.frexp(amax)  # amax = m 2^e, m in [0.5, 1): floor(log2 amax) = e - 1
    s = np.where(amax > 0, e - 1 - fmt.emax, SCALE_MIN_EXP)
    return np.clip(s, SCALE_MIN_EXP, SCALE_MAX_EXP)


def quantize(x, name: str = "mxfp8", axis: int = -1) -> MXBlocks:
    """``x`` as MX blocks of 32 consecutive elements along ``axis`` (see the module)."""
    fmt = mx_format(name)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        x = x.reshape(1)
    axis = axis % x.ndim
    blocks = _blocks(x, axis, fmt.block_size)
    bad = ~np.all(np.isfinite(blocks), axis=-1)
    amax = np.max(np.abs(np.where(np.isfinite(blocks), blocks, 0.0)), axis=-1)
    s = shared_exponents(amax, fmt)
    scaled = np.ldexp(np.where(np.isfinite(blocks), blocks, 0.0), -s[..., None])
    top = fmt.element_max
    elements = np.clip(scaled, -top, top).astype(fmt.element)  # saturate, then RNE
    scales = np.where(bad, np.nan, np.ldexp(1.0, s)).astype(SCALE_DTYPE)
    return MXBlocks(elements, scales, fmt, axis, x.shape[axis])


def round_mx(x, name: str = "mxfp8", axis: int = -1) -> np.ndarray:
    """``x`` quantized to MX blocks along ``axis`` and read back, float64, same shape."""
    x = np.asarray(x, dtype=np.float64)
    out = quantize(x, name, axis).dequantize()
    return out.reshape(x.shape)


def block_amax(x, axis: int = -1, block: int = BLOCK) -> np.ndarray:
    """max |x| of the block each element belongs to, broadcast to x's shape."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        return np.abs(x)
    axis = axis % x.ndim
    blocks = _blocks(x, axis, block)
    amax = np.broadcast_to(np.max(np.abs(blocks), axis=-1, keepdims=True), blocks.shape)
    flat = amax.reshape(amax.shape[:-2] + (-1,))[..., :x.shape[axis]]
    return np.moveaxis(flat, -1, axis)


def error_bound(x, name: str = "mxfp8", axis: int = -1) -> np.ndarray:
    """The largest |round_mx(x) - x| of each element: u_blk * its block's amax + eta."""
    fmt = mx_format(name)
    return fmt.block_unit_roundoff * block_amax(x, axis, fmt.block_size) + fmt.subnormal_error

"""Number formats of the cube and the fixpipe: rounding to them, and 2-of-4 pruning.

* fp16 and fp32 round with numpy's own conversions, bf16 with ml_dtypes'; each is one
  round-to-nearest-even of the given value (a float64 is not rounded to fp32 first).
* hf32 is Ascend's reduced-precision fp32 (``SetHF32Mode`` / ``SetHF32TransMode(0)``):
  the fp32 exponent range with 11 explicit mantissa bits, round to nearest even. The
  hardware converts fp32 data, so the value is first rounded to fp32 and then to hf32 by
  integer arithmetic on its uint32 bit pattern (see ``round_fp32_bits``).
* int8 is the fixpipe's quantised output: round half to even, saturated to [-128, 127].
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

#: storage dtype of each format (hf32 values are held in float32)
STORAGE = {"fp16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16),
           "fp32": np.dtype(np.float32), "hf32": np.dtype(np.float32),
           "int8": np.dtype(np.int8), "int32": np.dtype(np.int32)}
#: explicit mantissa bits of the floating-point formats
MANTISSA_BITS = {"fp16": 10, "bf16": 7, "hf32": 11, "fp32": 23}
#: unit roundoff u (|round(x) - x| <= u |x| in the normal range) and the largest absolute
#: error of a rounding in the subnormal range (half the smallest subnormal)
UNIT_ROUNDOFF = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8, "hf32": 2.0 ** -12, "fp32": 2.0 ** -24}
SUBNORMAL_ERROR = {"fp16": 2.0 ** -25, "bf16": 2.0 ** -134, "hf32": 2.0 ** -138,
                   "fp32": 2.0 ** -150}
#: (u, eta) of one rounding to each format; int32 (wrap-around adds) and exact steps: 0
ROUNDING = {**{k: (UNIT_ROUNDOFF[k], SUBNORMAL_ERROR[k]) for k in UNIT_ROUNDOFF},
            "int32": (0.0, 0.0)}
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
    drop = 23 - explicit_bits
    bits = np.ascontiguousarray(x32, dtype=np.float32).view(np.uint32)
    if drop <= 0:
        return bits.view(np.float32).copy()
    lsb = (bits >> np.uint32(drop)) & np.uint32(1)
    rounded = (bits + np.uint32((1 << (drop - 1)) - 1) + lsb) & ~np.uint32((1 << drop) - 1)
    nan = (bits & _ABS) > _EXP
    out = np.where(nan, (bits & _SIGN) | _QNAN, rounded)
    return out.astype(np.uint32).view(np.float32)


def round_to(x, dtype: str) -> np.ndarray:
    """``x`` rounded once, to nearest even, to ``dtype`` and stored in its numpy dtype.

    fp16 -> float16, bf16 -> ml_dtypes.bfloat16, fp32 -> float32, hf32 -> float32 holding
    hf32 values (x rounded to fp32, then to hf32, as the hardware converts fp32 data),
    int8 -> int8 (round half to even, saturated to [-128, 127], NaN -> 0).
    """
    x = np.asarray(x)
    if dtype in ("fp16", "bf16", "fp32", "hf32"):
        with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the rule
            if dtype != "hf32":
                return x.astype(STORAGE[dtype])
            x32 = x.astype(np.float32)
        return round_fp32_bits(x32, MANTISSA_BITS["hf32"]).reshape(x.shape)
    if dtype == "int8":
        if x.dtype.kind in "iub":
            return np.clip(x, -128, 127).astype(np.int8)
        r = np.rint(np.nan_to_num(x.astype(np.float64), nan=0.0, posinf=127.0, neginf=-128.0))
        return np.clip(r, -128, 127).astype(np.int8)
    raise ValueError(f"round_to: unknown dtype {dtype!r}; one of fp16, bf16, fp32, hf32, int8")


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

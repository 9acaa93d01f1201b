"""Element types under their Ascend C names, and the rounding the hardware applies.

``half``, ``float``, ``bfloat16``, ``int8``, ``int16`` and ``int32`` are :class:`DType`
objects a kernel passes where Ascend C takes a template type (``AllocTensor<half>()`` is
``AllocTensor(half)``). Each maps to one entry of the project's format table
(``kernels.common.formats``): its numpy storage (float16, ml_dtypes.bfloat16 ...) and bytes.

Arithmetic is done exactly (float64, or int64 for integers) and rounded once to the
operand type, as the vector unit returns a correctly rounded result: float64 holds every
sum, difference and product of two fp16 / bf16 values exactly, and for fp32 the rounding
of a float64 result to fp32 equals fp32 arithmetic for + - * / and sqrt (53 >= 2 x 24 + 2).
Integers wrap around as the hardware's adds do. ``Cast`` takes a :class:`RoundMode`.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from kernels.common.formats import BYTES, FORMATS, STORAGE


@dataclass(frozen=True)
class DType:
    """An element type: its Ascend C name and the project's format code."""

    name: str  # as a kernel writes it: half, float, bfloat16, int8, int16, int32
    code: str  # the format's name in kernels.common.formats / Program columns: fp16 ...

    @property
    def np(self) -> np.dtype:
        return np.dtype(STORAGE[self.code])

    @property
    def bytes(self) -> int:
        return int(BYTES[self.code])

    @property
    def is_float(self) -> bool:
        return not FORMATS[self.code].is_integer

    def __repr__(self) -> str:
        return self.name


half = DType("half", "fp16")
float32 = DType("float", "fp32")
bfloat16 = DType("bfloat16", "bf16")
int8 = DType("int8", "int8")
int16 = DType("int16", "int16")
int32 = DType("int32", "int32")
#: every element type, by Ascend C name
ALL = {d.name: d for d in (half, float32, bfloat16, int8, int16, int32)}
_BY_NUMPY = {d.np: d for d in ALL.values()}


def of_array(array: np.ndarray) -> DType | None:
    """The DType whose storage is ``array``'s dtype (None for any other numpy dtype)."""
    return _BY_NUMPY.get(np.asarray(array).dtype)


class RoundMode(Enum):
    """Cast's rounding modes (Ascend C ``RoundMode``)."""

    CAST_NONE = "none"  # exact conversions; a narrowing float Cast rounds to nearest even
    CAST_RINT = "rint"  # to nearest, ties to even
    CAST_FLOOR = "floor"  # toward -inf
    CAST_CEIL = "ceil"  # toward +inf
    CAST_ROUND = "round"  # to nearest, ties away from zero
    CAST_TRUNC = "trunc"  # toward zero
    CAST_ODD = "odd"  # to odd (von Neumann): an inexact result takes the odd neighbour


def exact(values) -> np.ndarray:
    """Values as float64 (floats) or int64 (integers): every format here fits exactly."""
    values = np.asarray(values)
    return values.astype(np.int64 if values.dtype.kind in "iu" else np.float64)


def round_to(values, dtype: DType) -> np.ndarray:
    """An exact result rounded once to ``dtype``: nearest even for floats (overflow to
    inf), wrap-around for integers (as the vector unit's integer adds)."""
    values = np.asarray(values)
    if dtype.is_float:
        with np.errstate(over="ignore", invalid="ignore"):
            return values.astype(dtype.np)
    if values.dtype.kind == "f":
        values = np.nan_to_num(np.rint(values), nan=0.0)
        values = np.clip(values, -2.0 ** 62, 2.0 ** 62)
    return values.astype(np.int64).astype(dtype.np)  # two's-complement wrap


def cast(values: np.ndarray, dst: DType, mode: RoundMode) -> np.ndarray:
    """``values`` (any supported type) converted to ``dst`` with rounding ``mode``: floats
    by the mode (CAST_NONE: nearest even), integers saturated to ``dst``'s range."""
    x = exact(values)
    if not dst.is_float:
        return _to_int(x.astype(np.float64), dst, mode)
    nearest = round_to(x, dst)
    if mode in (RoundMode.CAST_NONE, RoundMode.CAST_RINT):
        return nearest
    return _directed(x.astype(np.float64), nearest, dst, mode)


def _directed(x: np.ndarray, nearest: np.ndarray, dst: DType, mode: RoundMode) -> np.ndarray:
    """The other rounding modes from the nearest value and its neighbour on x's side."""
    with np.errstate(over="ignore", invalid="ignore"):
        near64 = nearest.astype(np.float64)
        toward = np.where(near64 > x, -np.inf, np.inf).astype(dst.np)
        other = np.nextafter(nearest, toward)
        other64 = other.astype(np.float64)
    inexact = (near64 != x) & np.isfinite(x)
    if mode == RoundMode.CAST_FLOOR:
        take = inexact & (near64 > x)
    elif mode == RoundMode.CAST_CEIL:
        take = inexact & (near64 < x)
    elif mode == RoundMode.CAST_TRUNC:
        take = inexact & (np.abs(near64) > np.abs(x))
    elif mode == RoundMode.CAST_ROUND:  # a tie rounded to even toward zero goes away
        tie = inexact & (np.abs(near64 - x) == np.abs(other64 - x))
        take = tie & (np.abs(near64) < np.abs(other64))
    else:  # CAST_ODD: the neighbour whose last significand bit is 1
        bits = nearest.view(np.uint16 if dst.bytes == 2 else np.uint32)
        take = inexact & ((bits & 1) == 0)
    return np.where(take, other, nearest).astype(dst.np)


def _to_int(x: np.ndarray, dst: DType, mode: RoundMode) -> np.ndarray:
    """Float or integer values to an integer type: rounded by ``mode``, saturated."""
    rounders = {RoundMode.CAST_FLOOR: np.floor, RoundMode.CAST_CEIL: np.ceil,
                RoundMode.CAST_TRUNC: np.trunc,
                RoundMode.CAST_ROUND: lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)}
    r = rounders.get(mode, np.rint)(x)
    info = np.iinfo(dst.np)
    r = np.clip(np.nan_to_num(r, nan=0.0), info.min, info.max)
    return r.astype(dst.np)


#: Ascend C's ``float`` (a kernel writes ``AllocTensor(float)``); defined last, so that this
#: module's own code above never sees it in place of the builtin
float = float32

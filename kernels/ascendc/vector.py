"""Vector operations on UB tensors (the PIPE_V instructions), in the operands' precision.

Each takes the first ``count`` elements (Ascend C's "tensor front n" form,
``Add(dst, src0, src1, count)``), checks the operands (LocalTensors in UB, one dtype,
the dtype supported by the op and by the chip's vector unit, ``count`` within every
tensor), records one PIPE_V instruction and computes: exactly, then one rounding to the
dtype (``dtypes.round_to``). Exp, Ln, Sqrt, Rsqrt, Reciprocal and Div are timed as the
vector unit's special class (a fixed number of elements per cycle), the others as simple
256-byte repeats. Transcendental results are correctly rounded here; the hardware's are
within about an ulp of that.

ReduceSum follows Ascend C on Atlas A2 for the front-n form: a binary tree of pairwise
adds inside each 256-byte repeat, then the repeats' sums added in order, every add
rounded to the dtype (fp16 partial sums saturate at 65504, as the hardware does).
"""
from __future__ import annotations

import numpy as np

from kernels.common.program import Kind, Pipe, VClass

from . import dtypes as dt
from .context import current_chip, issue
from .errors import BoundsError, OperandError
from .tensors import LocalTensor, as_int

SIMPLE_TYPES = ("half", "float", "int16", "int32")
FLOAT_TYPES = ("half", "float")
REPEAT_BYTES = 256  # one vector repeat
BLOCK_BYTES = 32  # one data block


def _operands(op: str, tensors: list, count) -> int:
    """Check the operands of ``op`` (LocalTensors in UB) and ``count``; returns count."""
    for tensor in tensors:
        if not isinstance(tensor, LocalTensor):
            raise OperandError("ascendc.error.not_local", {"op": op, "value": repr(tensor)})
        if tensor.memory != "UB":
            raise OperandError("ascendc.error.position",
                               {"op": op, "position": tensor.position.name,
                                "allowed": "VECIN, VECOUT, VECCALC"})
    count = as_int(count, f"{op} count")
    if count < 1:
        raise OperandError("ascendc.error.bad_size", {"what": f"{op} count", "value": count})
    for tensor in tensors:
        if count > tensor.GetSize():
            raise BoundsError("ascendc.error.count_too_large",
                              {"op": op, "count": count, "size": tensor.GetSize()})
    return count


def _same_dtype(op: str, dst: LocalTensor, srcs) -> dt.DType:
    for src in srcs:
        if src.dtype != dst.dtype:
            raise OperandError("ascendc.error.dtype_mismatch",
                               {"op": op, "expected": dst.dtype.name, "got": src.dtype.name})
    return dst.dtype


def _supported(op: str, dtype: dt.DType, types: tuple[str, ...]) -> None:
    chip = current_chip()
    allowed = [name for name in types
               if chip is None or dt.ALL[name].code in chip.vector_dtypes]
    if dtype.name not in allowed:
        raise OperandError("ascendc.error.vector_dtype",
                           {"op": op, "dtype": dtype.name, "allowed": ", ".join(allowed),
                            "chip": chip.display_name if chip else ""})


def _run(op: str, dst, srcs: list, count, fn, *, types=SIMPLE_TYPES,
         vclass: VClass = VClass.SIMPLE) -> None:
    """Check, record and compute ``dst[:count] = round(fn(*srcs[:count]))``."""
    count = _operands(op, [dst, *srcs], count)
    dtype = _same_dtype(op, dst, srcs)
    _supported(op, dtype, types)
    issue(Pipe.V, Kind.VECTOR, op, reads=srcs, writes=[dst], elems=count, dtype=dtype.code,
          vclass=vclass)
    args = [dt.exact(src.values(0, count)) for src in srcs]
    with np.errstate(all="ignore"):
        dst.values(0, count)[...] = dt.round_to(fn(*args), dtype)


def _scalar(value, dtype: dt.DType):
    """A scalar operand, first converted to the tensor's type (as Ascend C's T scalar)."""
    return dt.exact(dt.round_to(dt.exact(value), dtype))


# ---- binary ------------------------------------------------------------------------
def Add(dst, src0, src1, count) -> None:
    _run("Add", dst, [src0, src1], count, np.add)


def Sub(dst, src0, src1, count) -> None:
    _run("Sub", dst, [src0, src1], count, np.subtract)


def Mul(dst, src0, src1, count) -> None:
    _run("Mul", dst, [src0, src1], count, np.multiply)


def Div(dst, src0, src1, count) -> None:
    _run("Div", dst, [src0, src1], count, np.divide, types=FLOAT_TYPES,
         vclass=VClass.SPECIAL)


def Max(dst, src0, src1, count) -> None:
    _run("Max", dst, [src0, src1], count, np.maximum)


def Min(dst, src0, src1, count) -> None:
    _run("Min", dst, [src0, src1], count, np.minimum)


# ---- with a scalar -----------------------------------------------------------------
def Adds(dst, src, scalar, count) -> None:
    _run("Adds", dst, [src], count, lambda x: x + _scalar(scalar, src.dtype))


def Muls(dst, src, scalar, count) -> None:
    _run("Muls", dst, [src], count, lambda x: x * _scalar(scalar, src.dtype))


def Maxs(dst, src, scalar, count) -> None:
    _run("Maxs", dst, [src], count, lambda x: np.maximum(x, _scalar(scalar, src.dtype)))


def Mins(dst, src, scalar, count) -> None:
    _run("Mins", dst, [src], count, lambda x: np.minimum(x, _scalar(scalar, src.dtype)))


def Duplicate(dst, scalar, count) -> None:
    """Fill the first ``count`` elements of ``dst`` with ``scalar``."""
    _run("Duplicate", dst, [], count,
         lambda: np.full(count, _scalar(scalar, dst.dtype)))


# ---- unary -------------------------------------------------------------------------
def Exp(dst, src, count) -> None:
    _run("Exp", dst, [src], count, np.exp, types=FLOAT_TYPES, vclass=VClass.SPECIAL)


def Ln(dst, src, count) -> None:
    _run("Ln", dst, [src], count, np.log, types=FLOAT_TYPES, vclass=VClass.SPECIAL)


def Sqrt(dst, src, count) -> None:
    _run("Sqrt", dst, [src], count, np.sqrt, types=FLOAT_TYPES, vclass=VClass.SPECIAL)


def Rsqrt(dst, src, count) -> None:
    _run("Rsqrt", dst, [src], count, lambda x: 1.0 / np.sqrt(x), types=FLOAT_TYPES,
         vclass=VClass.SPECIAL)


def Reciprocal(dst, src, count) -> None:
    _run("Reciprocal", dst, [src], count, lambda x: 1.0 / x, types=FLOAT_TYPES,
         vclass=VClass.SPECIAL)


def Abs(dst, src, count) -> None:
    _run("Abs", dst, [src], count, np.abs)


def Relu(dst, src, count) -> None:
    _run("Relu", dst, [src], count, lambda x: np.maximum(x, 0))


# ---- reductions --------------------------------------------------------------------
def ReduceSum(dst, src, work, count) -> None:
    """dst[0] = the sum of src[:count] (``work``: the shared temporary buffer)."""
    _reduce("ReduceSum", dst, src, work, count, 1, _tree_sum)


def ReduceMax(dst, src, work, count, calIndex: bool = False) -> None:
    """dst[0] = max of src[:count]; with calIndex, dst[1] holds its index (as bits)."""
    _reduce("ReduceMax", dst, src, work, count, 2, np.argmax, calIndex)


def ReduceMin(dst, src, work, count, calIndex: bool = False) -> None:
    _reduce("ReduceMin", dst, src, work, count, 2, np.argmin, calIndex)


def work_size(dtype: dt.DType, count: int, values_per_repeat: int = 1) -> int:
    """Elements the shared temporary buffer of a front-n reduction needs at least: one (or
    two: value and index) per repeat, rounded up to a 32-byte block."""
    per_block = BLOCK_BYTES // dtype.bytes
    repeats = -(-count // (REPEAT_BYTES // dtype.bytes))
    return -(-repeats * values_per_repeat // per_block) * per_block


def _reduce(op, dst, src, work, count, per_repeat, pick, cal_index=False) -> None:
    count = _operands(op, [src], count)
    _operands(op, [dst, work], 2 if cal_index else 1)
    dtype = _same_dtype(op, dst, [src, work])
    _supported(op, dtype, FLOAT_TYPES)
    need = work_size(dtype, count, per_repeat)
    if work.GetSize() < need:
        raise BoundsError("ascendc.error.work_too_small",
                          {"op": op, "need": need, "size": work.GetSize()})
    issue(Pipe.V, Kind.VECTOR, op, reads=[src], writes=[dst, work], elems=count,
          dtype=dtype.code)
    x = src.values(0, count)
    if pick is _tree_sum:
        dst.values(0, 1)[0] = _tree_sum(x, dtype)
        return
    index = int(pick(x.astype(np.float64)))
    dst.values(0, 1)[0] = x[index]
    if cal_index:  # the index's bits in the element after the value
        bits = np.uint16 if dtype.bytes == 2 else np.uint32
        dst.values(0, 2).view(bits)[1] = index


def _tree_sum(x: np.ndarray, dtype: dt.DType):
    """Front-n ReduceSum: pairwise tree per 256-byte repeat, repeats added in order."""
    per = REPEAT_BYTES // dtype.bytes
    repeats = -(-len(x) // per)
    v = np.zeros(repeats * per)
    v[:len(x)] = dt.exact(x)
    v = v.reshape(repeats, per)
    while v.shape[1] > 1:
        v = _saturate(dt.round_to(v[:, 0::2] + v[:, 1::2], dtype), dtype)
    total = v[0, 0]
    for part in v[1:, 0]:
        total = _saturate(dt.round_to(total + part, dtype), dtype)
    return dt.round_to(total, dtype)


def _saturate(values: np.ndarray, dtype: dt.DType) -> np.ndarray:
    """fp16 partial sums saturate at +-65504 (as exact float64 for the next add)."""
    values = dt.exact(values)
    if dtype.code == "fp16":
        top = float(np.finfo(np.float16).max)
        values = np.clip(values, -top, top)
    return values


# ---- conversion --------------------------------------------------------------------
_FLOAT_NARROW = tuple(dt.RoundMode)
_TO_INT = (dt.RoundMode.CAST_RINT, dt.RoundMode.CAST_FLOOR, dt.RoundMode.CAST_CEIL,
           dt.RoundMode.CAST_ROUND, dt.RoundMode.CAST_TRUNC)
_EXACT = (dt.RoundMode.CAST_NONE,)
#: (src, dst) -> rounding modes Cast takes; CAST_NONE on a narrowing float Cast rounds to
#: nearest even, on an exact one it is the only mode
CASTS = {
    ("half", "float"): _EXACT, ("bfloat16", "float"): _EXACT, ("int8", "half"): _EXACT,
    ("int16", "half"): _EXACT, ("int16", "float"): _EXACT,
    ("float", "half"): _FLOAT_NARROW, ("float", "bfloat16"): _FLOAT_NARROW[:6],
    ("int32", "float"): (dt.RoundMode.CAST_NONE, *_TO_INT),
    ("half", "int32"): _TO_INT, ("float", "int32"): _TO_INT, ("half", "int16"): _TO_INT,
    ("float", "int16"): _TO_INT, ("half", "int8"): (dt.RoundMode.CAST_NONE, *_TO_INT),
}


def Cast(dst, src, round_mode: dt.RoundMode, count) -> None:
    """Convert ``src`` to ``dst``'s dtype with ``round_mode`` (Ascend C ``RoundMode``)."""
    count = _operands("Cast", [dst, src], count)
    modes = CASTS.get((src.dtype.name, dst.dtype.name), ())
    if round_mode not in modes:
        raise OperandError("ascendc.error.cast_unsupported",
                           {"src": src.dtype.name, "dst": dst.dtype.name,
                            "mode": getattr(round_mode, "name", repr(round_mode)),
                            "allowed": ", ".join(m.name for m in modes) or "-"})
    wider = max(src.dtype, dst.dtype, key=lambda d: d.bytes)
    issue(Pipe.V, Kind.VECTOR, "Cast", reads=[src], writes=[dst], elems=count,
          dtype=wider.code)
    dst.values(0, count)[...] = dt.cast(src.values(0, count), dst.dtype, round_mode)

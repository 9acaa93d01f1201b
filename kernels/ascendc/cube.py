"""Cube operations: LoadData (L1 -> L0A / L0B on MTE1), Mmad (PIPE_M) and Fixpipe
(L0C -> GM on PIPE_FIX, with the cast of the result).

Simplification: matrices are held row-major (ND) in every buffer; the fractal layouts the
cube really uses (NZ in L1, ZZ in L0A, ZN in L0B, NZ in L0C) are not modelled, so a tile
is a contiguous run of elements and no layout conversion is needed on the way. Bytes,
pipes, alignment (L0A / L0B hold whole 512-byte fractals) and precision are as on the
chip: ``Mmad`` multiplies fp16 / bf16 (or int8, fp32) inputs and accumulates in fp32
(int32) in L0C; ``Fixpipe`` rounds L0C's fp32 to the GM tensor's type (``quantPre``
F322F16 / F322BF16, or NoQuant for fp32 / int32).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from kernels.common.program import Kind, Level, Pipe

from . import dtypes as dt
from .context import current_chip, issue
from .errors import BoundsError, OperandError
from .tensors import GlobalTensor, LocalTensor, TPosition, as_int

FRACTAL_BYTES = 512
#: Mmad's type combinations: (A, B) -> L0C accumulator, with the cube precision it runs at
MMAD_TYPES = {("half", "half"): ("float", "fp16"), ("bfloat16", "bfloat16"): ("float", "bf16"),
              ("int8", "int8"): ("int32", "int8"), ("float", "float"): ("float", "fp32")}
MAX_MNK = 4095


@dataclass(frozen=True)
class LoadData2DParams:
    """``repeatTimes`` 512-byte fractals from fractal ``startIndex``, ``srcStride``
    fractals apart in L1, packed in L0 (Ascend C ``LoadData2DParams``, no transpose)."""

    startIndex: int = 0
    repeatTimes: int = 1
    srcStride: int = 1


@dataclass(frozen=True)
class MmadParams:
    """C (m x n) = A (m x k) x B (k x n), plus C when ``cmatrixInitVal`` is False."""

    m: int = 0
    n: int = 0
    k: int = 0
    cmatrixInitVal: bool = True


class QuantMode_t(Enum):
    """Fixpipe's conversion of the L0C result (Ascend C ``QuantMode_t``)."""

    NoQuant = "none"
    F322F16 = "fp32->fp16"
    F322BF16 = "fp32->bf16"


#: the L0C -> GM conversion for each (L0C type, GM type)
QUANT = {("float", "float"): QuantMode_t.NoQuant, ("float", "half"): QuantMode_t.F322F16,
         ("float", "bfloat16"): QuantMode_t.F322BF16, ("int32", "int32"): QuantMode_t.NoQuant}


@dataclass(frozen=True)
class FixpipeParamsV220:
    """Write an ``mSize`` x ``nSize`` block of L0C to GM, ``dstStride`` elements between
    rows in GM (default nSize: a dense block); ``quantPre`` None: by the GM type."""

    nSize: int = 0
    mSize: int = 0
    srcStride: int = 0
    dstStride: int = 0
    quantPre: QuantMode_t | None = None


def _local(op: str, tensor, positions: tuple[TPosition, ...]) -> LocalTensor:
    if not isinstance(tensor, LocalTensor):
        raise OperandError("ascendc.error.not_local", {"op": op, "value": repr(tensor)})
    if tensor.position not in positions:
        raise OperandError("ascendc.error.position",
                           {"op": op, "position": tensor.position.name,
                            "allowed": ", ".join(p.name for p in positions)})
    return tensor


def LoadData(dst, src, params: LoadData2DParams) -> None:
    """L1 (A1 / B1) -> L0A (A2) / L0B (B2) on MTE1, in 512-byte fractals."""
    src = _local("LoadData", src, (TPosition.A1, TPosition.B1))
    want = TPosition.A2 if src.position == TPosition.A1 else TPosition.B2
    dst = _local("LoadData", dst, (want,))
    if src.dtype != dst.dtype:
        raise OperandError("ascendc.error.dtype_mismatch",
                           {"op": "LoadData", "expected": dst.dtype.name, "got": src.dtype.name})
    start = as_int(params.startIndex, "LoadData2DParams.startIndex")
    repeats = as_int(params.repeatTimes, "LoadData2DParams.repeatTimes")
    stride = as_int(params.srcStride, "LoadData2DParams.srcStride")
    if start < 0 or repeats < 1 or stride < 1:
        raise OperandError("ascendc.error.bad_load_params",
                           {"startIndex": start, "repeatTimes": repeats, "srcStride": stride})
    per = FRACTAL_BYTES // src.dtype.bytes
    src_idx = ((start + np.arange(repeats)[:, None] * stride) * per + np.arange(per)).ravel()
    for tensor, end in ((src, int(src_idx[-1]) + 1), (dst, repeats * per)):
        if end > tensor.GetSize():
            raise BoundsError("ascendc.error.count_too_large",
                              {"op": "LoadData", "count": end, "size": tensor.GetSize()})
    level = Level.L0A if want == TPosition.A2 else Level.L0B
    issue(Pipe.MTE1, Kind.TRANSFER, f"LoadData L1->{level.name}", reads=[src], writes=[dst],
          src=Level.L1, dst=level, nbytes=repeats * FRACTAL_BYTES)
    dst.values(0, repeats * per)[...] = src.values(0, int(src_idx[-1]) + 1)[src_idx]


def Mmad(dst, fm, filter, params: MmadParams) -> None:
    """dst (CO1) = fm (A2, m x k) @ filter (B2, k x n) [+ dst], accumulated exactly in
    float64 and rounded to fp32 (int32: exact, wrapping) once per Mmad."""
    dst = _local("Mmad", dst, (TPosition.CO1,))
    fm = _local("Mmad", fm, (TPosition.A2,))
    filter = _local("Mmad", filter, (TPosition.B2,))
    acc, precision = MMAD_TYPES.get((fm.dtype.name, filter.dtype.name), (None, None))
    chip = current_chip()
    if acc is None or acc != dst.dtype.name or precision not in chip.cube_precisions:
        raise OperandError("ascendc.error.mmad_types",
                           {"a": fm.dtype.name, "b": filter.dtype.name, "c": dst.dtype.name,
                            "allowed": ", ".join(f"{a} x {b} -> {c}"
                                                 for (a, b), (c, p) in MMAD_TYPES.items()
                                                 if p in chip.cube_precisions)})
    m, n, k = (as_int(getattr(params, f), f"MmadParams.{f}") for f in "mnk")
    if not all(1 <= v <= MAX_MNK for v in (m, n, k)):
        raise OperandError("ascendc.error.bad_mmad_params", {"m": m, "n": n, "k": k,
                                                              "max": MAX_MNK})
    for tensor, need in ((fm, m * k), (filter, k * n), (dst, m * n)):
        if need > tensor.GetSize():
            raise BoundsError("ascendc.error.count_too_large",
                              {"op": "Mmad", "count": need, "size": tensor.GetSize()})
    accumulate = not params.cmatrixInitVal
    issue(Pipe.M, Kind.MMAD, "Mmad", reads=[fm, filter, *([dst] if accumulate else [])],
          writes=[dst], m=m, n=n, k=k, dtype=precision)
    a = dt.exact(fm.values(0, m * k)).reshape(m, k)
    b = dt.exact(filter.values(0, k * n)).reshape(k, n)
    c = a @ b
    if accumulate:
        c = c + dt.exact(dst.values(0, m * n)).reshape(m, n)
    dst.values(0, m * n)[...] = dt.round_to(c, dst.dtype).ravel()


def Fixpipe(dst, src, params: FixpipeParamsV220) -> None:
    """L0C (CO1) -> GM on PIPE_FIX, converting to the GM tensor's type."""
    src = _local("Fixpipe", src, (TPosition.CO1,))
    if not isinstance(dst, GlobalTensor):
        raise OperandError("ascendc.error.not_a_tensor",
                           {"op": "Fixpipe", "value": repr(dst), "side": "dst"})
    chip = current_chip()
    if not chip.has_fixpipe:
        raise OperandError("ascendc.error.no_fixpipe", {"chip": chip.display_name})
    quant = QUANT.get((src.dtype.name, dst.dtype.name))
    if quant is None or params.quantPre not in (None, quant):
        raise OperandError("ascendc.error.fixpipe_quant",
                           {"src": src.dtype.name, "dst": dst.dtype.name,
                            "quant": getattr(params.quantPre, "name", "-"),
                            "allowed": ", ".join(f"{s} -> {d} ({q.name})"
                                                 for (s, d), q in QUANT.items())})
    n, m = as_int(params.nSize, "nSize"), as_int(params.mSize, "mSize")
    stride = as_int(params.dstStride, "dstStride") or n
    if not (1 <= n <= MAX_MNK and 1 <= m <= MAX_MNK) or stride < n:
        raise OperandError("ascendc.error.bad_fixpipe_params",
                           {"nSize": n, "mSize": m, "dstStride": stride})
    if m * n > src.GetSize():
        raise BoundsError("ascendc.error.count_too_large",
                          {"op": "Fixpipe", "count": m * n, "size": src.GetSize()})
    span = (m - 1) * stride + n
    out = dst.elements(0, span)  # raises when the block leaves the GM window
    nbytes = m * n * dst.dtype.bytes
    issue(Pipe.FIX, Kind.TRANSFER, "Fixpipe L0C->GM", reads=[src], src=Level.L0C,
          dst=Level.GM, nbytes=nbytes, region=(dst.name, dst.start * dst.dtype.bytes, nbytes,
                                               span))
    rows = np.arange(m)[:, None] * stride + np.arange(n)
    out[rows.ravel()] = dt.round_to(dt.exact(src.values(0, m * n)), dst.dtype)

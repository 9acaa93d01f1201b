"""DataCopy: GM <-> UB on MTE2 / MTE3, GM -> L1 on MTE2, UB -> UB.

``DataCopy(dst, src, count)`` moves ``count`` contiguous elements; ``DataCopy(dst, src,
DataCopyParams(blockCount, blockLen, srcStride, dstStride))`` moves ``blockCount`` blocks
of ``blockLen`` 32-byte units with gaps of ``srcStride`` / ``dstStride`` units between
them (a 2-D tile of a larger matrix). Ascend C's rules apply: both sides of one dtype,
a length that is a whole number of 32-byte units (``count * sizeof(T) % 32 == 0``; the
unaligned case needs DataCopyPad, which is not modelled), and ranges inside both tensors.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.common.program import Kind, Level, Pipe

from .context import issue
from .errors import AlignmentError, BoundsError, OperandError
from .tensors import LEVELS, GlobalTensor, LocalTensor, as_int, local_alignment

#: copy paths: (source memory, destination memory) -> (pipe, op label)
PATHS = {("GM", "UB"): (Pipe.MTE2, "DataCopy GM->UB"), ("UB", "GM"): (Pipe.MTE3, "DataCopy UB->GM"),
         ("GM", "L1"): (Pipe.MTE2, "DataCopy GM->L1"), ("UB", "UB"): (Pipe.V, "DataCopy UB->UB")}


@dataclass(frozen=True)
class DataCopyParams:
    """Strided copy in 32-byte units (Ascend C ``DataCopyParams``)."""

    blockCount: int = 1  # Ascend C's field names
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0


def DataCopy(dst, src, count_or_params) -> None:
    """Copy from ``src`` to ``dst`` (GlobalTensor or LocalTensor each)."""
    src_mem, dst_mem = _memory(src, "src"), _memory(dst, "dst")
    path = PATHS.get((src_mem, dst_mem))
    if path is None:
        raise OperandError("ascendc.error.copy_path",
                           {"src": _where(src), "dst": _where(dst),
                            "allowed": ", ".join(f"{a}->{b}" for a, b in PATHS)})
    if src.dtype != dst.dtype:
        raise OperandError("ascendc.error.dtype_mismatch",
                           {"op": "DataCopy", "expected": dst.dtype.name, "got": src.dtype.name})
    local = dst if isinstance(dst, LocalTensor) else src
    src_idx, dst_idx = _indices(src, dst, count_or_params, local)
    _check_range(src, src_idx)
    _check_range(dst, dst_idx)
    pipe, label = path
    nbytes = int(src_idx.size) * src.dtype.bytes
    region = None
    gm = src if isinstance(src, GlobalTensor) else dst if isinstance(dst, GlobalTensor) else None
    if gm is not None:  # the GM range: array, first byte, bytes, span in elements
        gm_idx = src_idx if gm is src else dst_idx
        region = (gm.name, (gm.start + int(gm_idx[0])) * gm.dtype.bytes, nbytes,
                  int(gm_idx[-1] - gm_idx[0]))
    issue(pipe, Kind.TRANSFER, label,
          reads=[src] if isinstance(src, LocalTensor) else [],
          writes=[dst] if isinstance(dst, LocalTensor) else [],
          src=_level(src_mem), dst=_level(dst_mem), nbytes=nbytes, region=region)
    _store(dst, dst_idx, _load(src, src_idx))


def _memory(tensor, side: str) -> str:
    if isinstance(tensor, GlobalTensor):
        tensor._require()
        return "GM"
    if isinstance(tensor, LocalTensor):
        return tensor.memory
    raise OperandError("ascendc.error.not_a_tensor", {"op": "DataCopy", "value": repr(tensor),
                                                       "side": side})


def _where(tensor) -> str:
    return "GM" if isinstance(tensor, GlobalTensor) else \
        f"{tensor.position.name} ({tensor.memory})"


def _level(memory: str) -> Level:
    return Level.GM if memory == "GM" else LEVELS[memory]


def _indices(src, dst, spec, local: LocalTensor) -> tuple[np.ndarray, np.ndarray]:
    """Element indices (relative to each tensor's start) read from ``src`` and written to
    ``dst``, after the alignment rule."""
    align = local_alignment(local.memory)
    unit = align // src.dtype.bytes  # elements per 32-byte unit
    if isinstance(spec, DataCopyParams):
        count, length = (as_int(spec.blockCount, "DataCopyParams.blockCount"),
                         as_int(spec.blockLen, "DataCopyParams.blockLen"))
        gaps = (as_int(spec.srcStride, "DataCopyParams.srcStride"),
                as_int(spec.dstStride, "DataCopyParams.dstStride"))
        if count < 1 or length < 1 or min(gaps) < 0:
            raise OperandError("ascendc.error.bad_copy_params",
                               {"blockCount": count, "blockLen": length, "srcStride": gaps[0],
                                "dstStride": gaps[1]})
        inner = np.arange(length * unit)
        idx = [(np.arange(count)[:, None] * (length + gap) * unit + inner).ravel()
               for gap in gaps]
        return idx[0], idx[1]
    count = as_int(spec, "DataCopy count")
    if count < 1:
        raise OperandError("ascendc.error.bad_size", {"what": "DataCopy count", "value": count})
    nbytes = count * src.dtype.bytes
    if nbytes % align:
        raise AlignmentError("ascendc.error.copy_unaligned",
                             {"count": count, "dtype": src.dtype.name, "bytes": nbytes,
                              "align": align, "step": unit})
    idx = np.arange(count)
    return idx, idx


def _check_range(tensor, idx: np.ndarray) -> None:
    end = int(idx[-1]) + 1
    if isinstance(tensor, GlobalTensor):
        tensor.elements(0, end)  # raises when beyond the window
    elif end > tensor.GetSize():
        raise BoundsError("ascendc.error.count_too_large",
                          {"op": "DataCopy", "count": end, "size": tensor.GetSize()})


def _span(tensor, idx: np.ndarray):
    """The elements ``idx`` addresses: a slice when they are contiguous from 0."""
    end = int(idx[-1]) + 1
    whole = tensor.elements(0, end) if isinstance(tensor, GlobalTensor) else \
        tensor.values(0, end)
    return whole if len(idx) == end else None, whole


def _load(tensor, idx: np.ndarray) -> np.ndarray:
    contiguous, whole = _span(tensor, idx)
    return (contiguous if contiguous is not None else whole[idx]).copy()


def _store(tensor, idx: np.ndarray, values: np.ndarray) -> None:
    contiguous, whole = _span(tensor, idx)
    if contiguous is not None:
        contiguous[...] = values
    else:
        whole[idx] = values

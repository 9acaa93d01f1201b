"""Row-wise vector kernels (RMSNorm, RoPE, SwiGLU...): the shape they share, once.

An activation of ``rows x cols`` elements (rows = the tokens of a decode batch, cols a
model width) is cut into tiles of ``tile_rows x tile_cols``; the tiles go to the vector
cores in contiguous blocks (the static split of Ascend C samples), and every core loops
CopyIn (MTE2: DataCopy GM->UB of each input) -> Compute (V: the op's vector instructions
in program order) -> CopyOut (MTE3: UB->GM) with TQue queues of ``buffer_num`` slots
between the stages (kernels.common.tque). What a kernel states is a ``RowOp``: its
inputs, vector instructions and outputs, each sized per tile as ``r x (c x per_elem +
per_row)`` for a tile of r rows and c columns, plus the tensors loaded once per core
(RMSNorm's gamma). Tensors name GM regions: ``regions`` maps a tensor to the region a
previous op wrote (a decode layer); a tensor without one gets a region per tile (cold
data, no false L2 hits).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError

from kernels.common.params import ParamSpec
from kernels.common.program import DTYPE_BYTES, Level, Pipe, ProgramBuilder, VClass
from kernels.common.tque import Stage, iteration_index, staged_loop

ACT_DTYPES = ("fp16", "bf16")
#: the numerical check runs on at most this many output elements (whole rows)
VERIFY_ELEMENTS = 1 << 18
#: parameters that shape the time but never the values
TIMING_ONLY = frozenset({"block_dim", "buffer_num", "tile_rows", "tile_cols"})


def specs(rows: int, dtype: str = "fp16") -> tuple[ParamSpec, ...]:
    """The parameters every row-wise kernel has: rows (tokens), storage format, cores,
    buffers and the tile (0 = auto)."""
    return (ParamSpec("rows", int, rows, 1, 1 << 16, unit="rows (tokens)", log_scale=True),
            ParamSpec("dtype", str, dtype, choices=ACT_DTYPES),
            ParamSpec("block_dim", int, 0, 0, 256, unit="vector cores (0 = all)"),
            ParamSpec("buffer_num", int, 2, choices=(1, 2)),
            ParamSpec("tile_rows", int, 0, 0, 1 << 16, unit="rows (0 = auto)"),
            ParamSpec("tile_cols", int, 0, 0, 1 << 20, unit="elements (0 = auto)"))


def tiling(chip: Chip, op: RowOp, rows: int, cols: int, *, dtype: str, block_dim: int = 0,
           buffer_num: int = 2, tile_rows: int = 0, tile_cols: int = 0,
           whole_rows: bool = False) -> Tiling:
    """The tiling of ``rows x cols`` on ``chip``: auto values resolved (one row per tile,
    the widest column chunk that fits UB in DataCopy-aligned steps; ``whole_rows`` keeps
    a row in one tile, as a reduction over it needs), refused when it does not fit."""
    cores = vector_cores(chip, block_dim)
    align = max(1, int(chip.ub_align_bytes // DTYPE_BYTES[dtype]))
    tr = tile_rows or 1
    if tile_cols and (tile_cols % align or (whole_rows and tile_cols != cols)):
        allowed = f"{cols} (a whole row)" if whole_rows else f"a multiple of {align} elements"
        raise InputError("params.tile_cols", tile_cols, f"0 (auto) or {allowed}")
    tc = tile_cols or (cols if whole_rows else largest_tile_cols(chip, op, tr, cols,
                                                                 buffer_num, align))
    result = Tiling(rows, cols, min(tr, rows), min(max(tc, 1), cols), buffer_num, cores)
    check_fits(chip, op, result, "params.tile_rows, tile_cols")
    return result


def verified_rows(rows: int, cols: int) -> int:
    """Rows the numerical check computes: all, or as many as VERIFY_ELEMENTS hold."""
    return max(1, min(rows, VERIFY_ELEMENTS // max(cols, 1)))


@dataclass(frozen=True)
class Copy:
    """A DataCopy of a tile: ``r x (c x per_elem + per_row)`` bytes of ``tensor``."""

    label: str
    tensor: str
    per_elem: float  # bytes per column element of the tile
    per_row: float = 0.0  # bytes per row regardless of the column chunk


@dataclass(frozen=True)
class Vector:
    """A vector instruction over ``r x (c x per_elem + per_row)`` elements of ``dtype``."""

    label: str
    dtype: str
    per_elem: float = 1.0
    per_row: float = 0.0
    vclass: VClass = VClass.SIMPLE


@dataclass(frozen=True)
class RowOp:
    """A row-wise kernel: inputs, vector instructions, outputs; ``once`` per core."""

    inputs: tuple[Copy, ...]
    compute: tuple[Vector, ...]
    outputs: tuple[Copy, ...]
    once: tuple[Copy, ...] = ()  # loaded once per core before its first tile (per_row = bytes)
    scratch_per_elem: float = 0.0  # UB bytes per tile element besides the queues (fp32 temps)


@dataclass(frozen=True)
class Tiling:
    """How ``rows x cols`` is cut and spread: tile shape, buffers, vector cores."""

    rows: int
    cols: int
    tile_rows: int
    tile_cols: int
    buffer_num: int
    cores: tuple[int, ...]  # vector core ids used

    @property
    def n_tiles(self) -> int:
        return -(-self.rows // self.tile_rows) * -(-self.cols // self.tile_cols)

    def tile_shapes(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cols) of every tile, row blocks outer, column chunks inner."""
        row_blocks = -(-self.rows // self.tile_rows)
        col_chunks = -(-self.cols // self.tile_cols)
        r = np.minimum(self.tile_rows, self.rows - np.arange(row_blocks) * self.tile_rows)
        c = np.minimum(self.tile_cols, self.cols - np.arange(col_chunks) * self.tile_cols)
        return np.repeat(r, col_chunks), np.tile(c, row_blocks)


def ub_bytes(op: RowOp, tile_rows: int, tile_cols: int, buffer_num: int) -> float:
    """UB one core needs: every queue's tile x buffer_num, the once-loaded tensors and the
    scratch."""
    queued = sum(tile_rows * (tile_cols * c.per_elem + c.per_row)
                 for c in op.inputs + op.outputs)
    once = sum(c.per_row for c in op.once)
    return queued * buffer_num + once + op.scratch_per_elem * tile_rows * tile_cols


def check_fits(chip: Chip, op: RowOp, tiling: Tiling, field: str) -> None:
    """Refuse a tile whose queues and scratch overflow the UB, naming the UB size."""
    need = ub_bytes(op, tiling.tile_rows, tiling.tile_cols, tiling.buffer_num)
    if need > chip.ub_bytes:
        raise InputError(field, f"{tiling.tile_rows} x {tiling.tile_cols}",
                         f"a tile whose queues x {tiling.buffer_num} buffers and scratch fit "
                         f"the {chip.ub_bytes:,}-byte UB of {chip.display_name} (this one "
                         f"needs {need:,.0f} bytes): use fewer rows or columns per tile")


def largest_tile_cols(chip: Chip, op: RowOp, tile_rows: int, cols: int, buffer_num: int,
                      align: int) -> int:
    """The widest column chunk (a multiple of ``align``, at most ``cols``) that fits UB."""
    fits = [c for c in range(align, cols + align, align)
            if ub_bytes(op, tile_rows, min(c, cols), buffer_num) <= chip.ub_bytes]
    return min(fits[-1], cols) if fits else 0


def vector_cores(chip: Chip, block_dim: int) -> tuple[int, ...]:
    """The first ``block_dim`` vector cores (0: all), refused beyond the chip's count."""
    ids = tuple(chip.vector_core_ids())
    if not 0 <= block_dim <= len(ids):
        raise InputError("params.block_dim", block_dim,
                         f"0 (all) to {len(ids)} (vector cores of {chip.display_name})")
    return ids[:block_dim or None]


def instruction_count(op: RowOp, tiling: Tiling) -> int:
    """Instructions ``emit`` adds: every stage per tile, the once-loads per core used."""
    per_tile = len(op.inputs) + len(op.compute) + len(op.outputs)
    used = min(len(tiling.cores), tiling.n_tiles)
    return per_tile * tiling.n_tiles + len(op.once) * used


def _size(item, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.ceil(r * (c * item.per_elem + item.per_row)).astype(np.int64)


def emit(b: ProgramBuilder, op: RowOp, tiling: Tiling, nxt: int, *,
         regions: dict[str, int] | None = None, task_base: int = 0) -> int:
    """Emit ``op`` over ``tiling`` with every seq >= ``nxt``; returns the next free seq."""
    regions = regions or {}
    r, c = tiling.tile_shapes()
    n = len(r)
    b.reserve(instruction_count(op, tiling), "use larger tiles")
    slot = (np.arange(n, dtype=np.int64) * len(tiling.cores)) // max(n, 1)
    cores = np.asarray(tiling.cores, np.int64)[slot]
    iters = iteration_index(slot)
    start = nxt + len(op.once)

    def region(copy: Copy, sizes: np.ndarray):
        return regions[copy.tensor] if copy.tensor in regions else b.regions(sizes)

    stages = [Stage.copy(x.label, Pipe.MTE2, Level.GM, Level.UB, _size(x, r, c),
                         region(x, _size(x, r, c))) for x in op.inputs]
    stages += [Stage.vector(v.label, _size(v, r, c), v.dtype, v.vclass) for v in op.compute]
    stages += [Stage.copy(y.label, Pipe.MTE3, Level.UB, Level.GM, _size(y, r, c),
                          region(y, _size(y, r, c))) for y in op.outputs]
    first = len(op.inputs)
    last = first + len(op.compute) - 1
    queues = [(i, first, tiling.buffer_num) for i in range(first)]
    queues += [(last, last + 1 + o, tiling.buffer_num) for o in range(len(op.outputs))]
    ids = staged_loop(b, cores, iters, np.arange(n) + task_base, stages, queues, seq0=start)
    if op.once:
        used = np.unique(slot)
        heads = np.asarray(tiling.cores, np.int64)[used]
        firsts = ids[first][np.searchsorted(slot, used)]
        for k, once in enumerate(op.once):
            nbytes = int(np.ceil(once.per_row))
            region = regions[once.tensor] if once.tensor in regions else b.regions(nbytes)[0]
            load = b.transfer(heads, Pipe.MTE2, once.label, Level.GM, Level.UB, nbytes,
                              nxt + k, region=region)
            b.depend(firsts, load)
    return start + (int(iters.max(initial=0)) + 1) * len(stages)

"""Row-wise vector kernels (RMSNorm, RoPE, SwiGLU): the program shape they share, once.

An activation of ``rows`` tokens is cut into tiles of ``tile_rows`` rows by a column chunk
of one *part* (a tensor of the op: SwiGLU has one, RoPE two, q and k, each with its own
width). The tiles go to the vector cores in contiguous blocks (the static split of the
Ascend C samples, ``GetBlockIdx``), and every core loops CopyIn (MTE2: DataCopy GM->UB of
each input) -> Compute (V: the op's vector instructions in program order) -> CopyOut
(MTE3: UB->GM), with a TQue of ``buffer_num`` slots per input and output: an input's slot
is freed by the instruction that reads it (its Cast to fp32), an output's is filled by the
one that writes it (the Cast back). A ``prologue`` runs once per core before its first tile
(RMSNorm's gamma: CopyIn and Cast, then resident in UB).

What a kernel states is a ``RowOp``: each copy and vector instruction sized per tile as
``r x (c x per_elem + per_row)`` for a tile of r rows and c columns. Labels and tensor names
may hold ``{part}``. GM regions: ``regions`` maps a tensor name to the region (or one region
per tile) a neighbouring op uses; any other tensor gets one region per tile (cold data: a
standalone run never hits L2 by sharing one big region), a prologue tensor one region.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common.params import ParamSpec
from kernels.common.program import DTYPE_BYTES, Level, Pipe, ProgramBuilder, VClass
from kernels.common.tque import iteration_index, previous

ACT_DTYPES = ("fp16", "bf16")
MAX_ROWS = 4096
#: the numerical check runs on at most this many output elements (whole rows)
VERIFY_ELEMENTS = 1 << 18
#: the parameters every row-wise kernel has that shape the time, never the values
TIMING_ONLY = frozenset({"block_dim", "buffer_num", "tile_rows"})


def specs(rows: int = 64) -> tuple[ParamSpec, ...]:
    """rows (tokens), storage format, cores (0 = all), TQue depth, rows per tile (0 = 1)."""
    return (ParamSpec("rows", int, rows, 1, MAX_ROWS, unit="rows (tokens)", log_scale=True),
            ParamSpec("dtype", str, "fp16", choices=ACT_DTYPES),
            ParamSpec("block_dim", int, 0, 0, 256, unit="vector cores (0 = all)"),
            ParamSpec("buffer_num", int, 2, choices=(1, 2)),
            ParamSpec("tile_rows", int, 0, 0, MAX_ROWS, unit="rows (0 = 1)"))


def verified_rows(rows: int, cols: int) -> int:
    """Rows the numerical check computes: all, or as many as VERIFY_ELEMENTS hold."""
    return max(1, min(rows, VERIFY_ELEMENTS // max(cols, 1)))


def align_elems(chip: Chip, dtype: str) -> int:
    """Elements of ``dtype`` in one DataCopy alignment block (32 bytes: 16 fp16)."""
    return max(1, int(chip.ub_align_bytes // DTYPE_BYTES[dtype]))


def require_multiple(field: str, value: int, step: int, why: str) -> None:
    if value % step:
        raise InputError(field, value, Phrase("refusal.rows.multiple", step=step, why=why))


# ---- what a kernel states ----------------------------------------------------------------
@dataclass(frozen=True)
class Copy:
    """A DataCopy of ``r x (c x per_elem + per_row)`` bytes of ``tensor``; ``queue`` is the
    label of the compute instruction that DeQues (input) or EnQues (output) its slot."""

    label: str
    tensor: str
    per_elem: float
    per_row: float = 0.0
    queue: str = ""


@dataclass(frozen=True)
class Vector:
    """A vector instruction over ``r x (c x per_elem + per_row)`` elements."""

    label: str
    per_elem: float = 1.0
    per_row: float = 0.0
    vclass: VClass = VClass.SIMPLE
    dtype: str = "fp32"


@dataclass(frozen=True)
class RowOp:
    """A row-wise kernel: its copies and vector instructions per tile, a prologue once per
    core (sizes in ``per_row``: bytes or elements), and UB beyond the queues: fp32 scratch
    per tile element and row, and what the prologue keeps resident."""

    inputs: tuple[Copy, ...]
    compute: tuple[Vector, ...]
    outputs: tuple[Copy, ...]
    prologue: tuple[Copy | Vector, ...] = ()
    scratch_per_elem: float = 0.0
    scratch_per_row: float = 0.0
    resident_bytes: float = 0.0

    def ub_bytes(self, tile_rows: int, tile_cols: int, buffer_num: int) -> float:
        """UB one core needs: each queue's tile x buffer_num, the scratch, the resident."""
        queued = sum(tile_rows * (tile_cols * c.per_elem + c.per_row)
                     for c in self.inputs + self.outputs)
        scratch = tile_rows * (tile_cols * self.scratch_per_elem + self.scratch_per_row)
        return queued * buffer_num + scratch + self.resident_bytes


@dataclass(frozen=True)
class Tiles:
    """Every tile in the order the cores take them (row blocks outer, parts, column chunks):
    its rows, columns (elements), part index and row block; the cores and TQue depth."""

    rows: np.ndarray
    cols: np.ndarray
    part: np.ndarray
    block: np.ndarray
    parts: tuple[str, ...]
    cores: tuple[int, ...]
    buffer_num: int

    def __len__(self) -> int:
        return len(self.rows)

    def slots(self) -> np.ndarray:
        """Index into ``cores`` of each tile: contiguous blocks of tiles per core."""
        n = len(self)
        return (np.arange(n, dtype=np.int64) * len(self.cores)) // max(n, 1)

    def used_cores(self) -> int:
        return min(len(self.cores), len(self))


# ---- tiling ------------------------------------------------------------------------------
def vector_cores(chip: Chip, block_dim: int, cores: Sequence[int] | None = None
                 ) -> tuple[int, ...]:
    """``cores`` when given (each a vector core of ``chip``), else the first ``block_dim``
    vector cores (0: all), refused beyond the chip's count."""
    ids = tuple(chip.vector_core_ids())
    if cores is not None:
        bad = [c for c in cores if c not in ids]
        if bad or not cores:
            raise InputError("cores", list(cores), Phrase(
                "refusal.rows.core_ids", chip=chip.display_name, first=ids[0], last=ids[-1]))
        return tuple(int(c) for c in cores)
    if not 0 <= block_dim <= len(ids):
        raise InputError("params.block_dim", block_dim,
                         Phrase("refusal.rows.block_dim", n=len(ids), chip=chip.display_name))
    return ids[:block_dim or None]


def grid(rows: int, tile_rows: int, widths: Mapping[str, int], tile_cols: int,
         cores: tuple[int, ...], buffer_num: int) -> Tiles:
    """Tiles of ``tile_rows`` rows by chunks of ``tile_cols`` columns of each part."""
    blocks = -(-rows // tile_rows)
    r_of = np.minimum(tile_rows, rows - np.arange(blocks) * tile_rows)
    chunk_cols, chunk_part = [], []
    for index, width in enumerate(widths.values()):
        chunks = -(-width // tile_cols)
        chunk_cols.append(np.minimum(tile_cols, width - np.arange(chunks) * tile_cols))
        chunk_part.append(np.full(chunks, index))
    cols, part = np.concatenate(chunk_cols), np.concatenate(chunk_part)
    per_block = len(cols)
    return Tiles(np.repeat(r_of, per_block), np.tile(cols, blocks), np.tile(part, blocks),
                 np.repeat(np.arange(blocks), per_block), tuple(widths), cores, buffer_num)


def auto_cols(chip: Chip, op: RowOp, tile_rows: int, rows: int, widths: Mapping[str, int],
              unit: int, buffer_num: int, n_cores: int) -> int:
    """The column chunk (a multiple of ``unit``) when the user leaves it to the kernel: as
    wide as UB allows, but narrow enough that the tiles fill the cores in one wave when the
    rows alone do not (decode: few tokens, many cores): as many column chunks per row block
    as the cores allow without a second wave; 0 when nothing fits."""
    base = op.ub_bytes(tile_rows, 0, buffer_num)  # UB need is linear in the columns
    slope = op.ub_bytes(tile_rows, 1, buffer_num) - base
    widest = min(max(widths.values()), int((chip.ub_bytes - base) // slope)) // unit * unit
    if widest <= 0:
        return 0
    blocks = -(-rows // tile_rows)
    chunks = max(1, n_cores // blocks)  # column chunks per row block within one wave
    balanced = -(-sum(widths.values()) // chunks)
    return min(widest, max(unit, -(-balanced // unit) * unit))


def check_fits(chip: Chip, op: RowOp, tile_rows: int, tile_cols: int, buffer_num: int,
               field: str, value) -> None:
    """Refuse a tile whose queues, scratch and resident data overflow the UB, naming the
    UB size and what the tile needs."""
    need = op.ub_bytes(tile_rows, tile_cols, buffer_num)
    if tile_cols <= 0 or need > chip.ub_bytes:
        raise InputError(field, value, Phrase(
            "refusal.rows.fits_ub", queues=len(op.inputs) + len(op.outputs), buffers=buffer_num,
            ub=f"{chip.ub_bytes:,}", chip=chip.display_name, rows=tile_rows,
            cols=max(tile_cols, 0), need=f"{need:,.0f}"))


def ub_share(chip: Chip, op: RowOp, tiles: Tiles) -> float:
    """UB used by the largest tile's queues, scratch and resident data / UB capacity."""
    need = op.ub_bytes(int(tiles.rows.max()), int(tiles.cols.max()), tiles.buffer_num)
    return need / chip.ub_bytes


# ---- the program -------------------------------------------------------------------------
def instruction_count(op: RowOp, tiles: Tiles) -> int:
    """Instructions ``emit`` adds: every copy and vector op per tile, the prologue per core."""
    per_tile = len(op.inputs) + len(op.compute) + len(op.outputs)
    return per_tile * len(tiles) + len(op.prologue) * tiles.used_cores()


def _size(item: Copy | Vector, tiles: Tiles) -> np.ndarray:
    return np.ceil(tiles.rows * (tiles.cols * item.per_elem + item.per_row)).astype(np.int64)


def _copies(b: ProgramBuilder, item: Copy, tiles: Tiles, pipe: Pipe, src: Level, dst: Level,
            cores: np.ndarray, seq: np.ndarray, regions: Mapping) -> np.ndarray:
    """One DataCopy per tile, one builder call per part (the label names the part)."""
    nbytes, ids = _size(item, tiles), np.empty(len(tiles), np.int64)
    for index, part in enumerate(tiles.parts):
        mask = tiles.part == index
        tensor = item.tensor.format(part=part)
        given = regions.get(tensor)
        if given is None:
            region = b.regions(nbytes[mask])
        else:
            given = np.asarray(given, np.int64)
            region = given[mask] if given.ndim else given
        ids[mask] = b.transfer(cores[mask], pipe, item.label.format(part=part), src, dst,
                               nbytes[mask], seq[mask], region=region,
                               task=np.flatnonzero(mask))
    return ids


def emit(b: ProgramBuilder, op: RowOp, tiles: Tiles, nxt: int, *,
         regions: Mapping[str, int | np.ndarray] | None = None) -> int:
    """Emit ``op`` over ``tiles`` with every seq >= ``nxt``; returns the next free seq."""
    regions = dict(regions or {})
    b.reserve(instruction_count(op, tiles), Phrase("refusal.hint.rows_cols"))
    slot = tiles.slots()
    cores = np.asarray(tiles.cores, np.int64)[slot]
    iters = iteration_index(slot)
    per_tile = len(op.inputs) + len(op.compute) + len(op.outputs)
    start = nxt + len(op.prologue)
    seq = start + iters * per_tile
    ins = [_copies(b, c, tiles, Pipe.MTE2, Level.GM, Level.UB, cores, seq + s, regions)
           for s, c in enumerate(op.inputs)]
    first = len(op.inputs)
    vec = {v.label: b.vector(cores, v.label, _size(v, tiles), v.dtype, seq + first + s,
                             vclass=v.vclass, task=np.arange(len(tiles)))
           for s, v in enumerate(op.compute)}
    first += len(op.compute)
    outs = [_copies(b, c, tiles, Pipe.MTE3, Level.UB, Level.GM, cores, seq + first + s,
                    regions) for s, c in enumerate(op.outputs)]
    depth = tiles.buffer_num
    for copy, ids in zip(op.inputs, ins):  # DeQue waits for the copy; AllocTensor for FreeTensor
        reader = vec[copy.queue or op.compute[0].label]
        b.depend(reader, ids)
        b.depend(ids, previous(reader, iters, depth))
    for copy, ids in zip(op.outputs, outs):  # CopyOut waits for EnQue; the writer for a slot
        writer = vec[copy.queue or op.compute[-1].label]
        b.depend(ids, writer)
        b.depend(writer, previous(ids, iters, depth))
    if op.prologue:
        _prologue(b, op, tiles, slot, vec[op.compute[0].label], nxt, regions)
    return start + (int(iters.max(initial=-1)) + 1) * per_tile


def _prologue(b: ProgramBuilder, op: RowOp, tiles: Tiles, slot: np.ndarray,
              first_compute: np.ndarray, nxt: int, regions: Mapping) -> None:
    """Once per core used, before its first tile, in order: each step waits for the one
    before it, and the core's first compute instruction for the last."""
    used = np.unique(slot)
    heads = np.asarray(tiles.cores, np.int64)[used]
    last = np.full(len(heads), -1, np.int64)
    for k, step in enumerate(op.prologue):
        amount = int(np.ceil(step.per_row))
        if isinstance(step, Copy):
            region = regions.get(step.tensor)
            region = b.regions(amount)[0] if region is None else region
            ids = b.transfer(heads, Pipe.MTE2, step.label, Level.GM, Level.UB, amount,
                             nxt + k, region=region)
        else:
            ids = b.vector(heads, step.label, amount, step.dtype, nxt + k, vclass=step.vclass)
        b.depend(ids, last)
        last = ids
    b.depend(first_compute[np.searchsorted(slot, used)], last)

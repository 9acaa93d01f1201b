"""SwiGLU, out = silu(gate) x up with silu(g) = g / (1 + exp(-g)), on the vector cores.

The gate/up projection writes one fused tensor of 2 x intermediate elements per token
(gate then up, as CANN's fused SwiGlu reads it); each tile takes ``tile_rows`` tokens by a
column chunk of both halves (``kernels.common.rows``): CopyIn gate and up, Cast each to
fp32, Muls -1, Exp (the special-function rate), Adds 1, Div, Mul by up, Cast back,
CopyOut. A chunk may end in a tail that is not a whole DataCopy block (DataCopyPad).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common import rows as rw
from kernels.common.params import ParamSpec, validate_params
from kernels.common.program import DTYPE_BYTES, Program, ProgramBuilder, VClass

NAME = "swiglu"
PARAMS = rw.specs(64) + (
    ParamSpec("intermediate", int, 28672, 16, 1 << 20, unit="elements", log_scale=True),
    ParamSpec("tile_cols", int, 0, 0, 1 << 20, unit="elements (0 = auto)"),
)
TIMING_ONLY = rw.TIMING_ONLY | {"tile_cols"}


@dataclass(frozen=True)
class SwiGLUShape:
    """What the program needs: sizes, storage format and the tiling knobs (``block_dim``
    0 = all vector cores, ``tile_rows`` 0 = one token, ``tile_cols`` 0 = auto)."""

    rows: int
    intermediate: int
    dtype: str = "fp16"
    block_dim: int = 0
    buffer_num: int = 2
    tile_rows: int = 0
    tile_cols: int = 0


def shape_of(p: dict) -> SwiGLUShape:
    """The typed shape of checked parameters."""
    return SwiGLUShape(p["rows"], p["intermediate"], p["dtype"], p["block_dim"],
                       p["buffer_num"], p["tile_rows"], p["tile_cols"])


def row_op(s: SwiGLUShape) -> rw.RowOp:
    """The per-tile instructions (a tile: r tokens by c elements of each half)."""
    e = DTYPE_BYTES[s.dtype]
    return rw.RowOp(
        inputs=(rw.Copy("CopyIn gate", "gate_up", e, queue="Cast gate"),
                rw.Copy("CopyIn up", "gate_up", e, queue="Cast up")),
        compute=(rw.Vector("Cast gate"), rw.Vector("Cast up"), rw.Vector("Muls -1"),
                 rw.Vector("Exp", vclass=VClass.SPECIAL), rw.Vector("Adds 1"),
                 rw.Vector("Div", vclass=VClass.SPECIAL), rw.Vector("Mul up"),
                 rw.Vector("Cast back")),
        outputs=(rw.Copy("CopyOut out", "out", e, queue="Cast back"),),
        scratch_per_elem=12.0)  # fp32 gate, up and the sigmoid


def plan(chip: Chip, s: SwiGLUShape, cores: Sequence[int] | None = None) -> rw.Tiles:
    """Tiles of column chunks on the vector cores, refused when a tile does not fit UB."""
    used = rw.vector_cores(chip, s.block_dim, cores)
    if s.tile_rows > s.rows:
        raise InputError("params.tile_rows", s.tile_rows, Phrase("refusal.rows.tile_tokens",
                                                                 rows=s.rows))
    unit = rw.align_elems(chip, s.dtype)
    tile_rows, op, widths = s.tile_rows or 1, row_op(s), {"out": s.intermediate}
    if s.tile_cols:
        if s.tile_cols > s.intermediate:
            raise InputError("params.tile_cols", s.tile_cols,
                             Phrase("refusal.rows.tile_cols", n=s.intermediate))
        rw.require_multiple("params.tile_cols", s.tile_cols, unit,
                            Phrase("refusal.rows.datacopy_blocks", align=chip.ub_align_bytes,
                                   dtype=s.dtype))
        cols, field, value = s.tile_cols, "params.tile_cols", s.tile_cols
    else:
        cols = rw.auto_cols(chip, op, tile_rows, s.rows, widths, unit, s.buffer_num, len(used))
        field, value = "params.tile_rows", s.tile_rows
    rw.check_fits(chip, op, tile_rows, cols, s.buffer_num, field, value)
    return rw.grid(s.rows, tile_rows, widths, cols, used, s.buffer_num)


def check(chip: Chip, params: dict) -> dict:
    """Validated parameters: block_dim within the chip's vector cores (0 = all, returned
    as the count), a column chunk in whole DataCopy blocks, a tile that fits UB."""
    p = validate_params(PARAMS, params)
    p["block_dim"] = len(plan(chip, shape_of(p)).cores)  # 0: all, resolved
    return p


def instruction_count(chip: Chip, s: SwiGLUShape) -> int:
    return rw.instruction_count(row_op(s), plan(chip, s))


def emit(b: ProgramBuilder, chip: Chip, s: SwiGLUShape, nxt: int, *, src: int | None = None,
         dst: int | None = None, cores: Sequence[int] | None = None) -> int:
    """Emit SwiGLU into ``b`` with every seq >= ``nxt``; returns the next free seq.
    ``src`` / ``dst``: the GM regions of the fused gate/up tensor and of the output when
    neighbouring ops write / read them (None: a cold region per tile)."""
    regions = {k: v for k, v in (("gate_up", src), ("out", dst)) if v is not None}
    return rw.emit(b, row_op(s), plan(chip, s, cores), nxt, regions=regions)


def build(chip: Chip, params: dict) -> Program:
    s = shape_of(check(chip, params))
    b = ProgramBuilder(NAME)
    emit(b, chip, s, 0)
    return b.build()

"""RMSNorm, y = x / sqrt(mean(x^2) + eps) x gamma over each row, on the vector cores.

As Ascend's RmsNorm computes it, in fp32 after a Cast up: every tile of whole rows is cast
to fp32 (Cast), squared (Mul), summed (ReduceSum), turned into 1 / sqrt(mean + eps) on one
value per row (Muls 1/n, Adds eps, then Sqrt and Div at the special-function rate),
multiplied back (Mul by the row's factor, Mul by gamma) and cast to the storage format
(Cast). gamma is loaded once per core (CopyIn, Cast to fp32) and stays in UB. A row stays
in one tile (the reduction needs it whole), so the tile is ``tile_rows`` whole rows and a
hidden size whose row does not fit UB is refused.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common import rows as rw
from kernels.common.params import ParamSpec, validate_params
from kernels.common.program import DTYPE_BYTES, Program, ProgramBuilder, VClass

NAME = "rmsnorm"
PARAMS = rw.specs(64) + (
    ParamSpec("hidden", int, 8192, 16, 1 << 17, unit="elements", log_scale=True),
    ParamSpec("eps", float, 1e-5, 1e-12, 0.1),
)
TIMING_ONLY = rw.TIMING_ONLY


@dataclass(frozen=True)
class RMSNormShape:
    """What the program needs: sizes, storage format, epsilon and the tiling knobs
    (``block_dim`` 0 = all vector cores, ``tile_rows`` 0 = one row per tile)."""

    rows: int
    hidden: int
    dtype: str = "fp16"
    eps: float = 1e-5
    block_dim: int = 0
    buffer_num: int = 2
    tile_rows: int = 0


def shape(rows: int, hidden: int, dtype: str = "fp16", eps: float = 1e-5,
          **knobs) -> RMSNormShape:
    """The shape of a norm inside a bigger program (a decode layer): its sizes, the
    tiling knobs by name."""
    return RMSNormShape(rows, hidden, dtype, eps, **knobs)


def shape_of(p: dict) -> RMSNormShape:
    """The typed shape of checked parameters."""
    return RMSNormShape(p["rows"], p["hidden"], p["dtype"], p["eps"], p["block_dim"],
                        p["buffer_num"], p["tile_rows"])


def row_op(s: RMSNormShape) -> rw.RowOp:
    """The per-tile instructions (a tile is r whole rows of ``hidden`` elements)."""
    e = DTYPE_BYTES[s.dtype]
    per_row = dict(per_elem=0.0, per_row=1.0)
    return rw.RowOp(
        inputs=(rw.Copy("CopyIn x", "x", e, queue="Cast x"),),
        compute=(rw.Vector("Cast x"), rw.Vector("Mul x*x"), rw.Vector("ReduceSum"),
                 rw.Vector("Muls 1/n", **per_row), rw.Vector("Adds eps", **per_row),
                 rw.Vector("Sqrt", **per_row, vclass=VClass.SPECIAL),
                 rw.Vector("Div 1/rms", **per_row, vclass=VClass.SPECIAL),
                 rw.Vector("Mul 1/rms"), rw.Vector("Mul gamma"), rw.Vector("Cast y")),
        outputs=(rw.Copy("CopyOut y", "y", e, queue="Cast y"),),
        prologue=(rw.Copy("CopyIn gamma", "gamma", 0.0, e * s.hidden),
                  rw.Vector("Cast gamma", 0.0, s.hidden)),
        scratch_per_elem=8.0,  # the fp32 row and its square (gamma's copy-in reuses it)
        scratch_per_row=64.0,  # the row's sum and factor, a 32-byte block each
        resident_bytes=4.0 * s.hidden)  # gamma in fp32


def plan(chip: Chip, s: RMSNormShape, cores: Sequence[int] | None = None) -> rw.Tiles:
    """Tiles of whole rows on the vector cores, refused when a tile does not fit UB."""
    used = rw.vector_cores(chip, s.block_dim, cores)
    rw.require_multiple("params.hidden", s.hidden, rw.align_elems(chip, s.dtype),
                        Phrase("refusal.rows.datacopy_blocks", align=chip.ub_align_bytes,
                               dtype=s.dtype))
    if s.tile_rows > s.rows:
        raise InputError("params.tile_rows", s.tile_rows, Phrase("refusal.rows.tile_rows",
                                                                 rows=s.rows))
    tile_rows = s.tile_rows or 1
    field, value = ("params.tile_rows", s.tile_rows) if s.tile_rows else \
        ("params.hidden", s.hidden)
    rw.check_fits(chip, row_op(s), tile_rows, s.hidden, s.buffer_num, field, value)
    return rw.grid(s.rows, tile_rows, {"x": s.hidden}, s.hidden, used, s.buffer_num)


def check(chip: Chip, params: dict) -> dict:
    """Validated parameters: block_dim within the chip's vector cores (0 = all, returned
    as the count, so the advisor and reports see the cores used), hidden in whole
    DataCopy blocks, a tile of whole rows that fits UB."""
    p = validate_params(PARAMS, params)
    p["block_dim"] = len(plan(chip, shape_of(p)).cores)  # 0: all, resolved
    return p


def instruction_count(chip: Chip, s: RMSNormShape) -> int:
    return rw.instruction_count(row_op(s), plan(chip, s))


def emit(b: ProgramBuilder, chip: Chip, s: RMSNormShape, nxt: int, *, src: int | None = None,
         dst: int | None = None, cores: Sequence[int] | None = None) -> int:
    """Emit the norm into ``b`` with every seq >= ``nxt``; returns the next free seq.
    ``src`` / ``dst``: GM regions of x and y when neighbouring ops write / read them
    (None: a cold region per tile); gamma is a region of its own (a weight, read once per
    core); ``cores``: the vector cores to use (None: the shape's block_dim)."""
    regions = {k: v for k, v in (("x", src), ("y", dst)) if v is not None}
    return rw.emit(b, row_op(s), plan(chip, s, cores), nxt, regions=regions)


def build(chip: Chip, params: dict) -> Program:
    s = shape_of(check(chip, params))
    b = ProgramBuilder(NAME)
    b.reserve(instruction_count(chip, s), Phrase("refusal.hint.rows_per_tile"))
    emit(b, chip, s, 0)
    return b.build()


def waves(p: dict) -> tuple[int, int, int]:
    """(tiles, waves, cores) of checked parameters: rows / tile_rows tiles over block_dim
    cores, for the advisor's tail and more-cores checks."""
    tiles, cores = -(-p["rows"] // (p["tile_rows"] or 1)), p["block_dim"]
    return tiles, -(-tiles // cores), cores


def ub_share(chip: Chip, p: dict) -> float:
    """UB the tile plan of checked parameters uses, as a share of the chip's."""
    s = shape_of(p)
    return rw.ub_share(chip, row_op(s), plan(chip, s))

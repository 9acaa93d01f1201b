"""RoPE (rotary position embedding, the rotate-half / NeoX form Llama and Qwen use) on the
query and key heads of every token, on the vector cores.

For a head of ``head_dim`` d and a token at position t, pair i < d/2 rotates by the angle
t x theta^(-2i/d): out = x cos + rotate_half(x) sin, rotate_half(x) = (-x[d/2:], x[:d/2]),
with cos and sin tables (fp32, one row of d per token) that the host computes from the
positions. The q heads and the k heads are the two parts of the row-wise program
(``kernels.common.rows``); a tile holds ``tile_rows`` tokens by whole heads of one part
(a pair rotates within its head). Per tile: CopyIn the heads and the tokens' cos and sin,
Cast to fp32, Mul by cos, rotate_half (Muls -1 on one half and the half swap), Mul by sin,
Add, Cast back, CopyOut in place (V is not rotated).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common import rows as rw
from kernels.common.params import ParamSpec, validate_params
from kernels.common.program import DTYPE_BYTES, Program, ProgramBuilder

NAME = "rope"
PARAMS = rw.specs(64) + (
    ParamSpec("q_heads", int, 32, 1, 1024, unit="heads"),
    ParamSpec("kv_heads", int, 8, 1, 1024, unit="heads"),
    ParamSpec("head_dim", int, 128, 16, 1024, unit="elements"),
    ParamSpec("rope_theta", float, 500000.0, 1.0, 1e9),
    ParamSpec("max_position", int, 8192, 1, 1 << 24, unit="tokens"),
    ParamSpec("tile_heads", int, 0, 0, 1024, unit="heads (0 = auto)"),
)
TIMING_ONLY = rw.TIMING_ONLY | {"tile_heads"}
#: fp32 bytes of one token's cos (or sin) row per element of head_dim
TABLE_BYTES = 4


@dataclass(frozen=True)
class RopeShape:
    """What the program needs: sizes, storage format and the tiling knobs (``block_dim``
    0 = all vector cores, ``tile_rows`` 0 = one token, ``tile_heads`` 0 = auto)."""

    rows: int
    q_heads: int
    kv_heads: int
    head_dim: int
    dtype: str = "fp16"
    block_dim: int = 0
    buffer_num: int = 2
    tile_rows: int = 0
    tile_heads: int = 0

    def widths(self) -> dict[str, int]:
        """Elements per token of each rotated part."""
        return {"q": self.q_heads * self.head_dim, "k": self.kv_heads * self.head_dim}


def shape_of(p: dict) -> RopeShape:
    """The typed shape of checked parameters."""
    return RopeShape(p["rows"], p["q_heads"], p["kv_heads"], p["head_dim"], p["dtype"],
                     p["block_dim"], p["buffer_num"], p["tile_rows"], p["tile_heads"])


def row_op(s: RopeShape) -> rw.RowOp:
    """The per-tile instructions (a tile: r tokens by c elements of whole heads)."""
    e, table = DTYPE_BYTES[s.dtype], TABLE_BYTES * s.head_dim
    return rw.RowOp(
        inputs=(rw.Copy("CopyIn {part}", "qkv", e, queue="Cast to fp32"),
                rw.Copy("CopyIn cos", "cos", 0.0, table, queue="Mul cos"),
                rw.Copy("CopyIn sin", "sin", 0.0, table, queue="Mul sin")),
        compute=(rw.Vector("Cast to fp32"), rw.Vector("Mul cos"),
                 rw.Vector("Muls -1 (half)", 0.5), rw.Vector("rotate_half swap"),
                 rw.Vector("Mul sin"), rw.Vector("Add"), rw.Vector("Cast back")),
        outputs=(rw.Copy("CopyOut {part}", "qkv", e, queue="Cast back"),),
        scratch_per_elem=12.0)  # fp32 x, rotate_half(x) and a product


def plan(chip: Chip, s: RopeShape, cores: Sequence[int] | None = None) -> rw.Tiles:
    """Tiles of whole heads on the vector cores, refused when a tile does not fit UB."""
    used = rw.vector_cores(chip, s.block_dim, cores)
    rw.require_multiple("params.head_dim", s.head_dim, rw.align_elems(chip, s.dtype),
                        Phrase("refusal.rows.datacopy_blocks", align=chip.ub_align_bytes,
                               dtype=s.dtype))
    if s.tile_rows > s.rows:
        raise InputError("params.tile_rows", s.tile_rows, Phrase("refusal.rows.tile_tokens",
                                                                 rows=s.rows))
    most = max(s.q_heads, s.kv_heads)
    if s.tile_heads > most:
        raise InputError("params.tile_heads", s.tile_heads, Phrase("refusal.rows.tile_heads",
                                                                   n=most))
    tile_rows, op = s.tile_rows or 1, row_op(s)
    if s.tile_heads:
        cols, field, value = s.tile_heads * s.head_dim, "params.tile_heads", s.tile_heads
    else:
        cols = rw.auto_cols(chip, op, tile_rows, s.rows, s.widths(), s.head_dim,
                            s.buffer_num, len(used))
        field, value = ("params.tile_rows", s.tile_rows) if s.tile_rows else \
            ("params.head_dim", s.head_dim)
    rw.check_fits(chip, op, tile_rows, cols, s.buffer_num, field, value)
    return rw.grid(s.rows, tile_rows, s.widths(), cols, used, s.buffer_num)


def check(chip: Chip, params: dict) -> dict:
    """Validated parameters: block_dim within the chip's vector cores (0 = all, returned
    as the count), whole DataCopy blocks per head, a tile of whole heads that fits UB."""
    p = validate_params(PARAMS, params)
    p["block_dim"] = len(plan(chip, shape_of(p)).cores)  # 0: all, resolved
    return p


def instruction_count(chip: Chip, s: RopeShape) -> int:
    return rw.instruction_count(row_op(s), plan(chip, s))


def emit(b: ProgramBuilder, chip: Chip, s: RopeShape, nxt: int, *, src: int | None = None,
         cores: Sequence[int] | None = None) -> int:
    """Emit RoPE into ``b`` with every seq >= ``nxt``; returns the next free seq. In place
    in the GM region ``src`` of the QKV output when a projection wrote it (None: a cold
    region per tile, read and written back); cos and sin are one region per row block
    (every tile of those tokens reads the same rows)."""
    tiles = plan(chip, s, cores)
    op = row_op(s)
    head = op.inputs[0]
    qkv = src if src is not None else b.regions(
        np.ceil(tiles.rows * tiles.cols * head.per_elem).astype(np.int64))
    _, first = np.unique(tiles.block, return_index=True)
    block_bytes = tiles.rows[first] * TABLE_BYTES * s.head_dim
    table = {name: b.regions(block_bytes)[tiles.block] for name in ("cos", "sin")}
    return rw.emit(b, op, tiles, nxt, regions={"qkv": qkv, **table})


def build(chip: Chip, params: dict) -> Program:
    s = shape_of(check(chip, params))
    b = ProgramBuilder(NAME)
    emit(b, chip, s, 0)
    return b.build()


"""RoPE (rotary position embedding, rotate-half / NeoX form as Llama and Qwen use it) on
the query and key heads of every token, on the vector cores.

For a head of ``head_dim`` d and a token at position t, pair i < d/2 rotates by the angle
t x theta^(-2i/d): out = x cos + rotate_half(x) sin, rotate_half(x) = (-x[d/2:], x[:d/2]),
with cos and sin tables the host computes per position (fp32, as Ascend's
RotaryPositionEmbedding takes them). Each tile holds whole heads of one token: CopyIn the
heads and the token's cos / sin, Cast to fp32, Mul by cos, rotate_half (Muls -1 on one
half and the half swap), Mul by sin, Add, Cast back, CopyOut in place (V is untouched).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError

from kernels.common import rows as rw
from kernels.common.formats import UNIT_ROUNDOFF, round_to
from kernels.common.params import ParamSpec, validate_params
from kernels.common.program import DTYPE_BYTES, Program, ProgramBuilder

NAME = "rope"
PARAMS = rw.specs(64) + (
    ParamSpec("q_heads", int, 32, 1, 1024, unit="heads"),
    ParamSpec("kv_heads", int, 8, 1, 1024, unit="heads"),
    ParamSpec("head_dim", int, 128, 16, 1024, unit="elements"),
    ParamSpec("rope_theta", float, 500000.0, 1.0, 1e9),
    ParamSpec("max_position", int, 8192, 1, 1 << 24, unit="tokens"),
)


@dataclass(frozen=True)
class RopeShape:
    rows: int
    q_heads: int
    kv_heads: int
    head_dim: int
    dtype: str = "fp16"
    rope_theta: float = 500000.0
    block_dim: int = 0
    buffer_num: int = 2
    tile_rows: int = 0
    tile_cols: int = 0

    @property
    def cols(self) -> int:
        """Elements of one token's rotated heads (queries and keys)."""
        return (self.q_heads + self.kv_heads) * self.head_dim


def shape_of(p: dict) -> RopeShape:
    return RopeShape(p["rows"], p["q_heads"], p["kv_heads"], p["head_dim"], p["dtype"],
                     p["rope_theta"], p["block_dim"], p["buffer_num"], p["tile_rows"],
                     p["tile_cols"])


def row_op(s: RopeShape) -> rw.RowOp:
    e, f32, d = DTYPE_BYTES[s.dtype], "fp32", s.head_dim
    return rw.RowOp(
        inputs=(rw.Copy("CopyIn q, k", "qkv", e), rw.Copy("CopyIn cos", "cos", 0.0, 4.0 * d),
                rw.Copy("CopyIn sin", "sin", 0.0, 4.0 * d)),
        compute=(rw.Vector("Cast to fp32", f32), rw.Vector("Mul cos", f32),
                 rw.Vector("rotate_half (Muls -1, swap)", f32, 1.5),
                 rw.Vector("Mul sin", f32), rw.Vector("Add", f32), rw.Vector("Cast back", f32)),
        outputs=(rw.Copy("CopyOut q, k", "qkv", e),),
        scratch_per_elem=8.0)


def tiling(chip: Chip, s: RopeShape) -> rw.Tiling:
    """Whole heads per tile (a pair rotates within its head)."""
    t = rw.tiling(chip, row_op(s), s.rows, s.cols, dtype=s.dtype, block_dim=s.block_dim,
                  buffer_num=s.buffer_num, tile_rows=s.tile_rows, tile_cols=s.tile_cols)
    heads = max(1, t.tile_cols // s.head_dim)
    if s.tile_cols and s.tile_cols % s.head_dim:
        raise InputError("params.tile_cols", s.tile_cols,
                         f"0 (auto) or a multiple of head_dim = {s.head_dim} (whole heads)")
    return rw.Tiling(t.rows, t.cols, t.tile_rows, min(heads * s.head_dim, s.cols),
                     t.buffer_num, t.cores)


def check(chip: Chip, params: dict) -> dict:
    p = validate_params(PARAMS, params)
    if p["head_dim"] % 2:
        raise InputError("params.head_dim", p["head_dim"], "an even number of elements")
    tiling(chip, shape_of(p))
    return p


def instruction_count(chip: Chip, s: RopeShape) -> int:
    return rw.instruction_count(row_op(s), tiling(chip, s))


def emit(b: ProgramBuilder, chip: Chip, s: RopeShape, nxt: int, *,
         src: int | None = None) -> int:
    """Emit RoPE (seq >= nxt; returns the next free seq), in place in the GM region
    ``src`` of the QKV output when a projection wrote it (None: cold regions)."""
    regions = {} if src is None else {"qkv": src}
    return rw.emit(b, row_op(s), tiling(chip, s), nxt, regions=regions)


def build(chip: Chip, params: dict) -> Program:
    b = ProgramBuilder(NAME)
    emit(b, chip, shape_of(check(chip, params)), 0)
    return b.build()


# ---- numerics ----------------------------------------------------------------------------
def _angles(positions: np.ndarray, head_dim: int, theta: float) -> np.ndarray:
    """[tokens, head_dim / 2] rotation angles, in float64."""
    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    return positions[:, None].astype(np.float64) * inv_freq[None, :]


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rot * sin, rot


def make_inputs(p: dict, rng) -> dict:
    heads = p["q_heads"] + p["kv_heads"]
    rows = rw.verified_rows(p["rows"], heads * p["head_dim"])
    x = round_to(rng.standard_normal((rows, heads, p["head_dim"])) * 2.0, p["dtype"])
    positions = rng.integers(0, p["max_position"], rows)
    return {"x": x, "positions": positions, "theta": p["rope_theta"]}


def _tables(inputs: dict, dtype) -> tuple[np.ndarray, np.ndarray]:
    ang = _angles(inputs["positions"], inputs["x"].shape[-1], inputs["theta"])
    full = np.concatenate([ang, ang], axis=-1)[:, None, :]
    return np.cos(full).astype(dtype), np.sin(full).astype(dtype)


def execute(p: dict, inputs: dict) -> dict:
    """fp32 tables and arithmetic after the Cast, one rounding on the way out."""
    cos, sin = _tables(inputs, np.float32)
    out, _ = _rotate(inputs["x"].astype(np.float32), cos, sin)
    return {"y": round_to(out, p["dtype"]).reshape(len(out), -1)}


def reference(inputs: dict) -> dict:
    cos, sin = _tables(inputs, np.float64)
    out, _ = _rotate(inputs["x"].astype(np.float64), cos, sin)
    return {"y": out.reshape(len(out), -1)}


def unit_roundoff(p: dict) -> float:
    return UNIT_ROUNDOFF[p["dtype"]]


def error_bound(p: dict, inputs: dict, ref: np.ndarray) -> np.ndarray:
    """The output's rounding (u of the format x |ref|) plus the fp32 work, relative to
    |x cos| + |rot(x) sin|: the tables' rounding (1 u32 each), two products and the sum."""
    cos, sin = _tables(inputs, np.float64)
    x = inputs["x"].astype(np.float64)
    _, rot = _rotate(x, cos, sin)
    mag = (np.abs(x * cos) + np.abs(rot * sin)).reshape(len(x), -1)
    return UNIT_ROUNDOFF[p["dtype"]] * np.abs(ref) + 4 * UNIT_ROUNDOFF["fp32"] * mag + 2.0 ** -24


def output_elements(p: dict) -> int:
    return p["rows"] * (p["q_heads"] + p["kv_heads"]) * p["head_dim"]

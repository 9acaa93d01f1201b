"""SwiGLU, out = silu(gate) x up with silu(g) = g / (1 + exp(-g)), on the vector cores.

The gate/up projection writes one fused tensor of 2 x intermediate elements per token
(gate then up, as CANN's fused SwiGlu reads it); each tile takes a column chunk of both
halves: CopyIn gate and up, Cast to fp32, Muls -1, Exp (the special-function rate), Adds 1,
Div, Mul by up, Cast back, CopyOut.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip

from kernels.common import rows as rw
from kernels.common.formats import UNIT_ROUNDOFF, round_to
from kernels.common.params import ParamSpec, validate_params
from kernels.common.program import DTYPE_BYTES, Program, ProgramBuilder, VClass

NAME = "swiglu"
PARAMS = rw.specs(64) + (
    ParamSpec("intermediate", int, 28672, 16, 1 << 20, unit="elements", log_scale=True),
)


@dataclass(frozen=True)
class SwiGLUShape:
    rows: int
    intermediate: int
    dtype: str = "fp16"
    block_dim: int = 0
    buffer_num: int = 2
    tile_rows: int = 0
    tile_cols: int = 0


def shape_of(p: dict) -> SwiGLUShape:
    return SwiGLUShape(p["rows"], p["intermediate"], p["dtype"], p["block_dim"],
                       p["buffer_num"], p["tile_rows"], p["tile_cols"])


def row_op(s: SwiGLUShape) -> rw.RowOp:
    e, f32 = DTYPE_BYTES[s.dtype], "fp32"
    return rw.RowOp(
        inputs=(rw.Copy("CopyIn gate", "gate_up", e), rw.Copy("CopyIn up", "gate_up", e)),
        compute=(rw.Vector("Cast to fp32", f32, 2.0), rw.Vector("Muls -1", f32),
                 rw.Vector("Exp", f32, vclass=VClass.SPECIAL), rw.Vector("Adds 1", f32),
                 rw.Vector("Div", f32, vclass=VClass.SPECIAL), rw.Vector("Mul up", f32),
                 rw.Vector("Cast back", f32)),
        outputs=(rw.Copy("CopyOut out", "out", e),),
        scratch_per_elem=12.0)  # fp32 gate, up and the sigmoid


def tiling(chip: Chip, s: SwiGLUShape) -> rw.Tiling:
    return rw.tiling(chip, row_op(s), s.rows, s.intermediate, dtype=s.dtype,
                     block_dim=s.block_dim, buffer_num=s.buffer_num, tile_rows=s.tile_rows,
                     tile_cols=s.tile_cols)


def check(chip: Chip, params: dict) -> dict:
    p = validate_params(PARAMS, params)
    tiling(chip, shape_of(p))
    return p


def instruction_count(chip: Chip, s: SwiGLUShape) -> int:
    return rw.instruction_count(row_op(s), tiling(chip, s))


def emit(b: ProgramBuilder, chip: Chip, s: SwiGLUShape, nxt: int, *, src: int | None = None,
         dst: int | None = None) -> int:
    """Emit SwiGLU (seq >= nxt; returns the next free seq); ``src`` / ``dst``: the GM
    regions of the fused gate/up tensor and of the output (None: cold regions)."""
    regions = {k: v for k, v in (("gate_up", src), ("out", dst)) if v is not None}
    return rw.emit(b, row_op(s), tiling(chip, s), nxt, regions=regions)


def build(chip: Chip, params: dict) -> Program:
    b = ProgramBuilder(NAME)
    emit(b, chip, shape_of(check(chip, params)), 0)
    return b.build()


# ---- numerics ----------------------------------------------------------------------------
def make_inputs(p: dict, rng) -> dict:
    rows = rw.verified_rows(p["rows"], 2 * p["intermediate"])
    gate, up = (round_to(rng.standard_normal((rows, p["intermediate"])) * 3.0, p["dtype"])
                for _ in "gu")
    return {"gate": gate, "up": up}


def execute(p: dict, inputs: dict) -> dict:
    """fp32 after the Cast, one rounding per vector op; exp(-g) overflowing to inf gives
    silu = -0, as the hardware's Exp saturates."""
    g = inputs["gate"].astype(np.float32)
    with np.errstate(over="ignore"):
        silu = g / (np.float32(1.0) + np.exp(-g))
    return {"out": round_to(silu * inputs["up"].astype(np.float32), p["dtype"])}


def reference(inputs: dict) -> dict:
    g = inputs["gate"].astype(np.float64)
    with np.errstate(over="ignore"):
        return {"out": g / (1.0 + np.exp(-g)) * inputs["up"].astype(np.float64)}


def unit_roundoff(p: dict) -> float:
    return UNIT_ROUNDOFF[p["dtype"]]


def error_bound(p: dict, inputs: dict, ref: np.ndarray) -> np.ndarray:
    """The output's rounding plus the fp32 work relative to |ref|: Exp within 4 ulp
    (numpy's float32 exp, as the vector unit's special-function accuracy is not public:
    an assumption), the add, the division and the multiply: 8 u32; plus a subnormal step."""
    return (UNIT_ROUNDOFF[p["dtype"]] + 8 * UNIT_ROUNDOFF["fp32"]) * np.abs(ref) + 2.0 ** -24


def output_elements(p: dict) -> int:
    return p["rows"] * p["intermediate"]

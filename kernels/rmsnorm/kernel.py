"""RMSNorm, y = x / sqrt(mean(x^2) + eps) x gamma over each row, on the vector cores.

As Ascend's RmsNorm computes it: every tile of whole rows is cast to fp32 (Cast), squared
(Mul), summed (ReduceSum), turned into 1 / sqrt(mean + eps) (Muls, Adds, Sqrt, Div on one
value per row: the special-function rate), multiplied back (Mul by the row's factor, Mul
by gamma) and cast to the storage format (Cast); gamma is loaded once per core. A row
stays in one tile (the reduction needs it whole), so ``tile_cols`` is the row.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip

from kernels.common import rows as rw
from kernels.common.formats import UNIT_ROUNDOFF, round_to
from kernels.common.params import ParamSpec, validate_params
from kernels.common.program import DTYPE_BYTES, Program, ProgramBuilder, VClass

NAME = "rmsnorm"
PARAMS = rw.specs(64) + (
    ParamSpec("hidden", int, 8192, 16, 1 << 17, unit="elements", log_scale=True),
    ParamSpec("eps", float, 1e-5, 1e-12, 0.1),
)


@dataclass(frozen=True)
class RMSNormShape:
    """What the program and the numerics need: sizes, format and the tiling knobs."""

    rows: int
    hidden: int
    dtype: str = "fp16"
    eps: float = 1e-5
    block_dim: int = 0
    buffer_num: int = 2
    tile_rows: int = 0


def shape_of(p: dict) -> RMSNormShape:
    """The typed shape of checked parameters."""
    return RMSNormShape(p["rows"], p["hidden"], p["dtype"], p["eps"], p["block_dim"],
                        p["buffer_num"], p["tile_rows"])


def row_op(s: RMSNormShape) -> rw.RowOp:
    e = DTYPE_BYTES[s.dtype]
    f32 = "fp32"
    return rw.RowOp(
        inputs=(rw.Copy("CopyIn x", "x", e),),
        compute=(rw.Vector("Cast x to fp32", f32), rw.Vector("Mul x*x", f32),
                 rw.Vector("ReduceSum", f32),
                 rw.Vector("Rsqrt (Muls, Adds, Sqrt, Div)", f32, 0.0, 4.0, VClass.SPECIAL),
                 rw.Vector("Mul by 1/rms", f32), rw.Vector("Mul gamma", f32),
                 rw.Vector("Cast y", f32)),
        outputs=(rw.Copy("CopyOut y", "y", e),),
        once=(rw.Copy("CopyIn gamma", "gamma", 0.0, 4.0 * s.hidden),),
        scratch_per_elem=8.0)  # the fp32 row and its square


def tiling(chip: Chip, s: RMSNormShape) -> rw.Tiling:
    return rw.tiling(chip, row_op(s), s.rows, s.hidden, dtype=s.dtype, block_dim=s.block_dim,
                     buffer_num=s.buffer_num, tile_rows=s.tile_rows, whole_rows=True)


def check(chip: Chip, params: dict) -> dict:
    """Validated parameters; the tile must fit UB and block_dim the chip's vector cores."""
    p = validate_params(PARAMS, params)
    tiling(chip, shape_of(p))
    return p


def instruction_count(chip: Chip, s: RMSNormShape) -> int:
    return rw.instruction_count(row_op(s), tiling(chip, s))


def emit(b: ProgramBuilder, chip: Chip, s: RMSNormShape, nxt: int, *, src: int | None = None,
         dst: int | None = None) -> int:
    """Emit the norm (seq >= nxt; returns the next free seq); ``src`` / ``dst``: GM regions
    of x and y written / read by neighbouring ops, None for cold per-tile regions."""
    regions = {k: v for k, v in (("x", src), ("y", dst)) if v is not None}
    return rw.emit(b, row_op(s), tiling(chip, s), nxt, regions=regions)


def build(chip: Chip, params: dict) -> Program:
    b = ProgramBuilder(NAME)
    emit(b, chip, shape_of(check(chip, params)), 0)
    return b.build()


# ---- numerics ----------------------------------------------------------------------------
def make_inputs(p: dict, rng) -> dict:
    """x and gamma in the storage format (gamma in fp32, as the kernel reads it)."""
    rows = rw.verified_rows(p["rows"], p["hidden"])
    x = round_to(rng.standard_normal((rows, p["hidden"])) * 3.0, p["dtype"])
    gamma = (1.0 + 0.1 * rng.standard_normal(p["hidden"])).astype(np.float32)
    return {"x": x, "gamma": gamma, "eps": p["eps"]}


def execute(p: dict, inputs: dict) -> dict:
    """The kernel's arithmetic: fp32 from the Cast on, one rounding per vector op."""
    x = inputs["x"].astype(np.float32)
    mean = np.sum(x * x, axis=1, dtype=np.float32) / np.float32(x.shape[1])
    factor = np.float32(1.0) / np.sqrt(mean + np.float32(inputs["eps"]))
    return {"y": round_to(x * factor[:, None] * inputs["gamma"], p["dtype"])}


def reference(inputs: dict) -> dict:
    x = inputs["x"].astype(np.float64)
    rms = np.sqrt(np.mean(x * x, axis=1) + inputs["eps"])
    return {"y": x / rms[:, None] * inputs["gamma"].astype(np.float64)}


def unit_roundoff(p: dict) -> float:
    return UNIT_ROUNDOFF[p["dtype"]]


def error_bound(p: dict, inputs: dict, ref: np.ndarray) -> np.ndarray:
    """|y - ref| allowed per element: the output's rounding (u of the format) plus the fp32
    work before it, relative to |ref|: the sum of n squares (gamma_n with u32), the mean,
    the square root and the division (half the sum's error and 3 roundings) and the two
    multiplies; plus one subnormal step of the format."""
    n, u32 = p["hidden"], UNIT_ROUNDOFF["fp32"]
    fp32_work = (n * u32 / (1 - n * u32)) / 2 + 6 * u32
    return (UNIT_ROUNDOFF[p["dtype"]] + fp32_work) * np.abs(ref) + 2.0 ** -24


def output_elements(p: dict) -> int:
    return p["rows"] * p["hidden"]

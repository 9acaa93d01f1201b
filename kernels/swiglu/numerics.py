"""SwiGLU's arithmetic in the emulated precision beside its float64 truth.

Inputs are bounded to whole tokens of at most ``rows.VERIFY_ELEMENTS`` elements (gate and
up together); gate and up are drawn in the storage format (sd 3, so that exp(-g) spans
many binades). ``execute`` follows the kernel in fp32 after the Cast (Muls -1, Exp,
Adds 1, Div, Mul up) and rounds once to the storage format.
"""
from __future__ import annotations

import numpy as np

from kernels.common import rows as rw
from kernels.common.formats import ROUNDING, UNIT_ROUNDOFF, after_rounding, gamma, round_to

#: accuracy assumed of the vector unit's fp32 Exp, in units of u32 (relative): 4 ulp,
#: numpy's float32 exp (the vector unit's special-function accuracy is not published)
EXP_ERROR_U = 8


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
    """The storage format's u: the output's one rounding dominates the bound."""
    return UNIT_ROUNDOFF[p["dtype"]]


def error_bound(p: dict, inputs: dict, ref: np.ndarray) -> np.ndarray:
    """|out - ref| allowed per element: relative to |ref|, Exp within ``EXP_ERROR_U`` u32
    (an assumption, see above), then the Adds 1 (both terms positive, so the sum keeps the
    relative error), the Div and the Mul: gamma_(EXP_ERROR_U + 3)(u32) (Higham 3.1); the
    Cast back adds one rounding of the storage format (``formats.after_rounding``)."""
    mag = np.abs(ref)
    e32 = gamma(EXP_ERROR_U + 3, UNIT_ROUNDOFF["fp32"]) * mag
    return after_rounding(e32, mag, ROUNDING[p["dtype"]])


def output_elements(p: dict) -> int:
    return p["rows"] * p["intermediate"]

"""RoPE's arithmetic in the emulated precision beside its float64 truth.

Inputs are bounded to whole tokens of at most ``rows.VERIFY_ELEMENTS`` elements: the q and
k heads of each token in the storage format, and a random position per token below
``max_position``. The cos and sin tables are computed in float64 from the positions and
rounded once to fp32, as the host hands them to the kernel; ``execute`` then follows the
kernel in fp32 (Cast up, Mul cos, rotate_half, Mul sin, Add) and rounds once to the
storage format.
"""
from __future__ import annotations

import numpy as np

from kernels.common import rows as rw
from kernels.common.formats import ROUNDING, UNIT_ROUNDOFF, after_rounding, gamma, round_to


def angles(positions: np.ndarray, head_dim: int, theta: float) -> np.ndarray:
    """[tokens, head_dim / 2] rotation angles t x theta^(-2i/d), in float64."""
    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    return positions[:, None].astype(np.float64) * inv_freq[None, :]


def rotate_half(x: np.ndarray) -> np.ndarray:
    """(-x[d/2:], x[:d/2]) along the last axis: exact in any format."""
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def tables(inputs: dict, dtype) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin per token, broadcast over its heads, rounded to ``dtype``."""
    ang = angles(inputs["positions"], inputs["x"].shape[-1], inputs["theta"])
    full = np.concatenate([ang, ang], axis=-1)[:, None, :]
    return np.cos(full).astype(dtype), np.sin(full).astype(dtype)


def make_inputs(p: dict, rng) -> dict:
    """x (tokens x heads x head_dim, sd 2) in the storage format, a position per token."""
    heads = p["q_heads"] + p["kv_heads"]
    rows = rw.verified_rows(p["rows"], heads * p["head_dim"])
    x = round_to(rng.standard_normal((rows, heads, p["head_dim"])) * 2.0, p["dtype"])
    positions = rng.integers(0, p["max_position"], rows)
    return {"x": x, "positions": positions, "theta": float(p["rope_theta"])}


def execute(p: dict, inputs: dict) -> dict:
    """fp32 tables and arithmetic after the Cast, one rounding on the way out."""
    cos, sin = tables(inputs, np.float32)
    x = inputs["x"].astype(np.float32)
    out = x * cos + rotate_half(x) * sin
    return {"y": round_to(out, p["dtype"]).reshape(len(out), -1)}


def reference(inputs: dict) -> dict:
    cos, sin = tables(inputs, np.float64)
    x = inputs["x"].astype(np.float64)
    return {"y": (x * cos + rotate_half(x) * sin).reshape(len(x), -1)}


def unit_roundoff(p: dict) -> float:
    """The storage format's u: the output's one rounding dominates the bound."""
    return UNIT_ROUNDOFF[p["dtype"]]


def error_bound(p: dict, inputs: dict, ref: np.ndarray) -> np.ndarray:
    """|y - ref| allowed per element: each of the two products carries three fp32 roundings
    (the table's, the Mul's, the Add's), so the fp32 result is within gamma_3(u32) x
    (|x cos| + |rotate_half(x) sin|) of the truth (Higham 3.1); the Cast back then adds one
    rounding of the storage format (``formats.after_rounding``)."""
    cos, sin = tables(inputs, np.float64)
    x = inputs["x"].astype(np.float64)
    mag = (np.abs(x * cos) + np.abs(rotate_half(x) * sin)).reshape(len(x), -1)
    e32 = gamma(3, UNIT_ROUNDOFF["fp32"]) * mag
    return after_rounding(e32, np.abs(ref), ROUNDING[p["dtype"]])


def output_elements(p: dict) -> int:
    return p["rows"] * (p["q_heads"] + p["kv_heads"]) * p["head_dim"]

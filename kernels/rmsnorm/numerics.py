"""RMSNorm's arithmetic in the emulated precision beside its float64 truth.

Inputs are bounded to whole rows of at most ``rows.VERIFY_ELEMENTS`` elements; x and gamma
are drawn in the storage format (fp16 / bf16), as the kernel reads them. ``execute``
follows the kernel's instructions one by one in fp32: Cast up (exact), Mul, a ReduceSum as
a pairwise tree, Muls 1/n, Adds eps, Sqrt, Div, Mul, Mul gamma, and the Cast back (one
rounding to the storage format).
"""
from __future__ import annotations

import numpy as np

from kernels.common import rows as rw
from kernels.common.formats import ROUNDING, UNIT_ROUNDOFF, after_rounding, gamma, round_to


def make_inputs(p: dict, rng) -> dict:
    """x (rows x hidden, sd 3) and gamma (1 + 0.1 N(0, 1)) in the storage format."""
    rows = rw.verified_rows(p["rows"], p["hidden"])
    x = round_to(rng.standard_normal((rows, p["hidden"])) * 3.0, p["dtype"])
    g = round_to(1.0 + 0.1 * rng.standard_normal(p["hidden"]), p["dtype"])
    return {"x": x, "gamma": g, "eps": float(p["eps"])}


def tree_sum(v: np.ndarray) -> np.ndarray:
    """Row sums of ``v`` in its own precision by a pairwise tree (the row padded with zeros
    to a power of two, halves added until one value is left): ceil(log2 n) roundings on
    every term's path, as a vector ReduceSum's halving steps."""
    n = v.shape[-1]
    width = 1 << max(0, (n - 1).bit_length())
    acc = np.zeros(v.shape[:-1] + (width,), v.dtype)
    acc[..., :n] = v
    while acc.shape[-1] > 1:
        half = acc.shape[-1] // 2
        acc = acc[..., :half] + acc[..., half:]
    return acc[..., 0]


def factor(x32: np.ndarray, eps: float) -> np.ndarray:
    """1 / sqrt(mean(x^2) + eps) per row, in fp32 op by op (Mul, ReduceSum, Muls 1/n,
    Adds eps, Sqrt, Div)."""
    n = x32.shape[-1]
    mean = tree_sum(x32 * x32) * np.float32(1.0 / n)
    return np.float32(1.0) / np.sqrt(mean + np.float32(eps))


def execute(p: dict, inputs: dict) -> dict:
    """The kernel's arithmetic: fp32 from the Cast on, one rounding per vector op."""
    x = inputs["x"].astype(np.float32)
    y = (x * factor(x, inputs["eps"])[:, None]) * inputs["gamma"].astype(np.float32)
    return {"y": round_to(y, p["dtype"])}


def reference(inputs: dict) -> dict:
    x = inputs["x"].astype(np.float64)
    rms = np.sqrt(np.mean(x * x, axis=1) + inputs["eps"])
    return {"y": x / rms[:, None] * inputs["gamma"].astype(np.float64)}


def unit_roundoff(p: dict) -> float:
    """The storage format's u: the output's one rounding dominates the bound."""
    return UNIT_ROUNDOFF[p["dtype"]]


def fp32_steps(n: int) -> int:
    """Rounding factors (1 + d)^(+-1) on the fp32 path of one output, |d| <= u32: the
    square and ceil(log2 n) tree additions, eps and 1/n rounded to fp32, the Muls and the
    Adds (all terms positive, so these are relative), the Sqrt (a square root halves the
    factors before it: still at most one u each) and its rounding, the Div, the two Muls."""
    return (1 + max(0, (n - 1).bit_length())) + 3 + 1 + 1 + 2


def error_bound(p: dict, inputs: dict, ref: np.ndarray) -> np.ndarray:
    """|y - ref| allowed per element: the fp32 path gives at most gamma_k(u32) |ref| with
    k = ``fp32_steps(hidden)`` (Higham, Lemma 3.1; ~1.5e-6 relative for hidden 8192, far
    below fp16's or bf16's u), then the Cast adds u_storage (|ref| + E) + eta_storage
    (``formats.after_rounding``). Assumes correctly rounded fp32 Sqrt and Div (numpy's; the
    vector unit's accuracy is not published) and no fp32 underflow (|x| >= 2^-63)."""
    mag = np.abs(ref)
    e32 = gamma(fp32_steps(inputs["x"].shape[-1]), UNIT_ROUNDOFF["fp32"]) * mag
    return after_rounding(e32, mag, ROUNDING[p["dtype"]])


def output_elements(p: dict) -> int:
    return p["rows"] * p["hidden"]

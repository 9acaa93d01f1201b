"""The linear layer's values against float64, on a bounded sample of rows and columns.

The kernel's arithmetic is checked against float64 on the weights it is given: fp16 /
bf16 weights as stored, or for W8A16 the int8 codes x their fp16 scales taken exactly
(the vector Mul's rounding to fp16 is the kernel's and counts against its bound). The
int8 quantisation error itself (codes x scales against the real-valued weights) is the
precision study's subject, not this check's: mixing it in would hide a wrong kernel
under a loose bound. It is measured apart instead for MXFP4 weights ("quantization": what
W lost to its E8M0 blocks of 32 along K, a ``lowp.QuantError``), the format users ask about.
"""
from __future__ import annotations

import numpy as np

from kernels.common.formats import UNIT_ROUNDOFF, gamma, round_to
from kernels.common.lowp import quantize_rows

#: at most this many weight elements (K x sampled columns) and outputs are computed
VERIFY_WEIGHTS = 1 << 22
VERIFY_OUTPUTS = 1 << 16


def sample(p: dict) -> tuple[int, int]:
    """(rows, columns) of y the check computes."""
    cols = max(1, min(p["N"], VERIFY_WEIGHTS // p["K"]))
    return max(1, min(p["M"], VERIFY_OUTPUTS // cols)), cols


def _antiquant(w: np.ndarray, p: dict) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 codes and fp16 scales per output column (or per group of K rows)."""
    k, n = w.shape
    g = p["group_size"] or k
    groups = np.abs(w).reshape(k // g, g, n).max(axis=1)
    scale = round_to(np.maximum(groups, 1e-30) / 127.0, "fp16")
    codes = np.clip(np.rint(w / np.repeat(scale.astype(np.float64), g, axis=0)), -127, 127)
    return codes.astype(np.int8), scale


def make_inputs(p: dict, rng) -> dict:
    rows, cols = sample(p)
    x = round_to(rng.standard_normal((rows, p["K"])), p["act_dtype"])
    w = rng.standard_normal((p["K"], cols)) * 0.02
    if p["weight_dtype"] == "int8":
        codes, scale = _antiquant(w, p)
        return {"x": x, "codes": codes, "scale": scale, "group": p["group_size"] or p["K"]}
    if p["weight_dtype"] == "mxfp4":  # blocks of 32 along K, dequantised (exact in fp32)
        values, _, lost = quantize_rows(w, "mxfp4", 0)
        return {"x": x, "w": values, "antiquant": True,
                "quantization": {"W": lost.summary()}}
    return {"x": x, "w": round_to(w, p["weight_dtype"])}


def _antiquantised(inputs: dict) -> bool:
    """The vector side rounds the dequantised weights to the activations' format."""
    return "codes" in inputs or "antiquant" in inputs


def _weights(inputs: dict) -> np.ndarray:
    """The weights in float64: as stored, or int8 codes x fp16 scales, exactly."""
    if "w" in inputs:
        return inputs["w"].astype(np.float64)
    scale = np.repeat(inputs["scale"].astype(np.float64), inputs["group"], axis=0)
    return inputs["codes"].astype(np.float64) * scale


def execute(p: dict, inputs: dict) -> dict:
    """W8A16 / MXFP4: the vector Mul rounds code x scale to the activations' format once
    (exact for MXFP4, whose scales are powers of two, inside the format's range); then
    fp32 accumulation in L0C (each product exact in fp32) and one rounding on the way out."""
    w = _weights(inputs)
    if _antiquantised(inputs):
        w = round_to(w, p["act_dtype"])
    acc = inputs["x"].astype(np.float32) @ np.asarray(w).astype(np.float32)
    return {"y": round_to(acc, p["act_dtype"])}


def reference(inputs: dict) -> dict:
    return {"y": inputs["x"].astype(np.float64) @ _weights(inputs)}


def unit_roundoff(p: dict) -> float:
    return UNIT_ROUNDOFF[p["act_dtype"]]


def error_bound(p: dict, inputs: dict, ref: np.ndarray) -> np.ndarray:
    """The output's rounding (u of the format, relative to |y|) plus fp32 accumulation over
    K terms in any order, gamma_K(u32) x (|x| @ |W|), plus for W8A16 the antiquant's
    rounding of every weight (u x |x| @ |W|), plus one subnormal step."""
    mag = np.abs(inputs["x"].astype(np.float64)) @ np.abs(_weights(inputs))
    u = UNIT_ROUNDOFF[p["act_dtype"]]
    per_weight = gamma(p["K"], UNIT_ROUNDOFF["fp32"]) + (u if _antiquantised(inputs) else 0.0)
    return u * np.abs(ref) + (1 + u) * (1 + u) * per_weight * mag + 2.0 ** -24


def output_elements(p: dict) -> int:
    return p["M"] * p["N"]

"""The GEMM's 8- and 4-bit float inputs (W8A8-FP8, HiF8, MXFP8, MXFP4), as aclnnQuantMatmulV5
takes them on Ascend 950 (hicann/ops-nn, matmul/quant_batch_matmul_v4, "K-C" and "mx"
modes), in value:

* fp8_e4m3 / fp8_e5m2 / hif8 ("K-C"): A's rows and B's columns are real values quantised
  with an fp32 scale each (``kernels.common.lowp``: x1Scale per row m, x2Scale per column
  n). The cube multiplies the codes (products of two 4-bit significands are exact in fp32)
  and accumulates in fp32 in L0C; the fixpipe adds the bias (fp32, in the codes' domain, as
  the API's formula (x1 @ x2 + bias) x x2Scale x x1Scale puts it) and applies the scales:
  fp32(fp32(acc x x2Scale) x x1Scale), then casts to dtype_out.
* mxfp8 / mxfp4 ("mx", groupSize [1, 1, 32]): A and B carry an E8M0 scale per 32 K
  elements; the cube applies x1Scale[m, j] x x2Scale[j, n] to each 32-element K block's
  products and accumulates in fp32, bias (fp32) added after. A power-of-two scale is
  exact, so this equals multiplying the dequantised values (each exact in fp32, products
  of two 4-bit significands exact too): the plain float path on the dequantised inputs.

The check compares C with float64 on the *stored* (dequantised) inputs, so it measures the
accumulation and output rounding; what the inputs lost to their format is measured
separately (``make_inputs``' "quantization", a ``lowp.QuantError`` per operand).
"""
from __future__ import annotations

import numpy as np

from kernels.common.formats import FP64_UNIT_ROUNDOFF, ROUNDING, after_rounding
from kernels.common.lowp import quantize_rows
from kernels.gemm.params import GemmValueParams

_R32 = ROUNDING["fp32"]


def draw(rng: np.random.Generator, shape: tuple, p: GemmValueParams, spread: float,
         k_axis: int):
    """Real normal(0, spread) data of ``shape`` quantised to dtype_in with K along
    ``k_axis``: (values the cube multiplies, fp32 scales or None, QuantError)."""
    x = rng.standard_normal(shape, dtype=np.float32)
    x *= np.float32(spread)
    return quantize_rows(x, p.dtype_in, k_axis)


def quantized_inputs(rng: np.random.Generator, p: GemmValueParams, rows: int, cols: int,
                     spread: float) -> dict:
    """A, B (and their scales when scaled) for the verified block, and what each lost."""
    A, sa, qa = draw(rng, (rows, p.K), p, spread, 1)
    B, sb, qb = draw(rng, (p.K, cols), p, spread, 0)
    out = {"A": A, "B": B, "quantization": {"A": qa.summary(), "B": qb.summary()}}
    if p.scaled:
        out.update(sa=sa, sb=sb)
    return out


def code_bias(rng: np.random.Generator, inputs: dict, cols: int, spread: float) -> np.ndarray:
    """The fp32 bias in the codes' domain (scaled inputs): normal with C's spread divided
    by the typical scales, so that bias x scales is as large as the real bias would be."""
    typical = float(np.mean(inputs["sa"], dtype=np.float64) * np.mean(inputs["sb"],
                                                                       dtype=np.float64))
    return (rng.standard_normal(cols) * (spread / typical)).astype(np.float32)


def dequant(acc: np.ndarray, inputs: dict) -> np.ndarray:
    """The fixpipe's fp32(fp32(acc x x2Scale) x x1Scale) (scaled inputs), else ``acc``."""
    if "sa" not in inputs:
        return acc
    with np.errstate(over="ignore"):
        return (acc.astype(np.float32) * inputs["sb"]) * inputs["sa"]


def real(ref: np.ndarray, inputs: dict) -> np.ndarray:
    """The float64 reference in the real domain: (A @ B + bias) x x2Scale x x1Scale."""
    if "sa" not in inputs:
        return ref
    return ref * inputs["sb"].astype(np.float64) * inputs["sa"].astype(np.float64)


def scale_of(inputs: dict) -> np.ndarray | float:
    """|x1Scale x x2Scale| per element of C (1 without scales)."""
    if "sa" not in inputs:
        return 1.0
    return np.abs(inputs["sa"].astype(np.float64) * inputs["sb"].astype(np.float64))


def dequant_error(E, mag, inputs: dict):
    """(error, exact magnitude) after ``dequant``: each fp32 multiplication by an exact
    scale s turns (E, m) into (|s| E + u32 (|s| m + |s| E) + eta, |s| m)."""
    if "sa" not in inputs:
        return E, mag
    for s in (inputs["sb"], inputs["sa"]):
        s = np.abs(s.astype(np.float64))
        E, mag = after_rounding(s * E, s * mag, _R32), s * mag
    return E, mag


def reference_slack(Q: np.ndarray, slack, inputs: dict):
    """The float64 reference's own error in the real domain: its code-domain ``slack``
    scaled, plus the two float64 roundings of the scaling (without scales: ``slack``)."""
    if "sa" not in inputs:
        return slack
    S = scale_of(inputs)
    return (slack * S + 2 * FP64_UNIT_ROUNDOFF * (np.abs(Q) + slack) * S) * (1 + 1e-15)

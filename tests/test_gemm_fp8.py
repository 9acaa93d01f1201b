"""The GEMM's 8- and 4-bit float inputs on the 950 (kernels/gemm/quant.py,
kernels/common/lowp.py): values within the bound against float64 on the dequantised
inputs, what the inputs lost within their format's own bound, the cube's rate from the
chip's k0 per precision, refusals on a chip without the format, and MX's block effect."""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets
from explorer.core.emulator.cost import compute_costs
from explorer.core.simulate import check_numerics
from hardware_presets.errors import InputError
from kernels import get
from kernels.common import lowp
from kernels.common.program import Kind
from kernels.gemm import kernel as gemm
from kernels.gemm import numerics as gn

C950 = hardware_presets.load("950PR")
B2 = hardware_presets.load("910B2")
LOW = ("fp8_e4m3", "fp8_e5m2", "hif8", "mxfp8", "mxfp4")
SMALL = {"M": 40, "N": 48, "K": 300}  # K not a multiple of 32: a short last MX block


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("extra", [{}, {"bias": True, "dtype_out": "bf16"},
                                   {"grid_z": 2, "split_k_mode": "atomic", "bias": True},
                                   {"grid_z": 3, "dtype_out": "fp32"}])
def test_values_within_the_bound_of_the_dequantised_inputs(dtype, extra):
    """C against float64 on the stored inputs: every element within the bound, and with a
    16-bit output the bound is not vacuous (the worst element uses a good part of it; with
    fp32 outputs the accumulation's worst case dominates and is far from reached, and
    MXFP4's few-bit products even sum exactly)."""
    p = gemm.check(C950, {**SMALL, "dtype_in": dtype, **extra})
    check = check_numerics(get("gemm"), p, seed=3)
    assert check.passed and check.verified == SMALL["M"] * SMALL["N"]
    if p["dtype_out"] != "fp32":
        assert check.bound_ratio > 0.05


def test_fp8_applies_the_scales_after_the_fp32_sum():
    """K-C mode by hand: C = fp32(fp32(acc x x2Scale) x x1Scale) of the fp32 sum of code
    products; the reference is the same in float64 on the codes and scales."""
    p = gemm.check(C950, {"M": 2, "N": 3, "K": 64, "dtype_in": "fp8_e4m3", "dtype_out": "fp32"})
    inputs = gn.make_inputs(p, np.random.default_rng(0))
    A, B = inputs["A"].astype(np.float64), inputs["B"].astype(np.float64)
    sa, sb = inputs["sa"].astype(np.float64), inputs["sb"].astype(np.float64)
    assert np.abs(A).max() == 448 and np.abs(B).max() == 448  # each row's amax at E4M3's top
    acc = (A.astype(np.float32) @ B.astype(np.float32)).astype(np.float32)
    want = (acc * inputs["sb"]) * inputs["sa"]
    np.testing.assert_array_equal(gn.execute(p, inputs)["C"], want)
    np.testing.assert_allclose(gn.reference(inputs)["C"], (A @ B) * sb * sa, rtol=1e-15)


@pytest.mark.parametrize("dtype", LOW)
def test_input_quantisation_within_the_format_bound(dtype):
    """What A and B lost: within the format's per-element bound, and above bf16's loss by
    the mantissa bits the format lacks (norm-wise, relative to the real values)."""
    p = gemm.check(C950, {**SMALL, "dtype_in": dtype})
    q = gn.make_inputs(p, np.random.default_rng(1))["quantization"]
    for operand in ("A", "B"):
        e = q[operand]
        assert e["elements"] == SMALL["K"] * (SMALL["M"] if operand == "A" else SMALL["N"])
        assert 0 < e["bound_ratio"] <= 1
        assert e["norm_rel"] > 4 * e["bf16_norm_rel"]
    assert q["A"]["norm_rel"] < {"mxfp4": 0.2}.get(dtype, 0.07)


def test_scaled_codes_by_hand():
    """One row (1, 0.3, -2, 0) to E4M3 with its scale s = fp32(2 / 448): 1 / s = 224 is a
    code, 0.3 / s = 67.2 rounds to 64 (steps of 8 in [64, 128)), -2 maps to -448."""
    x = np.array([[1.0, 0.3, -2.0, 0.0]])
    codes, scale, err = lowp.quantize_rows(x, "fp8_e4m3", 1)
    assert scale[0, 0] == np.float32(2 / 448)
    np.testing.assert_array_equal(codes.astype(np.float64), [[224, 64, -448, 0]])
    s = float(scale[0, 0])
    assert err.max_abs == pytest.approx(abs(64 * s - 0.3), rel=1e-12)
    assert err.flushed == 0 and err.nonzero == 3


def test_an_outlier_flushes_its_mxfp4_block():
    """MXFP4: 32 weights along K share a scale. Weights of equal magnitude 0.01 keep
    every element (0.01 / 2^-9 = 5.12 -> 6); one outlier of 100 in the block moves its
    scale to 2^4, and its 31 neighbours (below half of E2M1's 0.5 step) become 0."""
    w = np.full((64, 3), 0.01) * np.where(np.arange(64 * 3).reshape(64, 3) % 2, 1, -1)
    _, _, clean = lowp.quantize_rows(w, "mxfp4", 0)
    assert clean.flushed == 0
    w[5, 1] = 100.0  # block 0 (K 0..31) of column 1
    values, _, hit = lowp.quantize_rows(w, "mxfp4", 0)
    assert hit.flushed == 31
    assert (values[:32, 1] == 0).sum() == 31 and values[5, 1] == 96  # 6 x 2^4
    assert hit.bound_ratio <= 1 and hit.max_abs == 4.0  # 100 saturates to 96
    np.testing.assert_array_equal(values[32:, 1], np.where(w[32:, 1] > 0, 0.01171875, -0.01171875))


def _mmad_cycles(dtype: str, base_k: int) -> float:
    """The cost model's cycles of the one Mmad of a 128 x 128 x base_k GEMM on the 950."""
    p = gemm.check(C950, {"M": 128, "N": 128, "K": base_k, "dtype_in": dtype, "base_m": 128,
                          "base_n": 128, "base_k": base_k, "block_dim": 1})
    prog = gemm.build(C950, p)
    mm = np.flatnonzero(prog.cols["kind"] == Kind.MMAD)
    assert len(mm) == 1
    return float(compute_costs(prog, C950).issue_ns[mm[0]]) * C950.clock_MHz / 1000


@pytest.mark.parametrize("dtype,k0", [("fp16", 16), ("int8", 32), ("fp8_e4m3", 32),
                                      ("hif8", 32), ("mxfp8", 32), ("mxfp4", 64)])
def test_the_cube_runs_at_the_chips_k0(dtype, k0):
    """128 x 128 x 128 is 8 x 8 fractals of 16 x 16 by 128 / k0 K steps: 512 steps for
    fp16, 256 for the 8-bit formats, 128 for MXFP4, plus the cube's fixed cycles."""
    assert C950.cube_k0(dtype) == k0
    steps = 8 * 8 * (128 // k0)
    assert _mmad_cycles(dtype, 128) == pytest.approx(C950.cube_fixed_cycles + steps, abs=1e-3)


def test_mx_inputs_move_their_scales():
    """A 128 x 128 x 128 MXFP4 GEMM loads 128 x 128 x (0.5 + 1/32) bytes of A and of B."""
    p = gemm.check(C950, {"M": 128, "N": 128, "K": 128, "dtype_in": "mxfp4", "base_n": 128})
    prog = gemm.build(C950, p)
    c, names = prog.cols, np.asarray(prog.op_names)[prog.cols["op"]]
    for label in ("Load A -> L1", "Load B -> L1"):
        assert c["nbytes"][names == label].sum() == 128 * 128 // 2 + 128 * 128 // 32


@pytest.mark.parametrize("dtype", LOW)
def test_refused_on_a_chip_without_the_format(dtype):
    with pytest.raises(InputError) as err:
        gemm.check(B2, {**SMALL, "dtype_in": dtype})
    e = err.value
    assert e.field == "params.dtype_in" and e.value == dtype
    assert all(name in str(e) for name in B2.cube_precisions)
    assert "Ascend 910B2" in str(e)


def test_low_precision_inputs_take_float_outputs_only():
    with pytest.raises(InputError) as err:
        gemm.check(C950, {**SMALL, "dtype_in": "fp8_e4m3", "dtype_out": "int8"})
    assert err.value.field == "params.dtype_out" and "bf16" in str(err.value)


def test_mx_base_k_holds_whole_blocks():
    """A chip of one's own whose cube steps MXFP8 in 16s still needs base_k in 32s."""
    chip = C950.with_overrides(cube_k0_mxfp8=16)
    with pytest.raises(InputError) as err:
        gemm.check(chip, {**SMALL, "dtype_in": "mxfp8", "base_k": 48})
    assert err.value.field == "params.base_k" and "32" in str(err.value)

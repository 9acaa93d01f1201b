"""GEMM refusals: capacity (with the largest value that fits every buffer), precisions
and sparsity a chip lacks, grids and core counts out of range; the default tiling fits."""
from __future__ import annotations

import re

import pytest

import hardware_presets
from hardware_presets.errors import InputError
from kernels.gemm import kernel as gemm
from kernels.gemm.params import IN_BYTES
from tests.test_gemm_build import B2, C310, C910, build


# ---- refusals ------------------------------------------------------------------------------
def refusal(chip, **params) -> InputError:
    with pytest.raises(InputError) as info:
        build(chip, **params)
    return info.value


def fitting_value(err: InputError) -> int:
    found = re.search(r"at most (\d+)", err.allowed)
    assert found, f"no largest fitting value in {err}"
    return int(found.group(1))


CAPACITY = {
    # name: (params, field, limit bytes, requested bytes, largest fitting value)
    # L0A: 256 x 80 fp16 x 2 buffers = 81920 B > 64 KiB; 65536 / (256 x 2 x 2) = 64
    "L0A": (dict(base_m=256, base_n=64, base_k=80), "base_k", 65536, 81920, 64),
    # L0B: 80 x 256 fp16 x 2 buffers = 81920 B > 64 KiB; 65536 / (256 x 2 x 2) = 64
    "L0B": (dict(base_m=64, base_n=256, base_k=80), "base_k", 65536, 81920, 64),
    # L0C: 128 x 272 fp32 = 139264 B > 128 KiB; 131072 / (128 x 4) = 256
    "L0C": (dict(base_m=128, base_n=272, base_k=32), "base_n", 131072, 139264, 256),
    # L0C double-buffered: 128 x 256 x 4 x 2 = 262144 B; 131072 / (128 x 4 x 2) = 128
    "L0C x2": (dict(base_m=128, base_n=256, base_k=32, db_l0c=True), "base_n", 131072,
               262144, 128),
    # L1: (128 x 64 x 2 + 64 x 256 x 2) x 2 buffers = 98304 B per K step of depth;
    # 6 steps need 589824 B > 512 KiB, 524288 / 98304 = 5.33
    "L1": (dict(base_m=128, base_n=256, base_k=64, depth_k=6), "depth_k", 524288, 589824, 5),
    # L1, int8 4:2: A 128 x 128 + B (64 x 256 + 64 x 256 x 2 / 8 indices) = 36864 B per
    # step, x 2 buffers; 8 steps need 589824 B, 524288 / 73728 = 7.1
    "L1 sparse": (dict(dtype_in="int8", dtype_out="int32", sparsity="4:2", depth_k=8),
                  "depth_k", 524288, 589824, 7),
}


@pytest.mark.parametrize("case", CAPACITY)
def test_capacity_refusal_names_the_limit_and_the_largest_fit(case):
    params, field, limit, need, fit = CAPACITY[case]
    err = refusal(B2, **params)
    assert err.field == f"params.{field}" and err.value == params[field]
    assert f"holds {limit} bytes" in err.allowed and f"needs {need}" in err.allowed
    assert fitting_value(err) == fit
    gemm.check(B2, dict(params, **{field: fit}))  # the largest fitting value is accepted
    step = 1 if field == "depth_k" else 16
    with pytest.raises(InputError):  # and it is the largest
        gemm.check(B2, dict(params, **{field: fit + step}))


def test_capacity_single_buffering_fits_what_double_buffering_does_not():
    params = dict(base_m=256, base_n=64, base_k=80)
    refusal(B2, **params)
    gemm.check(B2, dict(params, db_l0=False))  # 256 x 80 x 2 = 40960 B in one buffer


def test_capacity_ub_on_coupled_chips():
    """910: C goes L0C -> UB in fp32, one tile: 256 x 256 x 4 = 262144 B > the 261888 B of
    UB (256 KiB less a 256-byte reserve); 261888 / (256 x 4) = 255.75 -> 240."""
    err = refusal(C910, base_m=256, base_n=256)
    assert err.field == "params.base_n" and "UB holds 261888 bytes" in err.allowed
    assert "needs 262144" in err.allowed and fitting_value(err) == 240
    gemm.check(C910, dict(base_m=256, base_n=240))


SUGGESTIONS = {
    # name: (chip, params, field and buffer of the refusal, step of the field)
    # int8 k0 = 32: the suggestion must sit on the fractal, not on a multiple of 16
    "base_k on the int8 fractal": (B2, dict(dtype_in="int8", dtype_out="int32", base_m=80,
                                            base_n=16, base_k=512), "base_k", "L0A", 32),
    # L0A alone would allow base_k 128; L0B (base_n 256) only 64: the suggestion checks all
    "L0A and L0B together": (B2, dict(base_m=128, base_n=256, base_k=144), "base_k", "L0A",
                             16),
    # 910: L0C (256 KiB) would take base_n 256, but an fp32 tile of 256 x 256 overflows UB
    "L0C and UB together": (C910, dict(base_m=256, base_n=512, base_k=32), "base_n", "L0C",
                            16),
    # the bias is a constant share of L1, not proportional to depth_k
    "L1 with bias": (C910, dict(dtype_in="int8", dtype_out="int32", base_m=16, base_n=512,
                                base_k=64, depth_k=64, bias=True, db_l0=False, db_l1=False),
                     "depth_k", "L1", 1),
}


@pytest.mark.parametrize("case", SUGGESTIONS)
def test_the_suggested_value_is_the_largest_that_fits(case):
    chip, params, field, buffer, step = SUGGESTIONS[case]
    err = refusal(chip, **params)
    assert err.field == f"params.{field}" and f"{buffer} holds" in err.allowed
    value = fitting_value(err)
    gemm.check(chip, dict(params, **{field: value}))  # accepted
    with pytest.raises(InputError):  # and one fractal step more is not
        gemm.check(chip, dict(params, **{field: value + step}))


def test_no_fitting_value_is_said_plainly():
    """fp32 L0B with base_n 1024: not even base_k = 16 fits; the knob that helps is base_n."""
    err = refusal(B2, dtype_in="fp32", dtype_out="fp32", base_m=16, base_n=1024, base_k=64)
    assert err.field == "params.base_k" and "no value fits" in err.allowed


REFUSED = {
    # name: (chip, params, field, text the message must contain)
    "bf16 on 910": (C910, dict(dtype_in="bf16"), "dtype_in", "fp16"),
    "fp32 on 310P3": (C310, dict(dtype_in="fp32", dtype_out="fp32"), "dtype_in", "int8"),
    "bf16 out on 910": (C910, dict(dtype_out="bf16"), "dtype_out", "fp16"),
    "4:2 with fp16": (B2, dict(sparsity="4:2"), "sparsity", "int8"),
    "4:2 on 910": (C910, dict(dtype_in="int8", dtype_out="int32", sparsity="4:2"),
                   "sparsity", "910B"),
    "4:2 on 310P3": (C310, dict(dtype_in="int8", dtype_out="int32", sparsity="4:2"),
                     "sparsity", "910B"),
    "2:4 with int8": (B2, dict(dtype_in="int8", dtype_out="int32", sparsity="2:4"),
                      "sparsity", "fp16"),
    "int32 out, fp16 in": (B2, dict(dtype_out="int32"), "dtype_out", "int8"),
    "atomic int8 out": (B2, dict(dtype_in="int8", dtype_out="int8", grid_z=2,
                                 split_k_mode="atomic"), "split_k_mode", "workspace"),
    # K = 256 in base_k 64 steps: 4 steps, so at most 4 splits
    "grid_z > K / base_k": (B2, dict(K=256, base_k=64, grid_z=5), "grid_z", "1 to 4"),
    "block_dim > cube cores": (B2, dict(block_dim=25), "block_dim", "1 to 24"),
    "block_dim > 910 cores": (C910, dict(block_dim=33), "block_dim", "1 to 32"),
    # M = 1000 in 128-row tiles: 8 row tiles
    "grid_x > M / base_m": (B2, dict(M=1000, grid_x=9), "grid_x", "0 (auto) to 8"),
    "grid_y > N / base_n": (B2, dict(N=512, grid_y=3), "grid_y", "0 (auto) to 2"),
    "base_k off the fractal": (B2, dict(dtype_in="int8", dtype_out="int32", base_k=48),
                               "base_k", "multiple of 32"),
    "sparse base_k": (B2, dict(dtype_in="int8", dtype_out="int32", sparsity="4:2",
                               base_k=96), "base_k", "multiple of 64"),
    "base_m off the fractal": (B2, dict(base_m=40), "base_m", "multiple of 16"),
    "M = 0": (B2, dict(M=0), "M", "1 to 65536"),
    "unknown policy": (B2, dict(policy="diagonal"), "policy", "swizzle"),
    "unknown parameter": (B2, dict(tile=3), "tile", "base_m"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_unsupported_requests_are_refused_with_the_field_named(case):
    chip, params, field, text = REFUSED[case]
    err = refusal(chip, **params)
    assert err.field == f"params.{field}"
    assert text in err.allowed


def test_the_default_tiling_fits_every_preset_and_precision():
    for name in hardware_presets.list_presets():
        chip = hardware_presets.load(name)
        for dtype in chip.cube_precisions:
            if dtype not in IN_BYTES:
                continue  # int4: the cube has it, the GEMM does not take it
            out = "int32" if dtype == "int8" else "fp32"
            p = gemm.check(chip, dict(dtype_in=dtype, dtype_out=out))
            assert p["block_dim"] == len(chip.cube_core_ids())
            assert p["base_k"] % chip.cube_k0(dtype) == 0


def test_balance_other_than_round_robin_with_atomic_split_k_is_refused():
    with pytest.raises(InputError) as exc:
        gemm.check(B2, {"grid_z": 4, "split_k_mode": "atomic", "balance": "lpt"})
    assert exc.value.field == "params.balance"

"""The linear layer kernel (kernels/linear): its values against float64 with a bound that
bites, its behaviour in time as relations (W8A16 against fp16, the HBM roofline, scaling,
cores), its refusals, and the decode layer's use of it. The program worked by hand and the
engines are in tests/test_linear_program.py."""
from __future__ import annotations

import functools
import json
import time
import tracemalloc

import numpy as np
import pytest

import hardware_presets as hp
from explorer import cli
from explorer.core import Scenario, simulate
from explorer.core.decode_step import simulate_decode
from hardware_presets.errors import InputError
from kernels.common.formats import UNIT_ROUNDOFF, round_to
from kernels.linear import kernel as lk
from kernels.linear import numerics as ln
from tests.rowwise_helpers import B2, TIGHT, executed, ratios, refused

F32 = np.float32
P3 = hp.load("310P3")


def params(chip=B2, **kw) -> dict:
    return lk.check(chip, kw)


def inputs_of(p: dict, seed: int = 0) -> dict:
    return ln.make_inputs(p, np.random.default_rng(seed))


@functools.cache
def _result(chip: str, items: tuple):
    return simulate(Scenario.make(chip, "linear", dict(items)))


def result(chip: str = "910B2", **kw):
    return _result(chip, tuple(sorted(kw.items())))


# ---- numerics ----------------------------------------------------------------------------
#: (act_dtype, weight_dtype, group_size); K = 300 per channel (not a multiple of 16 or 32),
#: 384 with groups (3 x 128, 12 x 32); N = 200 = 3 x 64 + 8; base_k = 128 leaves a tail
FORMATS = [("fp16", "fp16", 0), ("bf16", "bf16", 0), ("fp16", "int8", 0), ("bf16", "int8", 0),
           ("fp16", "int8", 32), ("fp16", "int8", 128), ("bf16", "int8", 128)]


def _numerics_case(act, weight, group, m) -> dict:
    return {"M": m, "N": 200, "K": 384 if group else 300, "act_dtype": act,
            "weight_dtype": weight, "group_size": group, "base_n": 64, "base_k": 128}


@pytest.mark.parametrize("m", [1, 3, 17])
@pytest.mark.parametrize("act,weight,group", FORMATS)
def test_numerics_pass_and_the_bound_is_not_loose(act, weight, group, m):
    """The check passes in value for every format, odd M and ragged N, K. How close the
    error comes to the bound (error_bound in numerics.py: u |ref| for the output's rounding
    + gamma_K(u32) |x| @ |W| for fp32 accumulation [+ u |x| @ |W| for W8A16's antiquant]):

    * fp16 / bf16 weights: the output rounding errs by U u |ref| / m (U ~ uniform, m the
      mantissa; rowwise_helpers.TIGHT), so an element's ratio is s U / m with s = u |ref| /
      bound its rounding share. Over >= 48 elements with s >= 1/2 the largest U / m is
      above 1/2 (probability > 1 - 1e-6): the max ratio is >= TIGHT / 2.
    * int8 weights: the bound counts K antiquant roundings at their worst, all of one sign;
      they are independent (|d_k| ~ U u |w_k| / m), so the error is a random walk of std
      ~ u sqrt(sum (x_k w_k)^2 / 6) >= u sum |x_k w_k| / sqrt(6 K) (Cauchy-Schwarz). Over
      >= 200 elements some exceeds 2 std, and the other terms of the bound add ~1/16 at
      K ~ 300: the max ratio is >= 2 / sqrt(6 K) / 1.1 > 1/2 / sqrt(K)."""
    kw = _numerics_case(act, weight, group, m)
    res = result(**kw)
    check = res.numerics
    assert check.passed and check.verified == check.total == m * 200
    assert check.bound == UNIT_ROUNDOFF[act]
    assert check.bound_ratio <= 1.0
    if weight == "int8":
        assert check.bound_ratio >= 0.5 / np.sqrt(kw["K"]), check.bound_ratio
        return
    p = res.params
    inp = inputs_of(p, res.scenario.seed)
    ref = ln.reference(inp)["y"]
    share = UNIT_ROUNDOFF[act] * np.abs(ref) / ln.error_bound(p, inp, ref)
    assert (share >= 0.5).sum() >= 48
    assert check.bound_ratio >= TIGHT / 2, check.bound_ratio


def test_inputs_sample_and_formats():
    """A large layer is checked on a sample: K x columns <= 2^22 weights, <= 2^16 outputs;
    the scales are one per column, or one per group of K rows, in fp16."""
    p = params(M=64, N=8192, K=8192, weight_dtype="int8", group_size=128)
    inp = inputs_of(p)
    assert ln.sample(p) == (64, 512)
    assert inp["x"].shape == (64, 8192) and inp["x"].dtype == np.float16
    assert inp["codes"].shape == (8192, 512) and inp["codes"].dtype == np.int8
    assert inp["scale"].shape == (64, 512) and inp["scale"].dtype == np.float16
    assert np.abs(inp["codes"]).max() == 127
    assert ln.output_elements(p) == 64 * 8192
    per_channel = inputs_of(params(M=2, N=48, K=96, weight_dtype="int8"))
    assert per_channel["scale"].shape == (1, 48) and per_channel["group"] == 96
    assert inputs_of(params(M=2, N=48, K=96, act_dtype="bf16",
                            weight_dtype="bf16"))["w"].dtype.name == "bfloat16"


# -- wrong arithmetic must fail the bound (N = K so that a transposed W has the shape)
def _matmul(p, x, w):
    return round_to(x.astype(F32) @ np.asarray(w).astype(F32), p["act_dtype"])


def scale_per_row(p, inp):
    """The per-column scales applied to the K rows instead."""
    w = inp["codes"].astype(np.float64) * inp["scale"].astype(np.float64).reshape(-1)[:, None]
    return _matmul(p, inp["x"], round_to(w, p["act_dtype"]))


def no_scale(p, inp):
    """int8 codes taken as the weights."""
    return _matmul(p, inp["x"], inp["codes"])


def first_group_only(p, inp):
    """The first group's scales applied to every group of K rows."""
    w = inp["codes"].astype(np.float64) * inp["scale"][:1].astype(np.float64)
    return _matmul(p, inp["x"], round_to(w, p["act_dtype"]))


def fp16_accumulation(p, inp):
    """Products in fp32, the running sum rounded to fp16 after every term (no fp32 L0C)."""
    x, w = inp["x"].astype(F32), inp["w"].astype(F32)
    acc = np.zeros((x.shape[0], w.shape[1]), np.float16)
    for k in range(x.shape[1]):
        acc = round_to(acc.astype(F32) + x[:, k:k + 1] * w[k:k + 1, :], "fp16")
    return acc


def transposed_w(p, inp):
    return _matmul(p, inp["x"], inp["w"].T)


WRONG = [(scale_per_row, "int8", 0), (no_scale, "int8", 0), (first_group_only, "int8", 128),
         (fp16_accumulation, "fp16", 0), (transposed_w, "fp16", 0)]


@pytest.mark.parametrize("wrong,weight,group", WRONG, ids=lambda v: getattr(v, "__name__", v))
def test_wrong_arithmetic_fails_the_bound(wrong, weight, group):
    """fp16 accumulation over K = 1024 errs ~ u sqrt(sum_k |partial_k|^2 / 3) ~ u K / sqrt(6)
    term sizes, against a bound of u sqrt(K) + gamma_K(u32) K: several times over."""
    p = params(M=4, N=1024, K=1024, weight_dtype=weight, group_size=group)
    inp = inputs_of(p)
    ratio, ok = ratios(ln, p, inp, executed(ln, p, inp))
    assert ok and ratio <= 1.0  # the kernel's own arithmetic passes on these inputs
    ratio, ok = ratios(ln, p, inp, wrong(p, inp))
    assert not ok and ratio > 2.0, ratio


# ---- time --------------------------------------------------------------------------------
#: a down projection at batch 16 scaled down from Llama 3 70B's 8192 x 28672 to keep the
#: test fast: 2048 x 8192, 32 MiB of fp16 weights, ~1.4 MiB per cube core
DOWN = {"M": 16, "N": 2048, "K": 8192}


def test_w8a16_is_faster_and_moves_half_the_weight_bytes():
    """W8A16 streams N x K int8 bytes where fp16 streams 2 N K. Its only other HBM traffic
    beyond x and y is the workspace ring's first writes (the first buffer_num tiles of each
    AIC: a write to a cold region goes to HBM, later ones stay in L2), at most cores x
    buffer_num x base_k x base_n x 2 bytes; without them the bytes are half of fp16's."""
    fp16, int8 = result(**DOWN), result(**DOWN, weight_dtype="int8")
    assert int8.makespan_ns < fp16.makespan_ns
    n, k, m = DOWN["N"], DOWN["K"], DOWN["M"]
    assert fp16.metrics["hbm_bytes"] >= 2 * n * k
    tl = int8.timeline
    hbm = tl["served_from"] == "HBM"
    assert tl.loc[hbm & (tl["op"] == "CopyIn W int8"), "bytes"].sum() == n * k
    cold = tl.loc[hbm & (tl["op"] == "CopyOut W fp16"), "bytes"].sum()
    plan = lk.plan(B2, lk.shape_of(int8.params))
    assert 0 < cold <= len(plan.cores) * 2 * plan.base_k * plan.base_n * 2
    assert int8.metrics["hbm_bytes"] - cold >= n * k + m * (n + k) * 2
    share = (int8.metrics["hbm_bytes"] - cold) / fp16.metrics["hbm_bytes"]
    assert 0.5 <= share <= 0.51, share
    assert int8.metrics["hbm_bytes"] < 0.8 * fp16.metrics["hbm_bytes"]


def test_fp16_weight_bandwidth_is_under_the_roofline_and_near_it():
    """The weights are 32 MiB, 1.4 MiB per core, ~21 us at HBM's 1.6 TB/s: a copy's latency
    (176 cycles, 0.1 us) is a small share of it, the cube's 0.54 GFLOP take 1.5 us at its
    354-TFLOPS peak, and 24 cores x 40 B/cycle x 1.8 GHz = 1.7 TB/s exceed HBM, so HBM
    binds: the weights stream at more than half its bandwidth, and never above it. HBM
    carries the weights, x and y once (x's re-reads by the other tiles come from L2)."""
    res = result(**DOWN)
    n, k, m = DOWN["N"], DOWN["K"], DOWN["M"]
    weight_rate = n * k * 2 / res.makespan_ns  # bytes per ns = GB/s
    assert 0.5 * B2.hbm_bytes_per_ns < weight_rate < B2.hbm_bytes_per_ns, weight_rate
    assert res.metrics["hbm_utilization"] <= 1.0
    once = n * k * 2 + m * (n + k) * 2
    assert once <= res.metrics["hbm_bytes"] <= 1.01 * once


@pytest.mark.parametrize("chip", ["910B2", "310P3"])
def test_time_grows_with_n_and_k(chip):
    times = [result(chip, M=16, N=n, K=k).makespan_ns
             for n, k in ((512, 1024), (1024, 1024), (1024, 2048), (2048, 2048))]
    assert times == sorted(times) and len(set(times)) == 4, times


@pytest.mark.parametrize("weight", ["fp16", "int8"])
def test_one_cube_core_is_slower_than_all(weight):
    one, every = (result(M=16, N=1024, K=2048, weight_dtype=weight, block_dim=b).makespan_ns
                  for b in (1, 0))
    assert every * 4 < one, (one, every)


# ---- refusals ----------------------------------------------------------------------------
SMALL = {"M": 16, "N": 64, "K": 256}


@pytest.mark.parametrize("bad,field,chip", [
    ({"act_dtype": "bf16", "weight_dtype": "bf16"}, "params.act_dtype", P3),  # 310P's cube
    ({"act_dtype": "bf16", "weight_dtype": "int8"}, "params.act_dtype", P3),
    ({"act_dtype": "bf16"}, "params.weight_dtype", B2),  # fp16 weights, bf16 activations
    ({"weight_dtype": "bf16"}, "params.weight_dtype", B2),
    ({"weight_dtype": "int8", "group_size": 96}, "params.group_size", B2),  # 256 % 96
    ({"weight_dtype": "int8", "group_size": 48, "K": 96}, "params.group_size", B2),  # % 32
    ({"weight_dtype": "int8", "group_size": 512}, "params.group_size", B2),  # > K
    ({"group_size": 64}, "params.group_size", B2),  # fp16 weights have no scales
    ({"base_n": 24}, "params.base_n", B2),  # not a multiple of 16
    ({"base_n": 2064}, "params.base_n", B2),  # 16 x 2064 x 4 > 131,072-B L0C (see below)
    ({"M": 256, "base_n": 144}, "params.base_n", B2),
    ({"base_k": 24}, "params.base_k", B2),
    ({"base_n": 256, "base_k": 496}, "params.base_k", B2),  # over L1 (see below)
    ({"block_dim": 25}, "params.block_dim", B2),  # 24 cube cores
    ({"block_dim": 9}, "params.block_dim", P3),
    ({"buffer_num": 3}, "params.buffer_num", B2),
    ({"weight_dtype": "int4"}, "params.weight_dtype", B2),
    ({"heads": 2}, "params.heads", B2),
])
def test_refusals_name_the_field(bad, field, chip):
    refused(lk.check, {**SMALL, **bad}, field, chip)


def test_l0c_and_l1_boundaries_by_hand():
    """L0C holds base_m x base_n fp32 (910B2: 131,072 B): at M = 16, base_n <= 2048; at
    M = 256, <= 128. L1 holds buffer_num x (x chunk + weight tile) in fp16 (524,288 B): with
    base_n = 256 and two buffers 4 x 272 x base_k <= L1, base_k <= 481 -> 480; one buffer
    960."""
    assert (B2.l0c_bytes, B2.l1_bytes) == (131072, 524288)
    assert lk.plan(B2, lk.shape_of(params(**SMALL, base_n=2048))).base_n == 2048
    assert lk.plan(B2, lk.shape_of(params(**{**SMALL, "M": 256}, base_n=128))).base_n == 128
    for buffer_num, top in ((2, 480), (1, 960)):
        p = params(**SMALL, base_n=256, base_k=top, buffer_num=buffer_num)
        assert lk.plan(B2, lk.shape_of(p)).base_k == top
        refused(lk.check, {**SMALL, "base_n": 256, "base_k": top + 16,
                           "buffer_num": buffer_num}, "params.base_k")


def test_block_dim_zero_resolves_to_every_cube_core():
    assert params(**SMALL)["block_dim"] == 24
    assert params(P3, **SMALL)["block_dim"] == 8
    assert params(**SMALL, block_dim=24)["block_dim"] == 24


@pytest.mark.parametrize("extra", [{}, {"base_n": 16, "base_k": 16}, {"weight_dtype": "int8"}])
def test_instruction_cap_refused_before_allocating(extra):
    """The largest layer the parameters allow needs billions of instructions: the build is
    refused from the count alone, in milliseconds and a few MiB."""
    p = params(M=4096, N=1 << 20, K=1 << 20, **extra)
    assert lk.instruction_count(B2, lk.shape_of(p)) > 1e9
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(InputError) as info:
            lk.build(B2, p)
        took = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.field == "instructions"
    assert took < 1.0 and peak < 64 << 20, (took, peak)


def test_cli_refusal_exits_2(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"kernel": "linear", "preset": "310P3",
                                "params": {"act_dtype": "bf16", "weight_dtype": "bf16"}}))
    assert cli.main(["run", str(path)]) == 2
    assert "params.act_dtype" in capsys.readouterr().err


# ---- the decode layer --------------------------------------------------------------------
DECODE = {"model": "custom", "custom_layers": 2, "custom_q_heads": 8, "custom_kv_heads": 2,
          "custom_head_dim": 64, "custom_hidden": 512, "custom_params_B": 0.05,
          "batch": 4, "distribution": "equal", "mean_len": 128, "max_len": 256}


@pytest.mark.parametrize("weight,nbytes", [("fp16", 2), ("int8", 1)])
def test_decode_qkv_streams_its_weights(weight, nbytes):
    """The decode layer's QKV projection is this kernel: N = (q + 2 kv) heads x head_dim,
    K = hidden, and it reads its weight matrix from HBM."""
    step = simulate_decode(Scenario.make("910B2", "decode", {**DECODE, "weight_dtype": weight},
                                         seed=7))
    m = step.model
    weights = (m.q_heads + 2 * m.kv_heads) * m.head_dim * m.hidden * nbytes
    assert weights == 12 * 64 * 512 * nbytes
    row = step.ops.set_index("op")
    assert row.loc["qkv", "hbm_bytes"] >= weights

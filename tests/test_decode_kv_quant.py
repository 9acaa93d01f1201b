"""KV caches in 8- and 4-bit floats on the 950 (kernels/decode/kv_formats.py, kv_store.py):
the attention reads exactly the format's bytes, the step gets faster, the attention output
stays within its bound against float64 on the real K and V, what the cache itself lost is
within the format's bound, and chips without the format refuse it."""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core import Scenario, simulate
from explorer.core.simulate import check_numerics
from hardware_presets.errors import InputError
from kernels import get
from kernels.common.program import Kind
from kernels.decode import kernel as decode
from kernels.decode import numerics as dn
from kernels.decode.kv_formats import kv_formats_on, presets_holding
from kernels.decode.params import workload
from kernels.models import load_model

C950, B2 = hp.load("950PR"), hp.load("910B2")
LOW = ("fp8_e4m3", "fp8_e5m2", "hif8", "mxfp8", "mxfp4")
SMALL = {"model": "custom", "custom_layers": 2, "custom_q_heads": 8, "custom_kv_heads": 2,
         "custom_head_dim": 64, "custom_hidden": 512, "custom_params_B": 0.01,
         "batch": 4, "distribution": "uniform", "mean_len": 200, "max_len": 512,
         "phases": "attention"}
#: bytes of one token's K (or V) of one KV head with head_dim 64, by hand: 2 bytes per
#: element (fp16), 1 (the scaled 8-bit floats: their per-channel scales are static),
#: 1 + one E8M0 byte per 32 (mxfp8), 0.5 + one per 32 (mxfp4)
ROW = {"fp16": 128, "fp8_e4m3": 64, "fp8_e5m2": 64, "hif8": 64, "mxfp8": 66, "mxfp4": 34}


def _kv_read_bytes(prog, label: str) -> int:
    c = prog.cols
    return int(c["nbytes"][(c["kind"] == Kind.TRANSFER)
                           & (c["op"] == prog.op_names.index(label))].sum())


@pytest.mark.parametrize("kv_dtype", ["fp16", *LOW])
def test_the_attention_reads_exactly_the_formats_bytes(kv_dtype):
    p = decode.check(C950, {**SMALL, "kv_dtype": kv_dtype})
    prog = decode.build(C950, p, seed=2)
    lengths, _ = workload(p, np.random.default_rng(2))
    want = int(np.sum(lengths)) * 2 * ROW[kv_dtype]  # 2 KV heads
    assert _kv_read_bytes(prog, "CopyIn K") == _kv_read_bytes(prog, "CopyIn V") == want


def test_the_cube_path_dequantises_through_the_workspace():
    """cube_vector: the AIV reads the fp8 codes, the AIC the fp16 copy (2 bytes each)."""
    p = decode.check(C950, {**SMALL, "kv_dtype": "fp8_e4m3", "impl": "cube_vector"})
    prog = decode.build(C950, p, seed=2)
    tokens = int(np.sum(workload(p, np.random.default_rng(2))[0])) * 2
    assert _kv_read_bytes(prog, "CopyIn K (fp8_e4m3)") == tokens * ROW["fp8_e4m3"]
    assert _kv_read_bytes(prog, "Load K -> L1") == tokens * 64 * 2


def test_kv_bytes_per_token_halve_and_quarter():
    m = load_model("llama3-8b")
    fp16 = m.kv_bytes_per_token("fp16")
    assert m.kv_bytes_per_token("fp8_e4m3") * 2 == fp16
    assert m.kv_bytes_per_token("mxfp4") == fp16 // 4 + 2 * 32 * 8 * 128 // 32


def test_a_memory_bound_step_gets_faster():
    """Vector attention over a long cache is bound by its HBM reads: FP8 halves them, and
    the emulated step falls with them (not by exactly half: the dequantisation's extra
    vector pass and the fixed costs stay)."""
    base = {"model": "llama3-8b", "batch": 2, "mean_len": 1024, "phases": "attention"}
    fp16, fp8, mx4 = (simulate(Scenario.make("950PR", "decode", {**base, "kv_dtype": k}))
                      for k in ("fp16", "fp8_e4m3", "mxfp4"))
    hbm = {r.scenario.params_dict["kv_dtype"]: r.metrics["hbm_bytes"] for r in (fp16, fp8, mx4)}
    assert hbm["fp8_e4m3"] < 0.55 * hbm["fp16"] and hbm["mxfp4"] < 0.3 * hbm["fp16"]
    assert fp8.metrics["makespan_us"] < 0.8 * fp16.metrics["makespan_us"]
    assert mx4.metrics["makespan_us"] <= fp8.metrics["makespan_us"]


@pytest.mark.parametrize("impl", ["vector", "cube_vector", "split_kv"])
@pytest.mark.parametrize("kv_dtype", LOW)
def test_the_attention_output_stays_within_its_bound(impl, kv_dtype):
    """Against float64 attention on the *real* K and V: the bound holds the cache's own
    quantisation error exactly, so it holds with every format and implementation."""
    p = decode.check(C950, {**SMALL, "kv_dtype": kv_dtype, "impl": impl})
    check = check_numerics(get("decode"), {k: v for k, v in p.items()
                                           if k not in decode.TIMING_ONLY_PARAMS}, seed=5)
    assert check.passed and check.bound_ratio > 0.1


def test_what_the_cache_lost_orders_the_formats():
    """The KV quantisation error itself: within each format's bound, E4M3 (3 mantissa
    bits) and HiF8 near 1 beat E5M2 (2 bits), MXFP4 (1 bit) loses most, all more than
    bf16 would."""
    lost = {}
    for kv in LOW + ("int8_channel",):
        p = decode.check(C950, {**SMALL, "kv_dtype": kv})
        q = dn.make_inputs(p, np.random.default_rng(5))["quantization"]
        for part in ("K", "V"):
            assert 0 < q[part]["bound_ratio"] <= 1
            assert q[part]["norm_rel"] > q[part]["bf16_norm_rel"]
        lost[kv] = q["K"]["norm_rel"]
    assert lost["fp8_e4m3"] < lost["fp8_e5m2"] < lost["mxfp4"]
    assert lost["hif8"] < lost["fp8_e5m2"] and lost["mxfp8"] < lost["mxfp4"]
    assert lost["int8_channel"] < lost["fp8_e5m2"]


@pytest.mark.parametrize("chip", [B2, hp.load("310P3")])
@pytest.mark.parametrize("kv_dtype", LOW)
def test_refused_where_the_chip_lacks_the_format(chip, kv_dtype):
    with pytest.raises(InputError) as err:
        decode.check(chip, {**SMALL, "kv_dtype": kv_dtype})
    e = err.value
    assert e.field == "params.kv_dtype" and e.value == kv_dtype
    assert chip.display_name in str(e) and "int8_channel" in str(e)
    assert kv_formats_on(chip) == ("fp16", "bf16", "int8_token", "int8_head", "int8_channel")


def test_the_presets_holding_a_format_are_the_chips_that_take_it():
    """Where a chip without FP8 / MX caches sends the reader: the presets whose cube takes
    the formats (the 950s), asked of each chip; no format at all: every preset."""
    takes = {n for n in hp.list_presets() if "mxfp4" in hp.load(n).cube_precisions}
    assert set(presets_holding(("fp8_e4m3", "mxfp4"))) == takes == {"950PR", "950DT"}
    assert presets_holding(()) == tuple(hp.list_presets())

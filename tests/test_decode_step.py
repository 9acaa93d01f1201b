"""The decode step model (explorer/core/decode_step.py): the phases it reads off the
emulated layer, the linear-layer estimate, the totals and the notes, each recomputed
here from first principles."""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core import Scenario
from explorer.core.decode_step import linear_estimate, simulate_decode
from explorer.core.emulator.engine import run
from kernels.decode import kernel as decode
from kernels.decode.workload import kv_memory
from kernels.models import load_model

SMALL = {"model": "custom", "custom_layers": 4, "custom_q_heads": 8, "custom_kv_heads": 2,
         "custom_head_dim": 64, "custom_hidden": 512, "custom_params_B": 0.05,
         "batch": 6, "distribution": "uniform", "mean_len": 300, "max_len": 1024}
SEED = 7


def _step(**kw):
    return simulate_decode(Scenario.make("910B2", "decode", {**SMALL, **kw}, seed=SEED))


@pytest.mark.parametrize("impl", ["vector", "cube_vector", "split_kv"])
def test_phases_equal_the_separate_kernels(impl):
    """append = the append kernel + the SyncAll; attention = the attention kernel alone
    (it starts with every pipe drained, as a kernel launch does)."""
    step = _step(impl=impl)
    chip = step.result.chip
    p = step.result.params
    alone = {ph: run(decode.build(chip, {**p, "phases": ph}, seed=SEED), chip).makespan_ns
             for ph in ("append", "attention")}
    sync = chip.sync_all_cycles * 1000.0 / chip.clock_MHz
    assert step.append_ns == pytest.approx(alone["append"] + sync, rel=1e-9)
    assert step.attention_ns == pytest.approx(alone["attention"], rel=1e-9)
    assert step.append_ns + step.attention_ns == pytest.approx(step.result.makespan_ns)


def test_step_totals():
    step = _step()
    layers = 4
    assert step.layers == layers
    assert step.step_ns == pytest.approx(layers * (step.append_ns + step.attention_ns
                                                   + step.linear_ns))
    assert step.tokens_per_s == pytest.approx(SMALL["batch"] / step.step_ns * 1e9)
    assert step.seq_done_ns.max() == pytest.approx(step.attention_ns)
    assert 0 < step.latency_p50_ns <= step.latency_p99_ns <= step.attention_ns
    assert np.array_equal(step.lengths, decode.workload(step.result.params,
                                                        np.random.default_rng(SEED))[0])


def test_linear_estimate_is_the_roofline():
    chip = hp.load("910B2")
    model = load_model("llama3-70b")
    t, bound = linear_estimate(model, chip, 64, "fp16")
    weights = 70.6e9 * 2  # bytes
    assert (t, bound) == (pytest.approx(weights / 1600.0), "memory")  # 1600 GB/s = B/ns
    t, bound = linear_estimate(model, chip, 4096, "fp16")
    flops = 2 * 70.6e9 * 4096
    assert (t, bound) == (pytest.approx(flops / (chip.peak_tflops("fp16") * 1e3)), "compute")


def test_kv_and_fit_follow_the_workload():
    step = _step(layout="contiguous")
    p = step.result.params
    want = kv_memory(decode.model_of(p), p["batch"], step.lengths, "fp16",
                     decode.workload(p, np.random.default_rng(SEED))[1])
    assert step.kv["reserved_bytes"] == want["reserved_bytes"] == \
        p["batch"] * p["max_len"] * step.model.kv_bytes_per_token("fp16")
    assert step.fits_hbm


def test_notes_say_replicated_and_estimated():
    ids = [n for n, _ in _step().notes]
    assert "note.decode_replicated" in ids
    assert any(n.startswith("note.decode_linear_estimate_") for n in ids)


def test_overcommit_is_noted():
    step = _step(model="llama3-70b", batch=2, distribution="equal", mean_len=256,
                 max_len=256, allow_overcommit=True)
    assert not step.fits_hbm
    assert "note.decode_overcommit" in [n for n, _ in step.notes]


def test_attention_bandwidth_is_below_the_peak():
    step = _step(impl="cube_vector", batch=16, mean_len=900)
    assert 0 < step.attention_hbm_GBps <= step.hbm_peak_GBps * (1 + 1e-9)

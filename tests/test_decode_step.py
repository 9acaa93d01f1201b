"""The decode step model (explorer/core/decode_step.py): the ops it reads off the emulated
layer, replication, the weights' bytes, the balance of weights and KV, the roofline
reference, the totals and the notes, each recomputed here from first principles."""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core import Scenario
from explorer.core.decode_step import linear_roofline, simulate_decode
from explorer.core.emulator.engine import run
from kernels.decode import kernel as decode
from kernels.decode import layer
from kernels.decode.kv_memory import kv_memory
from kernels.models import load_model

SMALL = {"model": "custom", "custom_layers": 4, "custom_q_heads": 8, "custom_kv_heads": 2,
         "custom_head_dim": 64, "custom_hidden": 512, "custom_params_B": 0.05,
         "batch": 6, "distribution": "uniform", "mean_len": 300, "max_len": 1024}
SEED = 7


def _step(**kw):
    return simulate_decode(Scenario.make("910B2", "decode", {**SMALL, **kw}, seed=SEED))


@pytest.mark.parametrize("impl", ["vector", "cube_vector", "split_kv"])
def test_append_and_attention_ops_equal_the_kernels_alone(impl):
    """Inside the layer, the KV append and the attention start with every pipe drained
    (the SyncAll of the launch before) and read nothing the ops before them left in L2, so
    each takes what it takes alone plus its own SyncAll."""
    step = _step(impl=impl)
    chip, p = step.result.chip, step.result.params
    alone = {ph: run(decode.build(chip, {**p, "phases": ph}, seed=SEED), chip).makespan_ns
             for ph in ("append", "attention")}
    sync = chip.sync_all_cycles * 1000.0 / chip.clock_MHz
    assert step.append_ns == pytest.approx(alone["append"] + sync, rel=1e-9)
    assert step.attention_ns == pytest.approx(alone["attention"] + sync, rel=1e-9)


def test_ops_add_up_to_the_emulated_program_and_the_step():
    step = _step()
    layers = 4
    assert list(step.ops["op"]) == list(layer.LAYER_OPS + layer.HEAD_OPS)
    assert step.ops["ns"].sum() == pytest.approx(step.result.makespan_ns)
    assert (step.ops["ns"] > 0).all()
    assert step.step_ns == pytest.approx(layers * step.layer_ns + step.head_ns)
    assert step.linear_ns == pytest.approx(sum(
        step.ops.loc[step.ops["op"] == op, "ns"].sum() for op in layer.LINEAR_OPS))
    assert step.tokens_per_s == pytest.approx(SMALL["batch"] / step.step_ns * 1e9)
    assert 0 < step.latency_p50_ns <= step.latency_p99_ns <= step.attention_ns
    assert np.array_equal(step.lengths, decode.workload(step.result.params,
                                                        np.random.default_rng(SEED))[0])


def test_replicating_one_layer_equals_emulating_several():
    """Three layers and the LM head in one program take three times the layer plus the head
    (each layer's activations, weights and cache are regions of its own)."""
    step = _step()
    chip, p = step.result.chip, step.result.params
    three = run(decode.build_layers(chip, p, SEED, 3), chip).makespan_ns
    assert three == pytest.approx(3 * step.layer_ns + step.head_ns, rel=1e-9)


def test_weights_move_what_the_model_says():
    """Each projection reads its weight matrix from HBM once: K x N x 2 bytes (fp16)."""
    step = _step()
    m = step.model
    qkv = (m.q_heads + 2 * m.kv_heads) * m.head_dim * m.hidden * 2
    row = step.ops.set_index("op")
    assert row.loc["qkv", "hbm_bytes"] >= qkv
    assert row.loc["qkv", "hbm_bytes"] <= qkv * 1.05  # + the small activations
    assert row.loc["lm_head", "hbm_bytes"] >= m.vocab_size * m.hidden * 2


def test_weights_dominate_at_small_batch_and_kv_at_long_context():
    short = _step(batch=1, mean_len=64, max_len=128, distribution="equal")
    long = _step(batch=16, mean_len=1024, max_len=1024, distribution="equal",
                 custom_intermediate_size=512, custom_vocab_size=1024)
    share = {name: s.ops.groupby("kind")["step_ns"].sum() / s.step_ns
             for name, s in (("short", short), ("long", long))}
    assert share["short"]["weights"] > share["short"]["kv"]
    assert share["long"]["kv"] > share["long"]["weights"]


def test_linear_roofline_is_a_reference():
    chip = hp.load("910B2")
    model = load_model("llama3-70b")
    t, bound = linear_roofline(model, chip, 64, "fp16")
    weights = 70.6e9 * 2  # bytes
    assert (t, bound) == (pytest.approx(weights / 1600.0), "memory")  # 1600 GB/s = B/ns
    t, bound = linear_roofline(model, chip, 4096, "fp16")
    flops = 2 * 70.6e9 * 4096
    assert (t, bound) == (pytest.approx(flops / (chip.peak_tflops("fp16") * 1e3)), "compute")


def test_a_partial_program_gets_its_step_from_the_layer():
    assert _step(phases="both").step_ns == pytest.approx(_step().step_ns)


def test_kv_and_fit_follow_the_workload():
    step = _step(layout="contiguous")
    p = step.result.params
    want = kv_memory(decode.model_of(p), p["batch"], step.lengths, "fp16",
                     decode.workload(p, np.random.default_rng(SEED))[1])
    assert step.kv["reserved_bytes"] == want["reserved_bytes"] == \
        p["batch"] * p["max_len"] * step.model.kv_bytes_per_token("fp16")
    assert step.fits_hbm


def test_notes_say_replicated_and_nothing_estimated():
    ids = [n for n, _ in _step().notes]
    assert "note.decode_replicated" in ids
    assert not any("estimate" in n for n in ids)


def test_overcommit_is_noted():
    step = _step(model="llama3-70b", batch=2, distribution="equal", mean_len=256,
                 max_len=256, allow_overcommit=True)
    assert not step.fits_hbm
    assert "note.decode_overcommit" in [n for n, _ in step.notes]


def test_attention_bandwidth_is_below_the_peak():
    step = _step(impl="cube_vector", batch=16, mean_len=900)
    assert 0 < step.attention_hbm_GBps <= step.hbm_peak_GBps * (1 + 1e-9)

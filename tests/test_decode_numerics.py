"""Decode attention in value (kernels/decode/numerics.py): the kernel protocol for every
implementation x KV format x layout, the verified sample, poison past the end, and the
draws shared with the program (decode_params.workload)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import hardware_presets
from kernels.common.precision import round_to
from kernels.decode import numerics as dn
from kernels.decode import online_attention as oa
from kernels.decode import params as dp

SMALL = dict(model="custom", custom_layers=2, custom_q_heads=8, custom_kv_heads=2,
             custom_head_dim=32, custom_hidden=256, custom_params_B=0.01, batch=3,
             distribution="uniform", mean_len=90, max_len=256, block_size=32,
             tile_tokens=16, allocation="shuffled")
KV_DTYPES = ("fp16", "bf16", "int8_token", "int8_head", "int8_channel")


@functools.cache
def chip():
    return hardware_presets.load("910B2")


def params(**kw) -> dict:
    extra = {"split_tokens": 48} if kw.get("impl") == "split_kv" else {}
    return dp.check(chip(), {**SMALL, **extra, **kw})


def run(p: dict, seed: int = 0):
    inputs = dn.make_inputs(p, np.random.default_rng(seed))
    out, ref = dn.execute(p, inputs)["out"], dn.reference(inputs)["out"]
    return inputs, out, ref, dn.error_bound(p, inputs, ref)


@pytest.mark.parametrize("layout", ["contiguous", "paged"])
@pytest.mark.parametrize("kv", KV_DTYPES)
@pytest.mark.parametrize("impl", dp.IMPLS)
def test_execute_is_within_the_bound(impl, kv, layout):
    p = params(impl=impl, kv_dtype=kv, layout=layout)
    inputs, out, ref, bound = run(p, seed=11)
    g, d = 4, 32
    assert out.shape == ref.shape == bound.shape == (inputs["sample"].pairs, g, d)
    assert np.all(np.isfinite(out))
    assert np.all(np.abs(out - ref) <= bound)
    assert np.array_equal(out, round_to(out, dp.DecodeParams.of(p).out_dtype))  # out_dtype
    if kv in ("fp16", "bf16"):  # not vacuous: well below 1 % of the output's scale
        assert bound.max() < (5e-3 if kv == "fp16" else 2e-2) * np.abs(ref).max()


def test_make_inputs_draws_the_workload_first():
    for layout in ("contiguous", "paged"):
        p = params(layout=layout, distribution="lognormal")
        inputs = dn.make_inputs(p, np.random.default_rng(5))
        lengths, lay = dp.workload(p, np.random.default_rng(5))
        np.testing.assert_array_equal(inputs["lengths"], lengths)
        assert inputs["layout"] == lay


def test_values_do_not_depend_on_the_layout():
    """One seed, either layout: the same q, K, V and the same output bits."""
    (a, out_a, *_), (b, out_b, *_) = (run(params(layout=lay), seed=3)
                                      for lay in ("contiguous", "paged"))
    np.testing.assert_array_equal(a["q"], b["q"])
    for x, y in zip(a["K"] + a["V"], b["K"] + b["V"]):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(out_a, out_b)


def test_split_kv_with_one_chunk_is_the_vector_kernel():
    vec = params(impl="vector")
    one = params(impl="split_kv", split_tokens=256)
    np.testing.assert_array_equal(run(vec)[1], run(one)[1])
    assert not np.array_equal(run(vec)[1], run(params(impl="split_kv", split_tokens=16))[1])


@pytest.mark.parametrize("layout", ["contiguous", "paged"])
def test_reading_past_the_length_gives_nan(layout):
    """Storage past each length is poison: the kernel's own tiles stay finite, one token
    more and the output is NaN."""
    p = params(layout=layout, distribution="list", lengths="17, 45, 70")
    inputs = dn.make_inputs(p, np.random.default_rng(0))
    for i, n in enumerate(inputs["sample"].tokens):
        def load(a, b, i=i):
            return inputs["k_store"].fp32(i, a, b), inputs["v_store"].fp32(i, a, b)
        q = inputs["q"][i]
        assert np.all(np.isfinite(oa.attention(q, load, n, tile=16)))
        assert np.all(np.isnan(oa.attention(q, load, n + 1, tile=16)))


def test_all_pairs_are_verified_when_they_fit():
    p = params()
    sample = dn.verified_pairs(dp.DecodeParams.of(p), [90, 5, 200])
    assert set(zip(sample.seqs, sample.heads)) == {(s, h) for s in range(3) for h in range(2)}
    assert sample.tokens == sample.lengths == (90, 90, 5, 5, 200, 200)
    assert sample.total_pairs == 6 and sample.truncated == 0


def test_huge_batches_are_sampled_within_the_budget():
    p = dp.check(chip(), dict(model="llama3-8b", batch=4096, distribution="lognormal",
                              mean_len=131072, max_len=1 << 20, layout="contiguous"))
    lengths, _ = dp.workload(p, np.random.default_rng(0))
    sample = dn.verified_pairs(dp.DecodeParams.of(p), lengths)
    assert sample.elements <= dn.VERIFY_ELEMENTS and sample.pairs <= dn.MAX_PAIRS
    assert {int(np.argmax(lengths)), int(np.argmin(lengths))} <= set(sample.seqs)
    assert max(sample.tokens) <= dn.PAIR_ELEMENTS // 128
    assert sample.total_pairs == 4096 * 8
    assert dn.verified_pairs(dp.DecodeParams.of(p), lengths) == sample  # deterministic
    inputs = dn.make_inputs(p, np.random.default_rng(0))
    assert inputs["sample"] == sample
    stored = sum(x.nbytes for x in inputs["K"] + inputs["V"])
    assert stored == 2 * 8 * sample.elements  # float64 K and V of the sample only


def test_samples_spread_over_sequences_and_heads():
    p = params(batch=1000, mean_len=20000, max_len=40000)
    lengths, _ = dp.workload(p, np.random.default_rng(1))
    sample = dn.verified_pairs(dp.DecodeParams.of(p), lengths)
    assert sample.pairs > 2
    assert set(sample.heads) == {0, 1}
    assert max(sample.seqs) - min(sample.seqs) > 500
    assert sample.elements <= dn.VERIFY_ELEMENTS


def test_protocol_scalars():
    p = params(kv_dtype="bf16")
    assert dn.unit_roundoff(p) == 2.0 ** -8
    assert dn.unit_roundoff(params(kv_dtype="int8_head")) == 2.0 ** -11
    assert dn.output_elements(p) == 3 * 8 * 32
    assert dp.DecodeParams.of(params(impl="cube_vector", kv_dtype="bf16")).compute_dtype == "bf16"
    assert dp.DecodeParams.of(params(impl="vector")).compute_dtype == ""

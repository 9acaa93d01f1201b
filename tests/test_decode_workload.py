"""Decode workload (kernels.decode.workload): context-length distributions, contiguous and
paged KV layouts, the KV memory calculator and the largest batch that fits HBM, checked
against hardware_facts.md ("LLM shapes for decode scenarios")."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hardware_presets as hp
from hardware_presets.errors import InputError
from kernels.decode import workload as dw
from kernels.decode.kv_memory import fragmentation, kv_memory, max_batch_that_fits
from kernels.decode.workload import ContiguousLayout, PagedLayout, context_lengths
from kernels.models import KV_DTYPES, list_models, load_model

RANDOM = ("uniform", "lognormal", "bimodal")


def rng(seed=0):
    return np.random.default_rng(seed)


# ---- distributions ------------------------------------------------------------------------
@pytest.mark.parametrize("dist", ("equal",) + RANDOM)
def test_same_seed_same_lengths(dist):
    a = context_lengths(dist, 64, mean=1000, max_len=8192, rng=rng(7))
    b = context_lengths(dist, 64, mean=1000, max_len=8192, rng=rng(7))
    assert a.dtype == np.int64 and a.shape == (64,) and np.array_equal(a, b)
    if dist != "equal":
        assert not np.array_equal(a, context_lengths(dist, 64, mean=1000, max_len=8192,
                                                     rng=rng(8)))


@settings(max_examples=80, deadline=None)
@given(dist=st.sampled_from(("equal",) + RANDOM), batch=st.integers(1, 300),
       max_len=st.integers(1, 50_000), frac=st.floats(0, 1), seed=st.integers(0, 2 ** 32))
def test_lengths_within_1_and_max_len(dist, batch, max_len, frac, seed):
    mean = max(1, round(frac * max_len))
    out = context_lengths(dist, batch, mean=mean, max_len=max_len, rng=rng(seed))
    assert out.shape == (batch,) and out.min() >= 1 and out.max() <= max_len


def test_equal_is_the_mean():
    assert set(context_lengths("equal", 5, mean=300, max_len=512, rng=rng())) == {300}


def test_uniform_is_centred_on_the_mean():
    out = context_lengths("uniform", 4000, mean=1000, max_len=8192, rng=rng())
    assert out.min() >= 1 and out.max() <= 1999
    assert abs(out.mean() - 1000) < 30


def test_lognormal_mean_and_spread():
    out = context_lengths("lognormal", 4000, mean=2000, max_len=1 << 20, rng=rng())
    assert abs(out.mean() / 2000 - 1) < 0.05
    assert abs(np.log(out).std() - dw.LOGNORMAL_SIGMA) < 0.03


def test_bimodal_is_80_short_20_long():
    out = context_lengths("bimodal", 1000, mean=1000, max_len=32768, rng=rng(3))
    long = out >= 0.75 * 32768
    assert long.sum() == 200  # exactly round(0.2 x batch) long sequences
    assert out[~long].min() >= 500 and out[~long].max() <= 1500
    assert not np.all(long[:200])  # at random positions, not the first fifth


def test_list_is_returned_as_given():
    out = context_lengths("list", 3, mean=1, max_len=100, lengths=[5, 100, 1], rng=rng())
    assert out.tolist() == [5, 100, 1]


@pytest.mark.parametrize("lengths,field", [
    ([5, 101, 1], "lengths[1]"), ([0, 5, 5], "lengths[0]"), ([5, 5], "lengths"),
    ([5, 5.5, 5], "lengths[1]"), (None, "lengths"),
])
def test_list_refuses_bad_lengths(lengths, field):
    with pytest.raises(InputError) as err:
        context_lengths("list", 3, mean=1, max_len=100, lengths=lengths, rng=rng())
    assert err.value.field == field
    if field == "lengths[1]" and lengths[1] == 101:
        assert "max_len = 100" in err.value.allowed


@pytest.mark.parametrize("kwargs,field", [
    ({"distribution": "zipf"}, "distribution"), ({"batch": 0}, "batch"),
    ({"mean": 9000}, "mean"), ({"max_len": 0}, "max_len"), ({"rng": 42}, "rng"),
])
def test_context_lengths_refusals(kwargs, field):
    args = {"distribution": "uniform", "batch": 4, "mean": 100, "max_len": 8192, "rng": rng()}
    args.update(kwargs)
    dist, batch = args.pop("distribution"), args.pop("batch")
    with pytest.raises(InputError) as err:
        context_lengths(dist, batch, **args)
    assert err.value.field == field


# ---- params -------------------------------------------------------------------------------
def test_default_params_check_and_build():
    p = dw.check({})
    lengths = dw.lengths_from_params(dw.BatchParams.of(p), rng())
    layout = dw.layout_from_params(dw.BatchParams.of(p), lengths, rng())
    assert len(lengths) == p["batch"] and isinstance(layout, PagedLayout)
    assert p["model"] in list_models()


def test_params_cross_rules():
    with pytest.raises(InputError) as err:
        dw.check({"mean_len": 9000, "max_len": 8192})
    assert err.value.field == "params.mean_len"
    with pytest.raises(InputError) as err:
        dw.check({"distribution": "list", "batch": 2, "lengths": "10, 9000"})
    assert err.value.field == "params.lengths[1]"
    with pytest.raises(InputError) as err:
        dw.check({"distribution": "list", "batch": 2, "lengths": "10, x"})
    assert err.value.field == "params.lengths"
    p = dw.check({"distribution": "list", "batch": 3, "lengths": "10, 20 30"})
    assert dw.lengths_from_params(dw.BatchParams.of(p), rng()).tolist() == [10, 20, 30]


# ---- layouts ------------------------------------------------------------------------------
LENGTHS = (1, 15, 16, 17, 100, 129, 4096, 3)


@pytest.mark.parametrize("allocation", dw.ALLOCATIONS)
@pytest.mark.parametrize("block", [1, 16, 128])
def test_block_table_covers_every_token_once(allocation, block):
    layout = PagedLayout(block, LENGTHS, allocation, seed=5)
    table = layout.block_table()
    nb = [-(-n // block) for n in LENGTHS]
    assert layout.blocks_per_sequence.tolist() == nb and layout.num_blocks == sum(nb)
    for row, n in zip(table, nb):
        assert (row[:n] >= 0).all() and (row[n:] == -1).all()
    ids = table[table >= 0]
    assert sorted(ids.tolist()) == list(range(sum(nb)))  # every block used once
    slots = layout.slot_mapping()
    assert len(slots) == sum(LENGTHS) and len(np.unique(slots)) == len(slots)
    assert slots.max() < layout.num_blocks * block


@pytest.mark.parametrize("allocation", dw.ALLOCATIONS)
def test_a_sequences_blocks_are_not_contiguous(allocation):
    layout = PagedLayout(16, (256,) * 8, allocation, seed=1)
    row = layout.block_table()[0].astype(int)
    assert not np.all(np.diff(row) == 1)
    if allocation == "interleaved":
        assert np.all(np.diff(row) == 8)  # block j of every sequence before block j + 1


def test_shuffled_table_is_seeded():
    a = PagedLayout(16, LENGTHS, "shuffled", seed=3).block_table()
    assert np.array_equal(a, PagedLayout(16, LENGTHS, "shuffled", seed=3).block_table())
    assert not np.array_equal(a, PagedLayout(16, LENGTHS, "shuffled", seed=4).block_table())
    b = dw.paged_layout(16, LENGTHS, "shuffled", rng(9)).block_table()
    assert np.array_equal(b, dw.paged_layout(16, LENGTHS, "shuffled", rng(9)).block_table())
    assert not a.flags.writeable


def test_layout_refusals():
    with pytest.raises(InputError) as err:
        PagedLayout(0, (5,))
    assert err.value.field == "block_size"
    with pytest.raises(InputError) as err:
        PagedLayout(16, (5, 0))
    assert err.value.field == "lengths[1]"
    with pytest.raises(InputError) as err:
        PagedLayout(16, (5,), "first-fit")
    assert err.value.field == "allocation"
    with pytest.raises(InputError) as err:
        ContiguousLayout(64).reserved_tokens([10, 65])
    assert err.value.field == "lengths[1]"
    with pytest.raises(InputError):
        kv_memory(load_model("llama3-8b"), 2, [5, 6], "fp16", PagedLayout(16, (5, 7)))


# ---- KV memory ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", list_models())
@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
def test_kv_memory_equals_the_formula(name, kv_dtype):
    m = load_model(name)
    lengths = [1, 1000, 8192]
    r = kv_memory(m, 3, lengths, kv_dtype, ContiguousLayout(8192))
    el = {"fp16": 2, "bf16": 2, "mxfp4": 0.5}.get(kv_dtype, 1)
    per_token = int(2 * m.layers * m.kv_heads * m.head_dim * el)
    per_token += 2 * m.layers * m.kv_heads * 4 if kv_dtype == "int8_token" else 0
    per_token += 2 * m.layers * m.kv_heads * m.head_dim // 32 if kv_dtype[:2] == "mx" else 0
    fixed = m.kv_scale_bytes_fixed(kv_dtype)
    assert r["bytes_per_token"] == per_token
    assert r["per_sequence_bytes"] == tuple(n * per_token for n in lengths)
    assert r["batch_bytes"] == sum(lengths) * per_token + fixed
    assert r["reserved_bytes"] == 3 * 8192 * per_token + fixed
    assert r["wasted_bytes"] == (3 * 8192 - sum(lengths)) * per_token


def test_llama3_70b_fp16_facts():
    m = load_model("llama3-70b")
    r = kv_memory(m, 1, [8192], "fp16")
    assert r["bytes_per_token"] == 320 * 1024
    assert r["batch_bytes"] == 8192 * 327_680 == 2_684_354_560  # 2.68 GB per 8K sequence
    assert m.weight_bytes("fp16") == pytest.approx(141e9, rel=0.002)


def test_what_the_blogs_48_7_GB_implies():
    """The blog quotes 48.7 GB of KV for Llama 3 70B at 8K. At the formula's 2.684 GB per
    8K-token fp16 sequence that is about 18 sequences, not one; the figure is only an
    example here, never a preset number."""
    per_seq = kv_memory(load_model("llama3-70b"), 1, [8192], "fp16")["batch_bytes"]
    implied = 48.7e9 / per_seq
    assert implied == pytest.approx(18.1, abs=0.05)
    assert round(implied) == 18


def test_int8_token_and_static_scales():
    m = load_model("llama3-8b")
    r = kv_memory(m, 2, [10, 20], "int8")
    assert r["kv_dtype"] == "int8_token"
    assert r["bytes_per_token"] == 65_536 + 2 * 32 * 8 * 4
    rc = kv_memory(m, 2, [10, 20], "int8_channel")
    assert rc["scale_bytes_fixed"] == 2 * 32 * 8 * 128 * 4
    assert rc["batch_bytes"] == 30 * 65_536 + rc["scale_bytes_fixed"]


def test_paged_fragmentation_figures():
    m = load_model("llama3-8b")  # 131072 B per token in fp16
    lengths = [1, 128, 129, 1000]
    layout = PagedLayout(128, tuple(lengths))
    r = kv_memory(m, 4, lengths, "fp16", layout)
    assert r["reserved_tokens"] == 128 * (1 + 1 + 2 + 8)
    assert r["wasted_bytes"] == (127 + 0 + 127 + 24) * 131_072
    assert r["bytes_per_block"] == 128 * 131_072 == layout.block_bytes(m)
    assert layout.block_bytes_per_layer(m) * m.layers == r["bytes_per_block"]
    f = fragmentation(m, lengths, max_len=4096, block_size=128)
    assert f["paged_wasted_bytes"] == r["wasted_bytes"]
    assert f["contiguous_wasted_bytes"] == (4 * 4096 - sum(lengths)) * 131_072
    assert f["paged_wasted_bytes"] <= f["paged_waste_bound_bytes"]
    assert f["bytes_saved_by_paging"] == f["contiguous_wasted_bytes"] - f["paged_wasted_bytes"]


@settings(max_examples=50, deadline=None)
@given(lengths=st.lists(st.integers(1, 5000), min_size=1, max_size=40),
       block=st.sampled_from([1, 16, 64, 128, 256]))
def test_paged_waste_below_one_block_per_sequence(lengths, block):
    r = kv_memory(load_model("qwen2.5-7b"), len(lengths), lengths, "bf16",
                  PagedLayout(block, tuple(lengths)))
    assert 0 <= r["reserved_tokens"] - r["tokens"] <= len(lengths) * (block - 1)


def test_batch_must_match_lengths():
    with pytest.raises(InputError) as err:
        kv_memory(load_model("llama3-8b"), 3, [5, 6], "fp16")
    assert err.value.field == "lengths"


# ---- what fits ----------------------------------------------------------------------------
def test_llama3_8b_fp16_at_8k_on_910B2():
    chip = hp.load("910B2")
    r = max_batch_that_fits(load_model("llama3-8b"), chip, 8192, "fp16", "fp16")
    assert r["hbm_bytes"] == 64 * 2 ** 30 and r["weights_fit"]
    assert r["kv_bytes_per_sequence"] == 8192 * 131_072 == 2 ** 30  # 1 GiB per sequence
    assert r["max_batch"] == (64 * 2 ** 30 - 16_000_000_000) // 2 ** 30 == 49
    int8 = max_batch_that_fits(load_model("llama3-8b"), chip, 8192, "int8", "fp16")
    assert int8["max_batch"] > r["max_batch"]
    less = max_batch_that_fits(load_model("llama3-8b"), chip, 8192, reserve_bytes=4 * 2 ** 30)
    assert less["max_batch"] == 45


def test_llama3_70b_fp16_weights_do_not_fit_one_910B2():
    r = max_batch_that_fits(load_model("llama3-70b"), hp.load("910B2"), 8192)
    assert not r["weights_fit"] and r["max_batch"] == 0
    assert r["weight_bytes"] > r["hbm_bytes"] and r["min_chips_for_weights"] == 3
    assert r["kv_bytes_per_sequence"] == 2_684_354_560


def test_block_size_rounds_the_sequence_up():
    r = max_batch_that_fits(load_model("llama3-8b"), hp.load("910B2"), 8000, block_size=128)
    assert r["kv_bytes_per_sequence"] == 8064 * 131_072


def test_max_batch_refusals():
    with pytest.raises(InputError) as err:
        max_batch_that_fits(load_model("llama3-8b"), hp.load("910B2"), 0)
    assert err.value.field == "context_len"
    with pytest.raises(InputError) as err:
        max_batch_that_fits(load_model("llama3-8b"), hp.load("910B2"), 8192, "fp8")
    assert err.value.field == "kv_dtype"

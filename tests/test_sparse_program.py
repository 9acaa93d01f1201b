"""Sparse attention on the emulator: the compression program (kernels/sparse/compress.py),
the per-step extras (kernels/sparse/select.py), attention over what a policy keeps, and
the memory / time / break-even model (explorer/core/sparse_step.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core import Scenario
from explorer.core.emulator.engine import run
from explorer.core.sparse_step import blog_claim, simulate_sparse
from hardware_presets.errors import InputError
from kernels.common.program import Kind, VClass
from kernels.decode import kernel as decode
from kernels.decode.params import DecodeParams, model_of, workload
from kernels.sparse import compress as kv_compress
from kernels.sparse import select as sparse_select
from kernels.sparse.policies import keep_count
from tests.engine_helpers import assert_twins, check_invariants

B2 = hp.load("910B2")
SMALL = {"model": "custom", "custom_layers": 2, "custom_q_heads": 8, "custom_kv_heads": 2,
         "custom_head_dim": 64, "custom_hidden": 512, "custom_params_B": 0.01,
         "batch": 5, "distribution": "uniform", "mean_len": 600, "max_len": 2048,
         "keep_ratio": 0.25, "sinks": 4, "window": 32, "page_size": 16}


def _build(seed=4, **kw):
    p = decode.check(B2, {**SMALL, **kw})
    return p, decode.build(B2, p, seed=seed), workload(p, np.random.default_rng(seed))[0]


def _bytes(prog, label) -> int:
    c = prog.cols
    return int(c["nbytes"][(c["kind"] == Kind.TRANSFER) &
                           (c["op"] == prog.op_names.index(label))].sum())


def _row(p) -> int:
    m = model_of(p)
    return m.kv_heads * m.head_dim * 2  # fp16, one token of every KV head, K or V


@pytest.mark.parametrize("policy", ["norm_high", "norm_low", "h2o", "streaming", "random"])
def test_attention_reads_exactly_the_kept_tokens(policy):
    p, prog, lengths = _build(sparse=policy, phases="attention")
    kept = [keep_count(int(n), 0.25) for n in lengths]
    assert list(kv_compress.kept_counts(DecodeParams.of(p), lengths)) == kept
    want = _row(p) * int(kv_compress.kept_counts(DecodeParams.of(p), lengths).sum())
    assert _bytes(prog, "CopyIn K") == _bytes(prog, "CopyIn V") == want


def test_quest_reads_its_pages_after_scoring_them():
    p, prog, lengths = _build(sparse="quest", phases="attention")
    kept = kv_compress.kept_counts(DecodeParams.of(p), lengths)
    pages = np.minimum(-(-lengths // 16), -(-kept // 16))
    assert _bytes(prog, "CopyIn K") == _row(p) * int(np.minimum(lengths, pages * 16).sum())
    meta = model_of(p).kv_heads * 2 * 64 * 2  # min and max keys per page, every KV head
    assert _bytes(prog, "CopyIn page min/max") == meta * int((-(-lengths // 16)).sum())
    sorts = prog.cols["vclass"] == VClass.SORT
    assert np.count_nonzero(sorts) == len(lengths) * model_of(p).kv_heads


def test_keep_ratio_one_reads_like_dense():
    p, prog, _ = _build(sparse="norm_low", keep_ratio=1.0, phases="attention")
    _, dense, _ = _build(phases="attention")
    assert run(prog, B2).makespan_ns == pytest.approx(run(dense, B2).makespan_ns)


@pytest.mark.parametrize("policy", ["norm_low", "h2o", "random"])
def test_compression_scores_sorts_gathers_and_writes_the_index(policy):
    p, prog, lengths = _build(sparse=policy, phases="compress")
    kept = int(kv_compress.kept_counts(DecodeParams.of(p), lengths).sum())
    m = model_of(p)
    row = m.head_dim * 2
    assert _bytes(prog, "Gather kept K,V rows") == _bytes(prog, "Store compact K,V") == \
        2 * kept * m.kv_heads * row
    assert _bytes(prog, "Store index") == 4 * kept * m.kv_heads
    sorts = np.count_nonzero(prog.cols["vclass"] == VClass.SORT)
    if policy == "random":
        assert sorts == 0 and "CopyIn K" not in prog.op_names
    else:
        assert sorts == len(lengths) * m.kv_heads
    if policy == "norm_low":  # every cached key is read once to score it
        assert _bytes(prog, "CopyIn K") == _row(p) * int(lengths.sum())
    if policy == "h2o":
        assert _bytes(prog, "CopyIn accumulated scores") == 4 * m.kv_heads * int(lengths.sum())


def test_sort_passes_are_sort32_then_four_way_merges():
    assert kv_compress.sort_passes(np.array([1, 32, 33, 128, 129, 512, 8192])).tolist() == \
        [1, 1, 2, 2, 3, 3, 5]


@pytest.mark.parametrize("policy", ["streaming", "quest", "none"])
def test_policies_without_compression_refuse_the_phase(policy):
    with pytest.raises(InputError) as exc:
        decode.check(B2, {**SMALL, "sparse": policy, "phases": "compress"})
    assert exc.value.field == "params.phases"


@pytest.mark.parametrize("kw, field", [({"keep_ratio": 0.01}, "keep_ratio"),
                                       ({"window": 4000}, "window")])
def test_budget_too_small_or_window_too_long_is_refused(kw, field):
    with pytest.raises(InputError) as exc:
        _build(sparse="norm_low", phases="attention", **kw)
    assert exc.value.field == field


@pytest.mark.parametrize("kw", [{"sparse": "h2o", "phases": "both"},
                                {"sparse": "quest", "phases": "attention"},
                                {"sparse": "norm_high", "phases": "compress"}])
def test_engines_agree_on_sparse_programs(kw):
    p = decode.check(B2, {**SMALL, "batch": 2, "mean_len": 200, "max_len": 512, "window": 8,
                          "keep_ratio": 0.5, **kw})
    prog = decode.build(B2, p, seed=1)
    jit, _ = assert_twins(prog, B2)
    check_invariants(prog, B2, jit)


def test_memory_time_and_break_even():
    scenario = Scenario.make("910B2", "decode", {**SMALL, "sparse": "norm_low"}, seed=4)
    step = simulate_sparse(scenario)
    layers = 2
    assert step.saving_ns == pytest.approx(step.dense.step_ns - step.sparse.step_ns)
    assert step.saving_ns > 0 and step.compress_ns > 0
    assert step.break_even_steps == pytest.approx(layers * step.compress_ns / step.saving_ns)
    assert step.amortised_step_ns == pytest.approx(step.sparse.step_ns + layers *
                                                   step.compress_ns / 64)
    lengths = step.dense.lengths
    kept = kv_compress.kept_counts(DecodeParams.of(step.sparse.result.params), lengths)
    m = step.dense.model
    assert step.bytes.dense == layers * m.kv_heads * int(lengths.sum()) * 2 * 64 * 2
    assert step.bytes.stored == layers * m.kv_heads * int(kept.sum()) * (2 * 64 * 2 + 4)


def test_streaming_never_compresses_and_quest_stores_more():
    stream = simulate_sparse(Scenario.make("910B2", "decode", {**SMALL, "sparse": "streaming"}))
    assert stream.compress is None and stream.break_even_steps == 0.0
    quest = simulate_sparse(Scenario.make("910B2", "decode", {**SMALL, "sparse": "quest"}))
    assert quest.bytes.stored > quest.bytes.dense > quest.bytes.read


def test_a_slower_sparse_step_never_breaks_even():
    scenario = Scenario.make("910B2", "decode", {**SMALL, "sparse": "norm_low",
                                                 "keep_ratio": 1.0})
    step = simulate_sparse(scenario)
    assert step.saving_ns <= 0 and math.isinf(step.break_even_steps)


def test_the_blogs_30_percent():
    claim = blog_claim()
    assert claim["kept_GB"] == pytest.approx(0.3 * 22.3)
    assert claim["blog_share_kept"] == pytest.approx(15.2 / 22.3)


def test_instruction_counts_match_the_programs():
    for kw in ({"sparse": "norm_low", "phases": "compress"}, {"sparse": "h2o", "phases": "both"},
               {"sparse": "quest", "phases": "attention"},
               {"sparse": "random", "phases": "compress"}):
        p, prog, lengths = _build(**kw)
        assert decode.instruction_count(B2, DecodeParams.of(p), lengths) == len(prog), kw
    dense = DecodeParams.of(decode.check(B2, SMALL))
    assert sparse_select.attention_tokens(dense, [5, 7]).tolist() == [5, 7]

"""The decode layer's program (kernels/decode*.py, kv_append.py): the bytes it moves follow
the formulas, every task runs once on the core its policy names, buffers and refusals
behave, the engines agree on it, and replicating one layer equals emulating many."""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core.emulator.engine import run
from hardware_presets.errors import InputError
from kernels.common.program import Kind, Level, Pipe
from kernels.common.scheduling import POLICIES, assign
from kernels.decode import attention as decode_attention
from kernels.decode import cube as decode_cube
from kernels.decode import kernel as decode
from kernels.decode import kv_append
from kernels.decode.params import DecodeParams, model_of, schedule, workload
from tests.engine_helpers import assert_twins, check_invariants

B2 = hp.load("910B2")
SMALL = {"model": "custom", "custom_layers": 2, "custom_q_heads": 8, "custom_kv_heads": 2,
         "custom_head_dim": 64, "custom_hidden": 512, "custom_params_B": 0.01,
         "batch": 6, "distribution": "uniform", "mean_len": 300, "max_len": 1024}


def _build(chip=B2, seed=3, **kw):
    p = decode.check(chip, {**SMALL, **kw})
    return p, decode.build(chip, p, seed=seed)


def _bytes(prog, label=None, src=None, dst=None) -> int:
    c = prog.cols
    sel = c["kind"] == Kind.TRANSFER
    if label is not None:
        sel &= c["op"] == prog.op_names.index(label)
    if src is not None:
        sel &= c["src"] == src
    if dst is not None:
        sel &= c["dst"] == dst
    return int(c["nbytes"][sel].sum())


def _cache_bytes(p, lengths) -> int:
    """K (or V) bytes of the whole cache of one layer: tokens x kv_heads x (d x element
    bytes + per-token scales)."""
    return kv_append.row_bytes(DecodeParams.of(p), model_of(p)) * int(np.sum(lengths))


@pytest.mark.parametrize("kv_dtype", ["fp16", "int8_token", "int8_head"])
def test_incremental_append_writes_one_row_per_sequence(kv_dtype):
    p, prog = _build(kv_dtype=kv_dtype, phases="append")
    lengths, _ = workload(p, np.random.default_rng(3))
    row = kv_append.row_bytes(DecodeParams.of(p), model_of(p))
    for label in ("Scatter K -> cache", "Scatter V -> cache"):
        assert _bytes(prog, label, dst=Level.GM) == row * p["batch"]
    assert _bytes(prog, dst=Level.GM) == 2 * row * p["batch"]  # nothing else is written
    m = model_of(p)
    assert _bytes(prog, src=Level.GM) == 2 * m.kv_heads * m.head_dim * 2 * p["batch"]
    t = kv_append.traffic(DecodeParams.of(p), m, lengths)
    assert (t["incremental_read"], t["incremental_write"]) == \
        (_bytes(prog, src=Level.GM), _bytes(prog, dst=Level.GM))


def test_concat_moves_the_whole_cache():
    p, prog = _build(append="concat", phases="append")
    lengths, _ = workload(p, np.random.default_rng(3))
    t = kv_append.traffic(DecodeParams.of(p), model_of(p), lengths)
    assert _bytes(prog, dst=Level.GM) == t["concat_write"] == 2 * _cache_bytes(p, lengths)
    assert _bytes(prog, src=Level.GM) == t["concat_read"]
    assert _bytes(prog, "CopyIn cache tile") == 2 * _cache_bytes(p, lengths - 1)


@pytest.mark.parametrize("impl", ["vector", "split_kv"])
@pytest.mark.parametrize("kv_dtype", ["fp16", "int8_token"])
def test_vector_attention_reads_the_cache_once(impl, kv_dtype):
    p, prog = _build(impl=impl, kv_dtype=kv_dtype, phases="attention")
    lengths, _ = workload(p, np.random.default_rng(3))
    assert _bytes(prog, "CopyIn K") == _bytes(prog, "CopyIn V") == _cache_bytes(p, lengths)


@pytest.mark.parametrize("kv_dtype", ["fp16", "int8_token"])
def test_cube_attention_reads_the_cache_once(kv_dtype):
    p, prog = _build(impl="cube_vector", kv_dtype=kv_dtype, phases="attention")
    lengths, _ = workload(p, np.random.default_rng(3))
    if kv_dtype == "fp16":
        assert _bytes(prog, "Load K -> L1") == _cache_bytes(p, lengths)
    else:  # the AIV reads int8 + scales, the AIC the fp16 copy in the workspace
        assert _bytes(prog, "CopyIn K (int8)") == _cache_bytes(p, lengths)
        m = model_of(p)
        assert _bytes(prog, "Load K -> L1") == int(np.sum(lengths)) * m.kv_heads * m.head_dim * 2
    m = model_of(p)
    mm = prog.cols["kind"] == Kind.MMAD
    assert set(prog.cols["m"][mm]) == {16}  # GQA group of 4 padded to the fractal
    assert int(prog.cols["n"][mm].max()) <= p["tile_tokens"] and m.gqa_group == 4


@pytest.mark.parametrize("policy", POLICIES)
def test_every_task_runs_once_on_its_policy_core(policy):
    p, _ = _build(policy=policy, phases="attention", distribution="lognormal")
    lengths, _ = workload(p, np.random.default_rng(3))
    m = model_of(p)
    tasks = decode_attention.tasks_for(B2, DecodeParams.of(p), m, lengths)
    kvh, hp = m.kv_heads, p["heads_per_pass"]
    pairs = sorted(zip(tasks.seq.tolist(), tasks.head0.tolist()))
    assert pairs == [(s, h) for s in range(p["batch"]) for h in range(0, kvh, hp)]
    tid = tasks.seq * -(-kvh // hp) + tasks.head0 // hp
    assert np.array_equal(tid, tasks.tid)
    cores = len(B2.vector_core_ids())
    costs = np.empty(len(tasks))
    costs[tid] = decode_attention.task_cycles(B2, DecodeParams.of(p), m, tasks.tokens,
                                              tasks.heads)
    expect = assign(costs, cores, keys=np.sort(tasks.seq),
                    **schedule(B2, p["policy"], p["inter_core_cost"], cores))
    assert np.array_equal(tasks.slot, expect[tid])


def test_static_is_the_blogs_contiguous_blocks():
    slots = assign(np.ones(10), 4, "static")  # seqs_per_block = ceil(10 / 4) = 3
    assert slots.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]
    assert assign(np.ones(10), 4, "round_robin").tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]


def test_dynamic_emits_serialised_atomics_and_balances():
    kw = {"phases": "attention", "distribution": "bimodal", "batch": 24, "mean_len": 200,
          "block_dim": 8}
    p, prog = _build(policy="dynamic", **kw)
    atomic = prog.op_names.index("Atomic fetch-add (task queue)")
    n_tasks = len(decode_attention.tasks_for(B2, DecodeParams.of(p), model_of(p),
                                             workload(p, np.random.default_rng(3))[0]))
    assert np.count_nonzero(prog.cols["op"] == atomic) == 2 * n_tasks
    static = run(_build(policy="static", **kw)[1], B2).makespan_ns
    assert run(prog, B2).makespan_ns < static


def test_split_kv_covers_every_token_once_and_combines():
    p, prog = _build(impl="split_kv", split_tokens=128, phases="attention", batch=2)
    lengths, _ = workload(p, np.random.default_rng(3))
    tasks = decode_attention.tasks_for(B2, DecodeParams.of(p), model_of(p), lengths)
    for s in range(p["batch"]):
        for h in np.unique(tasks.head0):
            sel = (tasks.seq == s) & (tasks.head0 == h)
            assert int(tasks.tokens[sel].sum()) == lengths[s]
    assert "Log-sum-exp combine" in prog.op_names
    assert np.count_nonzero(prog.cols["kind"] == Kind.BARRIER) == len(B2.vector_core_ids())


def test_split_kv_helps_a_small_batch_of_long_sequences():
    kw = {"batch": 1, "distribution": "equal", "mean_len": 8192, "max_len": 8192,
          "phases": "attention"}
    whole = run(_build(impl="vector", **kw)[1], B2).makespan_ns
    split = run(_build(impl="split_kv", **kw)[1], B2).makespan_ns
    assert split < whole / 4  # 2 tasks on 48 cores vs ~96 chunks


def test_double_buffering_hides_the_copies():
    kw = {"phases": "attention", "impl": "vector"}
    single = run(_build(buffer_num=1, **kw)[1], B2).makespan_ns
    double = run(_build(buffer_num=2, **kw)[1], B2).makespan_ns
    assert double < single


@pytest.mark.parametrize("impl, policy", [("vector", "static"), ("split_kv", "lpt"),
                                          ("cube_vector", "round_robin"),
                                          ("vector", "dynamic"), ("cube_vector", "dynamic")])
def test_engines_agree_and_invariants_hold(impl, policy):
    chip = hp.load("910B4")
    p, prog = _build(chip, impl=impl, policy=policy, batch=3, mean_len=100, max_len=256,
                     kv_dtype="int8_token" if impl == "cube_vector" else "fp16")
    jit, _ = assert_twins(prog, chip)
    check_invariants(prog, chip, jit)


def test_replicating_a_layer_equals_emulating_all_layers():
    """Layers are identical and start drained after a SyncAll, on their own regions."""
    kw = {"impl": "cube_vector", "kv_dtype": "fp16", "phases": "both"}
    p = decode.check(B2, {**SMALL, **kw})
    one = run(decode.build(B2, p, seed=5), B2)
    many_prog = decode.build_layers(B2, p, 5, 3)
    many = run(many_prog, B2)
    assert many.makespan_ns == pytest.approx(3 * one.makespan_ns + 2 * B2.sync_all_cycles *
                                             1000.0 / B2.clock_MHz, rel=1e-9)
    hits_one = np.count_nonzero(one.served == 2)
    assert np.count_nonzero(many.served == 2) == 3 * hits_one


def test_cube_vector_refused_on_coupled_chips():
    with pytest.raises(InputError) as exc:
        decode.check(hp.load("910"), {**SMALL, "impl": "cube_vector"})
    assert exc.value.field == "params.impl"


def test_tile_too_big_for_ub_names_the_largest_that_fits():
    with pytest.raises(InputError) as exc:
        decode.check(B2, {**SMALL, "custom_head_dim": 256, "custom_hidden": 2048,
                          "tile_tokens": 1024, "layout": "contiguous"})
    assert exc.value.field == "params.tile_tokens" and "at most" in str(exc.value)


def test_heads_per_pass_above_ub_is_refused():
    with pytest.raises(InputError) as exc:
        decode.check(B2, {**SMALL, "model": "llama3-70b", "heads_per_pass": 8})
    assert exc.value.field == "params.heads_per_pass"


def test_memory_overcommit_is_refused_with_the_batch_that_fits():
    kw = {"model": "llama3-8b", "batch": 512, "distribution": "equal", "mean_len": 8192,
          "max_len": 8192}
    with pytest.raises(InputError) as exc:
        _build(**kw)
    assert exc.value.field == "params.batch" and "at most" in str(exc.value)
    assert decode.check(B2, {**SMALL, **kw, "allow_overcommit": True})["allow_overcommit"]


def test_instruction_cap_is_checked_before_building(monkeypatch):
    monkeypatch.setenv("EXPLORER_MAX_INSTRUCTIONS", "100")
    with pytest.raises(InputError) as exc:
        _build()
    assert exc.value.field == "instructions"


def test_instruction_count_matches_the_program():
    for impl in ("vector", "split_kv", "cube_vector"):
        for append in ("incremental", "concat"):
            p, prog = _build(impl=impl, append=append, kv_dtype="int8_token")
            lengths, _ = workload(p, np.random.default_rng(3))
            count = decode.instruction_count(B2, DecodeParams.of(p), lengths)
            assert count == len(prog), (impl, append)


def test_cube_pipeline_exchanges_through_gm():
    p, prog = _build(impl="cube_vector", phases="attention")
    c = prog.cols
    fix = c["pipe"] == Pipe.FIX
    assert set(c["dst"][fix]) == {Level.GM}
    aic = set(B2.cube_core_ids())
    assert set(c["core"][c["kind"] == Kind.MMAD]) <= aic
    assert decode_cube.STAGES >= 17

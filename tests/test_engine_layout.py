"""Internal ids and region numbers are only a memory layout: the engines run the same
schedule, bit for bit, whatever order the instructions and regions are stored in. Ties are
broken by rank (lane order), which travels with each instruction; if either engine broke
them by where an instruction sits, or kept per-region state by position, a shuffled layout
would run differently."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hardware_presets
from explorer.core.emulator._jit.graph import lane_sorted
from explorer.core.emulator.engine import execute, prepare, run
from explorer.core.emulator.lowering import EngineInput
from kernels.common.program import N_PIPES, lane_order
from kernels.vector_add import kernel as vector_add
from tests.engine_helpers import build_program, program_specs

PER_INSTRUCTION = ("order", "rank", "lane", "dep_count", "issue_ns", "route", "nbytes",
                   "cluster", "barrier")


def shuffled(inp: EngineInput, seed: int) -> EngineInput:
    """``inp`` with its instructions and regions stored in a random order (new id =
    move[old id]); every id-valued array follows, every list keeps its element order."""
    rng = np.random.default_rng(seed)
    move = rng.permutation(inp.n).astype(np.int32)
    back = np.argsort(move)  # new id -> old id
    moved_region = rng.permutation(len(inp.region_bytes)).astype(np.int32)

    def renamed(values, new_names):
        """Each value's new name (-1 stays -1)."""
        out = np.full(len(values), -1, np.int32)
        out[values >= 0] = new_names[values[values >= 0]]
        return out

    def ids(values):
        return renamed(values, move)

    fields = {name: getattr(inp, name)[back] for name in PER_INSTRUCTION}
    counts = np.diff(inp.succ_ptr)[back]
    succ_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    succ_idx = np.concatenate([inp.succ_idx[inp.succ_ptr[old]:inp.succ_ptr[old + 1]]
                               for old in back] or [np.zeros(0, np.int32)])
    region_bytes = np.empty_like(inp.region_bytes)
    region_bytes[moved_region] = inp.region_bytes
    region = inp.region[back]
    return inp._replace(
        **fields, lane_next=ids(inp.lane_next[back]), lane_first=ids(inp.lane_first),
        succ_ptr=succ_ptr, succ_idx=ids(succ_idx), bar_members=ids(inp.bar_members),
        region=renamed(region, moved_region), region_bytes=region_bytes)


def assert_same_schedule(inp: EngineInput, engine: str, seed: int) -> None:
    expected, got = execute(inp, engine), execute(shuffled(inp, seed), engine)
    for name in ("start_ns", "end_ns", "issue_end_ns", "served", "segments"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), name)


@settings(max_examples=2 * settings.default.max_examples)
@given(program_specs(), st.integers(0, 2**31))
def test_a_shuffled_layout_runs_the_same_schedule(spec, seed):
    program, chip = build_program(spec)
    inp = prepare(program, chip)
    for engine in ("jit", "reference"):
        assert_same_schedule(inp, engine, seed)


@pytest.mark.parametrize("overrides", [{}, {"cluster_size": 2, "l2_MiB": 1}])
def test_a_shuffled_layout_runs_the_same_vector_add(overrides):
    # 48 cores start together: ties at equal times on every lane, L2 evictions, multicast
    chip = hardware_presets.load("910B2", **overrides)
    params = dict(n=100_000, block_dim=48, tile=1024, buffer_num=2, dtype="fp16")
    assert_same_schedule(prepare(vector_add.build(chip, params), chip), "jit", 7)


@given(st.integers(1, 4), st.integers(1, 60), st.booleans(),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(0, 40)),
                max_size=300))
def test_the_compiled_lane_sort_is_the_programs_lane_order(cores, span, sort_seq, rows):
    # lane order is defined once (kernels.common.program.lane_order: core, pipe, seq, id);
    # lowering sorts by a natural merge of each lane's ascending runs, which must agree,
    # ties of equal seq included
    core = np.array([r[0] % cores for r in rows], np.int16)
    pipe = np.array([r[1] for r in rows], np.int8)
    seq = np.array([r[2] % span for r in rows], np.int32)
    if sort_seq:
        seq = np.sort(seq)
    ranked, lane_ptr = lane_sorted(core, pipe, seq, N_PIPES, cores * N_PIPES)
    np.testing.assert_array_equal(ranked, lane_order({"core": core, "pipe": pipe, "seq": seq}))
    counts = np.bincount(core.astype(np.int64) * N_PIPES + pipe, minlength=cores * N_PIPES)
    np.testing.assert_array_equal(np.diff(lane_ptr), counts)


def test_execute_leaves_its_input():
    chip = hardware_presets.load("910B2")
    program = vector_add.build(chip, dict(n=20_000, block_dim=48, tile=256, dtype="fp16"))
    inp = prepare(program, chip)
    counts = inp.dep_count.copy()
    first, second = execute(inp), execute(inp)  # the second from the same input
    np.testing.assert_array_equal(inp.dep_count, counts)
    np.testing.assert_array_equal(first.end_ns, second.end_ns)
    assert counts.any()
    # run() lowers for itself, and its loop counts down that lowering's own counts
    np.testing.assert_array_equal(run(program, chip).end_ns, first.end_ns)

"""The Programs the Ascend C DSL records, timed on the emulator: the queue dependencies
worked out by hand on tiny kernels, double buffering faster than single, SyncAll as a
barrier group, the cube pipeline's chain of pipes, and the DSL's vector add against
kernels/vector_add's own program for the same shape."""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core.emulator.engine import run as emulate
from kernels.ascendc import KERNEL_TYPE_AIC_ONLY, launch
from kernels.common.program import Pipe
from kernels.vector_add.kernel import build as build_vector_add
from tests.test_ascendc_dsl import (
    MATMUL,
    MULTICORE_SUM,
    VECTOR_ADD,
    AddTiling,
    MatmulTiling,
    SumTiling,
    add_inputs,
    kernel,
)

CHIP = hp.load("910B2")

#: y = x + 1 in tiles: CopyIn (MTE2), Adds (V), CopyOut (MTE3), BUFFER_NUM buffers each
ADDS = """
def adds(x, y, tiling):
    xGm, yGm = GlobalTensor(half), GlobalTensor(half)
    xGm.SetGlobalBuffer(x)
    yGm.SetGlobalBuffer(y)
    tile = tiling.tileLength
    pipe = TPipe()
    inQ, outQ = TQue(TPosition.VECIN, BUFFER_NUM), TQue(TPosition.VECOUT, BUFFER_NUM)
    pipe.InitBuffer(inQ, BUFFER_NUM, tile * 2)
    pipe.InitBuffer(outQ, BUFFER_NUM, tile * 2)
    for i in range(xGm.GetSize() // tile):
        t = inQ.AllocTensor(half)
        DataCopy(t, xGm[i * tile], tile)
        inQ.EnQue(t)
        t = inQ.DeQue(half)
        r = outQ.AllocTensor(half)
        Adds(r, t, 1.0, tile)
        outQ.EnQue(r)
        inQ.FreeTensor(t)
        r = outQ.DeQue(half)
        DataCopy(yGm[i * tile], r, tile)
        outQ.FreeTensor(r)
"""


def deps_by_seq(program) -> dict[int, set[int]]:
    """For a one-core program: its dependencies, each instruction named by its program
    order (seq), so a test can state them by hand."""
    seq = program.cols["seq"]
    return {int(seq[i]): {int(seq[j]) for j in program.dep_idx[program.dep_ptr[i]:
                                                                program.dep_ptr[i + 1]]}
            for i in range(len(program))}


def adds_program(buffer_num: int, tiles: int = 2, tile: int = 1024):
    x = np.zeros(tiles * tile, np.float16)
    return launch(kernel(ADDS, "adds", BUFFER_NUM=buffer_num), CHIP, 1,
                  {"x": x, "y": np.zeros_like(x)}, AddTiling(0, tile)).program


def test_single_buffer_dependencies_by_hand():
    """seq 0 CopyIn0, 1 Adds0, 2 CopyOut0, 3 CopyIn1, 4 Adds1, 5 CopyOut1 with one buffer:
    Adds waits for its CopyIn (DeQue); CopyOut for its Adds (DeQue); CopyIn1 reuses the
    one VECIN buffer, so it waits for Adds0, the last reader before FreeTensor; Adds1
    reuses the one VECOUT buffer, so it also waits for CopyOut0."""
    assert deps_by_seq(adds_program(1)) == {0: set(), 1: {0}, 2: {1}, 3: {1}, 4: {2, 3},
                                            5: {4}}


def test_double_buffer_dependencies_by_hand():
    """With two buffers the second tile's CopyIn and Adds take fresh buffers: only the
    DeQue edges remain; the third tile reuses the first tile's buffers."""
    assert deps_by_seq(adds_program(2, tiles=3)) == {
        0: set(), 1: {0}, 2: {1}, 3: set(), 4: {3}, 5: {4}, 6: {1}, 7: {2, 6}, 8: {7}}


def test_pipes_and_labels():
    program = adds_program(1)
    pipes = dict(zip(program.cols["seq"].tolist(), program.cols["pipe"].tolist()))
    assert [Pipe(pipes[s]) for s in range(3)] == [Pipe.MTE2, Pipe.V, Pipe.MTE3]


def vector_add_run(block_dim: int, tile: int, tiles_per_core: int, buffer_num: int):
    n = block_dim * tile * tiles_per_core
    return launch(kernel(VECTOR_ADD, "add_custom", BUFFER_NUM=buffer_num), CHIP, block_dim,
                  add_inputs(n), AddTiling(n // block_dim, tile))


def test_double_buffering_is_faster_for_the_same_data():
    single = emulate(vector_add_run(8, 4096, 8, 1).program, CHIP).makespan_ns
    double = emulate(vector_add_run(8, 4096, 8, 2).program, CHIP).makespan_ns
    assert double < 0.9 * single, (single, double)


@pytest.mark.parametrize("buffer_num", [1, 2])
def test_dsl_vector_add_times_as_kernels_vector_add(buffer_num):
    """The same shape through the DSL and through kernels/vector_add's vectorised build:
    the same instructions, dependencies and GM regions, so the emulated times agree
    (measured identical on 910B2: 4391.3 ns single, 3119.4 ns double buffered for
    48 cores x 16 tiles of 1024 fp16; the stated tolerance is 1%)."""
    block_dim, tile, per_core = 48, 1024, 16
    dsl = vector_add_run(block_dim, tile, per_core, buffer_num).program
    native = build_vector_add(CHIP, {"n": block_dim * tile * per_core, "block_dim": block_dim,
                                     "tile": tile, "buffer_num": buffer_num, "dtype": "fp16"})
    assert len(dsl) == len(native) and len(dsl.dep_idx) == len(native.dep_idx)
    ours, theirs = emulate(dsl, CHIP).makespan_ns, emulate(native, CHIP).makespan_ns
    assert ours == pytest.approx(theirs, rel=0.01), (ours, theirs)


def test_syncall_is_one_barrier_group_across_the_blocks():
    blocks, n = 4, 256
    args = {"x": np.ones(blocks * n, np.float32), "work": np.zeros(8 * blocks, np.float32),
            "out": np.zeros(8, np.float32)}
    run = launch(kernel(MULTICORE_SUM, "sum_custom"), CHIP, blocks, args, SumTiling(n))
    program = run.program
    barrier = program.cols["barrier"]
    assert sorted(program.cols["core"][barrier >= 0]) == sorted(CHIP.vector_core_ids()[:4])
    assert program.barrier_size.tolist() == [blocks]
    schedule = emulate(program, CHIP)
    sync_end = schedule.end_ns[barrier >= 0].min()
    # block 0's read of the partial sums starts after every block's write has landed
    writes = np.flatnonzero((program.cols["pipe"] == Pipe.MTE3) & (barrier < 0))
    first_writes = writes[run.lines[writes] == run.lines[writes].min()]
    reads = np.flatnonzero((program.cols["pipe"] == Pipe.MTE2) &
                           (run.blocks == 0))
    assert schedule.end_ns[first_writes].max() <= sync_end <= schedule.start_ns[reads].max()
    assert float(run.outputs["out"][0]) == blocks * n


def test_the_cube_pipeline_chains_its_pipes():
    M = N = K = 64
    rng = np.random.default_rng(3)
    args = {"a": rng.uniform(-1, 1, M * K).astype(np.float16),
            "b": rng.uniform(-1, 1, K * N).astype(np.float16),
            "c": np.zeros(M * N, np.float16)}
    run = launch(kernel(MATMUL, "matmul_custom"), CHIP, 1, args, MatmulTiling(M, N, K),
                 kernel_type=KERNEL_TYPE_AIC_ONLY)
    program = run.program
    label = {s: program.op_names[o] for s, o in zip(program.cols["seq"].tolist(),
                                                    program.cols["op"].tolist())}
    assert [label[s] for s in range(len(program))] == [
        "DataCopy GM->L1", "DataCopy GM->L1", "LoadData L1->L0A", "LoadData L1->L0B",
        "Mmad", "Fixpipe L0C->GM"]
    assert deps_by_seq(program) == {0: set(), 1: set(), 2: {0}, 3: {1}, 4: {2, 3}, 5: {4}}
    schedule = emulate(program, CHIP)
    order = np.argsort(program.cols["seq"])
    start, end = schedule.start_ns[order], schedule.end_ns[order]
    assert end[0] <= start[2] and end[2] <= start[4] and end[4] <= start[5]
    assert program.cols["m"][order][4] == 64 and program.cols["dtype"][order][4] == 0  # fp16

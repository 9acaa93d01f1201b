"""GEMM timelines worked out by hand on the tiny chip (both engines), split-K by hand and
its workspace reduction, the twin engines, the coupled output path, the big default.

Tiny chip numbers: see the docstring of tests/test_gemm_build.py."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core.emulator.engine import run
from explorer.core.emulator.schedule import SERVED_HBM, SERVED_L2
from explorer.core.metrics import compute_metrics
from explorer.core.tables import per_core_table, timeline_table
from kernels.common.program import Level
from kernels.gemm import kernel as gemm
from tests.engine_helpers import ENGINES, assert_twins, check_invariants, tiny
from tests.gemm_helpers import bytes_of, counts, ids_of, mmad_flops, op_of
from tests.test_gemm_build import B2, C910, SMALL, build, expected_counts, spans

# ---- hand-worked timelines on the tiny chip ------------------------------------------------
#: These timelines keep one copy in flight per DMA pipe (each copy pays its latency in
#: series), so they test the kernel's dependencies; test_one_tile_with_dma_queues shows
#: the tiny chip's own queues (4 copies in flight) at work.
ONE_AT_A_TIME = dict(gm_read_max_outstanding=1, gm_write_max_outstanding=1,
                     fixpipe_gm_max_outstanding=1)
ONE_TILE = dict(M=16, N=16, K=64, base_m=16, base_n=16, base_k=32, depth_k=2, block_dim=1)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("db_l0", [True, False])
def test_one_tile_by_hand(engine, db_l0):
    """One 16 x 16 tile, K = 64 in two base_k = 32 steps, both in one L1 chunk (depth 2).

    MTE2: Load A (16 x 64 fp16 = 2048 B) from HBM: 10 + 2048 / 32 = 74 -> [0, 74].
          Load B (64 x 16 fp16 = 2048 B) after it on the same pipe: [74, 148].
    MTE1: LoadData A step 0 (16 x 32 x 2 = 1024 B): 10 + 1024 / 256 = 14, waits for the
          chunk of A: [74, 88]. LoadData B step 0 (1024 B): 10 + 1024 / 128 = 18, waits
          for B: [148, 166].
    M:    Mmad step 0: 10 + 1 x 1 x 2 fractals = 12: [166, 178].
    With two L0A/L0B buffers (db_l0) the next slice moves while the cube works:
          LoadData A step 1 [166, 180] runs during Mmad step 0 [166, 178];
          LoadData B step 1 [180, 198]; Mmad step 1 [198, 210].
    With one buffer, step 1's slices wait for Mmad step 0 to free L0A/L0B:
          LoadData A step 1 [178, 192]; LoadData B step 1 [192, 210]; Mmad [210, 222].
    FIX:  Fixpipe C (16 x 16 fp16 = 512 B, alone on HBM): 20 + 512 / 64 = 28 after the
          last Mmad: [210, 238] or [222, 250].
    """
    chip = tiny(**ONE_AT_A_TIME)
    prog = build(chip, **ONE_TILE, db_l0=db_l0)
    s = run(prog, chip, engine=engine)
    assert spans(prog, s, "Load A -> L1") == [(0, 74)]
    assert spans(prog, s, "Load B -> L1") == [(74, 148)]
    if db_l0:
        assert spans(prog, s, "LoadData A -> L0A") == [(74, 88), (166, 180)]
        assert spans(prog, s, "LoadData B -> L0B") == [(148, 166), (180, 198)]
        assert spans(prog, s, "Mmad") == [(166, 178), (198, 210)]
        assert spans(prog, s, "Fixpipe C") == [(210, 238)]
        # overlap: MTE1 of step 1 starts before the MMAD of step 0 ends
        (mte1_start, _), (_, mmad_end) = spans(prog, s, "LoadData A -> L0A")[1], \
            spans(prog, s, "Mmad")[0]
        assert mte1_start < mmad_end
    else:
        assert spans(prog, s, "LoadData A -> L0A") == [(74, 88), (178, 192)]
        assert spans(prog, s, "LoadData B -> L0B") == [(148, 166), (192, 210)]
        assert spans(prog, s, "Mmad") == [(166, 178), (210, 222)]
        assert spans(prog, s, "Fixpipe C") == [(222, 250)]
    assert s.served[ids_of(prog, "Load A -> L1")].tolist() == [SERVED_HBM]
    assert s.makespan_ns == (238 if db_l0 else 250)


@pytest.mark.parametrize("engine", ENGINES)
def test_one_tile_with_dma_queues(engine):
    """ONE_TILE on the tiny chip's own queues (issue cost 0, 4 copies in flight): Load B
    issues at 0 beside Load A, its latency (10) overlaps A's streaming and its bytes stream
    after A's on MTE2: [0, 74 + 2048 / 32 = 138]. Everything after B moves 10 ns earlier
    than with one copy at a time: LoadData B step 0 [138, 156], Mmad step 0 [156, 168]."""
    chip = tiny()
    prog = build(chip, **ONE_TILE, db_l0=True)
    s = run(prog, chip, engine=engine)
    assert spans(prog, s, "Load A -> L1") == [(0, 74)]
    assert spans(prog, s, "Load B -> L1") == [(0, 138)]
    assert spans(prog, s, "LoadData B -> L0B")[0] == (138, 156)
    assert spans(prog, s, "Mmad")[0] == (156, 168)


@pytest.mark.parametrize("engine", ENGINES)
def test_two_tiles_by_hand(engine):
    """Two 16 x 16 tiles side by side (N = 32) on one core, row-major; each as above.

    Tile 0 runs exactly as in test_one_tile_by_hand (db_l0): Loads [0, 74] and [74, 148],
    LoadData A [74, 88], [166, 180]; LoadData B [148, 166], [180, 198]; Mmad [166, 178],
    [198, 210].
    Tile 1 reads the same A chunk, now resident in L2: 10 + 2048 / 64 = 42 -> [148, 190]
    (the second L1 buffer is free: no wait). Its B chunk is new: HBM from 190, latency to
    200, then 2048 B at 32 B/ns -> [190, 264].
    Fixpipe of tile 0 from 210: 20 fixed, then its 512 B flow at 230 while Load B flows
    at 32 B/ns; HBM (64 B/ns) is shared max-min fairly, 32 B/ns each: 512 / 32 = 16 ->
    [210, 246] (not 28 ns as alone).
    LoadData A tile 1 step 0: MTE1 free at 198, its chunk is in (190), its L0A buffer was
    freed by Mmad tile 0 step 0 (178): [198, 212]. LoadData B tile 1 step 0 waits for
    Load B: [264, 282]. Mmad tile 1 step 0 needs both and L0C (single buffer, freed by
    the Fixpipe at 246): [282, 294]. LoadData A step 1 [282, 296], B [296, 314], Mmad
    [314, 326], Fixpipe C of tile 1 alone: [326, 354].
    """
    chip = tiny(**ONE_AT_A_TIME)
    prog = build(chip, **dict(ONE_TILE, N=32), policy="row_major")
    s = run(prog, chip, engine=engine)
    assert spans(prog, s, "Load A -> L1") == [(0, 74), (148, 190)]
    assert spans(prog, s, "Load B -> L1") == [(74, 148), (190, 264)]
    assert s.served[ids_of(prog, "Load A -> L1")].tolist() == [SERVED_HBM, SERVED_L2]
    assert s.served[ids_of(prog, "Load B -> L1")].tolist() == [SERVED_HBM, SERVED_HBM]
    assert spans(prog, s, "LoadData A -> L0A") == [(74, 88), (166, 180), (198, 212),
                                                   (282, 296)]
    assert spans(prog, s, "LoadData B -> L0B") == [(148, 166), (180, 198), (264, 282),
                                                   (296, 314)]
    assert spans(prog, s, "Mmad") == [(166, 178), (198, 210), (282, 294), (314, 326)]
    assert spans(prog, s, "Fixpipe C") == [(210, 246), (326, 354)]
    assert s.makespan_ns == 354


@pytest.mark.parametrize("engine", ENGINES)
def test_four_tiles_memory_bound_by_hand(engine):
    """M = N = 32, K = 64 in 16 x 16 x 32 tiles, depth_k 1, one core, row-major: 4 tiles of
    2 K steps, each step its own L1 chunk (A 16 x 32 fp16 = 1024 B, B 1024 B).

    A load from HBM takes 10 + 1024 / 32 = 42 ns, from L2 10 + 1024 / 64 = 26 ns, while
    a step's MTE1 + Mmad is only 14 + 18 + 12 ns: MTE2 is the bottleneck and never idles
    (each L1 buffer is freed long before it is needed again). First touches come from HBM,
    re-reads from L2, in tile order (0,0) (0,16) (16,0) (16,16):
      A: x0k0 H [0, 42]   x0k1 H [84, 126]   x0k0 L2 [168, 194] x0k1 L2 [236, 262]
         x1k0 H [304, 346] x1k1 H [372, 414] x1k0 L2 [440, 466] x1k1 L2 [492, 518]
      B: y0k0 H [42, 84]  y0k1 H [126, 168]  y1k0 H [194, 236]  y1k1 H [262, 304]
         y0k0 L2 [346, 372] y0k1 L2 [414, 440] y1k0 L2 [466, 492] y1k1 L2 [518, 544]
    Fixpipes (512 B): tile 0 after its Mmad [186, 198], while Load B y1k0 flows from HBM
    at 32 B/ns: both get 32 B/ns, 20 + 512 / 32 = 36 -> [198, 234]; tiles 1 and 2 run
    while MTE2 reads from L2, alone on HBM: 28 ns -> [334, 362], [470, 498]. The last
    step: LoadData B [544, 562], Mmad [562, 574], Fixpipe [574, 602].
    """
    chip = tiny(**ONE_AT_A_TIME)
    prog = build(chip, M=32, N=32, K=64, base_m=16, base_n=16, base_k=32, depth_k=1,
                 block_dim=1, policy="row_major")
    s = run(prog, chip, engine=engine)
    H, L = SERVED_HBM, SERVED_L2
    assert spans(prog, s, "Load A -> L1") == [(0, 42), (84, 126), (168, 194), (236, 262),
                                              (304, 346), (372, 414), (440, 466), (492, 518)]
    assert spans(prog, s, "Load B -> L1") == [(42, 84), (126, 168), (194, 236), (262, 304),
                                              (346, 372), (414, 440), (466, 492), (518, 544)]
    assert s.served[ids_of(prog, "Load A -> L1")].tolist() == [H, H, L, L, H, H, L, L]
    assert s.served[ids_of(prog, "Load B -> L1")].tolist() == [H, H, H, H, L, L, L, L]
    assert spans(prog, s, "Fixpipe C") == [(198, 234), (334, 362), (470, 498), (574, 602)]
    assert spans(prog, s, "LoadData B -> L0B")[-1] == (544, 562)
    assert spans(prog, s, "Mmad")[-1] == (562, 574)
    assert s.makespan_ns == 602


# ---- split-K -------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ENGINES)
def test_atomic_split_k_by_hand(engine):
    """One 16 x 16 tile, K = 64 split in two (grid_z = 2) on the two AICs, atomic adds.

    Each core: Load A (16 x 32 x 2 = 1024 B) [0, 42] (both cores on HBM at 32 B/ns each,
    64 B/ns in all), Load B [42, 84]; LoadData A [42, 56], B [84, 102]; Mmad [102, 114].
    Fixpipe of z = 0: [114, 142] (20 + 512 / 64). The add of z = 1 into the same C tile
    waits for it: [142, 170]."""
    chip = tiny(**ONE_AT_A_TIME)
    prog = build(chip, **dict(ONE_TILE, depth_k=1, block_dim=2, grid_z=2),
                 split_k_mode="atomic")
    s = run(prog, chip, engine=engine)
    fix = ids_of(prog, "Fixpipe C")
    assert prog.cols["core"][fix].tolist() == [0, 1]
    assert spans(prog, s, "Mmad") == [(102, 114), (102, 114)]
    assert spans(prog, s, "Fixpipe C") == [(114, 142), (142, 170)]
    assert fix[0] in prog.dep_idx[prog.dep_ptr[fix[1]]:prog.dep_ptr[fix[1] + 1]]


def test_atomic_partials_of_each_tile_are_serialised():
    chip = tiny(**ONE_AT_A_TIME)
    p = gemm.check(chip, dict(M=64, N=48, K=512, base_m=32, base_n=16, base_k=32,
                              depth_k=2, grid_z=4, split_k_mode="atomic",
                              dtype_out="fp32", policy="swizzle"))
    prog = build(chip, **p)
    s = run(prog, chip)
    pl = gemm.plan(gemm.GemmParams.of(p))
    fix = ids_of(prog, "Fixpipe C")  # one per base tile, in plan order
    t = pl.tiles
    assert len(fix) == len(t["r0"])
    for r0, c0 in set(zip(t["r0"].tolist(), t["c0"].tolist())):
        mine = np.flatnonzero((t["r0"] == r0) & (t["c0"] == c0))
        by_z = fix[mine[np.argsort(t["z"][mine])]]
        assert len(by_z) == 4
        # partial z starts after partial z - 1 has ended
        assert (s.start_ns[by_z[1:]] >= s.end_ns[by_z[:-1]]).all()
    check_invariants(prog, chip, s)


def test_workspace_split_k_syncs_then_reduces_on_vector_cores_from_l2():
    chip = tiny(**ONE_AT_A_TIME)
    p = gemm.check(chip, dict(M=64, N=64, K=256, base_m=32, base_n=32, base_k=32,
                              depth_k=2, grid_z=2))
    prog = build(chip, **p)
    s = run(prog, chip)
    c = prog.cols
    sync = ids_of(prog, "SyncAll")
    # all 2 AICs and the 4 AIVs (4 C tiles, one slice each) meet at one SyncAll
    assert sorted(c["core"][sync].tolist()) == [0, 1, 2, 3, 4, 5]
    assert len(set(c["barrier"][sync].tolist())) == 1
    partials = ids_of(prog, "Fixpipe -> workspace")
    reads = np.concatenate([ids_of(prog, f"CopyIn partial z={z}") for z in range(2)])
    reduction = np.flatnonzero(np.isin(op_of(prog), ["Add partials", "Cast -> fp16"]))
    assert set(c["core"][reads].tolist()) | set(c["core"][reduction].tolist()) <= \
        set(chip.vector_core_ids())
    assert (c["src"][reads] == Level.GM).all() and (c["dst"][reads] == Level.UB).all()
    # every partial is written before the barrier releases; the reduction comes after
    assert s.end_ns[partials].max() <= s.start_ns[sync].max()
    assert s.start_ns[reads].min() >= s.end_ns[sync].max()
    # the partials were just written (and left resident): the reduction reads hit L2
    assert (s.served[reads] == SERVED_L2).all()
    # each read is of the region its partial was written to
    assert set(c["region"][reads].tolist()) == set(c["region"][partials].tolist())
    check_invariants(prog, chip, s)


# ---- twins ---------------------------------------------------------------------------------
TWINS = {
    "dense": (tiny(), dict(M=96, N=80, K=160, base_m=32, base_n=32, base_k=32)),
    "workspace": (tiny(), dict(M=64, N=48, K=192, base_m=32, base_n=16, base_k=32,
                               grid_z=3, bias=True)),
    "atomic": (tiny(), dict(M=48, N=64, K=128, base_m=16, base_n=32, base_k=32, grid_z=2,
                            split_k_mode="atomic", dtype_out="fp32", db_l0=False)),
    "cluster": (tiny(cluster_size=2), dict(M=64, N=128, K=128, base_m=32, base_n=32,
                                           base_k=32, policy="cluster", group=2)),
    "4:2": (tiny(), dict(M=32, N=64, K=256, dtype_in="int8", dtype_out="int32",
                         sparsity="4:2", base_m=32, base_n=32, base_k=64, depth_k=1)),
    "910": (C910, dict(M=64, N=64, K=128, base_m=32, base_n=32, base_k=32, block_dim=3,
                       grid_z=2)),
    "910B2": (B2, dict(M=256, N=256, K=256, base_m=64, base_n=64)),
}


@pytest.mark.parametrize("case", TWINS)
def test_engines_agree(case):
    chip, params = TWINS[case]
    prog = build(chip, **params)
    jit, _ = assert_twins(prog, chip)
    check_invariants(prog, chip, jit)


# ---- the big default -----------------------------------------------------------------------
def test_default_4096_cubed_fp16_on_910b2_lands_near_the_cube_peak():
    chip = B2
    prog = gemm.build(chip, {})
    s = run(prog, chip)
    timeline = timeline_table(prog, s, chip)
    per_core = per_core_table(timeline, chip, s.makespan_ns)
    flops = 2 * 4096 ** 3
    assert mmad_flops(prog) == flops
    m = compute_metrics(timeline, per_core, chip, float(prog.flops().sum()))
    peak = chip.peak_tflops("fp16")
    assert 0.5 * peak < m["achieved_tflops"] < peak
    assert 0.5 < m["aic_cube_ratio"] <= 1.0
    assert m["l2_hit_rate"] > 0.5  # A and B panels are re-read by many tiles


def test_coupled_workspace_split_k_labels_the_partials():
    """910 workspace split-K: partials go out as "CopyOut -> workspace", C as "CopyOut C"."""
    p = gemm.check(C910, dict(SMALL, block_dim=4, grid_z=2))
    prog = build(C910, **p)
    assert counts(prog) == expected_counts(p, C910)
    assert bytes_of(prog, "CopyOut -> workspace") == p["M"] * p["N"] * 4 * 2

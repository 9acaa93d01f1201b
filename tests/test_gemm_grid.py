"""The GEMM's 3-D task grid (kernels/gemm/grid.py) and the plan built on it (gemm.plan).

Launches are 1-D: task i of the policy's walk runs on core slot i % block_dim in wave
i // block_dim. These tests state each policy's walk independently (as nested loops, from
the module's docstring) and check, for random grids, that every task and every element of
C is covered exactly once and that K is split and stepped as the tiling says.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hardware_presets
from explorer.core.emulator.engine import run
from kernels.gemm import kernel as gemm
from kernels.gemm.grid import BALANCES, POLICIES, task_grid
from tests.gemm_helpers import ceil_div

CHIP = hardware_presets.load("910B2")  # 24 cube cores; every tile drawn below fits it


def walk(X: int, Y: int, policy: str, group: int) -> list[tuple[int, int]]:
    """The (x, y) panels in the order each policy promises, as plain loops."""
    if policy == "row_major":  # x outer, y inner
        return [(x, y) for x in range(X) for y in range(Y)]
    if policy == "col_major":  # y outer, x inner
        return [(x, y) for y in range(Y) for x in range(X)]
    if policy == "swizzle":  # groups of `group` row panels, each walked column by column
        return [(x, y) for g in range(0, X, group) for y in range(Y)
                for x in range(g, min(X, g + group))]
    # cluster: blocks of `group` columns, within a block x-major
    return [(x, y) for g in range(0, Y, group) for x in range(X)
            for y in range(g, min(Y, g + group))]


grids = st.tuples(st.integers(1, 12), st.integers(1, 12), st.integers(1, 5),
                  st.integers(1, 40), st.sampled_from(POLICIES), st.integers(1, 8))


# ---- task_grid -----------------------------------------------------------------------------
@given(grids)
def test_every_task_once_in_the_policys_order(args):
    X, Y, Z, block_dim, policy, group = args
    g = task_grid(X, Y, Z, block_dim, policy, group)
    tasks = list(zip(g.x.tolist(), g.y.tolist(), g.z.tolist()))
    assert len(tasks) == X * Y * Z
    assert set(tasks) == {(x, y, z) for x in range(X) for y in range(Y) for z in range(Z)}
    # the walk over panels, each panel's Z split-K partials adjacent and in z order
    assert tasks == [(x, y, z) for x, y in walk(X, Y, policy, group) for z in range(Z)]
    assert g.shape == (X, Y, Z) and g.block_dim == block_dim


@given(grids)
def test_slots_waves_and_tail_are_the_1d_launch(args):
    X, Y, Z, block_dim, policy, group = args
    g = task_grid(X, Y, Z, block_dim, policy, group)
    i = np.arange(X * Y * Z)
    np.testing.assert_array_equal(g.slot, i % block_dim)  # GetBlockIdx()
    np.testing.assert_array_equal(g.wave, i // block_dim)  # t += GetBlockNum()
    assert g.waves == ceil_div(X * Y * Z, block_dim)
    assert g.tail_tasks == (X * Y * Z) % block_dim
    last = np.count_nonzero(g.wave == g.waves - 1)
    assert last == (g.tail_tasks or block_dim)  # the last wave holds the tail (or is full)
    assert g.slot.max() < block_dim


@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 4), st.integers(1, 40),
       st.integers(0, 6))
def test_swizzle_with_a_group_of_all_rows_is_col_major(X, Y, Z, block_dim, extra):
    swz = task_grid(X, Y, Z, block_dim, "swizzle", X + extra)
    col = task_grid(X, Y, Z, block_dim, "col_major", 1)
    for a in ("x", "y", "z", "slot", "wave"):
        np.testing.assert_array_equal(getattr(swz, a), getattr(col, a))


@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 40))
def test_group_of_one(X, Y, block_dim):
    """Groups of one row panel walk like row_major; blocks of one column like col_major."""
    for policy, like in (("swizzle", "row_major"), ("cluster", "col_major")):
        a = task_grid(X, Y, 1, block_dim, policy, 1)
        b = task_grid(X, Y, 1, block_dim, like, 1)
        np.testing.assert_array_equal(a.x, b.x)
        np.testing.assert_array_equal(a.y, b.y)


def test_small_walks_by_hand():
    """3 x 4 panels, 2 cores: the four walks written out."""
    def xy(policy, group=2):
        g = task_grid(3, 4, 1, 2, policy, group)
        return list(zip(g.x.tolist(), g.y.tolist()))
    assert xy("row_major") == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (1, 3),
                               (2, 0), (2, 1), (2, 2), (2, 3)]
    assert xy("col_major") == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2), (1, 2),
                               (2, 2), (0, 3), (1, 3), (2, 3)]
    assert xy("swizzle") == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3),
                             (2, 0), (2, 1), (2, 2), (2, 3)]
    assert xy("cluster") == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (0, 2), (0, 3),
                             (1, 2), (1, 3), (2, 2), (2, 3)]
    g = task_grid(3, 4, 1, 5, "row_major", 1)
    assert (g.waves, g.tail_tasks) == (3, 2)  # 12 tasks on 5 cores: 5 + 5 + 2


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="policy"):
        task_grid(2, 2, 1, 2, "diagonal", 1)


# ---- gemm.plan: tiles and K steps ----------------------------------------------------------
@st.composite
def gemm_params(draw) -> dict:
    """Random shapes, base tiles (all fitting 910B2's buffers), grid sizes (0 = auto) and
    a split-K factor, validated by gemm.check."""
    M, N, K = draw(st.integers(1, 300)), draw(st.integers(1, 300)), draw(st.integers(1, 1000))
    bm, bn, bk = (16 * draw(st.integers(1, 8)) for _ in range(3))
    params = dict(M=M, N=N, K=K, base_m=bm, base_n=bn, base_k=bk,
                  depth_k=draw(st.integers(1, 4)),
                  grid_x=draw(st.integers(0, ceil_div(M, bm))),
                  grid_y=draw(st.integers(0, ceil_div(N, bn))),
                  grid_z=draw(st.integers(1, min(8, ceil_div(K, bk)))),
                  block_dim=draw(st.integers(1, 24)), policy=draw(st.sampled_from(POLICIES)),
                  group=draw(st.integers(1, 6)))
    return gemm.check(CHIP, params)


@given(gemm_params())
def test_plan_covers_every_element_of_c_once_per_split(p):
    pl = gemm.plan(gemm.GemmParams.of(p))
    t = pl.tiles
    X, Y, Z = pl.grid.shape
    # grid sizes: auto is one task per base tile, a given size is an upper bound
    assert X == ceil_div(p["M"], pl.single[0]) and Y == ceil_div(p["N"], pl.single[1])
    assert X == (p["grid_x"] or ceil_div(p["M"], p["base_m"])) or X < p["grid_x"]
    assert Y == (p["grid_y"] or ceil_div(p["N"], p["base_n"])) or Y < p["grid_y"]
    assert pl.single[0] % p["base_m"] == 0 and pl.single[1] % p["base_n"] == 0
    assert 1 <= Z <= p["grid_z"] and pl.k_per_z % p["base_k"] == 0
    # base tiles are aligned, inside C, full except at the edges
    assert (t["r0"] % p["base_m"] == 0).all() and (t["c0"] % p["base_n"] == 0).all()
    np.testing.assert_array_equal(t["rows"], np.minimum(p["base_m"], p["M"] - t["r0"]))
    np.testing.assert_array_equal(t["cols"], np.minimum(p["base_n"], p["N"] - t["c0"]))
    assert (t["rows"] > 0).all() and (t["cols"] > 0).all()
    # each tile belongs to its task: inside the task's panel, same z and core slot
    g = pl.grid
    task = t["task"]
    assert (g.x[task] * pl.single[0] <= t["r0"]).all()
    assert (t["r0"] < (g.x[task] + 1) * pl.single[0]).all()
    assert (g.y[task] * pl.single[1] <= t["c0"]).all()
    assert (t["c0"] < (g.y[task] + 1) * pl.single[1]).all()
    np.testing.assert_array_equal(t["z"], g.z[task])
    np.testing.assert_array_equal(t["slot"], g.slot[task])
    assert set(task.tolist()) == set(range(len(g.x)))  # no task is empty
    # per core, tasks run wave by wave (the program order of the core)
    key = t["slot"].astype(np.int64) * (g.waves + 1) + g.wave[task]
    assert (np.diff(key) >= 0).all()
    # every element of C exactly once per split
    for z in range(Z):
        cover = np.zeros((p["M"], p["N"]), np.int32)
        for r0, c0, r, c in zip(*(t[k][t["z"] == z] for k in ("r0", "c0", "rows", "cols"))):
            cover[r0:r0 + r, c0:c0 + c] += 1
        assert (cover == 1).all(), f"split {z}: elements covered {np.unique(cover)} times"


@given(gemm_params())
def test_plan_k_splits_partition_k(p):
    pl = gemm.plan(gemm.GemmParams.of(p))
    t = pl.tiles
    Z = pl.grid.shape[2]
    assert Z == ceil_div(p["K"], pl.k_per_z)
    np.testing.assert_array_equal(t["k_lo"], t["z"] * pl.k_per_z)
    # per C tile: the Z splits, in z order, tile [0, K) without gaps or overlaps
    key = t["r0"] * (p["N"] + 1) + t["c0"]
    order = np.lexsort((t["z"], key))
    k_lo, k_hi, z = t["k_lo"][order], t["k_hi"][order], t["z"][order]
    per_tile = np.split(np.arange(len(order)), np.flatnonzero(np.diff(key[order])) + 1)
    assert len(per_tile) == ceil_div(p["M"], p["base_m"]) * ceil_div(p["N"], p["base_n"])
    for idx in per_tile:
        assert z[idx].tolist() == list(range(Z))
        assert k_lo[idx[0]] == 0 and k_hi[idx[-1]] == p["K"]
        np.testing.assert_array_equal(k_lo[idx[1:]], k_hi[idx[:-1]])
        assert (k_hi[idx] > k_lo[idx]).all()


@given(gemm_params())
def test_plan_steps_and_chunks(p):
    pl = gemm.plan(gemm.GemmParams.of(p))
    t, s = pl.tiles, pl.steps
    bk, depth = p["base_k"], p["depth_k"]
    n_tiles = len(t["r0"])
    # steps are grouped by tile, in tile order
    assert (np.diff(s["tile"]) >= 0).all()
    assert set(s["tile"].tolist()) == set(range(n_tiles))
    start = np.searchsorted(s["tile"], np.arange(n_tiles))
    idx = np.arange(len(s["tile"])) - start[s["tile"]]  # step number within its tile
    # the steps of a tile cut its K range into base_k pieces (the last may be short)
    np.testing.assert_array_equal(s["k"], t["k_lo"][s["tile"]] + idx * bk)
    np.testing.assert_array_equal(s["ksize"], np.minimum(bk, t["k_hi"][s["tile"]] - s["k"]))
    assert (s["ksize"] > 0).all()
    np.testing.assert_array_equal(np.bincount(s["tile"], weights=s["ksize"],
                                              minlength=n_tiles), t["k_hi"] - t["k_lo"])
    np.testing.assert_array_equal(s["tile_first"], idx == 0)
    last = np.r_[start[1:], len(s["tile"])] - 1
    np.testing.assert_array_equal(np.flatnonzero(s["tile_last"]), last)
    # chunks: a new one every depth_k steps of a tile; at most depth_k steps each; the
    # chunk's K origin and size are its steps' K range
    np.testing.assert_array_equal(s["chunk_first"], idx % depth == 0)
    chunk = np.cumsum(s["chunk_first"]) - 1
    assert np.bincount(chunk).max() <= depth
    first = np.flatnonzero(s["chunk_first"])
    np.testing.assert_array_equal(s["chunk_k0"], s["k"][first][chunk])
    np.testing.assert_array_equal(s["chunk_k"], np.bincount(chunk, weights=s["ksize"])[chunk])
    assert (s["chunk_k"] <= depth * bk).all()


def test_plan_by_hand():
    """M=100, N=70, K=200 in 32 x 32 x 48 tiles, grid_x=2, grid_z=3, block_dim 4.

    Row panels: ceil(100 / 2) = 50 rows, rounded up to 64 = two base rows, so X = 2.
    Column panels: auto = one per base tile: ceil(70 / 32) = 3. K per split:
    ceil(200 / 3) = 67, rounded up to 96 (two 48-steps), so Z = ceil(200 / 96) = 3 with
    ranges [0, 96), [96, 192), [192, 200): 2, 2 and 1 steps."""
    p = gemm.check(CHIP, dict(M=100, N=70, K=200, base_m=32, base_n=32, base_k=48,
                              grid_x=2, grid_z=3, block_dim=4, policy="row_major"))
    pl = gemm.plan(gemm.GemmParams.of(p))
    assert pl.grid.shape == (2, 3, 3) and pl.single == (64, 32) and pl.k_per_z == 96
    assert (pl.grid.waves, pl.grid.tail_tasks) == (5, 2)  # 18 tasks on 4 cores
    # tiles: 4 row tiles x 3 column tiles x 3 splits; the edge tiles are 4 rows / 6 cols
    assert len(pl.tiles["r0"]) == 36
    assert sorted(set(pl.tiles["rows"].tolist())) == [4, 32]
    assert sorted(set(pl.tiles["cols"].tolist())) == [6, 32]
    assert sorted(set(zip(pl.tiles["k_lo"].tolist(), pl.tiles["k_hi"].tolist()))) == \
        [(0, 96), (96, 192), (192, 200)]
    assert len(pl.steps["tile"]) == 12 * (2 + 2 + 1)
    assert sorted(set(pl.steps["ksize"].tolist())) == [8, 48]


@pytest.mark.parametrize("balance", BALANCES)
def test_balances_run_every_task_once_in_waves_per_core(balance):
    chip = hardware_presets.load("910B2")
    p = {"M": 1000, "N": 1100, "K": 512, "block_dim": 7, "balance": balance}
    prog = gemm.build(chip, p)
    sched = run(prog, chip)
    g = gemm.plan(gemm.GemmParams.of(gemm.check(chip, p))).grid
    assert sorted(zip(g.x, g.y, g.z)) == sorted(set(zip(g.x, g.y, g.z)))
    assert set(g.slot) <= set(range(7))
    for s in range(7):  # waves on a core are 0, 1, 2, ...
        assert sorted(g.wave[g.slot == s]) == list(range(np.count_nonzero(g.slot == s)))
    assert sched.makespan_ns > 0

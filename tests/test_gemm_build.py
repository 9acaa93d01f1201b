"""The GEMM program (kernels/gemm/kernel.py): bytes, instructions and flops per the tiling, L2
re-reads and the policies, random GEMMs on both engines. Refusals are in
test_gemm_refusals.py; hand-worked timelines, split-K, twins and the big default in
test_gemm_timeline.py (both reuse the helpers below).

Tiny chip numbers used below (tests/data/tiny_chip.toml; 1000 MHz, so 1 cycle = 1 ns and
B bytes/cycle = B bytes/ns). GM read: 10 ns latency, then at most 32 B/ns from HBM or
64 B/ns from L2 (gm_read_l1_bytes_per_cycle into L1, the same as into UB); HBM 64 B/ns
shared by all flows (max-min fair), L2 1 MiB. Fixpipe L0C -> GM: 20 ns fixed, then at
most 64 B/ns (through HBM). MTE1: 10 ns + bytes / 256
into L0A, 10 ns + bytes / 128 into L0B. Mmad: 10 + ceil(m/16) ceil(n/16) ceil(k/k0)
cycles, k0 = 16 for fp16. Vector: 10 + bytes / 256. SyncAll: 100 ns.
Cores 0, 1 are the two AICs, 2..5 the four AIVs.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import hardware_presets
from explorer.core.emulator.cost import compute_costs
from explorer.core.emulator.engine import run
from kernels.common.program import Kind, Level, Pipe
from kernels.gemm import kernel as gemm
from kernels.gemm import params as gp
from kernels.gemm.grid import POLICIES
from kernels.gemm.params import IN_BYTES, OUT_BYTES, b_tile_bytes
from tests.engine_helpers import assert_twins, check_invariants, tiny
from tests.gemm_helpers import (
    bytes_of,
    col_widths,
    counts,
    gm_read_bytes,
    ids_of,
    mmad_flops,
    op_of,
    served_split,
    tiling,
)

B2 = hardware_presets.load("910B2")
C910 = hardware_presets.load("910")
C310 = hardware_presets.load("310P3")
MIB = 1 << 20


def build(chip, **params):
    return gemm.build(chip, params)


def spans(program, schedule, label):
    """(start, end) of every instruction labelled ``label``, in id order."""
    i = ids_of(program, label)
    return list(zip(schedule.start_ns[i].tolist(), schedule.end_ns[i].tolist()))


# ---- bytes and instructions per the tiling -------------------------------------------------
SMALL = dict(M=100, N=70, K=200, base_m=32, base_n=32, base_k=48, depth_k=2)
CASES = {  # on the tiny chip (2 cube cores, the default block_dim)
    "dense": dict(SMALL),
    "panels": dict(SMALL, grid_x=2, grid_y=1, policy="swizzle"),  # tasks of several tiles
    "bias": dict(SMALL, bias=True, dtype_in="bf16", dtype_out="bf16", policy="col_major"),
    "atomic": dict(SMALL, grid_z=3, split_k_mode="atomic", dtype_out="fp32"),
    "workspace": dict(SMALL, grid_z=3, depth_k=1, policy="cluster", group=2),
    "int8": dict(SMALL, dtype_in="int8", dtype_out="int32", base_k=64, depth_k=3),
    "fp32": dict(SMALL, dtype_in="fp32", dtype_out="fp32", base_k=16, depth_k=4),
    "4:2": dict(SMALL, K=256, dtype_in="int8", dtype_out="int32", sparsity="4:2", base_k=64),
    "2:4": dict(SMALL, K=256, sparsity="2:4", base_k=32, depth_k=3, grid_z=2),
    # 128 x 128 tiles: 128 x (3 x 4 + 2) B per row, UB fits 109 rows: 2 slices per tile
    "workspace slices": dict(M=256, N=200, K=128, base_m=128, base_n=128, base_k=32,
                             grid_z=2, bias=True),
}


def reduction_slices(p: dict, chip) -> list[tuple[int, int]]:
    """(columns, row slices) of every C tile in the workspace reduction: each tile is cut
    into slices of rows whose two fp32 partials, fp32 accumulator and output row fit UB."""
    per_row_bytes = 3 * 4 + OUT_BYTES[p["dtype_out"]]
    out = []
    for r0 in range(0, p["M"], p["base_m"]):
        rows = min(p["base_m"], p["M"] - r0)
        for cols in col_widths(p):
            fit = max(1, min(rows, chip.ub_bytes // (cols * per_row_bytes)))
            out.append((cols, -(-rows // fit)))
    return out


def expected_counts(p: dict, chip) -> dict[str, int]:
    """Instructions per op label: two MTE2 loads per L1 chunk, two MTE1 moves and one
    Mmad per K step, one output per C tile and split, and the workspace reduction."""
    t = tiling(p)
    workspace = t.Z > 1 and p["split_k_mode"] == "workspace"
    chunks, steps, outs = t.c_tiles * t.chunks_per_c_tile, t.c_tiles * t.steps_per_c_tile, \
        t.c_tiles * t.Z
    want = {"Load A -> L1": chunks, "Load B -> L1": chunks, "LoadData A -> L0A": steps,
            "LoadData B -> L0B": steps,
            "Mmad" + (" (sparse)" if p["sparsity"] != "dense" else ""): steps}
    if chip.has_fixpipe:
        want["Fixpipe -> workspace" if workspace else "Fixpipe C"] = outs
    else:
        want["L0C -> UB"] = want["CopyOut -> workspace" if workspace else "CopyOut C"] = outs
    if p["bias"] and not workspace:
        want["Load bias"] = t.c_tiles  # with partial z = 0 only: the fixpipe adds it once
    if workspace:
        slices = sum(n for _, n in reduction_slices(p, chip))
        # the cube cores launched and the vector cores that reduce (the same cores on a
        # coupled chip) meet at one SyncAll
        vec = chip.vector_core_ids()[:min(slices, len(chip.vector_core_ids()))]
        want["SyncAll"] = len(set(chip.cube_core_ids()[:p["block_dim"]]) | set(vec))
        for z in range(t.Z):
            want[f"CopyIn partial z={z}"] = slices
        want["Add partials"] = slices * (t.Z - 1)
        want["CopyOut C"] = want.get("CopyOut C", 0) + slices
        if p["dtype_out"] != "fp32":
            want[f"Cast -> {p['dtype_out']}"] = slices
        if p["bias"]:
            want["CopyIn bias"] = want["Add bias"] = slices
    return want


@pytest.mark.parametrize("case", CASES)
def test_instruction_counts(case):
    chip = tiny()
    p = gemm.check(chip, CASES[case])
    assert counts(build(chip, **p)) == expected_counts(p, chip)


@pytest.mark.parametrize("case", CASES)
def test_bytes_moved_match_the_tiling(case):
    """A is loaded once per column tile, B once per row tile (per-tile loads, no L1 reuse
    across tiles; split-K divides K, it does not re-read); sparse B as stored compressed;
    the output once, or per partial for split-K."""
    chip = tiny()
    p = gemm.check(chip, CASES[case])
    prog = build(chip, **p)
    t = tiling(p)
    M, N, K, ib, ob = p["M"], p["N"], p["K"], IN_BYTES[p["dtype_in"]], OUT_BYTES[p["dtype_out"]]
    assert bytes_of(prog, "Load A -> L1") == M * K * ib * t.col_tiles
    if p["sparsity"] == "dense":
        assert bytes_of(prog, "Load B -> L1") == K * N * ib * t.row_tiles
    else:  # half of K kept plus 2-bit indices, per stored chunk of each column tile
        per_row_tile = sum(b_tile_bytes(p["dtype_in"], p["sparsity"], k, w)
                           for w in col_widths(p) for _, k in t.chunks)
        assert bytes_of(prog, "Load B -> L1") == per_row_tile * t.row_tiles
        assert per_row_tile < K * N * ib
    if t.Z > 1 and p["split_k_mode"] == "workspace":
        assert bytes_of(prog, "Fixpipe -> workspace") == M * N * 4 * t.Z  # fp32 partials
        for z in range(t.Z):  # the reduction reads each partial once ...
            assert bytes_of(prog, f"CopyIn partial z={z}") == M * N * 4
        assert bytes_of(prog, "CopyOut C") == M * N * ob  # ... and writes C once
    else:  # Z = 1, or one atomic add of every partial into C
        assert bytes_of(prog, "Fixpipe C") == M * N * ob * t.Z
    c = prog.cols
    gm_writes = c["nbytes"][c["dst"] == Level.GM].sum()
    assert gm_writes == M * N * ob * (1 if t.Z == 1 or p["split_k_mode"] == "workspace"
                                      else t.Z) + \
        (M * N * 4 * t.Z if t.Z > 1 and p["split_k_mode"] == "workspace" else 0)
    if p["bias"] and t.Z > 1 and p["split_k_mode"] == "workspace":
        # the reduction adds the fp32 bias, so it reads it, once per row slice
        assert bytes_of(prog, "CopyIn bias") == \
            sum(cols * 4 * n for cols, n in reduction_slices(p, chip))
        assert "Load bias" not in counts(prog)
    elif p["bias"]:  # the fixpipe adds the fp32 bias, with partial z = 0 only
        assert bytes_of(prog, "Load bias") == N * 4 * t.row_tiles


@pytest.mark.parametrize("case", CASES)
def test_mmad_shapes_sum_to_the_flops(case):
    chip = tiny()
    p = gemm.check(chip, CASES[case])
    prog = build(chip, **p)
    flops = 2 * p["M"] * p["N"] * p["K"]
    assert mmad_flops(prog) == (flops if p["sparsity"] == "dense" else flops // 2)
    mm = np.flatnonzero(prog.cols["kind"] == Kind.MMAD)
    c = prog.cols
    assert (c["m"][mm] <= p["base_m"]).all() and (c["n"][mm] <= p["base_n"]).all()
    assert (c["k"][mm] <= p["base_k"]).all()


def test_coupled_output_bytes():
    """910 (coupled): the vector unit copies fp32 L0C to UB, MTE3 writes C; no fixpipe."""
    p = gemm.check(C910, dict(SMALL, block_dim=4))
    prog = build(C910, **p)
    assert counts(prog) == expected_counts(p, C910)
    assert bytes_of(prog, "L0C -> UB") == p["M"] * p["N"] * 4
    assert bytes_of(prog, "CopyOut C") == p["M"] * p["N"] * 2
    c = prog.cols
    assert not (c["pipe"] == Pipe.FIX).any()
    assert set(c["pipe"][ids_of(prog, "L0C -> UB")].tolist()) == {Pipe.V}
    assert set(c["pipe"][ids_of(prog, "CopyOut C")].tolist()) == {Pipe.MTE3}
    copy, out = ids_of(prog, "L0C -> UB"), ids_of(prog, "CopyOut C")
    for a, o in zip(copy, out):  # each write waits for its tile's copy into UB
        assert a in prog.dep_idx[prog.dep_ptr[o]:prog.dep_ptr[o + 1]]
    s = run(prog, C910)
    assert (s.start_ns[out] >= s.end_ns[copy]).all()


def test_atomic_split_k_loads_the_bias_once_per_c_tile():
    p = gemm.check(tiny(), dict(SMALL, grid_z=3, split_k_mode="atomic", bias=True,
                                dtype_out="fp32"))
    prog = build(tiny(), **p)
    assert bytes_of(prog, "Load bias") == p["N"] * 4 * tiling(p).row_tiles


def test_workspace_split_k_reads_the_bias_where_it_is_added():
    chip = tiny()
    p = gemm.check(chip, dict(SMALL, grid_z=2, bias=True))
    prog = build(chip, **p)
    c = prog.cols
    bias_reads = np.char.find(op_of(prog).astype(str), "bias") >= 0
    bias_reads &= c["src"] == Level.GM
    on_cube = np.isin(c["core"], chip.cube_core_ids())
    assert not (bias_reads & on_cube).any()
    assert c["nbytes"][bias_reads & ~on_cube].sum() >= p["N"] * 4 * tiling(p).row_tiles


COMBOS = {  # (dtype_in, sparsity) each chip takes
    "tiny": [("fp16", "dense"), ("bf16", "dense"), ("fp32", "dense"), ("hf32", "dense"),
             ("int8", "dense"), ("int8", "4:2"), ("fp16", "2:4"), ("bf16", "2:4")],
    "910": [("fp16", "dense"), ("int8", "dense")],
}


@st.composite
def small_gemms(draw):
    """A chip (tiny with clusters of 1 or 2, or the coupled 910) and a random small GEMM
    that fits it: shapes, precision and sparsity, base tiles on the fractal, L1 depth,
    buffering, grid, split-K factor and mode, policy and bias. K is even, so a sparse
    step keeps exactly half of its K."""
    which = draw(st.sampled_from(["tiny", "tiny2", "910"]))
    chip = C910 if which == "910" else tiny(cluster_size=2 if which == "tiny2" else 1)
    dtype_in, sparsity = draw(st.sampled_from(COMBOS["910" if which == "910" else "tiny"]))
    outs = ["fp16", "fp32"] + (["bf16"] if "bf16" in chip.cube_precisions else [])
    dtype_out = draw(st.sampled_from(outs + (["int32", "int8"] if dtype_in == "int8" else [])))
    step = max(16, chip.cube_k0(dtype_in) * (1 if sparsity == "dense" else 2))
    M, N, K = draw(st.integers(1, 80)), draw(st.integers(1, 80)), 2 * draw(st.integers(1, 80))
    bm, bn = 16 * draw(st.integers(1, 4)), 16 * draw(st.integers(1, 4))
    bk = step * draw(st.integers(1, max(1, 64 // step)))
    grid_z = min(draw(st.integers(1, 4)), -(-K // bk))
    mode = draw(st.sampled_from(["workspace", "atomic"]))
    if dtype_out == "int8":
        mode = "workspace"  # quantised partials cannot be added atomically
    params = dict(M=M, N=N, K=K, dtype_in=dtype_in, dtype_out=dtype_out, sparsity=sparsity,
                  base_m=bm, base_n=bn, base_k=bk, depth_k=draw(st.integers(1, 3)),
                  db_l1=draw(st.booleans()), db_l0=draw(st.booleans()),
                  db_l0c=draw(st.booleans()), bias=draw(st.booleans()),
                  grid_x=draw(st.integers(0, -(-M // bm))),
                  grid_y=draw(st.integers(0, -(-N // bn))), grid_z=grid_z,
                  split_k_mode=mode, block_dim=draw(st.integers(1, 2)),
                  policy=draw(st.sampled_from(POLICIES)), group=draw(st.integers(1, 3)))
    event(f"{which}, {sparsity}, Z {'> 1, ' + mode if grid_z > 1 else '= 1'}")
    return chip, params


@given(small_gemms())
def test_random_gemms_counts_bytes_and_flops(case):
    """The analytic counts hold for any tiling, grid, split and precision."""
    chip, params = case
    p = gemm.check(chip, params)
    prog = build(chip, **p)
    t = tiling(p)
    assert counts(prog) == expected_counts(p, chip)
    M, N, K = p["M"], p["N"], p["K"]
    ib, ob = IN_BYTES[p["dtype_in"]], OUT_BYTES[p["dtype_out"]]
    a_bytes = M * K * ib * t.col_tiles
    assert bytes_of(prog, "Load A -> L1") == a_bytes
    b_bytes = sum(b_tile_bytes(p["dtype_in"], p["sparsity"], k, w)
                  for w in col_widths(p) for _, k in t.chunks) * t.row_tiles
    assert bytes_of(prog, "Load B -> L1") == b_bytes
    flops = 2 * M * N * K
    assert mmad_flops(prog) == (flops if p["sparsity"] == "dense" else flops // 2)
    # every GM byte read and written, output path and bias included
    c = prog.cols
    workspace = t.Z > 1 and p["split_k_mode"] == "workspace"
    if workspace:  # fp32 partials out and back in; the reduction reads the bias per slice
        writes = M * N * 4 * t.Z + M * N * ob
        reads = a_bytes + b_bytes + M * N * 4 * t.Z
        bias = sum(cols * 4 * n for cols, n in reduction_slices(p, chip))
    else:  # C once, or one atomic add per partial; the bias once per C tile (z = 0)
        writes = M * N * ob * t.Z
        reads = a_bytes + b_bytes
        bias = N * 4 * t.row_tiles
    assert c["nbytes"][c["dst"] == Level.GM].sum() == writes
    assert c["nbytes"][c["src"] == Level.GM].sum() == reads + (bias if p["bias"] else 0)


@given(small_gemms())
def test_random_gemms_run_on_both_engines(case):
    """No deadlock, the twins agree, and every invariant of DESIGN.md §4 holds."""
    chip, params = case
    prog = build(chip, **params)
    jit, _ = assert_twins(prog, chip)
    check_invariants(prog, chip, jit)


# ---- L2 and the policies -------------------------------------------------------------------
def test_l2_serves_re_reads():
    """4 x 4 tiles on 2 cores: every A chunk is read by 4 column tiles and every B chunk by
    4 row tiles, all inside 1 MiB of L2, so most re-reads are L2 hits."""
    chip = tiny()
    prog = build(chip, M=128, N=128, K=256, base_m=32, base_n=32, base_k=64, depth_k=2)
    s = run(prog, chip)
    split = served_split(prog, s)
    total = gm_read_bytes(prog)
    assert split["hbm"] < total and split["l2"] > 0
    assert split["hbm"] + split["l2"] + split["multicast"] == total
    # the first touch of every A and B chunk must come from HBM
    assert split["hbm"] >= (128 * 256 + 256 * 128) * 2


POLICY_GEMM = dict(M=512, N=2048, K=1024, base_m=128, base_n=128, base_k=64, depth_k=4,
                   block_dim=2)


def policy_run(policy, group, **chip_overrides):
    chip = tiny(l2_MiB=2, **chip_overrides)
    prog = build(chip, **POLICY_GEMM, policy=policy, group=group)
    return served_split(prog, run(prog, chip))


def test_swizzle_keeps_b_in_l2_where_row_major_thrashes_it():
    """C is 4 x 16 tiles of 128 x 128; each A row panel and each B column panel is 256 KiB,
    B is 4 MiB and L2 2 MiB. Row-major walks all 16 B panels for every row panel, so B
    falls out of L2 between row panels and comes from HBM 4 times (16 MiB). Swizzle with a
    group of 4 row panels walks column by column: each B panel is fetched once and all
    four A panels (1 MiB) stay resident. The two cores of a wave read their shared panel
    (A in row-major, B in swizzle) at the same time; L2 merges the two misses, so the
    panel comes from HBM once: row-major moves 16 MiB of B + 1 MiB of A = 17 MiB from HBM,
    swizzle 4 MiB of B + 1 MiB of A = 5 MiB."""
    row = policy_run("row_major", 1)
    swz = policy_run("swizzle", 4)
    assert swz["hbm"] <= 0.6 * row["hbm"]
    assert swz["l2"] > row["l2"]
    assert row["hbm"] == 17 * MIB and swz["hbm"] == 5 * MIB


def test_cluster_policy_shares_fetches_by_multicast():
    """With clusters of 2 cores, the cluster policy (blocks of 4 columns) multicasts the
    shared A panel between the two cores and keeps a block's B panels in L2 across row
    panels: less HBM than row-major, which re-reads B per row panel. Without clusters L2
    already merges the two cores' misses, so the what-if saves L2 reads, not HBM bytes."""
    row = policy_run("row_major", 1, cluster_size=2)
    clu = policy_run("cluster", 4, cluster_size=2)
    assert clu["multicast"] > 0
    assert clu["hbm"] <= 0.6 * row["hbm"]
    no_cluster = policy_run("cluster", 4)  # the same walk without multicast
    assert no_cluster["multicast"] == 0 and clu["hbm"] == no_cluster["hbm"]
    assert clu["l2"] + clu["multicast"] == no_cluster["l2"]  # the joiners moved nothing


@pytest.mark.parametrize("preset,params", [
    ("910B2", {"dtype_in": "fp16", "base_m": 128, "base_n": 256, "base_k": 64}),
    ("910B2", {"dtype_in": "int8", "dtype_out": "int32", "base_m": 64, "base_n": 128,
               "base_k": 128, "sparsity": "4:2"}),
    ("310P3", {"dtype_in": "fp16", "base_m": 64, "base_n": 64, "base_k": 32}),
])
def test_step_budget_is_what_the_cost_model_charges(preset, params):
    """The page's per-step budget of a base tile is the cost model's own charge for the
    Mmad and the two LoadDatas of one K step (a one-tile, one-step GEMM)."""
    chip = hardware_presets.load(preset)
    p = gemm.check(chip, {"M": params["base_m"], "N": params["base_n"],
                          "K": params["base_k"], "block_dim": 1, **params})
    prog = gemm.build(chip, p)
    cycles = compute_costs(prog, chip).issue_ns * chip.clock_MHz / 1000.0
    c = prog.cols
    budget = gp.step_budget(chip, gp.GemmParams.of(p))
    assert cycles[c["kind"] == Kind.MMAD].sum() == pytest.approx(budget["cube"])
    mte1 = c["pipe"] == Pipe.MTE1
    assert cycles[mte1].sum() == pytest.approx(budget["mte1"])

"""The GEMM program (kernels/gemm.py): bytes and instructions per the tiling, refusals,
hand-worked timelines on the tiny chip, split-K, the coupled output path, the twin
engines, and the big default GEMM's efficiency.

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

import re

import hardware_presets
import numpy as np
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from explorer.core.emulator.engine import run
from explorer.core.emulator.schedule import SERVED_HBM, SERVED_L2
from explorer.core.metrics import compute_metrics
from explorer.core.tables import per_core_table, timeline_table
from hardware_presets.errors import InputError
from kernels import gemm
from kernels.gemm_grid import POLICIES
from kernels.gemm_params import IN_BYTES, OUT_BYTES, b_tile_bytes
from kernels.program import Kind, Level, Pipe
from tests.engine_helpers import ENGINES, assert_twins, check_invariants, tiny
from tests.gemm_helpers import (bytes_of, col_widths, counts, gm_read_bytes, ids_of,
                                mmad_flops, op_of, served_split, tiling)

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
        per_row_tile = sum(b_tile_bytes(p, k, w) for w in col_widths(p) for _, k in t.chunks)
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
    b_bytes = sum(b_tile_bytes(p, k, w) for w in col_widths(p) for _, k in t.chunks) * \
        t.row_tiles
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
    (A in row-major, B in swizzle) at the same time, and without a cluster both fetches
    miss: row-major moves 16 MiB of B + 2 x 1 MiB of A = 18 MiB from HBM, swizzle
    2 x 4 MiB of B + 1 MiB of A = 9 MiB."""
    row = policy_run("row_major", 1)
    swz = policy_run("swizzle", 4)
    assert swz["hbm"] <= 0.6 * row["hbm"]
    assert swz["l2"] > row["l2"]
    assert row["hbm"] >= 16 * MIB  # B from HBM once per row panel


def test_cluster_policy_shares_fetches_by_multicast():
    """With clusters of 2 cores, the cluster policy (blocks of 4 columns) multicasts the
    shared A panel between the two cores and keeps a block's B panels in L2 across row
    panels: less HBM than row-major, which re-reads B per row panel."""
    row = policy_run("row_major", 1, cluster_size=2)
    clu = policy_run("cluster", 4, cluster_size=2)
    assert clu["multicast"] > 0
    assert clu["hbm"] <= 0.6 * row["hbm"]
    no_cluster = policy_run("cluster", 4)  # the same walk without multicast
    assert no_cluster["multicast"] == 0 and clu["hbm"] < no_cluster["hbm"]


# ---- refusals ------------------------------------------------------------------------------
def refusal(chip, **params) -> InputError:
    with pytest.raises(InputError) as info:
        build(chip, **params)
    return info.value


def fitting_value(err: InputError) -> int:
    found = re.search(r"at most (\d+)", err.allowed)
    assert found, f"no largest fitting value in {err}"
    return int(found.group(1))


CAPACITY = {
    # name: (params, field, limit bytes, requested bytes, largest fitting value)
    # L0A: 256 x 80 fp16 x 2 buffers = 81920 B > 64 KiB; 65536 / (256 x 2 x 2) = 64
    "L0A": (dict(base_m=256, base_n=64, base_k=80), "base_k", 65536, 81920, 64),
    # L0B: 80 x 256 fp16 x 2 buffers = 81920 B > 64 KiB; 65536 / (256 x 2 x 2) = 64
    "L0B": (dict(base_m=64, base_n=256, base_k=80), "base_k", 65536, 81920, 64),
    # L0C: 128 x 272 fp32 = 139264 B > 128 KiB; 131072 / (128 x 4) = 256
    "L0C": (dict(base_m=128, base_n=272, base_k=32), "base_n", 131072, 139264, 256),
    # L0C double-buffered: 128 x 256 x 4 x 2 = 262144 B; 131072 / (128 x 4 x 2) = 128
    "L0C x2": (dict(base_m=128, base_n=256, base_k=32, db_l0c=True), "base_n", 131072,
               262144, 128),
    # L1: (128 x 64 x 2 + 64 x 256 x 2) x 2 buffers = 98304 B per K step of depth;
    # 6 steps need 589824 B > 512 KiB, 524288 / 98304 = 5.33
    "L1": (dict(base_m=128, base_n=256, base_k=64, depth_k=6), "depth_k", 524288, 589824, 5),
    # L1, int8 4:2: A 128 x 128 + B (64 x 256 + 64 x 256 x 2 / 8 indices) = 36864 B per
    # step, x 2 buffers; 8 steps need 589824 B, 524288 / 73728 = 7.1
    "L1 sparse": (dict(dtype_in="int8", dtype_out="int32", sparsity="4:2", depth_k=8),
                  "depth_k", 524288, 589824, 7),
}


@pytest.mark.parametrize("case", CAPACITY)
def test_capacity_refusal_names_the_limit_and_the_largest_fit(case):
    params, field, limit, need, fit = CAPACITY[case]
    err = refusal(B2, **params)
    assert err.field == f"params.{field}" and err.value == params[field]
    assert f"holds {limit} bytes" in err.allowed and f"needs {need}" in err.allowed
    assert fitting_value(err) == fit
    gemm.check(B2, dict(params, **{field: fit}))  # the largest fitting value is accepted
    step = 1 if field == "depth_k" else 16
    with pytest.raises(InputError):  # and it is the largest
        gemm.check(B2, dict(params, **{field: fit + step}))


def test_capacity_single_buffering_fits_what_double_buffering_does_not():
    params = dict(base_m=256, base_n=64, base_k=80)
    refusal(B2, **params)
    gemm.check(B2, dict(params, db_l0=False))  # 256 x 80 x 2 = 40960 B in one buffer


def test_capacity_ub_on_coupled_chips():
    """910: C goes L0C -> UB in fp32, one tile: 256 x 256 x 4 = 262144 B > the 261888 B of
    UB (256 KiB less a 256-byte reserve); 261888 / (256 x 4) = 255.75 -> 240."""
    err = refusal(C910, base_m=256, base_n=256)
    assert err.field == "params.base_n" and "UB holds 261888 bytes" in err.allowed
    assert "needs 262144" in err.allowed and fitting_value(err) == 240
    gemm.check(C910, dict(base_m=256, base_n=240))


SUGGESTIONS = {
    # name: (chip, params, field and buffer of the refusal, step of the field)
    # int8 k0 = 32: the suggestion must sit on the fractal, not on a multiple of 16
    "base_k on the int8 fractal": (B2, dict(dtype_in="int8", dtype_out="int32", base_m=80,
                                            base_n=16, base_k=512), "base_k", "L0A", 32),
    # L0A alone would allow base_k 128; L0B (base_n 256) only 64: the suggestion checks all
    "L0A and L0B together": (B2, dict(base_m=128, base_n=256, base_k=144), "base_k", "L0A",
                             16),
    # 910: L0C (256 KiB) would take base_n 256, but an fp32 tile of 256 x 256 overflows UB
    "L0C and UB together": (C910, dict(base_m=256, base_n=512, base_k=32), "base_n", "L0C",
                            16),
    # the bias is a constant share of L1, not proportional to depth_k
    "L1 with bias": (C910, dict(dtype_in="int8", dtype_out="int32", base_m=16, base_n=512,
                                base_k=64, depth_k=64, bias=True, db_l0=False, db_l1=False),
                     "depth_k", "L1", 1),
}


@pytest.mark.parametrize("case", SUGGESTIONS)
def test_the_suggested_value_is_the_largest_that_fits(case):
    chip, params, field, buffer, step = SUGGESTIONS[case]
    err = refusal(chip, **params)
    assert err.field == f"params.{field}" and f"{buffer} holds" in err.allowed
    value = fitting_value(err)
    gemm.check(chip, dict(params, **{field: value}))  # accepted
    with pytest.raises(InputError):  # and one fractal step more is not
        gemm.check(chip, dict(params, **{field: value + step}))


def test_no_fitting_value_is_said_plainly():
    """fp32 L0B with base_n 1024: not even base_k = 16 fits; the knob that helps is base_n."""
    err = refusal(B2, dtype_in="fp32", dtype_out="fp32", base_m=16, base_n=1024, base_k=64)
    assert err.field == "params.base_k" and "no value fits" in err.allowed


REFUSED = {
    # name: (chip, params, field, text the message must contain)
    "bf16 on 910": (C910, dict(dtype_in="bf16"), "dtype_in", "fp16"),
    "fp32 on 310P3": (C310, dict(dtype_in="fp32", dtype_out="fp32"), "dtype_in", "int8"),
    "bf16 out on 910": (C910, dict(dtype_out="bf16"), "dtype_out", "fp16"),
    "4:2 with fp16": (B2, dict(sparsity="4:2"), "sparsity", "int8"),
    "4:2 on 910": (C910, dict(dtype_in="int8", dtype_out="int32", sparsity="4:2"),
                   "sparsity", "910B"),
    "4:2 on 310P3": (C310, dict(dtype_in="int8", dtype_out="int32", sparsity="4:2"),
                     "sparsity", "910B"),
    "2:4 with int8": (B2, dict(dtype_in="int8", dtype_out="int32", sparsity="2:4"),
                      "sparsity", "fp16"),
    "int32 out, fp16 in": (B2, dict(dtype_out="int32"), "dtype_out", "int8"),
    "atomic int8 out": (B2, dict(dtype_in="int8", dtype_out="int8", grid_z=2,
                                 split_k_mode="atomic"), "split_k_mode", "workspace"),
    # K = 256 in base_k 64 steps: 4 steps, so at most 4 splits
    "grid_z > K / base_k": (B2, dict(K=256, base_k=64, grid_z=5), "grid_z", "1 to 4"),
    "block_dim > cube cores": (B2, dict(block_dim=25), "block_dim", "1 to 24"),
    "block_dim > 910 cores": (C910, dict(block_dim=33), "block_dim", "1 to 32"),
    # M = 1000 in 128-row tiles: 8 row tiles
    "grid_x > M / base_m": (B2, dict(M=1000, grid_x=9), "grid_x", "0 (auto) to 8"),
    "grid_y > N / base_n": (B2, dict(N=512, grid_y=3), "grid_y", "0 (auto) to 2"),
    "base_k off the fractal": (B2, dict(dtype_in="int8", dtype_out="int32", base_k=48),
                               "base_k", "multiple of 32"),
    "sparse base_k": (B2, dict(dtype_in="int8", dtype_out="int32", sparsity="4:2",
                               base_k=96), "base_k", "multiple of 64"),
    "base_m off the fractal": (B2, dict(base_m=40), "base_m", "multiple of 16"),
    "M = 0": (B2, dict(M=0), "M", "1 to 65536"),
    "unknown policy": (B2, dict(policy="diagonal"), "policy", "swizzle"),
    "unknown parameter": (B2, dict(tile=3), "tile", "base_m"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_unsupported_requests_are_refused_with_the_field_named(case):
    chip, params, field, text = REFUSED[case]
    err = refusal(chip, **params)
    assert err.field == f"params.{field}"
    assert text in err.allowed


def test_the_default_tiling_fits_every_preset_and_precision():
    for name in hardware_presets.list_presets():
        chip = hardware_presets.load(name)
        for dtype in chip.cube_precisions:
            if dtype not in IN_BYTES:
                continue  # int4: the cube has it, the GEMM does not take it
            out = "int32" if dtype == "int8" else "fp32"
            p = gemm.check(chip, dict(dtype_in=dtype, dtype_out=out))
            assert p["block_dim"] == len(chip.cube_core_ids())
            assert p["base_k"] % chip.cube_k0(dtype) == 0


# ---- hand-worked timelines on the tiny chip ------------------------------------------------
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
    chip = tiny()
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
    chip = tiny()
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
    chip = tiny()
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
    chip = tiny()
    prog = build(chip, **dict(ONE_TILE, depth_k=1, block_dim=2, grid_z=2),
                 split_k_mode="atomic")
    s = run(prog, chip, engine=engine)
    fix = ids_of(prog, "Fixpipe C")
    assert prog.cols["core"][fix].tolist() == [0, 1]
    assert spans(prog, s, "Mmad") == [(102, 114), (102, 114)]
    assert spans(prog, s, "Fixpipe C") == [(114, 142), (142, 170)]
    assert fix[0] in prog.dep_idx[prog.dep_ptr[fix[1]]:prog.dep_ptr[fix[1] + 1]]


def test_atomic_partials_of_each_tile_are_serialised():
    chip = tiny()
    p = gemm.check(chip, dict(M=64, N=48, K=512, base_m=32, base_n=16, base_k=32,
                              depth_k=2, grid_z=4, split_k_mode="atomic",
                              dtype_out="fp32", policy="swizzle"))
    prog = build(chip, **p)
    s = run(prog, chip)
    pl = gemm.plan(p)
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
    chip = tiny()
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

"""GEMM on the cube: C[M,N] = A[M,K] x B[K,N] (+ bias), tiled as Ascend C's Matmul does.

Every task of the 3-D grid (see gemm_grid) covers a panel of C and a K range (split-K).
For each base tile of its panel a cube core streams K: MTE2 loads depth_k K steps of A
and B into L1 (DataCopy / LoadData), MTE1 moves one base_k slice at a time into L0A/L0B
(LoadData), the cube accumulates into L0C (Mmad), and the fixpipe casts and writes the
tile to GM (Fixpipe). On coupled chips (910, 310P) there is no fixpipe: the vector unit
copies L0C to UB and MTE3 writes it out. Buffer counts (db_l1, db_l0, db_l0c) are the
TQue depths, so double buffering is which dependencies exist. Split-K partials are
combined by atomic adds in GM, or by a reduction pass on the vector cores (gemm_reduce).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip
from kernels.common.program import Level, Pipe, Program, ProgramBuilder
from kernels.common.sizes import ceil_div, round_up
from kernels.common.tque import iteration_index, previous
from kernels.gemm import numerics as gemm_numerics
from kernels.gemm.grid import TaskGrid, task_grid
from kernels.gemm.params import (  # noqa: F401
    IN_BYTES,
    OUT_BYTES,
    PARAMS,
    TIMING_ONLY_PARAMS,
    GemmParams,
    GemmValueParams,
    check,
    check_size,
    instruction_count,
)
from kernels.gemm.reduce import emit_reduction

NAME = "gemm"
STAGES = 8  # seq slots per K step: bias, A load, B load, A->L0A, B->L0B, Mmad, out, out2


@dataclass(frozen=True, eq=False)
class Plan:
    """The tiling resolved into tasks, base tiles and K steps, in per-core program order."""

    grid: TaskGrid
    single: tuple[int, int]  # rows x columns of C per task
    k_per_z: int
    tiles: dict[str, np.ndarray]  # per base tile: core slot, row/col tile index, z, sizes
    steps: dict[str, np.ndarray]  # per K step: tile, k offset and size, chunk info


def plan(p: GemmParams) -> Plan:
    """Resolve grid sizes and expand tasks -> base tiles -> K steps (vectorised)."""
    M, N, bm, bn, kz = p.M, p.N, p.base_m, p.base_n, p.k_per_z
    X = p.grid_x or p.tiles_m
    Y = p.grid_y or p.tiles_n
    sm, sn = ceil_div(ceil_div(M, X), bm) * bm, ceil_div(ceil_div(N, Y), bn) * bn
    X, Y = ceil_div(M, sm), ceil_div(N, sn)
    grid = task_grid(X, Y, p.splits, p.block_dim, p.policy, p.group,
                     p.balance, lambda x, y, z: _task_steps(p, sm, sn, kz, x, y, z))
    tiles = _tiles(grid, p, sm, sn, kz)
    return Plan(grid, (sm, sn), kz, tiles, _steps(tiles, p))


def _task_steps(p: GemmParams, sm, sn, kz, x, y, z) -> np.ndarray:
    """A task's cube fractal steps (its cycles without fixed costs): edge panels and the
    last K split are smaller, which is all a balance policy can use here."""
    rows = np.minimum(sm, p.M - x * sm)
    cols = np.minimum(sn, p.N - y * sn)
    ks = np.minimum(kz, p.K - z * kz)
    return (ceil_div(rows, 16) * ceil_div(cols, 16) * ceil_div(ks, 16)).astype(np.float64)


def _tiles(grid: TaskGrid, p: GemmParams, sm: int, sn: int, kz: int) -> dict[str, np.ndarray]:
    order = np.lexsort((grid.wave, grid.slot))  # each core's tasks, wave by wave
    tm, tn = sm // p.base_m, sn // p.base_n
    task = np.repeat(order, tm * tn)
    a = np.tile(np.repeat(np.arange(tm), tn), len(order))
    b = np.tile(np.arange(tn), tm * len(order))
    r0 = grid.x[task] * sm + a * p.base_m
    c0 = grid.y[task] * sn + b * p.base_n
    keep = (r0 < p.M) & (c0 < p.N)
    task, r0, c0 = task[keep], r0[keep], c0[keep]
    k_lo = grid.z[task] * kz
    return {"task": task, "slot": grid.slot[task], "z": grid.z[task], "r0": r0, "c0": c0,
            "rows": np.minimum(p.base_m, p.M - r0),
            "cols": np.minimum(p.base_n, p.N - c0),
            "k_lo": k_lo, "k_hi": np.minimum(p.K, k_lo + kz)}


def _steps(tiles: dict, p: GemmParams) -> dict[str, np.ndarray]:
    bk, depth = p.base_k, p.depth_k
    count = ceil_div(tiles["k_hi"] - tiles["k_lo"], bk)
    tile = np.repeat(np.arange(len(count)), count)
    first = np.repeat(np.cumsum(count) - count, count)
    s = np.arange(len(tile)) - first
    k = tiles["k_lo"][tile] + s * bk
    chunk_k0 = tiles["k_lo"][tile] + (s // depth) * depth * bk
    return {"tile": tile, "k": k, "ksize": np.minimum(bk, tiles["k_hi"][tile] - k),
            "chunk_first": s % depth == 0, "tile_first": s == 0, "tile_last": s == count[tile] - 1,
            "chunk_k0": chunk_k0,
            "chunk_k": np.minimum(depth * bk, tiles["k_hi"][tile] - chunk_k0)}


def build(chip: Chip, params: dict) -> Program:
    """Emit the GEMM: loads, MTE1 moves, MMADs and the output path, with queue deps."""
    p = GemmParams.of(check(chip, params))
    check_size(p)
    b = ProgramBuilder(NAME)
    pl = plan(p)  # allocates per K step: only once the instruction cap has been checked
    t, s = pl.tiles, pl.steps
    core = np.asarray(chip.cube_core_ids(), np.int64)[t["slot"]]
    ids = _emit_k_loop(b, chip, p, pl, core)
    c_regions = _emit_output(b, chip, p, pl, core, ids)
    if p.workspace:
        emit_reduction(b, chip, p, pl, c_regions, len(s["tile"]) * STAGES)
    return b.build()


def _emit_k_loop(b, chip, p: GemmParams, pl, core) -> dict[str, np.ndarray]:
    """MTE2 chunk loads into L1, MTE1 slices into L0A/L0B, and the MMADs."""
    t, s = pl.tiles, pl.steps
    sparse = p.sparse
    step_core, seq = core[s["tile"]], np.arange(len(s["tile"])) * STAGES
    rows, cols = t["rows"][s["tile"]], t["cols"][s["tile"]]
    ch = np.flatnonzero(s["chunk_first"])
    a_key = (t["r0"][s["tile"]][ch] // p.base_m) * p.k_steps + s["chunk_k0"][ch] // p.base_k
    b_key = (s["chunk_k0"][ch] // p.base_k) * p.tiles_n + t["c0"][s["tile"]][ch] // p.base_n
    a_bytes = p.nbytes(rows[ch] * s["chunk_k"][ch])
    b_bytes = np.array([p.b_bytes(int(k), int(n)) for k, n in
                        zip(s["chunk_k"][ch], cols[ch])]) if sparse else \
        p.nbytes(s["chunk_k"][ch] * cols[ch])
    ld_a = b.transfer(step_core[ch], Pipe.MTE2, "Load A -> L1", Level.GM, Level.L1, a_bytes,
                      seq[ch] + 1, region=b.regions_by_key(a_key, a_bytes),
                      task=s["tile"][ch])
    ld_b = b.transfer(step_core[ch], Pipe.MTE2, "Load B -> L1", Level.GM, Level.L1, b_bytes,
                      seq[ch] + 2, region=b.regions_by_key(b_key, b_bytes),
                      task=s["tile"][ch])
    kpad = round_up(s["ksize"], chip.cube_k0(p.dtype_in))
    l0a_bytes = p.nbytes(round_up(rows, chip.cube_m0) * kpad)
    l0b_bytes = p.nbytes(kpad * round_up(cols, chip.cube_n0)) // (2 if sparse else 1)
    mv_a = b.transfer(step_core, Pipe.MTE1, "LoadData A -> L0A", Level.L1, Level.L0A,
                      l0a_bytes, seq + 3, task=s["tile"])
    mv_b = b.transfer(step_core, Pipe.MTE1, "LoadData B -> L0B", Level.L1, Level.L0B,
                      l0b_bytes, seq + 4, task=s["tile"])
    mmad = b.mmad(step_core, "Mmad" + (" (sparse)" if sparse else ""), rows, cols,
                  ceil_div(s["ksize"], 2) if sparse else s["ksize"],
                  p.dtype_in, seq + 5, task=s["tile"])
    chunk_of_step = np.cumsum(s["chunk_first"]) - 1
    _queue_deps(b, p, pl, ch, chunk_of_step, (ld_a, ld_b), (mv_a, mv_b), mmad, core)
    return {"mmad": mmad, "seq": seq, "step_core": step_core}


def _queue_deps(b, p: GemmParams, pl, ch, chunk_of_step, loads, moves, mmad, core) -> None:
    """L1 slots between MTE2 and MTE1, L0A/L0B slots between MTE1 and the cube."""
    s = pl.steps
    slot_of_chunk = pl.tiles["slot"][s["tile"][ch]]
    chunk_iter = iteration_index(slot_of_chunk)
    step_iter = iteration_index(pl.tiles["slot"][s["tile"]])
    last_move_of_chunk = np.r_[ch[1:], len(s["tile"])] - 1
    for load, move in zip(loads, moves):
        b.depend(move, load[chunk_of_step])  # LoadData waits for its chunk in L1
        freed = previous(move[last_move_of_chunk], chunk_iter, p.l1_slots)
        b.depend(load, freed)  # the L1 slot is free once the chunk's last slice has moved
        b.depend(mmad, move)  # the cube waits for both L0 operands
        b.depend(move, previous(mmad, step_iter, p.l0_slots))


def _emit_output(b, chip, p: GemmParams, pl, core, ids) -> np.ndarray:
    """Fixpipe (or L0C -> UB -> GM on coupled chips) per base tile, with L0C slots,
    optional bias, and the serialisation of atomic split-K adds to the same tile.
    Returns the GM region each tile's output went to."""
    t, s = pl.tiles, pl.steps
    last = np.flatnonzero(s["tile_last"])
    first = np.flatnonzero(s["tile_first"])
    workspace = p.workspace
    out_bytes = t["rows"] * t["cols"] * (4 if workspace else p.out_bytes)
    seq = ids["seq"][last]
    c_key = (t["r0"] // p.base_m) * p.tiles_n + t["c0"] // p.base_n
    c_key = c_key * pl.grid.shape[2] + t["z"] if workspace else c_key
    region = b.regions_by_key(c_key, out_bytes)
    label = "Fixpipe -> workspace" if workspace else "Fixpipe C"
    if chip.has_fixpipe:
        out = b.transfer(core, Pipe.FIX, label, Level.L0C, Level.GM, out_bytes, seq + 6,
                         region=region, task=np.arange(len(last)))
        freed = out
    else:
        freed = b.transfer(core, Pipe.V, "L0C -> UB", Level.L0C, Level.UB,
                           t["rows"] * t["cols"] * 4, seq + 6, task=np.arange(len(last)))
        out = b.transfer(core, Pipe.MTE3, "CopyOut -> workspace" if workspace else "CopyOut C",
                         Level.UB, Level.GM, out_bytes,
                         seq + 7, region=region, task=np.arange(len(last)))
        b.depend(out, freed)
        b.depend(freed, previous(out, iteration_index(t["slot"]), 1))  # one C buffer in UB
    b.depend(freed, ids["mmad"][last])  # the tile's last MMAD has accumulated
    b.depend(ids["mmad"][first], previous(freed, iteration_index(t["slot"]),
                                          p.l0c_slots))  # L0C slot
    if p.bias and not workspace:  # the fixpipe adds it, with partial z = 0 only
        own = np.flatnonzero(t["z"] == 0)
        bias = b.transfer(core[own], Pipe.MTE2, "Load bias", Level.GM, Level.L1,
                          t["cols"][own] * 4, ids["seq"][first][own],
                          region=b.regions_by_key(t["c0"][own] // p.base_n,
                                                   t["cols"][own] * 4))
        b.depend(freed[own], bias)
    if p.atomic:
        _serialise_atomics(b, t, out)
    return region


def _serialise_atomics(b, t, out) -> None:
    """Atomic adds to one C tile serialise in GM: partial z waits for partial z - 1."""
    key = t["r0"] * (int(t["c0"].max()) + 1) + t["c0"]
    order = np.lexsort((t["z"], key))
    same = key[order][1:] == key[order][:-1]
    b.depend(out[order][1:][same], out[order][:-1][same])


# numerics live in gemm_numerics; the kernel protocol re-exports them
make_inputs = gemm_numerics.make_inputs
execute = gemm_numerics.execute
reference = gemm_numerics.reference
error_bound = gemm_numerics.error_bound
unit_roundoff = gemm_numerics.unit_roundoff
as_real = gemm_numerics.as_real


def output_elements(params: dict) -> int:
    p = GemmValueParams.of(params)
    return int(p.M) * int(p.N)

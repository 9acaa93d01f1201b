"""Split-K with a workspace: after a SyncAll, the vector cores sum the Z fp32 partials of
each C tile slice by slice in UB, add the bias, cast to the output type and write C.

On 910B this is a mix kernel (AIC : AIV = 1 : 2) and the partials pass through GM/L2,
the only way AIC and AIV exchange data; on coupled chips the AI cores' own vector units
do the pass. Two UB buffers let the next partial load while the previous one is added.
"""
from __future__ import annotations

import numpy as np

from hardware_presets import Chip
from kernels.common.program import Level, Pipe, ProgramBuilder
from kernels.common.tque import iteration_index, previous
from kernels.gemm.params import GemmParams


def _slices(chip: Chip, p: GemmParams, tiles: dict) -> dict[str, np.ndarray]:
    """C tiles cut into row slices whose two fp32 inputs, accumulator and output fit UB."""
    keep = tiles["z"] == 0  # one entry per C tile
    rows, cols = tiles["rows"][keep], tiles["cols"][keep]
    per_row = cols * (3 * 4 + p.out_bytes)
    slice_rows = np.maximum(1, np.minimum(rows, chip.ub_bytes // per_row))
    count = -(-rows // slice_rows)
    tile = np.repeat(np.flatnonzero(keep), count)
    first = np.repeat(np.cumsum(count) - count, count)
    r = np.arange(len(tile)) - first
    srows = np.minimum(slice_rows[np.repeat(np.arange(len(rows)), count)],
                       np.repeat(rows, count) - r * np.repeat(slice_rows, count))
    return {"tile": tile, "rows": srows, "cols": np.repeat(cols, count)}


def emit_reduction(b: ProgramBuilder, chip: Chip, p: GemmParams, pl, regions: np.ndarray,
                   seq0: int) -> None:
    """SyncAll over every core taking part, then the reduction on the vector cores."""
    t = pl.tiles
    Z = pl.grid.shape[2]
    cube = np.asarray(chip.cube_core_ids())[:p.block_dim]
    vec_ids = np.asarray(chip.vector_core_ids())
    sl = _slices(chip, p, t)
    n = len(sl["tile"])
    core = vec_ids[np.arange(n) % len(vec_ids)]
    order = np.lexsort((np.arange(n), core))  # each vector core's slices in order
    core, tile = core[order], sl["tile"][order]
    rows, cols = sl["rows"][order], sl["cols"][order]
    b.sync_all(np.union1d(cube, vec_ids[: min(n, len(vec_ids))]), seq0 + 1)
    it = iteration_index(core)
    base = seq0 + 2 + it * (2 * Z + 4)
    elems = rows * cols
    partial_of = _partial_lookup(t, Z)
    reads = [b.transfer(core, Pipe.MTE2, f"CopyIn partial z={z}", Level.GM, Level.UB,
                        elems * 4, base + 2 * z, region=regions[partial_of[tile, z]])
             for z in range(Z)]
    adds = [b.vector(core, "Add partials", elems, "fp32", base + 2 * z + 1)
            for z in range(1, Z)]
    for z in range(1, Z):
        b.depend(adds[z - 1], [reads[z], reads[0]] if z == 1 else [reads[z]])
        if z >= 2:
            b.depend(reads[z], adds[z - 2])  # two input buffers in UB
    tail = adds[-1]
    if p.bias:  # the bias slice comes from GM like the partials, then one vector Add
        bias = b.transfer(core, Pipe.MTE2, "CopyIn bias", Level.GM, Level.UB, cols * 4,
                          base + 2 * Z - 1,
                          region=b.regions_by_key(t["c0"][tile] // p.base_n, cols * 4))
        tail = _after(b, b.vector(core, "Add bias", elems, "fp32", base + 2 * Z),
                      np.stack([tail, bias]))
    if p.dtype_out != "fp32":
        tail = _after(b, b.vector(core, f"Cast -> {p.dtype_out}", elems, "fp32",
                                  base + 2 * Z + 1), tail)
    tile_bytes = t["rows"][tile] * cols * p.out_bytes
    write = b.transfer(core, Pipe.MTE3, "CopyOut C", Level.UB, Level.GM,
                       elems * p.out_bytes, base + 2 * Z + 2,
                       region=b.regions_by_key(tile, tile_bytes))  # C stays tracked in L2
    b.depend(write, tail)
    b.depend(reads[0], previous(write, it, 1))  # accumulator / output buffer reused
    b.depend(reads[1], previous(write, it, 1))


def _after(b: ProgramBuilder, ids: np.ndarray, before: np.ndarray) -> np.ndarray:
    b.depend(ids, before)
    return ids


def _partial_lookup(t: dict, Z: int) -> np.ndarray:
    """[C tile index of the z = 0 entry, z] -> index of that partial's base-tile entry."""
    key = t["r0"] * (int(t["c0"].max()) + 1) + t["c0"]
    z0 = np.flatnonzero(t["z"] == 0)
    by_key = z0[np.argsort(key[z0])]
    owner = by_key[np.searchsorted(key[by_key], key)]  # the z = 0 entry of each tile
    lookup = np.zeros((len(t["z"]), Z), np.int64)
    lookup[owner, t["z"]] = np.arange(len(key))
    return lookup

"""The vector_add kernel: numerics, program structure, scheduling effects and input checks.

Expectations are computed here independently of kernels/vector_add/kernel.py: fp16 is the exact
float64 sum rounded once to float16, fp32 the exact sum rounded once to float32, bf16 an
fp32 add followed by a bfloat16 rounding (the Cast -> Add -> Cast path), integers exact.
"""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hardware_presets as hp
from explorer.core import Scenario, simulate
from hardware_presets.errors import InputError
from kernels.common.program import Kind, Level, Pipe
from kernels.vector_add import kernel as va

B2 = hp.load("910B2")
STORAGE = {"fp16": np.float16, "fp32": np.float32, "bf16": ml_dtypes.bfloat16,
           "int16": np.int16, "int32": np.int32}
BYTES = {"fp16": 2, "fp32": 4, "bf16": 2, "int16": 2, "int32": 4}
UINT = {2: np.uint16, 4: np.uint32}
#: a small case with a partial last tile: 5000 = 4 x 1024 + 904
SMALL = {"n": 5000, "tile": 1024, "block_dim": 3}
LAST = 5000 - 4 * 1024


def params(**kw) -> dict:
    return {**SMALL, "buffer_num": 2, "dtype": "fp16", **kw}


def expected(x: np.ndarray, y: np.ndarray, dtype: str) -> np.ndarray:
    """The kernel's output as the hardware path defines it, computed without the kernel."""
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    exact = x64 + y64  # exact: two fp16/bf16/fp32 values never need more than 53 bits here
    if dtype == "fp16":
        return exact.astype(np.float16)
    if dtype == "fp32":
        return exact.astype(np.float32)
    if dtype == "bf16":
        fp32_sum = (x.astype(np.float32) + y.astype(np.float32))
        return fp32_sum.astype(ml_dtypes.bfloat16)
    total = x.astype(np.int64) + y.astype(np.int64)
    return total.astype(STORAGE[dtype])


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(UINT[a.dtype.itemsize])


# ---- numerics ----------------------------------------------------------------------------
NUMERIC_CASES = [("910B2", d, b) for d in va.DTYPES for b in (1, 2)] + \
    [("910", "fp16", 1), ("910", "fp16", 2), ("310P3", "fp16", 1), ("310P3", "fp16", 2)]


@pytest.mark.parametrize("preset,dtype,buffer_num", NUMERIC_CASES)
def test_execute_is_bit_exact_and_within_unit_roundoff(preset, dtype, buffer_num):
    chip = hp.load(preset)
    p = va.check(chip, params(dtype=dtype, buffer_num=buffer_num, block_dim=2))
    inputs = va.make_inputs(p, np.random.default_rng(1234))
    x, y = inputs["x"], inputs["y"]
    assert x.dtype == STORAGE[dtype] and y.dtype == STORAGE[dtype]
    assert x.size == y.size == p["n"]  # small n: every element, partial last tile included
    z = va.execute(p, inputs)["z"]
    want = expected(x, y, dtype)
    assert z.dtype == want.dtype and z.shape == want.shape
    if dtype.startswith("int"):
        # exact: the inputs never overflow and the result equals the true sum
        assert np.array_equal(z.astype(np.int64), x.astype(np.int64) + y.astype(np.int64))
    assert np.array_equal(bits(z), bits(want)), "bit-for-bit mismatch"
    # the partial last tile is really computed (and not, say, left as empty_like garbage)
    assert np.array_equal(bits(z[-LAST:]), bits(want[-LAST:]))
    # error bound relative to the exact sum
    exact = x.astype(np.float64) + y.astype(np.float64)
    assert np.array_equal(va.reference(inputs)["z"], exact)
    err = np.abs(z.astype(np.float64) - exact)
    u = va.unit_roundoff(p)
    assert np.all(err <= u * np.abs(exact))
    if dtype.startswith("int"):
        assert u == 0.0 and err.max() == 0.0
    else:
        assert err.max() > 0.0  # random inputs do round: the bound is actually exercised


@pytest.mark.parametrize("dtype,x,y,z", [
    # round to nearest, ties to even, once
    ("fp16", [2048.0, 2048.0, 1.0, 65504.0], [1.0, 3.0, 2.0 ** -11, 8.0],
     [2048.0, 2052.0, 1.0, 65504.0]),
    ("fp16", [2.0 ** -24, -1.5], [2.0 ** -24, 1.5], [2.0 ** -23, 0.0]),  # subnormal, exact
    ("fp32", [1.0, 1.0], [2.0 ** -24, 3 * 2.0 ** -24], [1.0, 1.0 + 2.0 ** -22]),
    # bf16: 1 + 2^-8 is a tie -> 1 (even); (1 + 2^-7) + 2^-8 is a tie -> 1 + 2^-6 (even)
    ("bf16", [1.0, 1.0 + 2.0 ** -7, 256.0], [2.0 ** -8, 2.0 ** -8, 1.0], [1.0, 1.0 + 2.0 ** -6,
                                                                          256.0]),
    ("int16", [32000, -32000, 7], [767, -768, -9], [32767, -32768, -2]),
    ("int32", [2 ** 31 - 2, -(2 ** 31) + 1], [1, -1], [2 ** 31 - 1, -(2 ** 31)]),
])
def test_execute_hand_checked_values(dtype, x, y, z):
    dt = STORAGE[dtype]
    xs, ys = np.asarray(x).astype(dt), np.asarray(y).astype(dt)
    assert np.array_equal(xs.astype(np.float64), np.asarray(x, np.float64))  # inputs exact
    p = va.check(B2, {"n": len(x), "tile": 16, "block_dim": 1, "dtype": dtype})
    out = va.execute(p, {"x": xs, "y": ys, "tiles": va.verified_tiles(p)})["z"]
    assert out.astype(np.float64).tolist() == [float(v) for v in z]
    assert np.array_equal(bits(out), bits(expected(xs, ys, dtype)))


def test_inputs_depend_only_on_the_rng():
    p = va.check(B2, params())
    a = va.make_inputs(p, np.random.default_rng(7))
    b = va.make_inputs(p, np.random.default_rng(7))
    c = va.make_inputs(p, np.random.default_rng(8))
    assert np.array_equal(bits(a["x"]), bits(b["x"])) and np.array_equal(bits(a["y"]),
                                                                         bits(b["y"]))
    assert not np.array_equal(bits(a["x"]), bits(c["x"]))


@pytest.mark.parametrize("preset,dtype", [("910B2", "fp16"), ("910B2", "bf16"),
                                          ("910B2", "int32"), ("910", "fp16"),
                                          ("310P3", "fp16")])
def test_simulate_numerics_match_an_independent_check(preset, dtype):
    seed = 99
    block_dim = min(3, len(hp.load(preset).vector_core_ids()))
    sc = Scenario.make(preset=preset, params=params(dtype=dtype, block_dim=block_dim),
                       seed=seed)
    res = simulate(sc)
    inputs = va.make_inputs(res.params, np.random.default_rng(seed))
    exact = inputs["x"].astype(np.float64) + inputs["y"].astype(np.float64)
    got = expected(inputs["x"], inputs["y"], dtype).astype(np.float64)
    check = res.numerics
    assert check.passed
    assert check.verified == check.total == 5000
    assert check.max_abs_error == np.abs(got - exact).max()
    assert check.bound == va.unit_roundoff({"dtype": dtype})
    assert check.max_rel_error <= check.bound
    assert res.notes == ()  # everything verified: no sampling note


# ---- the verified sample -----------------------------------------------------------------
def test_verified_tiles_all_when_small():
    p = va.check(B2, params())
    assert va.verified_tiles(p).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("n,tile", [(1 << 24, 1024), ((1 << 24) + 100, 1024),
                                    (1 << 30, 4096), (1 << 34, 16384)])
def test_verified_tiles_for_large_n_are_first_tiles_plus_last(n, tile):
    p = va.check(B2, {"n": n, "tile": tile, "buffer_num": 1})
    tiles = va.verified_tiles(p)
    n_tiles = -(-n // tile)
    budget = min(va.VERIFY_TILES, max(1, va.VERIFY_ELEMENTS // tile))
    assert len(tiles) == budget < n_tiles
    assert tiles[:-1].tolist() == list(range(budget - 1))
    assert tiles[-1] == n_tiles - 1
    sizes = np.full(n_tiles, tile)
    sizes[-1] = n - tile * (n_tiles - 1)
    assert sizes[tiles].sum() <= va.VERIFY_ELEMENTS + tile  # bounded work


def test_large_n_verifies_a_bounded_sample_and_says_so():
    tile = 16384
    n = 192 * tile + 5  # 193 tiles, the last one of 5 elements
    res = simulate(Scenario.make(params={"n": n, "tile": tile, "block_dim": 48,
                                         "buffer_num": 1}))
    verified = 7 * tile + 5  # budget 2^17 / 16384 = 8 tiles: tiles 0..6 and 192
    assert res.numerics.passed
    assert (res.numerics.verified, res.numerics.total) == (verified, n)
    assert res.notes == (("note.verified_sample", {"verified": verified, "total": n}),)
    # timing still covers every tile
    assert res.metrics["instructions"] == 4 * 193


# ---- program structure -------------------------------------------------------------------
def _padded(n: int, tile: int, nbytes: int) -> list[int]:
    sizes = [tile] * (n // tile) + ([n % tile] if n % tile else [])
    return [-(-s * nbytes // 32) * 32 for s in sizes]


@pytest.mark.parametrize("dtype", va.DTYPES)
@pytest.mark.parametrize("n,tile,block_dim", [(5000, 1024, 3), (4096, 512, 8), (1000, 256, 1),
                                              (17, 16, 2), (12345, 2048, 48)])
def test_program_structure(dtype, n, tile, block_dim):
    p = va.check(B2, {"n": n, "tile": tile, "block_dim": block_dim, "dtype": dtype})
    prog = va.build(B2, p)
    c = prog.cols
    n_tiles = -(-n // tile)
    per_tile = 7 if dtype == "bf16" else 4  # bf16 is not in the 910B2 vector dtypes
    assert "bf16" not in B2.vector_dtypes
    assert len(prog) == per_tile * n_tiles
    ops = np.asarray(prog.op_names)[c["op"]]
    names = ["CopyIn x", "CopyIn y", "Add", "CopyOut z"]
    if dtype == "bf16":
        names = ["CopyIn x", "CopyIn y", "Cast x->fp32", "Cast y->fp32", "Add",
                 "Cast z->bf16", "CopyOut z"]
    assert sorted(set(ops)) == sorted(names)
    for name in names:
        assert (ops == name).sum() == n_tiles
    # every CopyIn is MTE2 GM -> UB and every CopyOut MTE3 UB -> GM; the rest is vector
    cin, cout = np.char.startswith(ops.astype(str), "CopyIn"), ops == "CopyOut z"
    assert np.all(c["kind"][cin | cout] == Kind.TRANSFER)
    assert np.all(c["pipe"][cin] == Pipe.MTE2)
    assert np.all((c["src"][cin] == Level.GM) & (c["dst"][cin] == Level.UB))
    assert np.all(c["pipe"][cout] == Pipe.MTE3)
    assert np.all((c["src"][cout] == Level.UB) & (c["dst"][cout] == Level.GM))
    vec = ~(cin | cout)
    assert np.all(c["pipe"][vec] == Pipe.V) and np.all(c["kind"][vec] == Kind.VECTOR)
    # bytes per transfer: the tile's bytes padded to 32 B, per tile, in tile order
    want = _padded(n, tile, BYTES[dtype])
    for name in ("CopyIn x", "CopyIn y", "CopyOut z"):
        sel = ops == name
        order = np.argsort(c["task"][sel], kind="stable")
        assert c["nbytes"][sel][order].tolist() == want
        assert c["task"][sel][order].tolist() == list(range(n_tiles))
    total = int(c["nbytes"][cin | cout].sum())
    assert total == 3 * sum(want)
    assert 3 * n * BYTES[dtype] <= total < 3 * n * BYTES[dtype] + 3 * 32
    if (n * BYTES[dtype]) % 32 == 0 and n % tile == 0:
        assert total == 3 * n * BYTES[dtype]
    # vector ops cover every element once (per op)
    assert c["elems"][ops == "Add"].sum() == n
    # tiles spread over block_dim cores in contiguous blocks, counts differing by <= 1
    vcores = np.asarray(B2.vector_core_ids())
    add = ops == "Add"
    tile_core = c["core"][add][np.argsort(c["task"][add])]
    assert set(tile_core) <= set(vcores)
    slot = np.searchsorted(vcores, tile_core)
    assert np.all(np.diff(slot) >= 0), "each core's tiles are one contiguous block"
    counts = np.bincount(slot, minlength=block_dim)[:block_dim]
    assert counts.sum() == n_tiles
    assert counts.max() - counts.min() <= 1
    assert len(set(tile_core)) == min(block_dim, n_tiles)
    # every instruction of a tile runs on that tile's core
    for t in range(n_tiles):
        assert set(c["core"][c["task"] == t]) == {tile_core[t]}


@pytest.mark.parametrize("preset", ["910", "310P3"])
def test_coupled_chips_run_on_the_ai_cores(preset):
    chip = hp.load(preset)
    cores = len(chip.vector_core_ids())
    prog = va.build(chip, {"n": 4096 * cores, "tile": 1024, "block_dim": cores})
    assert sorted(set(prog.cols["core"].tolist())) == list(range(chip.ai_cores))


@given(n_tiles=st.integers(1, 400), block_dim=st.integers(1, 48), tail=st.integers(0, 15))
def test_layout_contiguous_balanced_blocks(n_tiles, block_dim, tail):
    tile = 16
    n = n_tiles * tile - tail
    lay = va.layout({"n": n, "tile": tile, "block_dim": block_dim, "dtype": "fp16"})
    assert lay.n_tiles == n_tiles
    assert lay.tile_elems().sum() == n and lay.tile_elems()[-1] == tile - tail
    core = lay.tile_core
    assert np.all(np.diff(core) >= 0) and core.min() >= 0 and core.max() < block_dim
    counts = np.bincount(core, minlength=block_dim)
    assert counts.max() - counts.min() <= 1
    for k in range(block_dim):  # iterations 0, 1, ... within each core
        assert lay.tile_iter[core == k].tolist() == list(range(counts[k]))


# ---- scheduling: queues and double buffering ---------------------------------------------
def _by(tl, op):
    rows = tl[tl["op"].astype(str) == op].sort_values("task")
    return rows["start_ns"].to_numpy(), rows["end_ns"].to_numpy(), rows["core"].to_numpy()


@pytest.mark.parametrize("buffer_num", [1, 2])
def test_queue_dependencies_hold_in_the_timeline(buffer_num):
    res = simulate(Scenario.make(params={"n": 8 * 2048, "tile": 2048, "block_dim": 2,
                                         "buffer_num": buffer_num}))
    tl = res.timeline
    xs, xe, core = _by(tl, "CopyIn x")
    ys, ye, _ = _by(tl, "CopyIn y")
    as_, ae, _ = _by(tl, "Add")
    os_, oe, _ = _by(tl, "CopyOut z")
    assert np.all(as_ >= np.maximum(xe, ye))  # DeQue waits for both EnQues
    assert np.all(os_ >= ae)
    # AllocTensor: tile i's input slot is the one tile i - BUFFER_NUM freed on the same core
    d = buffer_num
    same = core[d:] == core[:-d]
    assert same.any()
    assert np.all(xs[d:][same] >= ae[:-d][same])
    assert np.all(ys[d:][same] >= ae[:-d][same])
    assert np.all(as_[d:][same] >= oe[:-d][same])  # outQueueZ slot freed by CopyOut i - d


def test_double_buffering_shortens_a_multi_tile_run_and_raises_overlap():
    base = {"n": 8 * 4096 * 2, "tile": 4096, "block_dim": 2}
    one = simulate(Scenario.make(params={**base, "buffer_num": 1}))
    two = simulate(Scenario.make(params={**base, "buffer_num": 2}))
    assert one.metrics["instructions"] == two.metrics["instructions"] == 4 * 16
    assert two.metrics["makespan_us"] < one.metrics["makespan_us"]
    assert two.metrics["overlap_ratio"] > one.metrics["overlap_ratio"]
    assert two.metrics["overlap_ratio"] > 0.5
    assert one.metrics["hbm_bytes"] == two.metrics["hbm_bytes"] == 3 * base["n"] * 2


# ---- bad input ---------------------------------------------------------------------------
def _refused(chip, p, field):
    with pytest.raises(InputError) as info:
        va.check(chip, p)
    err = info.value
    assert err.field == field
    assert field in str(err)
    return err


@pytest.mark.parametrize("dtype,tile", [("fp16", 24), ("fp16", 1000), ("int16", 40),
                                        ("fp32", 20), ("int32", 1004), ("bf16", 8200)])
def test_tile_must_be_a_multiple_of_32_bytes(dtype, tile):
    err = _refused(B2, {"tile": tile, "dtype": dtype}, "params.tile")
    assert err.value == tile
    assert str(32 // BYTES[dtype]) in err.allowed
    # the next multiple is accepted
    step = 32 // BYTES[dtype]
    assert va.check(B2, {"tile": -(-tile // step) * step, "dtype": dtype, "buffer_num": 1,
                         "n": 4096})["tile"] % step == 0


def _largest_fitting(chip, dtype, buffer_num) -> int:
    step = 32 // BYTES[dtype]
    fp32_scratch = 8 if dtype not in chip.vector_dtypes else 0
    t = step
    while (t + step) * (3 * buffer_num * BYTES[dtype] + fp32_scratch) <= chip.ub_bytes:
        t += step
    return t


@pytest.mark.parametrize("preset,overrides", [("910B2", {}), ("910", {}),
                                              ("910B2", {"ub_KiB": 64})])
@pytest.mark.parametrize("dtype", va.DTYPES)
@pytest.mark.parametrize("buffer_num", [1, 2])
def test_tile_too_large_for_ub_names_the_largest_fitting_tile(preset, overrides, dtype,
                                                              buffer_num):
    chip = hp.load(preset, **overrides)
    fit = _largest_fitting(chip, dtype, buffer_num)
    step = 32 // BYTES[dtype]
    base = {"dtype": dtype, "buffer_num": buffer_num, "block_dim": 1}
    err = _refused(chip, {**base, "tile": fit + step}, "params.tile")
    assert re.search(rf"\b{fit}\b", str(err)), str(err)
    assert str(chip.ub_bytes) in str(err)
    assert va.check(chip, {**base, "tile": fit})["tile"] == fit
    assert va.ub_bytes_needed(chip, {**base, "tile": fit}) <= chip.ub_bytes


@pytest.mark.parametrize("preset", hp.list_presets())
def test_block_dim_is_bounded_by_the_chips_vector_cores(preset):
    chip = hp.load(preset)
    cores = len(chip.vector_core_ids())
    expect = chip.vector_cores if chip.architecture == "split" else chip.ai_cores
    assert cores == expect
    assert va.check(chip, {"block_dim": cores})["block_dim"] == cores
    err = _refused(chip, {"block_dim": cores + 1}, "params.block_dim")
    assert err.value == cores + 1 and str(cores) in err.allowed


@pytest.mark.parametrize("p,field", [
    ({"dtype": "fp64"}, "params.dtype"),
    ({"dtype": "FP16"}, "params.dtype"),
    ({"dtype": 16}, "params.dtype"),
    ({"n": 0}, "params.n"),
    ({"n": -5}, "params.n"),
    ({"n": (1 << 34) + 1}, "params.n"),
    ({"block_dim": 0}, "params.block_dim"),
    ({"buffer_num": 3}, "params.buffer_num"),
    ({"tile": 8}, "params.tile"),
    ({"tiles": 1024}, "params.tiles"),
    ({"N": 5}, "params.N"),
    ({"n": "many"}, "params.n"),
    ({"n": ""}, "params.n"),
    ({"n": "2.5"}, "params.n"),
    ({"tile": 2.5}, "params.tile"),
    ({"n": True}, "params.n"),
    ({"buffer_num": False}, "params.buffer_num"),
    ({"n": None}, "params.n"),
    ({"n": [1000]}, "params.n"),
    ({"n": float("nan")}, "params.n"),
    ({"n": float("inf")}, "params.n"),
])
def test_bad_parameters_are_refused_naming_the_field(p, field):
    _refused(B2, p, field)


def test_whole_floats_are_accepted_as_integers():
    p = va.check(B2, {"tile": 2048.0, "n": 1e6})
    assert p["tile"] == 2048 and type(p["tile"]) is int
    assert p["n"] == 1_000_000 and type(p["n"]) is int


def test_defaults_fill_missing_parameters():
    assert va.check(B2, {}) == {s.name: s.default for s in va.PARAMS}


@pytest.mark.parametrize("preset", hp.list_presets())
def test_default_block_dim_is_every_vector_core(preset):
    chip = hp.load(preset)
    cores = len(chip.vector_core_ids())
    assert va.check(chip, {})["block_dim"] == min(cores, 48)
    assert va.check(chip, {"block_dim": 1})["block_dim"] == 1  # an explicit value wins


def test_huge_integer_is_an_input_error():
    # float(10**400) overflows: still an InputError naming the field, not an OverflowError
    _refused(B2, {"n": 10 ** 400}, "params.n")
    _refused(B2, {"tile": -(10 ** 400)}, "params.tile")

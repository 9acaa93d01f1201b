"""The RoPE kernel (kernels/rope): its numerics against float64 (and against the complex
form of the rotation, written here independently) with a bound that bites, its program
worked by hand on a tiny shape (q and k heads in place, cos and sin rows per tile, tiles
per core, TQue slots), its behaviour in time, the engines on it, its refusals and its
automatic choice of heads per tile."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core import Scenario, simulate
from kernels.common import rows as rw
from kernels.common.formats import UNIT_ROUNDOFF, round_to
from kernels.common.program import Level
from kernels.rope import kernel as pk
from kernels.rope import numerics as pn
from tests.rowwise_helpers import (
    B2,
    FP32_TIGHT,
    TIGHT,
    VECTOR_CORES,
    assert_contiguous_blocks,
    assert_engines,
    assert_queues,
    copy_overlaps_compute,
    executed,
    expected_pipes,
    fp32_path_ratio,
    moved,
    op_counts,
    op_names,
    pipe_counts,
    ratios,
    refused,
    slot_gaps,
)

F32 = np.float32
DTYPES = ("fp16", "bf16")
#: 3 tokens, 2 q heads and 1 k head of 32, a head per tile, on two cores: worked by hand
TINY = {"rows": 3, "q_heads": 2, "kv_heads": 1, "head_dim": 32, "block_dim": 2,
        "tile_heads": 1, "buffer_num": 2}


def params(**kw) -> dict:
    return pk.check(B2, {**TINY, **kw})


def inputs_of(p: dict, seed: int = 0) -> dict:
    return pn.make_inputs(p, np.random.default_rng(seed))


def complex_rope(x: np.ndarray, positions: np.ndarray, theta: float) -> np.ndarray:
    """RoPE as a complex product, in float64: pair i of a head (x_i, x_(i + d/2)) is
    z = x_i + j x_(i + d/2), turned by e^(j t / theta^(2i/d)); out = (Re, Im) halves."""
    d = x.shape[-1]
    freq = 1.0 / theta ** (2.0 * np.arange(d // 2) / d)
    z = x[..., :d // 2].astype(np.float64) + 1j * x[..., d // 2:].astype(np.float64)
    w = z * np.exp(1j * positions[:, None, None] * freq[None, None, :])
    return np.concatenate([w.real, w.imag], axis=-1).reshape(len(x), -1)


# ---- numerics ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [
    {"rows": 3, "q_heads": 2, "kv_heads": 1, "head_dim": 32},
    {"rows": 5, "q_heads": 4, "kv_heads": 2, "head_dim": 64, "tile_rows": 2,
     "tile_heads": 3},  # rows not a multiple of tile_rows; q in chunks of 3 + 1 heads
    {"rows": 2, "q_heads": 3, "kv_heads": 1, "head_dim": 128, "rope_theta": 10000.0,
     "max_position": 1 << 20},  # Llama 2's theta, far positions
])
def test_numerics_pass_with_a_tight_bound(shape, dtype):
    result = simulate(Scenario.make("910B2", "rope", {**shape, "dtype": dtype}))
    check = result.numerics
    total = shape["rows"] * (shape["q_heads"] + shape["kv_heads"]) * shape["head_dim"]
    assert check.passed and check.verified == check.total == total
    assert check.bound == UNIT_ROUNDOFF[dtype]
    assert TIGHT <= check.bound_ratio <= 1.0, check.bound_ratio  # see rowwise_helpers


@pytest.mark.parametrize("dtype", DTYPES)
def test_fp32_path_bound_is_tight(dtype):
    """The fp32 term gamma_3(u32) (|x cos| + |rotate_half(x) sin|) is not vacuous."""
    p = params(rows=16, q_heads=4, kv_heads=2, head_dim=128, dtype=dtype, tile_heads=0)
    ratio = fp32_path_ratio(pn, p, inputs_of(p))
    assert FP32_TIGHT <= ratio <= 1.0, ratio


@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_the_complex_form(dtype):
    """The reference equals an independent float64 formula (the complex product), and the
    kernel's output is within the bound of that formula."""
    p = params(rows=6, q_heads=3, kv_heads=2, head_dim=64, dtype=dtype, tile_heads=0)
    inp = inputs_of(p, seed=5)
    want = complex_rope(inp["x"], inp["positions"], inp["theta"])
    ref = pn.reference(inp)["y"]
    np.testing.assert_allclose(ref, want, rtol=0, atol=1e-12 * np.abs(want).max())
    err = np.abs(executed(pn, p, inp).astype(np.float64) - want)
    assert np.all(err <= pn.error_bound(p, inp, want))
    assert err.max() > 0  # the rounding is exercised


def test_position_zero_is_the_identity():
    """cos 0 = 1 and sin 0 = 0 exactly: x cos + rotate_half(x) sin is x, bit for bit."""
    p = params(rows=4)
    inp = {**inputs_of(p), "positions": np.zeros(4, np.int64)}
    y = executed(pn, p, inp)
    assert np.array_equal(y.astype(np.float64), inp["x"].reshape(4, -1).astype(np.float64))


def test_theta_matters():
    """Same tokens and positions, two models' rope_theta: each output passes against its
    own reference and fails against the other's."""
    p_a = params(rows=8, rope_theta=500000.0)
    p_b = params(rows=8, rope_theta=10000.0)
    a, b = inputs_of(p_a), inputs_of(p_b)
    assert np.array_equal(a["x"], b["x"]) and np.array_equal(a["positions"], b["positions"])
    assert (a["theta"], b["theta"]) == (500000.0, 10000.0)
    assert ratios(pn, p_a, a, executed(pn, p_a, a))[1]
    assert ratios(pn, p_b, b, executed(pn, p_b, b))[1]
    assert not ratios(pn, p_a, a, executed(pn, p_b, b))[1]
    assert not ratios(pn, p_b, b, executed(pn, p_a, a))[1]


def test_inputs_are_whole_tokens_in_the_storage_format():
    p = params(rows=4096, q_heads=32, kv_heads=8, head_dim=128, tile_heads=0, block_dim=0)
    inp = inputs_of(p)
    rows = rw.VERIFY_ELEMENTS // (40 * 128)
    assert inp["x"].shape == (rows, 40, 128) and inp["x"].dtype == np.float16
    assert inp["positions"].shape == (rows,) and inp["positions"].max() < p["max_position"]
    assert pn.output_elements(p) == 4096 * 40 * 128


# -- wrong arithmetic must fail the bound
def _rotated(x, cos, sin, dtype):
    return round_to(x * cos + pn.rotate_half(x) * sin, dtype).reshape(len(x), -1)


def next_position(p, inp):
    return executed(pn, p, {**inp, "positions": inp["positions"] + 1})


def another_theta(p, inp):
    return executed(pn, p, {**inp, "theta": 10000.0})  # Llama 2's, where 500000 was asked


def interleaved_pairs(p, inp):
    """GPT-J's pairing (x_2i, x_2i+1) instead of rotate-half's (x_i, x_i+d/2)."""
    x = inp["x"].astype(F32)
    ang = pn.angles(inp["positions"], x.shape[-1], inp["theta"])
    cos, sin = (np.repeat(f(ang), 2, axis=-1)[:, None, :].astype(F32) for f in (np.cos, np.sin))
    turned = np.empty_like(x)
    turned[..., 0::2], turned[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return round_to(x * cos + turned * sin, p["dtype"]).reshape(len(x), -1)


def rounded_twice(p, inp):
    """Each product cast to the storage format before the Add."""
    cos, sin = pn.tables(inp, F32)
    x, r = inp["x"].astype(F32), (lambda a: round_to(a, p["dtype"]).astype(F32))
    return round_to(r(x * cos) + r(pn.rotate_half(x) * sin), p["dtype"]).reshape(len(x), -1)


def storage_tables(p, inp):
    """cos and sin tables in the storage format instead of fp32."""
    cos, sin = (round_to(t, p["dtype"]).astype(F32) for t in pn.tables(inp, F32))
    return _rotated(inp["x"].astype(F32), cos, sin, p["dtype"])


def fp32_angles(p, inp):
    """The angle t x inv_freq computed in fp32 (a host bug: positions of thousands lose
    the angle's low bits) rather than in float64."""
    x = inp["x"].astype(F32)
    ang = pn.angles(inp["positions"], x.shape[-1], inp["theta"]).astype(F32)
    full = np.concatenate([ang, ang], axis=-1)[:, None, :]
    return _rotated(x, np.cos(full), np.sin(full), p["dtype"])


def coarser_format(p, inp):
    return round_to(executed(pn, {**p, "dtype": "fp32"}, inp), "bf16")


WRONG = [(next_position, DTYPES), (another_theta, DTYPES), (interleaved_pairs, DTYPES),
         (rounded_twice, DTYPES), (storage_tables, DTYPES), (fp32_angles, ("fp16",)),
         (coarser_format, ("fp16",))]


@pytest.mark.parametrize("wrong,dtype", [(w, d) for w, ds in WRONG for d in ds],
                         ids=lambda v: getattr(v, "__name__", v))
def test_wrong_arithmetic_fails_the_bound(wrong, dtype):
    p = params(rows=8, q_heads=2, kv_heads=1, head_dim=64, dtype=dtype, tile_heads=0)
    inp = inputs_of(p)
    ratio, ok = ratios(pn, p, inp, executed(pn, p, inp))
    assert ok and ratio <= 1.0
    ratio, ok = ratios(pn, p, inp, wrong(p, inp))
    assert not ok and ratio > 1.0, ratio


# ---- the program, worked by hand ---------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_program_by_hand(dtype):
    """3 tokens x (q: 2 heads, k: 1 head) of 32, a head per tile: 3 tiles per token (q0,
    q1, k0), 9 tiles, split 5 | 4 over two cores. Per tile: CopyIn of the head, of the
    token's cos row and of its sin row (32 fp32 each), 7 vector ops, CopyOut in place."""
    p = params(dtype=dtype)
    prog = pk.build(B2, p)
    s = pk.shape_of(p)
    assert pipe_counts(prog) == {"MTE2": 3 * 9, "V": 7 * 9, "MTE3": 9}
    assert pipe_counts(prog) == expected_pipes(pk.row_op(s), 9, 2)
    assert len(prog) == pk.instruction_count(B2, s)
    counts = op_counts(prog)
    assert (counts["CopyIn q"], counts["CopyIn k"]) == (6, 3)
    assert (counts["CopyOut q"], counts["CopyOut k"]) == (6, 3)
    assert counts["CopyIn cos"] == counts["CopyIn sin"] == 9
    heads = 3 * (2 + 1) * 32 * 2  # q and k of every token, 2-byte elements
    assert moved(prog, Level.GM, Level.UB) == heads + 2 * 9 * 32 * 4
    assert moved(prog, Level.UB, Level.GM) == heads
    names, c = op_names(prog), prog.cols
    assert c["elems"][names == "Muls -1 (half)"].tolist() == [16] * 9  # half a head
    assert c["elems"][names == "Mul sin"].sum() == 3 * 3 * 32
    assert assert_contiguous_blocks(prog, VECTOR_CORES[:2]) == {24: [0, 1, 2, 3, 4],
                                                                25: [5, 6, 7, 8]}


def test_in_place_and_shared_tables():
    """Each tile writes back the GM region it read (V is not rotated, q and k are updated
    in place); the tiles of one token read one cos region and one sin region."""
    prog = pk.build(B2, params())
    names, c = op_names(prog), prog.cols

    def region(*labels):
        sel = np.isin(names, labels)
        return dict(zip(c["task"][sel].tolist(), c["region"][sel].tolist()))

    read, written = region("CopyIn q", "CopyIn k"), region("CopyOut q", "CopyOut k")
    assert read == written and len(set(read.values())) == 9
    for table in ("CopyIn cos", "CopyIn sin"):
        by_tile = region(table)
        assert [by_tile[t] for t in range(9)] == [by_tile[3 * (t // 3)] for t in range(9)]
        assert len(set(by_tile.values())) == 3  # one per token
    assert not set(region("CopyIn cos").values()) & set(region("CopyIn sin").values())


def test_auto_heads_per_tile_by_hand():
    """tile_heads = 0 on 2 cores, 3 tokens: the rows alone give every core a tile, so a
    tile is a whole part (q: 64 elements, k: 32): 6 tiles, 3 per core."""
    p = params(tile_heads=0)
    tiles = pk.plan(B2, pk.shape_of(p))
    assert tiles.cols.tolist() == [64, 32] * 3 and tiles.part.tolist() == [0, 1] * 3
    prog = pk.build(B2, p)
    assert pipe_counts(prog) == {"MTE2": 18, "V": 42, "MTE3": 6}
    assert moved(prog, Level.GM, Level.UB) == 3 * 96 * 2 + 2 * 6 * 32 * 4


@pytest.mark.parametrize("buffer_num", [1, 2])
def test_tque_slots_in_the_timeline(buffer_num):
    """16 tiles (8 tokens x q, k) on 2 cores: a slot of the heads' queue is freed by the
    Cast to fp32, of cos by Mul cos, of sin by Mul sin; the output's by its CopyOut."""
    p = {**TINY, "rows": 8, "head_dim": 64, "tile_heads": 0, "buffer_num": buffer_num}
    result = simulate(Scenario.make("910B2", "rope", p))
    tl = result.timeline
    s = pk.shape_of(result.params)
    assert len(pk.plan(B2, s)) == 16
    assert_queues(tl, pk.row_op(s), ("q", "k"), buffer_num)
    early = slot_gaps(tl, {"CopyIn q", "CopyIn k"}, {"Cast to fp32"}, 1)
    if buffer_num == 1:
        assert early.min() >= -1e-6
    else:
        assert early.min() < 0 and copy_overlaps_compute(tl)


# ---- time --------------------------------------------------------------------------------


@pytest.mark.parametrize("buffer_num", [1, 2])
def test_engines_agree_and_invariants_hold(buffer_num):
    p = params(rows=5, tile_rows=2, q_heads=3, tile_heads=2, buffer_num=buffer_num)
    assert assert_engines(pk.build(B2, p)) > 0


# ---- refusals ----------------------------------------------------------------------------
@pytest.mark.parametrize("bad,field", [
    ({"head_dim": 24}, "params.head_dim"),  # not whole 32-byte blocks of fp16
    ({"head_dim": 40, "dtype": "bf16"}, "params.head_dim"),
    ({"head_dim": 8}, "params.head_dim"),  # below the parameter's range
    ({"tile_heads": 3}, "params.tile_heads"),  # more than max(q_heads, kv_heads) = 2
    ({"q_heads": 64, "head_dim": 1024, "tile_heads": 64}, "params.tile_heads"),  # over UB
    ({"tile_rows": 4}, "params.tile_rows"),  # more than rows = 3
    ({"rows": 4096, "tile_rows": 4096, "tile_heads": 0}, "params.tile_rows"),  # over UB
    ({"block_dim": 49}, "params.block_dim"),  # 910B2 has 48 vector cores
    ({"dtype": "fp32"}, "params.dtype"),
    ({"rope_theta": 0.5}, "params.rope_theta"),
    ({"max_position": 0}, "params.max_position"),
    ({"hidden": 64}, "params.hidden"),  # not a parameter of RoPE
])
def test_refusals_name_the_field(bad, field):
    refused(pk.check, {**TINY, **bad}, field)


# ---- automatic heads per tile ------------------------------------------------------------
@pytest.mark.parametrize("shape,used", [
    ({"rows": 3, "q_heads": 8, "kv_heads": 8, "head_dim": 64}, 48),  # 3 x 16 heads
    ({"rows": 1, "q_heads": 32, "kv_heads": 16, "head_dim": 128}, 48),  # a head per core
    ({"rows": 2, "q_heads": 32, "kv_heads": 8, "head_dim": 128}, 40),  # 2 x 20 chunks
    ({"rows": 1, "q_heads": 4, "kv_heads": 1, "head_dim": 64}, 5),  # 5 heads: 5 cores
])
def test_auto_tiling_reaches_the_cores(shape, used):
    """Few tokens, 48 cores: the heads are split so that the tiles reach the cores (as far
    as whole heads allow), and the UB is never over-committed."""
    p = pk.check(B2, {**shape, "tile_heads": 0})
    s = pk.shape_of(p)
    tiles = pk.plan(B2, s)
    assert tiles.used_cores() == used == len(set(tiles.slots().tolist()))
    assert np.all(tiles.cols % s.head_dim == 0)  # whole heads
    assert rw.ub_share(B2, pk.row_op(s), tiles) <= 1.0


@pytest.mark.parametrize("shape,heads", [
    ({"rows": 96, "tile_rows": 2, "q_heads": 16, "kv_heads": 16, "head_dim": 1024}, 3),
    ({"rows": 1, "q_heads": 1024, "kv_heads": 1024, "head_dim": 1024}, 8),
])
def test_auto_tiling_is_as_wide_as_ub_allows(shape, heads):
    """When the cores have work enough (48 row blocks) or the parts are huge, a tile takes
    as many whole heads as UB holds, never more: by hand, 2 rows x 1024 with their cos and
    sin rows (2 x 2 x 2 x 4096 bytes) plus 40 bytes per column fit 3 heads in 196352
    bytes; 1 row: 8 heads."""
    s = pk.shape_of(pk.check(B2, {**shape, "tile_heads": 0}))
    tiles, op = pk.plan(B2, s), pk.row_op(s)
    cols, rows = int(tiles.cols.max()), int(tiles.rows.max())
    assert cols == heads * s.head_dim
    assert rw.ub_share(B2, op, tiles) <= 1.0
    assert op.ub_bytes(rows, cols + s.head_dim, s.buffer_num) > B2.ub_bytes


def test_auto_tiling_runs_one_wave_when_one_wave_fits():
    p = pk.check(B2, {"rows": 5, "q_heads": 32, "kv_heads": 8, "head_dim": 128})
    tiles = pk.plan(B2, pk.shape_of(p))
    assert len(tiles) <= len(tiles.cores)

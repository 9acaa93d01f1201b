"""The RMSNorm kernel (kernels/rmsnorm): its numerics against float64 with a bound that
bites, its program worked by hand on a tiny shape (instructions per pipe, bytes per path,
tiles per core, TQue slots, the gamma prologue once per core), its behaviour in time, the
engines on it, and its refusals."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core import Scenario, simulate
from kernels.common import rows as rw
from kernels.common.formats import UNIT_ROUNDOFF, round_to
from kernels.common.program import Level, VClass
from kernels.rmsnorm import kernel as rk
from kernels.rmsnorm import numerics as rn
from tests.rowwise_helpers import (
    B2,
    FP32_TIGHT,
    TIGHT,
    VECTOR_CORES,
    assert_contiguous_blocks,
    assert_engines,
    assert_queues,
    copy_overlaps_compute,
    depends_on,
    executed,
    expected_pipes,
    fp32_path_ratio,
    moved,
    op_counts,
    op_names,
    per_task,
    pipe_counts,
    ratios,
    refused,
    slot_gaps,
)

F32 = np.float32
DTYPES = ("fp16", "bf16")
#: rows=3 x hidden=64 on two cores, a tile per row: the shape worked by hand below
TINY = {"rows": 3, "hidden": 64, "block_dim": 2, "buffer_num": 2}


def params(**kw) -> dict:
    return rk.check(B2, {**TINY, **kw})


def inputs_of(p: dict, seed: int = 0) -> dict:
    return rn.make_inputs(p, np.random.default_rng(seed))


# ---- numerics ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [
    {"rows": 3, "hidden": 16},  # the narrowest row: one DataCopy block
    {"rows": 5, "hidden": 48, "tile_rows": 2},  # rows not a multiple of tile_rows
    {"rows": 7, "hidden": 4096, "tile_rows": 2, "block_dim": 2},  # long rows, 2+2+2+1
    {"rows": 2, "hidden": 1024, "eps": 0.1},  # the largest eps the parameter allows
])
def test_numerics_pass_with_a_tight_bound(shape, dtype):
    result = simulate(Scenario.make("910B2", "rmsnorm", {**shape, "dtype": dtype}))
    check = result.numerics
    assert check.passed and check.verified == check.total == shape["rows"] * shape["hidden"]
    assert check.bound == UNIT_ROUNDOFF[dtype]
    # below the bound, and within TIGHT of it (rowwise_helpers derives the factor)
    assert TIGHT <= check.bound_ratio <= 1.0, check.bound_ratio


@pytest.mark.parametrize("dtype", DTYPES)
def test_fp32_path_bound_is_tight(dtype):
    """The fp32 term gamma_k(u32) with k = fp32_steps(4096) = 20 steps is not vacuous."""
    p = params(rows=16, hidden=4096, dtype=dtype)
    assert rn.fp32_steps(4096) == 1 + 12 + 3 + 1 + 1 + 2
    ratio = fp32_path_ratio(rn, p, inputs_of(p))
    assert FP32_TIGHT <= ratio <= 1.0, ratio


def test_hand_checked_constant_row():
    """A row of equal values c normalises to sign(c) gamma: 2 / sqrt(4 + 1e-5) x 1.5 is
    1.5 (1 - 1.25e-6), which rounds to 1.5 in fp16 (u = 2^-11)."""
    p = params(rows=2, hidden=16)
    x = np.array([[2.0] * 16, [-0.5] * 16])
    g = np.full(16, 1.5)
    y = executed(rn, p, {"x": x, "gamma": g, "eps": 1e-5})
    assert y.dtype == np.float16
    assert y.astype(float).tolist() == [[1.5] * 16, [-1.5] * 16]


def test_inputs_are_whole_rows_in_the_storage_format():
    p = params(rows=4096, hidden=8192, block_dim=0, buffer_num=1)
    rows = rw.VERIFY_ELEMENTS // 8192
    inputs = inputs_of(p)
    assert inputs["x"].shape == (rows, 8192) and inputs["gamma"].shape == (8192,)
    assert inputs["x"].dtype == np.float16 and inputs["eps"] == p["eps"]
    assert rn.output_elements(p) == 4096 * 8192
    bf = params(rows=2, hidden=32, dtype="bf16")
    assert inputs_of(bf)["x"].dtype.name == "bfloat16"


# -- wrong arithmetic must fail the bound
def _factor(x: np.ndarray, eps: float, n: int) -> np.ndarray:
    return F32(1) / np.sqrt((x * x).sum(-1, dtype=F32) / F32(n) + F32(eps))


def no_eps(p, inp):
    x = inp["x"].astype(F32)
    return round_to(x * _factor(x, 0.0, x.shape[-1])[:, None] * inp["gamma"].astype(F32),
                    p["dtype"])


def mean_over_n_minus_1(p, inp):
    x = inp["x"].astype(F32)
    return round_to(x * _factor(x, inp["eps"], x.shape[-1] - 1)[:, None]
                    * inp["gamma"].astype(F32), p["dtype"])


def rounded_twice(p, inp):
    """The normalised row cast to the storage format before the Mul by gamma."""
    x = inp["x"].astype(F32)
    normed = round_to(x * _factor(x, inp["eps"], x.shape[-1])[:, None], p["dtype"])
    return round_to(normed.astype(F32) * inp["gamma"].astype(F32), p["dtype"])


def coarser_format(p, inp):
    """bf16 (8 bits of mantissa) where fp16 (11) was asked."""
    return round_to(executed(rn, {**p, "dtype": "fp32"}, inp), "bf16")


def storage_arithmetic(p, inp):
    """No Cast to fp32: every op (square, the pairwise sum, 1/n, eps, Sqrt, Div, the two
    Muls) rounded to the storage format."""
    def r(a):
        return round_to(a, p["dtype"]).astype(np.float64)
    x = inp["x"].astype(np.float64)
    acc = r(x * x)
    while acc.shape[-1] > 1:
        half = acc.shape[-1] // 2
        acc = r(acc[:, :half] + acc[:, half:])
    n = x.shape[-1]
    factor = r(1.0 / r(np.sqrt(r(r(acc[:, 0] * r(1.0 / n)) + r(inp["eps"])))))
    return r(r(x * factor[:, None]) * inp["gamma"].astype(np.float64))


WRONG = [(no_eps, DTYPES), (mean_over_n_minus_1, DTYPES), (rounded_twice, DTYPES),
         (coarser_format, ("fp16",)), (storage_arithmetic, DTYPES)]


@pytest.mark.parametrize("wrong,dtype", [(w, d) for w, ds in WRONG for d in ds],
                         ids=lambda v: getattr(v, "__name__", v))
def test_wrong_arithmetic_fails_the_bound(wrong, dtype):
    p = params(rows=16, hidden=64, dtype=dtype, eps=1e-3)
    inp = inputs_of(p)
    if wrong is no_eps:  # rows with mean(x^2) ~ 9 / 256: eps = 1e-3 moves 1 / rms by ~1.4%
        inp["x"] = round_to(inp["x"] / 16.0, dtype)
    ratio, ok = ratios(rn, p, inp, executed(rn, p, inp))
    assert ok and ratio <= 1.0  # the kernel's own arithmetic passes on these inputs
    ratio, ok = ratios(rn, p, inp, wrong(p, inp))
    assert not ok and ratio > 1.0, ratio


# ---- the program, worked by hand ---------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_program_by_hand(dtype):
    """3 rows of 64 on 2 cores, a tile per row: the tiles split 0, 1 | 2. Per tile CopyIn x,
    ten vector ops, CopyOut y; once per core CopyIn gamma and Cast gamma."""
    p = params(dtype=dtype)
    prog = rk.build(B2, p)
    s = rk.shape_of(p)
    assert pipe_counts(prog) == {"MTE2": 3 + 2, "V": 3 * 10 + 2, "MTE3": 3}
    assert pipe_counts(prog) == expected_pipes(rk.row_op(s), 3, 2)
    assert len(prog) == rk.instruction_count(B2, s) == 40
    counts = op_counts(prog)
    assert counts["CopyIn gamma"] == counts["Cast gamma"] == 2
    assert all(counts[v.label] == 3 for v in rk.row_op(s).compute)
    # bytes: x in and y out once, gamma once per core (2-byte elements either way)
    assert moved(prog, Level.GM, Level.UB) == 3 * 64 * 2 + 2 * 64 * 2
    assert moved(prog, Level.UB, Level.GM) == 3 * 64 * 2
    # vector work: whole rows, except the per-row scalars (the special-rate Sqrt, Div)
    names, c = op_names(prog), prog.cols
    assert c["elems"][names == "Mul x*x"].sum() == 3 * 64
    assert c["elems"][names == "Sqrt"].tolist() == [1, 1, 1]
    assert set(c["vclass"][np.isin(names, ["Sqrt", "Div 1/rms"])]) == {VClass.SPECIAL}
    assert assert_contiguous_blocks(prog, VECTOR_CORES[:2]) == {24: [0, 1], 25: [2]}


def test_prologue_runs_once_per_core_before_its_first_tile():
    prog = rk.build(B2, params())
    names, c = op_names(prog), prog.cols
    copy, cast = np.flatnonzero(names == "CopyIn gamma"), np.flatnonzero(names == "Cast gamma")
    assert c["core"][copy].tolist() == c["core"][cast].tolist() == [24, 25]
    first = {24: 0, 25: 2}  # each core's first tile
    for cp, ca in zip(copy, cast):
        core = int(c["core"][ca])
        assert depends_on(prog, ca, cp)
        head = np.flatnonzero((names == "Cast x") & (c["task"] == first[core]))[0]
        assert depends_on(prog, head, ca)
        # program order: the prologue precedes the core's tiles on its lanes
        lane = (c["core"] == core) & (c["pipe"] == c["pipe"][cp])
        assert c["seq"][cp] < c["seq"][lane & (names != "CopyIn gamma")].min()


def test_gamma_only_on_the_cores_with_tiles():
    """2 rows on 5 cores: the tiles go to two cores, which alone load gamma."""
    prog = rk.build(B2, params(rows=2, block_dim=5))
    names, c = op_names(prog), prog.cols
    blocks = assert_contiguous_blocks(prog, VECTOR_CORES[:5])
    assert sorted(c["core"][names == "CopyIn gamma"].tolist()) == sorted(blocks)
    assert pipe_counts(prog) == {"MTE2": 2 + 2, "V": 20 + 2, "MTE3": 2}
    assert moved(prog, Level.GM, Level.UB) == 2 * 64 * 2 + 2 * 64 * 2


def test_tail_tile_rows():
    """5 rows in tiles of 2: 2 + 2 + 1 rows, bytes still exactly x and y."""
    p = params(rows=5, tile_rows=2, hidden=128)
    prog = rk.build(B2, p)
    assert pipe_counts(prog) == {"MTE2": 3 + 2, "V": 30 + 2, "MTE3": 3}
    names, c = op_names(prog), prog.cols
    assert c["nbytes"][names == "CopyIn x"].tolist() == [2 * 256, 2 * 256, 256]
    assert moved(prog, Level.UB, Level.GM) == 5 * 128 * 2
    assert assert_contiguous_blocks(prog, VECTOR_CORES[:2]) == {24: [0, 1], 25: [2]}


@pytest.mark.parametrize("buffer_num", [1, 2])
def test_tque_slots_in_the_timeline(buffer_num):
    """8 tiles on 2 cores: with one slot, CopyIn x of tile k waits for Cast x of tile k-1
    (which frees the slot); with two, it overlaps tile k-1's compute."""
    p = {**TINY, "rows": 8, "hidden": 256, "buffer_num": buffer_num}
    result = simulate(Scenario.make("910B2", "rmsnorm", p))
    tl = result.timeline
    op = rk.row_op(rk.shape_of(result.params))
    assert_queues(tl, op, ("x",), buffer_num)
    early = slot_gaps(tl, {"CopyIn x"}, {"Cast x"}, 1)
    if buffer_num == 1:
        assert early.min() >= -1e-6
    else:
        assert early.min() < 0 and copy_overlaps_compute(tl)
    prog = rk.build(B2, result.params)
    names = op_names(prog)
    copy1 = np.flatnonzero((names == "CopyIn x") & (prog.cols["task"] == buffer_num))[0]
    cast0 = np.flatnonzero((names == "Cast x") & (prog.cols["task"] == 0))[0]
    assert depends_on(prog, copy1, cast0)  # tiles 0 .. 3 are core 24's
    # the first Cast x of each core waits for that core's Cast gamma
    casts = per_task(tl, {"Cast x"})
    for core in (24, 25):
        gamma_end = tl[(tl["op"] == "Cast gamma") & (tl["core"] == core)]["end_ns"].item()
        assert min(s for c, s, _ in casts.values() if c == core) >= gamma_end - 1e-6


# ---- time --------------------------------------------------------------------------------


@pytest.mark.parametrize("buffer_num", [1, 2])
def test_engines_agree_and_invariants_hold(buffer_num):
    p = params(rows=5, tile_rows=2, hidden=128, buffer_num=buffer_num)
    assert assert_engines(rk.build(B2, p)) > 0


# ---- refusals ----------------------------------------------------------------------------
@pytest.mark.parametrize("bad,field", [
    ({"hidden": 24}, "params.hidden"),  # not whole 32-byte blocks of fp16
    ({"hidden": 40, "dtype": "bf16"}, "params.hidden"),
    ({"hidden": 8}, "params.hidden"),  # below the parameter's range
    ({"hidden": 9824}, "params.hidden"),  # one row, two buffers: over UB (see below)
    ({"hidden": 1 << 17}, "params.hidden"),
    ({"tile_rows": 4}, "params.tile_rows"),  # more than rows = 3
    ({"rows": 64, "tile_rows": 64, "hidden": 8192}, "params.tile_rows"),  # over UB
    ({"block_dim": 49}, "params.block_dim"),  # 910B2 has 48 vector cores
    ({"dtype": "fp32"}, "params.dtype"),
    ({"eps": 0.0}, "params.eps"),
    ({"buffer_num": 3}, "params.buffer_num"),
    ({"heads": 2}, "params.heads"),  # not a parameter of RMSNorm
])
def test_refusals_name_the_field(bad, field):
    refused(rk.check, {**TINY, **bad}, field)


def test_ub_boundary_by_hand():
    """UB need of one row: 2 queues x buffer_num x 2 bytes + 8 bytes of fp32 scratch per
    element + 64 bytes per row + gamma resident in fp32 (4 per element): 20 h + 64 with
    two buffers, 16 h + 64 with one; 910B2's UB holds 196352 bytes."""
    assert B2.ub_bytes == 196352
    for buffer_num, per_elem in ((2, 20), (1, 16)):
        top = (B2.ub_bytes - 64) // per_elem // 16 * 16  # 9808 and 12272
        p = rk.check(B2, {"rows": 1, "hidden": top, "buffer_num": buffer_num})
        assert rk.ub_share(B2, p) == pytest.approx((per_elem * top + 64) / B2.ub_bytes)
        assert rk.ub_share(B2, p) <= 1.0
        refused(rk.check, {"rows": 1, "hidden": top + 16, "buffer_num": buffer_num},
                "params.hidden")


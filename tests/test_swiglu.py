"""The SwiGLU kernel (kernels/swiglu): its numerics against float64 with a bound that
bites, its program worked by hand on a tiny shape with a chunk tail (gate and up in, out
out, tiles per core, TQue slots), its behaviour in time, the engines on it, its refusals
and its automatic column chunk."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core import Scenario, simulate
from kernels.common import rows as rw
from kernels.common.formats import UNIT_ROUNDOFF, round_to
from kernels.common.program import Level, VClass
from kernels.swiglu import kernel as sk
from kernels.swiglu import numerics as sn
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
#: 3 tokens of 40 (two chunks of 16 and a tail of 8) on two cores: worked by hand
TINY = {"rows": 3, "intermediate": 40, "tile_cols": 16, "block_dim": 2, "buffer_num": 2}


def params(**kw) -> dict:
    return sk.check(B2, {**TINY, **kw})


def inputs_of(p: dict, seed: int = 0) -> dict:
    return sn.make_inputs(p, np.random.default_rng(seed))


# ---- numerics ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [
    {"rows": 3, "intermediate": 16},
    {"rows": 5, "intermediate": 1000, "tile_rows": 2, "tile_cols": 48},  # 2+2+1 rows,
    # 20 chunks of 48 and a tail of 40 (not a whole 32-byte block: DataCopyPad)
    {"rows": 2, "intermediate": 4096},
    {"rows": 7, "intermediate": 200, "block_dim": 3},
])
def test_numerics_pass_with_a_tight_bound(shape, dtype):
    result = simulate(Scenario.make("910B2", "swiglu", {**shape, "dtype": dtype}))
    check = result.numerics
    assert check.passed
    assert check.verified == check.total == shape["rows"] * shape["intermediate"]
    assert check.bound == UNIT_ROUNDOFF[dtype]
    assert TIGHT <= check.bound_ratio <= 1.0, check.bound_ratio  # see rowwise_helpers


@pytest.mark.parametrize("dtype", DTYPES)
def test_fp32_path_bound_is_tight(dtype):
    """The fp32 term gamma_11(u32) (Exp within 8 u32, Adds, Div, Mul) is not vacuous."""
    p = params(rows=16, intermediate=4096, tile_cols=0, dtype=dtype)
    ratio = fp32_path_ratio(sn, p, inputs_of(p))
    assert FP32_TIGHT <= ratio <= 1.0, ratio


@pytest.mark.parametrize("dtype,silu_one", [("fp16", 0.73095703125), ("bf16", 0.73046875)])
def test_hand_checked_values(dtype, silu_one):
    """silu(1) = 1 / (1 + e^-1) = 0.7310585786...: 1497 / 2048 in fp16 (spacing 2^-11 in
    [0.5, 1)), 187 / 256 in bf16 (2^-8); silu(0) = 0; exp(2048) overflows fp32, so
    silu(-2048) saturates to -0 (the float64 truth, -2048 / (1 + e^2048), is 0 too), and
    exp(-2048) = 0 leaves silu(2048) = 2048 exactly (x 0.5 = 1024)."""
    p = params(rows=1, intermediate=16, tile_cols=0, dtype=dtype)
    gate = np.array([[1.0, 0.0, -2048.0, 2048.0] * 4])
    up = np.array([[1.0, 5.0, 3.0, 0.5] * 4])
    inp = {"gate": round_to(gate, dtype), "up": round_to(up, dtype)}
    out = executed(sn, p, inp).astype(np.float64)
    assert out[0, :4].tolist() == [silu_one, 0.0, 0.0, 1024.0]
    ratio, ok = ratios(sn, p, inp, out)
    assert ok


def test_inputs_are_whole_tokens_in_the_storage_format():
    p = params(rows=4096, intermediate=28672, tile_cols=0, block_dim=0)
    inp = inputs_of(p)
    rows = rw.VERIFY_ELEMENTS // (2 * 28672)
    assert inp["gate"].shape == inp["up"].shape == (rows, 28672)
    assert inp["gate"].dtype == np.float16
    assert sn.output_elements(p) == 4096 * 28672


# -- wrong arithmetic must fail the bound
def sigmoid_not_silu(p, inp):
    g, u = inp["gate"].astype(F32), inp["up"].astype(F32)
    return round_to(F32(1) / (F32(1) + np.exp(-g)) * u, p["dtype"])


def gate_and_up_swapped(p, inp):
    return executed(sn, p, {"gate": inp["up"], "up": inp["gate"]})


def rounded_twice(p, inp):
    """silu(gate) cast to the storage format before the Mul by up."""
    g, u = inp["gate"].astype(F32), inp["up"].astype(F32)
    silu = round_to(g / (F32(1) + np.exp(-g)), p["dtype"]).astype(F32)
    return round_to(silu * u, p["dtype"])


def coarser_format(p, inp):
    return round_to(executed(sn, {**p, "dtype": "fp32"}, inp), "bf16")


def storage_arithmetic(p, inp):
    """No Cast to fp32: Muls, Exp, Adds, Div and Mul each rounded to the storage format
    (fp16's exp(-g) overflows below g = -11.1)."""
    def r(a):
        return round_to(a, p["dtype"]).astype(np.float64)
    g, u = inp["gate"].astype(np.float64), inp["up"].astype(np.float64)
    with np.errstate(over="ignore"):
        return r(r(g / r(1.0 + r(np.exp(-g)))) * u)


WRONG = [(sigmoid_not_silu, DTYPES), (gate_and_up_swapped, DTYPES), (rounded_twice, DTYPES),
         (coarser_format, ("fp16",)), (storage_arithmetic, DTYPES)]


@pytest.mark.parametrize("wrong,dtype", [(w, d) for w, ds in WRONG for d in ds],
                         ids=lambda v: getattr(v, "__name__", v))
def test_wrong_arithmetic_fails_the_bound(wrong, dtype):
    p = params(rows=8, intermediate=256, tile_cols=0, dtype=dtype)
    inp = inputs_of(p)
    ratio, ok = ratios(sn, p, inp, executed(sn, p, inp))
    assert ok and ratio <= 1.0
    ratio, ok = ratios(sn, p, inp, wrong(p, inp))
    assert not ok and ratio > 1.0, ratio


# ---- the program, worked by hand ---------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_program_by_hand(dtype):
    """3 tokens x 40 in chunks of 16, 16, 8: 9 tiles, split 5 | 4 over two cores. Per
    tile: CopyIn gate and up, 8 vector ops, CopyOut out; the tail moves 8 x 2 = 16 bytes,
    half a DataCopy block."""
    p = params(dtype=dtype)
    prog = sk.build(B2, p)
    s = sk.shape_of(p)
    assert pipe_counts(prog) == {"MTE2": 2 * 9, "V": 8 * 9, "MTE3": 9}
    assert pipe_counts(prog) == expected_pipes(sk.row_op(s), 9, 2)
    assert len(prog) == sk.instruction_count(B2, s)
    counts = op_counts(prog)
    assert counts["CopyIn gate"] == counts["CopyIn up"] == counts["CopyOut out"] == 9
    names, c = op_names(prog), prog.cols
    for label in ("CopyIn gate", "CopyIn up", "CopyOut out"):
        assert c["nbytes"][names == label].tolist() == [32, 32, 16] * 3
    assert moved(prog, Level.GM, Level.UB) == 2 * 3 * 40 * 2  # gate and up
    assert moved(prog, Level.UB, Level.GM) == 3 * 40 * 2
    assert c["elems"][names == "Exp"].sum() == 3 * 40
    assert set(c["vclass"][np.isin(names, ["Exp", "Div"])]) == {VClass.SPECIAL}
    assert assert_contiguous_blocks(prog, VECTOR_CORES[:2]) == {24: [0, 1, 2, 3, 4],
                                                                25: [5, 6, 7, 8]}


def test_cores_beyond_the_tiles_stay_idle():
    """2 tiles on 5 cores: two cores get one tile each, the others nothing."""
    p = params(rows=2, intermediate=16, block_dim=5)
    prog = sk.build(B2, p)
    blocks = assert_contiguous_blocks(prog, VECTOR_CORES[:5])
    assert sorted(len(v) for v in blocks.values()) == [1, 1]
    assert len(set(prog.cols["core"].tolist())) == 2


@pytest.mark.parametrize("buffer_num", [1, 2])
def test_tque_slots_in_the_timeline(buffer_num):
    """12 tiles on 2 cores: gate's slot is freed by Cast gate, up's by Cast up, out's by
    its CopyOut; with two slots CopyIn gate of tile k starts before tile k-1's Cast."""
    p = {**TINY, "rows": 4, "intermediate": 48, "buffer_num": buffer_num}
    result = simulate(Scenario.make("910B2", "swiglu", p))
    tl = result.timeline
    assert_queues(tl, sk.row_op(sk.shape_of(result.params)), ("out",), buffer_num)
    early = slot_gaps(tl, {"CopyIn gate"}, {"Cast gate"}, 1)
    if buffer_num == 1:
        assert early.min() >= -1e-6
    else:
        assert early.min() < 0 and copy_overlaps_compute(tl)


# ---- time --------------------------------------------------------------------------------


@pytest.mark.parametrize("buffer_num", [1, 2])
def test_engines_agree_and_invariants_hold(buffer_num):
    p = params(rows=5, tile_rows=2, intermediate=72, tile_cols=32, buffer_num=buffer_num)
    assert assert_engines(sk.build(B2, p)) > 0


# ---- refusals ----------------------------------------------------------------------------
@pytest.mark.parametrize("bad,field", [
    ({"tile_cols": 20}, "params.tile_cols"),  # not whole 32-byte blocks of fp16
    ({"tile_cols": 24, "dtype": "bf16"}, "params.tile_cols"),
    ({"tile_cols": 48}, "params.tile_cols"),  # wider than intermediate = 40
    ({"intermediate": 28672, "tile_cols": 16384}, "params.tile_cols"),  # over UB
    ({"tile_rows": 4}, "params.tile_rows"),  # more than rows = 3
    ({"rows": 4096, "tile_rows": 4096, "intermediate": 28672, "tile_cols": 0},
     "params.tile_rows"),  # not even 16 columns of 4096 rows fit UB
    ({"block_dim": 49}, "params.block_dim"),  # 910B2 has 48 vector cores
    ({"intermediate": 8}, "params.intermediate"),
    ({"dtype": "fp32"}, "params.dtype"),
    ({"tile_cols": -16}, "params.tile_cols"),
    ({"hidden": 64}, "params.hidden"),  # not a parameter of SwiGLU
])
def test_refusals_name_the_field(bad, field):
    refused(sk.check, {**TINY, **bad}, field)


# ---- the automatic column chunk ----------------------------------------------------------
@pytest.mark.parametrize("rows,intermediate,used", [
    (1, 28672, 48), (2, 28672, 48), (3, 28672, 48),  # 48 chunks of 608, 24 x 2, 16 x 3
    (1, 768, 48),  # 48 chunks of 16: the narrowest DataCopy block
    (2, 100, 14),  # 7 chunks of 16 per token (the last a tail of 4): all there are
])
def test_auto_chunk_reaches_every_core(rows, intermediate, used):
    s = sk.shape_of(sk.check(B2, {"rows": rows, "intermediate": intermediate}))
    tiles = sk.plan(B2, s)
    assert tiles.used_cores() == used == len(set(tiles.slots().tolist()))
    assert tiles.cols.max() % 16 == 0 and tiles.cols.sum() == rows * intermediate
    assert rw.ub_share(B2, sk.row_op(s), tiles) <= 1.0


@pytest.mark.parametrize("dtype,buffer_num", [("fp16", 2), ("bf16", 1)])
def test_auto_chunk_is_as_wide_as_ub_allows(dtype, buffer_num):
    """48 row blocks of 64 tokens (every core busy): per column, 3 queues of 2 bytes x
    buffer_num + 12 bytes of fp32 scratch; 64 rows fit 112 columns with two buffers
    (64 x 112 x 24 = 172032 <= 196352) and 160 with one (64 x 160 x 18 = 184320), never
    one block more."""
    p = {"rows": 48 * 64, "tile_rows": 64, "intermediate": 28672, "dtype": dtype,
         "buffer_num": buffer_num}
    s = sk.shape_of(sk.check(B2, p))
    tiles, op = sk.plan(B2, s), sk.row_op(s)
    cols = int(tiles.cols.max())
    assert cols == (112 if buffer_num == 2 else 160)
    assert rw.ub_share(B2, op, tiles) <= 1.0
    assert op.ub_bytes(64, cols + 16, buffer_num) > B2.ub_bytes


def test_auto_chunk_runs_one_wave_when_one_wave_fits():
    s = sk.shape_of(sk.check(B2, {"rows": 5, "intermediate": 28672}))
    tiles = sk.plan(B2, s)
    assert len(tiles) <= len(tiles.cores)

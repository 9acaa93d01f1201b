"""The Ascend C DSL (kernels/ascendc) in value: kernels written as a student writes them
(source compiled as the student's file) compute what numpy computes in the same precision,
on one core and on all of them; SyncAll makes other blocks' GM writes visible; the cube
path (DataCopy -> LoadData -> Mmad -> Fixpipe) matches a float64 reference within the
bound of its roundings."""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest

import hardware_presets as hp
from kernels import ascendc as asc
from kernels.ascendc import KERNEL_TYPE_AIC_ONLY, compile_student, launch

CHIP = hp.load("910B2")

#: the canonical Ascend C Add sample, in the DSL (tiling: blockLength, tileLength)
VECTOR_ADD = """
BUFFER_NUM = 2

def add_custom(x, y, z, tiling):
    block, tile = tiling.blockLength, tiling.tileLength
    xGm, yGm, zGm = GlobalTensor(half), GlobalTensor(half), GlobalTensor(half)
    xGm.SetGlobalBuffer(x + block * GetBlockIdx(), block)
    yGm.SetGlobalBuffer(y + block * GetBlockIdx(), block)
    zGm.SetGlobalBuffer(z + block * GetBlockIdx(), block)
    pipe = TPipe()
    inX = TQue(TPosition.VECIN, BUFFER_NUM)
    inY = TQue(TPosition.VECIN, BUFFER_NUM)
    outZ = TQue(TPosition.VECOUT, BUFFER_NUM)
    pipe.InitBuffer(inX, BUFFER_NUM, tile * 2)
    pipe.InitBuffer(inY, BUFFER_NUM, tile * 2)
    pipe.InitBuffer(outZ, BUFFER_NUM, tile * 2)
    for i in range(block // tile):
        xl = inX.AllocTensor(half)
        yl = inY.AllocTensor(half)
        DataCopy(xl, xGm[i * tile], tile)
        DataCopy(yl, yGm[i * tile], tile)
        inX.EnQue(xl)
        inY.EnQue(yl)
        xl = inX.DeQue(half)
        yl = inY.DeQue(half)
        zl = outZ.AllocTensor(half)
        Add(zl, xl, yl, tile)
        outZ.EnQue(zl)
        inX.FreeTensor(xl)
        inY.FreeTensor(yl)
        zl = outZ.DeQue(half)
        DataCopy(zGm[i * tile], zl, tile)
        outZ.FreeTensor(zl)
"""

#: a sum over all cores: partial sums to a GM workspace, SyncAll, block 0 adds them up
MULTICORE_SUM = """
def sum_custom(x, work, out, tiling):
    n = tiling.blockLength
    xGm = GlobalTensor(float)
    xGm.SetGlobalBuffer(x + n * GetBlockIdx(), n)
    workGm = GlobalTensor(float)
    workGm.SetGlobalBuffer(work)
    pipe = TPipe()
    inQ = TQue(TPosition.VECIN, 1)
    outQ = TQue(TPosition.VECOUT, 1)
    tmp = TBuf(TPosition.VECCALC)
    pipe.InitBuffer(inQ, 1, max(n, 8 * GetBlockNum()) * 4)
    pipe.InitBuffer(outQ, 1, 32)
    pipe.InitBuffer(tmp, 1024)
    xl = inQ.AllocTensor(float)
    DataCopy(xl, xGm, n)
    inQ.EnQue(xl)
    xl = inQ.DeQue(float)
    part = outQ.AllocTensor(float)
    Duplicate(part, 0.0, 8)
    ReduceSum(part, xl, tmp.Get(float), n)
    inQ.FreeTensor(xl)
    outQ.EnQue(part)
    part = outQ.DeQue(float)
    DataCopy(workGm[8 * GetBlockIdx()], part, 8)
    outQ.FreeTensor(part)
    SyncAll()
    if GetBlockIdx() == 0:
        outGm = GlobalTensor(float)
        outGm.SetGlobalBuffer(out)
        count = 8 * GetBlockNum()
        parts = inQ.AllocTensor(float)
        DataCopy(parts, workGm, count)
        inQ.EnQue(parts)
        parts = inQ.DeQue(float)
        total = outQ.AllocTensor(float)
        Duplicate(total, 0.0, 8)
        ReduceSum(total, parts, tmp.Get(float), count)
        inQ.FreeTensor(parts)
        outQ.EnQue(total)
        total = outQ.DeQue(float)
        DataCopy(outGm, total, 8)
        outQ.FreeTensor(total)
"""

#: C (M x N) = A (M x K) @ B (K x N) in fp16 with fp32 accumulation, one TILE x TILE block
#: of C per core, K in steps of TILE accumulated in L0C, written to GM as half by Fixpipe
MATMUL = """
TILE = 64

def matmul_custom(a, b, c, t):
    M, N, K = t.M, t.N, t.K
    row = GetBlockIdx() // (N // TILE) * TILE
    col = GetBlockIdx() % (N // TILE) * TILE
    aGm, bGm, cGm = GlobalTensor(half), GlobalTensor(half), GlobalTensor(half)
    aGm.SetGlobalBuffer(a)
    bGm.SetGlobalBuffer(b)
    cGm.SetGlobalBuffer(c)
    pipe = TPipe()
    qA1, qB1 = TQue(TPosition.A1, 1), TQue(TPosition.B1, 1)
    qA2, qB2 = TQue(TPosition.A2, 1), TQue(TPosition.B2, 1)
    qC = TQue(TPosition.CO1, 1)
    for q in (qA1, qB1, qA2, qB2):
        pipe.InitBuffer(q, 1, TILE * TILE * 2)
    pipe.InitBuffer(qC, 1, TILE * TILE * 4)
    fractals = TILE * TILE * 2 // 512
    row_blocks = TILE * 2 // 32  # one row of a tile in 32-byte blocks
    c1 = qC.AllocTensor(float)
    for k0 in range(0, K, TILE):
        a1 = qA1.AllocTensor(half)
        DataCopy(a1, aGm[row * K + k0], DataCopyParams(TILE, row_blocks, (K - TILE) // 16, 0))
        qA1.EnQue(a1)
        b1 = qB1.AllocTensor(half)
        DataCopy(b1, bGm[k0 * N + col], DataCopyParams(TILE, row_blocks, (N - TILE) // 16, 0))
        qB1.EnQue(b1)
        a1 = qA1.DeQue(half)
        a2 = qA2.AllocTensor(half)
        LoadData(a2, a1, LoadData2DParams(0, fractals, 1))
        qA1.FreeTensor(a1)
        qA2.EnQue(a2)
        b1 = qB1.DeQue(half)
        b2 = qB2.AllocTensor(half)
        LoadData(b2, b1, LoadData2DParams(0, fractals, 1))
        qB1.FreeTensor(b1)
        qB2.EnQue(b2)
        a2 = qA2.DeQue(half)
        b2 = qB2.DeQue(half)
        Mmad(c1, a2, b2, MmadParams(TILE, TILE, TILE, cmatrixInitVal=k0 == 0))
        qA2.FreeTensor(a2)
        qB2.FreeTensor(b2)
    qC.EnQue(c1)
    c1 = qC.DeQue(float)
    Fixpipe(cGm[row * N + col], c1, FixpipeParamsV220(nSize=TILE, mSize=TILE, dstStride=N))
    qC.FreeTensor(c1)
"""


@dataclass
class AddTiling:
    blockLength: int
    tileLength: int


@dataclass
class SumTiling:
    blockLength: int


@dataclass
class MatmulTiling:
    M: int
    N: int
    K: int


def kernel(source: str, name: str, **constants):
    namespace = compile_student(source)
    namespace.update(constants)
    return namespace[name]


def add_inputs(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x, y = (rng.uniform(-100.0, 100.0, n).astype(np.float16) for _ in "xy")
    return {"x": x, "y": y, "z": np.zeros(n, np.float16)}


@pytest.mark.parametrize("block_dim", [1, 48])
def test_vector_add_is_exact_in_fp16(block_dim):
    tile = 2048
    n = block_dim * 4 * tile
    args = add_inputs(n)
    run = launch(kernel(VECTOR_ADD, "add_custom"), CHIP, block_dim, args,
                 AddTiling(n // block_dim, tile))
    expected = (args["x"].astype(np.float64) + args["y"].astype(np.float64)).astype(np.float16)
    assert np.array_equal(run.outputs["z"], expected)
    assert not args["z"].any(), "the caller's arrays are never written"
    # 4 instructions per tile: CopyIn x, CopyIn y, Add, CopyOut z, on the vector cores
    assert len(run.program) == 4 * n // tile
    assert set(run.program.cols["core"]) == set(CHIP.vector_core_ids()[:block_dim])
    assert sorted(run.program.op_names) == ["Add", "DataCopy GM->UB", "DataCopy UB->GM"]


def test_each_instruction_knows_its_line_and_block():
    args = add_inputs(2 * 2048)
    run = launch(kernel(VECTOR_ADD, "add_custom"), CHIP, 2, args, AddTiling(2048, 2048))
    add_line = next(i for i, text in enumerate(VECTOR_ADD.splitlines(), 1) if "Add(" in text)
    adds = run.program.cols["op"] == run.program.op_names.index("Add")
    assert set(run.lines[adds]) == {add_line}
    assert sorted(run.blocks[adds]) == [0, 1]


def test_multicore_sum_reads_what_others_wrote_before_syncall():
    blocks, n = 8, 512
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 1.0, blocks * n).astype(np.float32)
    args = {"x": x, "work": np.zeros(8 * blocks, np.float32), "out": np.zeros(8, np.float32)}
    sums = [launch(kernel(MULTICORE_SUM, "sum_custom"), CHIP, blocks, args,
                   SumTiling(n)).outputs["out"][0] for _ in range(3)]
    assert sums[0] == sums[1] == sums[2], "deterministic, whatever the threads' order"
    exact = float(np.sum(x.astype(np.float64)))
    # fp32 adds: at most (n + blocks) roundings of partial sums no larger than the total
    assert abs(float(sums[0]) - exact) <= (n + blocks) * 2.0 ** -24 * exact


@pytest.mark.parametrize(("dtype", "storage", "u"), [("half", np.float16, 2.0 ** -11),
                                                    ("bfloat16", ml_dtypes.bfloat16, 2.0 ** -8)])
def test_matmul_tiles_match_float64_within_the_rounding_bound(dtype, storage, u):
    M, N, K = 128, 128, 256
    rng = np.random.default_rng(2)
    a = rng.uniform(-1.0, 1.0, (M, K)).astype(storage)
    b = rng.uniform(-1.0, 1.0, (K, N)).astype(storage)
    args = {"a": a, "b": b, "c": np.zeros(M * N, storage)}
    run = launch(kernel(MATMUL.replace("half", dtype), "matmul_custom"), CHIP,
                 (M // 64) * (N // 64), args, MatmulTiling(M, N, K),
                 kernel_type=KERNEL_TYPE_AIC_ONLY)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    got = run.outputs["c"].reshape(M, N).astype(np.float64)
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    # K / 64 fp32 roundings of the accumulator, then one rounding to the output (Fixpipe)
    bound = (K // 64) * 2.0 ** -24 * magnitude + u * np.abs(ref) + 2.0 ** -24
    assert (np.abs(got - ref) <= bound).all()
    assert np.abs(got - ref).max() > 0  # the output rounding is really there
    assert set(run.program.cols["core"]) == set(CHIP.cube_core_ids()[:4])
    assert {"Mmad", "LoadData L1->L0A", "LoadData L1->L0B", "DataCopy GM->L1",
            "Fixpipe L0C->GM"} == set(run.program.op_names)


def test_reduce_sum_follows_the_hardware_tree_and_saturates_in_fp16():
    """The Ascend C documentation's example: [60000, 60000, -30000, 100] sums pairwise:
    60000 + 60000 saturates at 65504, -30000 + 100 = -29900, then 65504 - 29900 (35604 in
    the documentation's exact arithmetic; each add rounded to fp16 here: 35584). Added in
    order instead, the sum would overflow to inf."""
    source = """
def k(x, out):
    xGm, outGm = GlobalTensor(half), GlobalTensor(half)
    xGm.SetGlobalBuffer(x)
    outGm.SetGlobalBuffer(out)
    pipe = TPipe()
    q, o, w = TQue(TPosition.VECIN, 1), TQue(TPosition.VECOUT, 1), TBuf()
    pipe.InitBuffer(q, 1, 32)
    pipe.InitBuffer(o, 1, 32)
    pipe.InitBuffer(w, 32)
    t = q.AllocTensor(half)
    DataCopy(t, xGm, 16)
    q.EnQue(t)
    t = q.DeQue(half)
    r = o.AllocTensor(half)
    Duplicate(r, 0, 16)
    ReduceSum(r, t, w.Get(half), 4)
    o.EnQue(r)
    r = o.DeQue(half)
    DataCopy(outGm, r, 16)
"""
    x = np.zeros(16, np.float16)
    x[:4] = [60000, 60000, -30000, 100]
    run = launch(kernel(source, "k"), CHIP, 1, {"x": x, "out": np.zeros(16, np.float16)})
    pair = np.float16(-30000.0 + 100.0)
    assert run.outputs["out"][0] == np.float16(65504.0 + float(pair)) == np.float16(35584.0)


def unary_kernel(op: str, src: str, dst: str, extra: str = "") -> str:
    return f"""
def k(x, y):
    xGm, yGm = GlobalTensor({src}), GlobalTensor({dst})
    xGm.SetGlobalBuffer(x)
    yGm.SetGlobalBuffer(y)
    n = xGm.GetSize()
    pipe = TPipe()
    q, o = TQue(TPosition.VECIN, 1), TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(q, 1, n * 4)
    pipe.InitBuffer(o, 1, n * 4)
    t = q.AllocTensor({src})
    DataCopy(t, xGm, n)
    q.EnQue(t)
    t = q.DeQue({src})
    r = o.AllocTensor({dst})
    {op}(r, t, {extra}n)
    o.EnQue(r)
    r = o.DeQue({dst})
    DataCopy(yGm, r, n)
"""


def run_unary(op, x, src, dst, out_dtype, extra=""):
    y = np.zeros(len(x), out_dtype)
    return launch(kernel(unary_kernel(op, src, dst, extra), "k"), CHIP, 1,
                  {"x": x, "y": y}).outputs["y"]


def test_exp_in_fp16_is_the_rounded_exact_value():
    x = np.linspace(-8, 8, 256).astype(np.float16)
    got = run_unary("Exp", x, "half", "half", np.float16)
    assert np.array_equal(got, np.exp(x.astype(np.float64)).astype(np.float16))


@pytest.mark.parametrize(("mode", "expected"), [
    ("CAST_RINT", [2, -2, 2, 4, -4]), ("CAST_FLOOR", [2, -3, 2, 3, -4]),
    ("CAST_CEIL", [3, -2, 3, 4, -3]), ("CAST_TRUNC", [2, -2, 2, 3, -3]),
    ("CAST_ROUND", [3, -3, 2, 4, -4])])
def test_cast_float_to_int32_rounds_by_mode(mode, expected):
    x = np.array([2.5, -2.5, 2.25, 3.5, -3.5, 0, 0, 0], np.float32)
    got = run_unary("Cast", x, "float", "int32", np.int32, f"RoundMode.{mode}, ")
    assert got[:5].tolist() == expected


def test_cast_float_to_half_none_rounds_to_nearest_and_trunc_toward_zero():
    third = np.array([0.3, -0.3] + [0.0] * 14, np.float32)  # fp16(0.3) > 0.3
    none = run_unary("Cast", third, "float", "half", np.float16, "RoundMode.CAST_NONE, ")
    trunc = run_unary("Cast", third, "float", "half", np.float16, "RoundMode.CAST_TRUNC, ")
    assert np.array_equal(none, third.astype(np.float16))
    assert abs(float(trunc[0])) < abs(float(none[0]))
    for value, cut in zip(third[:2].astype(np.float64), trunc[:2]):  # the largest |fp16|
        away = np.nextafter(cut, np.float16(np.sign(value) * np.inf))  # not above |x|
        assert abs(float(cut)) <= abs(value) < abs(float(away))


def test_bf16_converts_through_float():
    x = np.linspace(-3, 3, 16).astype(ml_dtypes.bfloat16)
    got = run_unary("Cast", x, "bfloat16", "float", np.float32, "RoundMode.CAST_NONE, ")
    assert np.array_equal(got, x.astype(np.float32))


def test_strided_copy_takes_a_tile_of_a_matrix():
    source = """
def k(a, out):
    aGm, outGm = GlobalTensor(half), GlobalTensor(half)
    aGm.SetGlobalBuffer(a)
    outGm.SetGlobalBuffer(out)
    pipe = TPipe()
    q = TQue(TPosition.VECIN, 1)
    pipe.InitBuffer(q, 1, 4 * 16 * 2)
    t = q.AllocTensor(half)
    DataCopy(t, aGm[2 * 64 + 16], DataCopyParams(4, 1, 3, 0))
    q.EnQue(t)
    t = q.DeQue(half)
    DataCopy(outGm, t, 64)
"""
    a = np.arange(8 * 64).astype(np.float16)  # an 8 x 64 matrix
    run = launch(kernel(source, "k"), CHIP, 1, {"a": a, "out": np.zeros(64, np.float16)})
    expected = a.reshape(8, 64)[2:6, 16:32].ravel()
    assert np.array_equal(run.outputs["out"], expected)


def test_reading_before_writing_is_a_note_not_an_error():
    source = """
def k(x):
    xGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x)
    pipe = TPipe()
    q = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(q, 1, 32)
    t = q.AllocTensor(half)
    q.EnQue(t)
    t = q.DeQue(half)
    DataCopy(xGm, t, 16)
"""
    run = launch(kernel(source, "k"), CHIP, 1, {"x": np.ones(16, np.float16)})
    assert [(n.message_id, n.line) for n in run.notes] == [("ascendc.note.read_before_write", 11)]
    assert not run.outputs["x"].any()


def test_the_student_namespace_is_the_dsl_with_ascend_c_names():
    namespace = asc.student_namespace()
    assert namespace["float"] is asc.float32 and namespace["half"].np == np.float16
    assert "launch" not in namespace and "Add" in namespace and "SyncAll" in namespace

"""An Ascend C-shaped Python DSL: write a kernel with Ascend C's names and rules, run it on
every core of a chip preset, get its values and the Program the emulator times.

A kernel is a Python function called once per block (core) with the GM arguments as
``GM_ADDR``s and the host's tiling struct::

    BUFFER_NUM = 2

    def add_custom(x, y, z, tiling):
        block = tiling.blockLength
        xGm, yGm, zGm = GlobalTensor(half), GlobalTensor(half), GlobalTensor(half)
        xGm.SetGlobalBuffer(x + block * GetBlockIdx(), block)
        ...                                   # yGm, zGm alike
        pipe = TPipe()
        inX, inY = TQue(TPosition.VECIN, BUFFER_NUM), TQue(TPosition.VECIN, BUFFER_NUM)
        outZ = TQue(TPosition.VECOUT, BUFFER_NUM)
        for q in (inX, inY, outZ):
            pipe.InitBuffer(q, BUFFER_NUM, tiling.tile * 2)
        for i in range(block // tiling.tile):
            xl, yl = inX.AllocTensor(half), inY.AllocTensor(half)
            DataCopy(xl, xGm[i * tiling.tile], tiling.tile)      # CopyIn (MTE2)
            DataCopy(yl, yGm[i * tiling.tile], tiling.tile)
            inX.EnQue(xl); inY.EnQue(yl)
            xl, yl = inX.DeQue(half), inY.DeQue(half)            # Compute (V)
            zl = outZ.AllocTensor(half)
            Add(zl, xl, yl, tiling.tile)
            outZ.EnQue(zl); inX.FreeTensor(xl); inY.FreeTensor(yl)
            zl = outZ.DeQue(half)                                # CopyOut (MTE3)
            DataCopy(zGm[i * tiling.tile], zl, tiling.tile)
            outZ.FreeTensor(zl)

    run = launch(add_custom, hp.load("910B2"), 8, {"x": x, "y": y, "z": z}, tiling)
    run.outputs["z"], run.program            # values; the Program for the emulator

What is modelled
  * Execution: one thread per block (``launch``); GetBlockIdx / GetBlockNum; SyncAll is a
    barrier for values and a SyncAll instruction for time; GM arrays are shared.
  * Memory: TPipe.InitBuffer carves TQue / TBuf buffers from UB (VECIN, VECOUT, VECCALC),
    L1 (A1, B1), L0A (A2), L0B (B2) and L0C (CO1) with the preset's sizes and alignments;
    on a split chip an AIV kernel has only UB and an AIC kernel only L1 / L0.
  * Queues: AllocTensor / EnQue / DeQue / FreeTensor with their errors and ownership (a
    tensor is unusable after EnQue or FreeTensor); their dependencies in the Program.
  * Operations (one instruction each, on its pipe): DataCopy (MTE2 / MTE3, 32-byte rule,
    strided DataCopyParams), vector ops on PIPE_V (Add, Sub, Mul, Div, Max, Min, Adds,
    Muls, Maxs, Mins, Duplicate, Exp, Ln, Sqrt, Rsqrt, Reciprocal, Abs, Relu, ReduceSum,
    ReduceMax, ReduceMin, Cast with RoundMode), LoadData (MTE1), Mmad (M), Fixpipe (FIX).
  * Values in the operands' precision (fp16, bf16 via ml_dtypes, fp32, int8/16/32), each
    operation rounded once as the hardware does; the chip's vector dtypes are enforced
    (910B's vector unit has no bf16 arithmetic: Cast to fp32 first).
  * Errors (``errors``): message id, values, the student's line and block. An endless
    loop ends at the instruction cap (``DEFAULT_MAX_INSTRUCTIONS`` or the project's lower
    cap) or at the launch's time limit (``DEFAULT_TIMEOUT_S``). Warnings (a read of a
    buffer nothing wrote since its AllocTensor) are ``KernelRun.notes``.
  * Time: the Program has one instruction per operation on its pipe, with the queue
    dependencies, a SyncAll barrier group per SyncAll, and a GM region per copied range
    (L2 reuse applies); ``explorer.core.emulator.engine.run(run.program, chip)`` times it.
    A DSL vector add times exactly as ``kernels.vector_add`` for the same shape.

What is not modelled
  * Fractal layouts (NZ / ZZ / ZN) and their conversions: cube buffers hold row-major
    tiles. LoadData transposes, Nd2Nz copies, DataCopyPad, masks and repeat parameters
    of the vector ops (only the "first count elements" form), TQueBind, TBufPool,
    SetFlag / WaitFlag / PipeBarrier (dependencies come only from the queues; a buffer
    used by two pipes without a queue is refused as a race), scalar-unit time, L1 -> UB
    and L0C -> UB paths, the workspace SyncAll needs, mixed AIC + AIV kernels.
  * GM written on one pipe and read back on another by the same core gets no ordering
    edge (on the hardware that needs a PipeBarrier or SetFlag / WaitFlag); its values
    follow program order.
  * Precision details: Exp / Ln / Sqrt are correctly rounded (the hardware is within
    about an ulp); an Mmad sums its k products exactly and rounds once to fp32 (the cube
    rounds inside the k loop); a ReduceSum is timed as one simple-class instruction over
    its elements.
"""
from .copy import DataCopy, DataCopyParams
from .cube import (
    Fixpipe,
    FixpipeParamsV220,
    LoadData,
    LoadData2DParams,
    Mmad,
    MmadParams,
    QuantMode_t,
)
from .dtypes import DType, RoundMode, bfloat16, float, float32, half, int8, int16, int32
from .errors import (
    STUDENT_FILENAME,
    AlignmentError,
    AscendCError,
    BoundsError,
    CapacityError,
    LimitError,
    OperandError,
    PipeRaceError,
    QueueError,
    StudentCodeError,
    SyncError,
    TensorStateError,
)
from .queues import KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_AIV_ONLY, TBuf, TPipe, TQue
from .runtime import (
    DEFAULT_MAX_INSTRUCTIONS,
    DEFAULT_TIMEOUT_S,
    GetBlockIdx,
    GetBlockNum,
    KernelRun,
    SyncAll,
    compile_student,
    launch,
    student_namespace,
)
from .tensors import GlobalTensor, GmAddr, LocalTensor, QuePosition, TPosition
from .vector import (
    Abs,
    Add,
    Adds,
    Cast,
    Div,
    Duplicate,
    Exp,
    Ln,
    Max,
    Maxs,
    Min,
    Mins,
    Mul,
    Muls,
    Reciprocal,
    ReduceMax,
    ReduceMin,
    ReduceSum,
    Relu,
    Rsqrt,
    Sqrt,
    Sub,
)

__all__ = [
    # types and tensors
    "DType", "half", "float", "float32", "bfloat16", "int8", "int16", "int32", "RoundMode",
    "GlobalTensor", "LocalTensor", "GmAddr", "TPosition", "QuePosition",
    # memory and queues
    "TPipe", "TQue", "TBuf", "KERNEL_TYPE_AIV_ONLY", "KERNEL_TYPE_AIC_ONLY",
    # execution
    "GetBlockIdx", "GetBlockNum", "SyncAll",
    # data movement
    "DataCopy", "DataCopyParams", "LoadData", "LoadData2DParams", "Fixpipe",
    "FixpipeParamsV220", "QuantMode_t",
    # compute
    "Add", "Sub", "Mul", "Div", "Max", "Min", "Adds", "Muls", "Maxs", "Mins", "Duplicate",
    "Exp", "Ln", "Sqrt", "Rsqrt", "Reciprocal", "Abs", "Relu", "ReduceSum", "ReduceMax",
    "ReduceMin", "Cast", "Mmad", "MmadParams",
    # the host side and the errors
    "launch", "KernelRun", "compile_student", "student_namespace", "STUDENT_FILENAME",
    "DEFAULT_MAX_INSTRUCTIONS", "DEFAULT_TIMEOUT_S", "AscendCError", "AlignmentError",
    "BoundsError", "CapacityError", "LimitError", "OperandError", "PipeRaceError",
    "QueueError", "StudentCodeError", "SyncError", "TensorStateError",
]
#: the names a student's kernel source sees (``student_namespace``): the DSL, not the host
DSL_NAMES = tuple(__all__[:__all__.index("launch")])

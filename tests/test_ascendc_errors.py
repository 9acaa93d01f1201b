"""Misuse of the Ascend C DSL is an error a student learns from: each raises its own
exception class with a message id of the catalogues (whose placeholders its values fill,
in English and Chinese), the line of the student's source (compiled as STUDENT_FILENAME)
marked ``# <-`` below, and the block that ran it."""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core.i18n import LANGUAGES, catalogue, t
from kernels import ascendc as asc
from kernels.ascendc import KERNEL_TYPE_AIC_ONLY, STUDENT_FILENAME, compile_student, launch

CHIP = hp.load("910B2")

#: a VECIN -> VECOUT tile kernel; {body} replaces the lines between the queue setup and the
#: end (x: 64 halves in, y: 64 halves out)
FRAME = """
def k(x, y):
    xGm, yGm = GlobalTensor(half), GlobalTensor(half)
    xGm.SetGlobalBuffer(x)
    yGm.SetGlobalBuffer(y)
    pipe = TPipe()
    inQ, outQ = TQue(TPosition.VECIN, 1), TQue(TPosition.VECOUT, 1)
{body}
"""
INIT = """    pipe.InitBuffer(inQ, 1, 128)
    pipe.InitBuffer(outQ, 1, 128)
"""
COPY_IN = INIT + """    t = inQ.AllocTensor(half)
    DataCopy(t, xGm, 64)
"""

CASES = {
    "deque_empty": (asc.QueueError, INIT + """    t = inQ.DeQue(half)  # <-"""),
    "enque_full": (asc.QueueError, """    pipe.InitBuffer(inQ, 2, 128)
    a = inQ.AllocTensor(half)
    b = inQ.AllocTensor(half)
    inQ.EnQue(a)
    inQ.EnQue(b)  # <-"""),
    "alloc_no_free_buffer": (asc.QueueError, INIT + """    a = inQ.AllocTensor(half)
    b = inQ.AllocTensor(half)  # <-"""),
    "use_after_free": (asc.TensorStateError, COPY_IN + """    inQ.EnQue(t)
    t = inQ.DeQue(half)
    inQ.FreeTensor(t)
    r = outQ.AllocTensor(half)
    Adds(r, t, 1.0, 64)  # <-"""),
    "use_after_enque": (asc.TensorStateError, COPY_IN + """    inQ.EnQue(t)
    r = outQ.AllocTensor(half)
    Adds(r, t, 1.0, 64)  # <-"""),
    "copy_unaligned": (asc.AlignmentError, INIT + """    t = inQ.AllocTensor(half)
    DataCopy(t, xGm, 20)  # <-"""),
    "gm_out_of_range": (asc.BoundsError, INIT + """    t = inQ.AllocTensor(half)
    DataCopy(t, xGm[32], 64)  # <-"""),
    "count_too_large": (asc.BoundsError, COPY_IN + """    inQ.EnQue(t)
    t = inQ.DeQue(half)
    r = outQ.AllocTensor(half)
    Adds(r, t, 1.0, 128)  # <-"""),
    "local_offset_unaligned": (asc.AlignmentError, COPY_IN + """    inQ.EnQue(t)
    t = inQ.DeQue(half)
    u = t[8]  # <-"""),
    "over_capacity": (asc.CapacityError, """    pipe.InitBuffer(inQ, 2, 64 * 1024)
    pipe.InitBuffer(outQ, 2, 64 * 1024)  # <-"""),
    "dtype_mismatch": (asc.OperandError, COPY_IN + """    inQ.EnQue(t)
    t = inQ.DeQue(half)
    r = outQ.AllocTensor(float)
    Adds(r, t, 1.0, 32)  # <-"""),
    "vector_dtype": (asc.OperandError, INIT + """    r = outQ.AllocTensor(bfloat16)
    Duplicate(r, 1.0, 64)  # <-"""),
    "pipe_race_read": (asc.PipeRaceError, COPY_IN + """    r = outQ.AllocTensor(half)
    Adds(r, t, 1.0, 64)  # <-"""),
    "pipe_race_write": (asc.PipeRaceError, COPY_IN + """    inQ.EnQue(t)
    t = inQ.DeQue(half)
    r = outQ.AllocTensor(half)
    Adds(r, t, 1.0, 64)
    DataCopy(t, xGm, 64)  # <-"""),
    "foreign_tensor": (asc.TensorStateError, COPY_IN + """    outQ.EnQue(t)  # <-"""),
    "not_initialized": (asc.QueueError, """    t = inQ.AllocTensor(half)  # <-"""),
    "init_twice": (asc.QueueError, INIT + """    pipe.InitBuffer(inQ, 1, 128)  # <-"""),
    "deque_dtype": (asc.OperandError, COPY_IN + """    inQ.EnQue(t)
    t = inQ.DeQue(float)  # <-"""),
    "copy_path": (asc.OperandError, """    DataCopy(yGm, xGm, 64)  # <-"""),
    "position": (asc.OperandError, INIT + """    a = inQ.AllocTensor(half)
    b = outQ.AllocTensor(half)
    LoadData(b, a, LoadData2DParams())  # <-"""),
    "python_exception": (asc.StudentCodeError, INIT + """    t = inQ.AllocTensor(half)
    DataCopy(t, xGm, tile)  # <-"""),
    "gm_dtype_mismatch": (asc.OperandError, """    other = GlobalTensor(float)
    other.SetGlobalBuffer(x)  # <-"""),
    "position_unavailable": (asc.OperandError,
                             """    pipe.InitBuffer(TQue(TPosition.A1, 1), 1, 1024)  # <-"""),
    "cast_unsupported": (asc.OperandError, COPY_IN + """    inQ.EnQue(t)
    t = inQ.DeQue(half)
    r = outQ.AllocTensor(float)
    Cast(r, t, RoundMode.CAST_RINT, 32)  # <-"""),
}
# the message id of each case, as the package writes it (literal ids, as the catalogues
# and tests/test_message_ids.py want them)
IDS = {
    "deque_empty": "ascendc.error.deque_empty", "enque_full": "ascendc.error.enque_full",
    "alloc_no_free_buffer": "ascendc.error.alloc_no_free_buffer",
    "use_after_free": "ascendc.error.use_after_free",
    "use_after_enque": "ascendc.error.use_after_enque",
    "copy_unaligned": "ascendc.error.copy_unaligned",
    "gm_out_of_range": "ascendc.error.gm_out_of_range",
    "count_too_large": "ascendc.error.count_too_large",
    "local_offset_unaligned": "ascendc.error.local_offset_unaligned",
    "over_capacity": "ascendc.error.over_capacity",
    "dtype_mismatch": "ascendc.error.dtype_mismatch",
    "vector_dtype": "ascendc.error.vector_dtype",
    "pipe_race_read": "ascendc.error.pipe_race_read",
    "pipe_race_write": "ascendc.error.pipe_race_write",
    "foreign_tensor": "ascendc.error.foreign_tensor",
    "not_initialized": "ascendc.error.not_initialized", "init_twice": "ascendc.error.init_twice",
    "deque_dtype": "ascendc.error.deque_dtype", "copy_path": "ascendc.error.copy_path",
    "position": "ascendc.error.position",
    "python_exception": "ascendc.error.python_exception",
    "gm_dtype_mismatch": "ascendc.error.gm_dtype_mismatch",
    "position_unavailable": "ascendc.error.position_unavailable",
    "cast_unsupported": "ascendc.error.cast_unsupported",
}


def marked_line(source: str) -> int:
    """The line of ``source`` marked ``# <-``."""
    return next(i for i, text in enumerate(source.splitlines(), 1) if "# <-" in text)


def args() -> dict[str, np.ndarray]:
    return {"x": np.arange(64).astype(np.float16), "y": np.zeros(64, np.float16)}


def raised(source: str, block_dim: int = 1, name: str = "k", **options) -> asc.AscendCError:
    kernel = compile_student(source)[name]
    with pytest.raises(asc.AscendCError) as info:
        launch(kernel, CHIP, block_dim, options.pop("gm", None) or args(), **options)
    return info.value


def assert_translatable(error: asc.AscendCError) -> None:
    """The id is in both catalogues and its values fill every placeholder."""
    for lang in LANGUAGES:
        assert error.message_id in catalogue(lang)
        assert t(error.message_id, lang, **error.values)


@pytest.mark.parametrize("case", sorted(CASES))
def test_misuse_raises_its_error_at_the_students_line(case):
    cls, body = CASES[case]
    source = FRAME.format(body=body)
    error = raised(source)
    assert isinstance(error, cls), error
    assert error.message_id == IDS[case]
    assert (error.filename, error.line) == (STUDENT_FILENAME, marked_line(source))
    assert error.core == 0
    assert_translatable(error)


def test_ub_over_capacity_is_refused_at_initbuffer_with_the_numbers():
    source = FRAME.format(body=CASES["over_capacity"][1])
    error = raised(source)
    assert error.values["memory"] == "UB" and error.values["capacity"] == CHIP.ub_bytes
    assert error.values["need"] == 4 * 64 * 1024 > CHIP.ub_bytes


def test_l1_over_capacity_in_a_cube_kernel():
    source = """
def k(x, y):
    pipe = TPipe()
    a1, b1 = TQue(TPosition.A1, 1), TQue(TPosition.B1, 1)
    pipe.InitBuffer(a1, 2, 256 * 1024)
    pipe.InitBuffer(b1, 1, 1024)  # <-
"""
    error = raised(source, kernel_type=KERNEL_TYPE_AIC_ONLY)
    assert error.message_id == "ascendc.error.over_capacity" and error.values["memory"] == "L1"
    assert error.line == marked_line(source)


def test_the_error_names_the_block_that_misbehaved():
    source = FRAME.format(body=INIT + """    if GetBlockIdx() == 3:
        t = inQ.DeQue(half)  # <-""")
    error = raised(source, block_dim=8)
    assert error.message_id == "ascendc.error.deque_empty" and error.core == 3
    assert error.line == marked_line(source)


def test_a_block_ending_while_others_wait_at_syncall_is_a_deadlock():
    source = """
def k(x, y):
    if GetBlockIdx() != 2:
        SyncAll()  # <-
"""
    error = raised(source, block_dim=4)
    assert isinstance(error, asc.SyncError)
    assert error.message_id == "ascendc.error.syncall_deadlock"
    assert error.values["ended"] == 2 and error.values["ended_calls"] == 0
    assert error.line == marked_line(source) and error.core == 0
    assert_translatable(error)


def test_an_error_while_others_wait_at_syncall_is_reported_not_the_deadlock():
    source = FRAME.format(body=INIT + """    if GetBlockIdx() == 1:
        inQ.DeQue(half)  # <-
    SyncAll()""")
    error = raised(source, block_dim=4)
    assert error.message_id == "ascendc.error.deque_empty" and error.core == 1


def test_an_endless_loop_of_copies_stops_at_the_instruction_cap():
    source = FRAME.format(body=INIT + """    t = inQ.AllocTensor(half)
    while True:
        DataCopy(t, xGm, 64)  # <-""")
    error = raised(source, max_instructions=500)
    assert isinstance(error, asc.LimitError)
    assert error.message_id == "ascendc.error.instruction_limit" and error.values["cap"] == 500
    assert error.line == marked_line(source)
    assert_translatable(error)


def test_an_endless_loop_of_python_stops_at_the_time_limit_even_if_caught():
    source = """
def k(x, y):
    i = 0
    while True:  # <-
        try:
            i += 1
        except Exception:
            pass
"""
    error = raised(source, timeout_s=0.5)
    assert isinstance(error, asc.LimitError)
    assert error.message_id == "ascendc.error.time_limit" and error.values["seconds"] == 0.5
    assert marked_line(source) <= error.line <= marked_line(source) + 4  # inside the loop
    assert_translatable(error)


def test_the_time_limit_stops_a_loop_while_other_blocks_wait_at_syncall():
    source = """
def k(x, y):
    if GetBlockIdx() == 1:
        while True:  # <-
            pass
    SyncAll()
"""
    error = raised(source, block_dim=4, timeout_s=0.5)
    assert error.message_id == "ascendc.error.time_limit" and error.core == 1
    assert marked_line(source) <= error.line <= marked_line(source) + 1


def test_a_syntax_error_is_reported_at_its_line():
    with pytest.raises(asc.StudentCodeError) as info:
        compile_student("def k(x):\n    return (x +\n\n")
    assert info.value.message_id == "ascendc.error.syntax" and info.value.line in (2, 3)
    assert_translatable(info.value)


def test_dsl_calls_outside_a_launch_are_refused():
    with pytest.raises(asc.OperandError) as info:
        asc.GetBlockIdx()
    assert info.value.message_id == "ascendc.error.outside_kernel"


@pytest.mark.parametrize(("block_dim", "kernel_type"),
                         [(0, "AIV"), (49, "AIV"), (25, KERNEL_TYPE_AIC_ONLY), (2.5, "AIV")])
def test_block_dim_beyond_the_chip_is_refused(block_dim, kernel_type):
    with pytest.raises(asc.OperandError) as info:
        launch(lambda x, y: None, CHIP, block_dim, args(), kernel_type=kernel_type)
    assert info.value.message_id == "ascendc.error.block_dim"
    assert_translatable(info.value)


def test_unknown_gm_types_are_refused():
    with pytest.raises(asc.OperandError) as info:
        launch(lambda x: None, CHIP, 1, {"x": np.zeros(4, np.float64)})
    assert info.value.message_id == "ascendc.error.gm_dtype"
    assert_translatable(info.value)


def test_fixpipe_needs_a_split_chip():
    source = """
def k(x, y):
    yGm = GlobalTensor(float)
    yGm.SetGlobalBuffer(y)
    pipe = TPipe()
    qc = TQue(TPosition.CO1, 1)
    pipe.InitBuffer(qc, 1, 1024)
    c = qc.AllocTensor(float)
    Fixpipe(yGm, c, FixpipeParamsV220(nSize=16, mSize=16))  # <-
"""
    kernel = compile_student(source)["k"]
    gm = {"x": np.zeros(4, np.float32), "y": np.zeros(256, np.float32)}
    with pytest.raises(asc.OperandError) as info:
        launch(kernel, hp.load("910"), 1, gm)
    assert info.value.message_id == "ascendc.error.no_fixpipe"
    assert info.value.line == marked_line(source)

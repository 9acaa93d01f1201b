"""The state of one running core and the recording of its instruction stream.

A launch runs the kernel once per block, each in its own thread; the thread's
:class:`Core` (found with :func:`current`) answers GetBlockIdx, holds its buffers' byte
budget and records every DSL operation as an :class:`Instr`, with the dependencies the
operands' buffers imply (``LocalTensor.access``) and the student's line. ``emit`` turns
the records of all cores into one Program once every core has finished, so that the
program does not depend on how the threads interleaved.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from kernels.common.program import Kind, Level, Pipe, VClass

from .errors import KernelStop, LimitError, OperandError, student_location

_local = threading.local()


@dataclass(slots=True)
class Instr:
    """One recorded instruction of a core (ids are positions in the core's list)."""

    kind: Kind
    pipe: Pipe
    label: str
    line: int | None
    deps: tuple[int, ...] = ()
    src: Level | None = None
    dst: Level | None = None
    nbytes: int = 0
    region: tuple | None = None  # GM range (array, first byte, bytes ...) of a GM copy
    elems: int = 0
    dtype: str = ""
    vclass: VClass = VClass.SIMPLE
    m: int = 0
    n: int = 0
    k: int = 0
    barrier: int = -1  # the core's n-th SyncAll


@dataclass(frozen=True)
class Note:
    """A warning-level remark (not an error), by message id, e.g. a read before any write."""

    message_id: str
    values: dict
    line: int | None
    block: int


class Launch:
    """What the cores of one launch share: the chip, blockDim, the instruction count."""

    def __init__(self, chip, block_dim: int, kernel_type: str, cap: int,
                 timeout_s: float) -> None:
        self.chip, self.block_dim, self.kernel_type = chip, block_dim, kernel_type
        self.cap, self.timeout_s = cap, timeout_s
        self.count = 0
        self.lock = threading.Lock()
        self.sync = None  # the SyncAll barrier (runtime.SyncGroup), set by the launch


@dataclass(eq=False)
class Core:
    """One block of the launch: GetBlockIdx's answer and everything it recorded."""

    launch: Launch
    block: int
    core_id: int
    instrs: list[Instr] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    memory_used: dict[str, int] = field(default_factory=dict)
    syncs: int = 0
    waiting: bool = False  # at SyncAll
    error: Exception | None = None

    def reserve(self) -> int:
        """The id of the next instruction, refused beyond the launch's instruction cap."""
        launch = self.launch
        with launch.lock:
            launch.count += 1
            count = launch.count
        if count > launch.cap:
            raise KernelStop(LimitError("ascendc.error.instruction_limit",
                                        {"cap": launch.cap}))
        return len(self.instrs)

    def note(self, message_id: str, values: dict, line: int | None) -> None:
        if not any(n.message_id == message_id and n.line == line for n in self.notes):
            self.notes.append(Note(message_id, values, line, self.block))


def bind(core: Core | None) -> None:
    """Make ``core`` the current thread's core (None: leave the kernel)."""
    _local.core = core


def current() -> Core:
    """The core whose kernel is running in this thread; an error outside a launch."""
    core = getattr(_local, "core", None)
    if core is None:
        raise OperandError("ascendc.error.outside_kernel", {})
    return core


def current_chip():
    """The running launch's chip, None outside a launch."""
    core = getattr(_local, "core", None)
    return core.launch.chip if core is not None else None


def issue(pipe: Pipe, kind: Kind, label: str, *, reads=(), writes=(), **fields) -> int:
    """Record one instruction of the current core that reads and writes the given local
    tensors; returns its id. Its dependencies are those the tensors' buffers imply."""
    core = current()
    idx = core.reserve()
    _, line = student_location()
    deps: set[int] = set()
    for tensor in reads:
        if not tensor.written:
            core.note("ascendc.note.read_before_write", {}, line)
        deps.update(tensor.access(pipe, False, idx, line))
    for tensor in writes:
        deps.update(tensor.access(pipe, True, idx, line))
    core.instrs.append(Instr(kind, pipe, label, line, tuple(sorted(deps)), **fields))
    return idx

"""Launching a kernel: one thread per block, SyncAll as a barrier, the Program at the end.

``launch(kernel, chip, block_dim, args, tiling)`` copies the GM arrays ``args`` (the
caller's arrays are never written), calls ``kernel(*gm_addrs[, tiling])`` once per block,
each in its own thread with GetBlockIdx() answering for it, waits for all of them and
returns a :class:`KernelRun`: the GM arrays after the kernel, the Program of every
instruction the blocks issued (for the emulator to time) and per instruction the student's
line. Values are computed as the blocks run, so a block that reads GM after a SyncAll
sees what the others wrote before it.

Errors: the first error of the lowest block wins (a SyncAll deadlock only when no block
had another error, as it is usually the consequence); a plain Python exception of the
student's code becomes a StudentCodeError at its line. An endless loop ends at the
instruction cap (a loop issuing operations, deterministic) or at the time limit
(``timeout_s`` of wall-clock time: the blocks still running then are interrupted where
they are, which also ends a loop of plain Python).
"""
from __future__ import annotations

import copy
import ctypes
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip
from kernels.common.budget import default_instruction_cap
from kernels.common.program import Kind, Pipe, Program

from . import dtypes as dt
from .context import Core, Launch, Note, bind, current, issue
from .emit import to_program
from .errors import (
    STUDENT_FILENAME,
    AscendCError,
    KernelStop,
    LimitError,
    OperandError,
    StudentCodeError,
    SyncError,
    student_location,
    traceback_location,
)
from .queues import KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_AIV_ONLY
from .tensors import GmAddr

#: instructions one launch may issue (a DSL operation costs ~30 us of Python: ~6 s), unless
#: the project's own cap (kernels.common.budget) is lower
DEFAULT_MAX_INSTRUCTIONS = 200_000
#: wall-clock seconds a launch may run before its running blocks are interrupted
DEFAULT_TIMEOUT_S = 30.0
#: seconds to wait for interrupted blocks to stop (a long numpy call finishes first)
_GRACE_S = 5.0
KERNEL_TYPES = (KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY)


@dataclass(frozen=True, eq=False)
class KernelRun:
    """A finished launch: GM arrays after the kernel, its Program and where each
    instruction came from."""

    outputs: dict[str, np.ndarray]  # every GM argument by name, as the kernel left it
    program: Program  # every block's instructions; time it with the emulator
    lines: np.ndarray  # int32 per program instruction: the student's line (-1: unknown)
    blocks: np.ndarray  # int32 per program instruction: the block (GetBlockIdx) issuing it
    notes: tuple[Note, ...]  # warnings (reads before any write ...)
    block_dim: int
    core_ids: tuple[int, ...]  # the chip core of each block
    kernel_type: str


class SyncGroup:
    """SyncAll across the blocks of a launch: a reusable barrier that notices a block that
    has ended (it can never arrive: a deadlock) or failed (the others stop)."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.cond = threading.Condition()
        self.arrived = 0
        self.generation = 0
        self.ended: dict[int, int] = {}  # block -> SyncAll calls it made, when it ended
        self.failed = False

    def wait(self, core: Core) -> None:
        with self.cond:
            generation = self.generation
            self._check(core)
            self.arrived += 1
            if self.arrived == self.parties:
                self.arrived, self.generation = 0, generation + 1
                self.cond.notify_all()
                return
            core.waiting = True
            try:
                while self.generation == generation:
                    self.cond.wait()
                    if self.generation == generation:
                        self._check(core)
            finally:
                core.waiting = False

    def end(self, core: Core, failed: bool) -> None:
        with self.cond:
            if failed:
                self.failed = True
            else:
                self.ended[core.block] = core.syncs
            self.cond.notify_all()

    def abort(self) -> None:
        """Release every waiting block (the launch's time limit): they stop."""
        with self.cond:
            self.failed = True
            self.cond.notify_all()

    def _check(self, core: Core) -> None:
        if self.ended:
            block = min(self.ended)
            raise SyncError("ascendc.error.syncall_deadlock",
                            {"block": core.block, "call": core.syncs, "ended": block,
                             "ended_calls": self.ended[block]})
        if self.failed:
            raise KernelStop()


def GetBlockIdx() -> int:
    """The index of the block running this code, 0 .. GetBlockNum() - 1."""
    return current().block


def GetBlockNum() -> int:
    """blockDim: how many blocks run the kernel."""
    return current().launch.block_dim


def SyncAll() -> None:
    """Wait until every block of the launch has reached its SyncAll (values and time)."""
    core = current()
    issue(Pipe.S, Kind.BARRIER, "SyncAll", barrier=core.syncs)
    core.syncs += 1
    core.launch.sync.wait(core)


def launch(kernel: Callable, chip: Chip, block_dim: int, args: dict[str, np.ndarray],
           tiling=None, *, kernel_type: str = KERNEL_TYPE_AIV_ONLY, name: str = "ascendc",
           max_instructions: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
           ) -> KernelRun:
    """Run ``kernel`` on ``block_dim`` cores of ``chip`` (AIV: vector cores, AIC: cube
    cores) with the GM arrays ``args`` and the host's ``tiling``; see the module doc."""
    core_ids = _core_ids(chip, block_dim, kernel_type)
    arrays = _gm_arrays(args)
    cap = max_instructions or min(DEFAULT_MAX_INSTRUCTIONS, default_instruction_cap())
    state = Launch(chip, block_dim, kernel_type, cap, timeout_s)
    state.sync = SyncGroup(block_dim)
    cores = [Core(state, block, core_id) for block, core_id in enumerate(core_ids)]
    threads = [threading.Thread(target=_run_block, name=f"ascendc-block-{core.block}",
                                args=(core, kernel, arrays, tiling), daemon=True)
               for core in cores]
    for thread in threads:
        thread.start()
    _join(threads, cores, timeout_s)
    failed = [core for core in cores if core.error is not None]
    if failed:
        raise _first_error(failed)
    program, lines, blocks = to_program(name, cores)
    notes = tuple(note for core in cores for note in core.notes)
    return KernelRun(arrays, program, lines, blocks, notes, block_dim, tuple(core_ids),
                     kernel_type)


def _run_block(core: Core, kernel: Callable, arrays: dict[str, np.ndarray], tiling) -> None:
    """One block's thread: bind its core, run the kernel, record how it ended."""
    bind(core)
    addrs = [GmAddr(name, array) for name, array in arrays.items()]
    call_args = addrs if tiling is None else [*addrs, copy.deepcopy(tiling)]
    finished = False
    try:
        kernel(*call_args)
        finished = True
    except _Interrupt as stop:  # the launch's time limit
        _, line = traceback_location(stop)
        _keep(core, LimitError("ascendc.error.time_limit",
                               {"seconds": core.launch.timeout_s}, line=line,
                               filename=STUDENT_FILENAME if line else None))
    except KernelStop as stop:  # a limit, or another block failed while this one waited
        _keep(core, stop.error)
    except AscendCError as exc:
        _keep(core, exc)
    except Exception as exc:  # noqa: BLE001 - any failure of the student's code is reported
        filename, line = traceback_location(exc)
        msg_id, values = getattr(exc, "msg_id", None), getattr(exc, "values", None)
        if isinstance(msg_id, str) and msg_id and isinstance(values, dict):
            # an exception with its own message (a sandbox refusal at run time): kept
            error = StudentCodeError(msg_id, dict(values), line=line, filename=filename)
        else:
            error = StudentCodeError("ascendc.error.python_exception",
                                     {"type": type(exc).__name__, "detail": str(exc)[:300]},
                                     line=line, filename=filename)
        error.__cause__ = exc
        _keep(core, error)
    finally:
        bind(None)
        core.launch.sync.end(core, failed=not finished)


def _keep(core: Core, error: AscendCError | None) -> None:
    """Record how a block failed (None: it was stopped because another block failed)."""
    if error is not None:
        error.core = core.block
    core.error = error


class _Interrupt(KernelStop):
    """Raised inside a block still running at the time limit (as an asynchronous
    exception: it interrupts plain Python loops too)."""

    def __init__(self) -> None:
        super().__init__(None)


def _join(threads: list[threading.Thread], cores: list[Core], timeout_s: float) -> None:
    """Wait for every block; at the time limit interrupt those still running (not those
    waiting at SyncAll: they stop when the interrupted ones end)."""
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    late = [(t, c) for t, c in zip(threads, cores) if t.is_alive() and not c.waiting]
    for thread, _ in late:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                   ctypes.py_object(_Interrupt))
    if late:
        cores[0].launch.sync.abort()
    for thread in threads:
        thread.join(_GRACE_S if late else None)
    if any(thread.is_alive() for thread in threads):  # stuck in one long C call
        for _, core in late:
            if core.error is None:
                _keep(core, LimitError("ascendc.error.time_limit", {"seconds": timeout_s},
                                       line=None, filename=None))


def _first_error(failed: list[Core]) -> AscendCError:
    """The error to report: the lowest block's, a deadlock only when nothing else failed;
    blocks stopped because another failed (error None) are skipped."""
    errors = [core.error for core in failed if core.error is not None]
    causes = [e for e in errors if not isinstance(e, SyncError)]
    return min(causes or errors, key=lambda e: e.core)


def _core_ids(chip: Chip, block_dim, kernel_type: str) -> list[int]:
    if kernel_type not in KERNEL_TYPES:
        raise OperandError("ascendc.error.kernel_type",
                           {"value": repr(kernel_type), "allowed": ", ".join(KERNEL_TYPES)})
    ids = chip.vector_core_ids() if kernel_type == KERNEL_TYPE_AIV_ONLY else \
        chip.cube_core_ids()
    if isinstance(block_dim, bool) or not isinstance(block_dim, (int, np.integer)) or \
            not 1 <= block_dim <= len(ids):
        raise OperandError("ascendc.error.block_dim",
                           {"block_dim": repr(block_dim), "max": len(ids),
                            "kernel_type": kernel_type, "chip": chip.display_name})
    return list(ids[:int(block_dim)])


def _gm_arrays(args: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Copies of the GM arguments, each a 1-D array of a type the DSL knows."""
    arrays = {}
    for name, array in dict(args).items():
        array = np.asarray(array)
        if dt.of_array(array) is None:
            raise OperandError("ascendc.error.gm_dtype",
                               {"name": str(name), "dtype": str(array.dtype),
                                "allowed": ", ".join(dt.ALL)})
        arrays[str(name)] = array.reshape(-1).copy()
    return arrays


def student_namespace() -> dict:
    """The names a student's source sees: every DSL name (``from kernels.ascendc import
    *``), with Ascend C's ``float`` for fp32."""
    import kernels.ascendc as package
    return {"__name__": "student",
            **{name: getattr(package, name) for name in package.DSL_NAMES}}


def compile_student(source: str) -> dict:
    """Run a student's module source (compiled as STUDENT_FILENAME) in a fresh namespace
    holding the DSL and return that namespace (its kernel functions, tiling classes ...).
    A syntax error is an AscendCError at its line."""
    try:
        code = compile(source, STUDENT_FILENAME, "exec")
    except SyntaxError as exc:
        raise StudentCodeError("ascendc.error.syntax", {"detail": str(exc.msg)},
                               line=exc.lineno, filename=STUDENT_FILENAME) from None
    namespace = student_namespace()
    try:
        exec(code, namespace)  # noqa: S102 - the student's own module, as the page runs it
    except AscendCError:
        raise
    except Exception as exc:  # noqa: BLE001
        filename, line = traceback_location(exc)
        raise StudentCodeError("ascendc.error.python_exception",
                               {"type": type(exc).__name__, "detail": str(exc)[:300]},
                               line=line, filename=filename) from exc
    return namespace


__all__ = ["DEFAULT_MAX_INSTRUCTIONS", "DEFAULT_TIMEOUT_S", "GetBlockIdx", "GetBlockNum",
           "KernelRun", "SyncAll", "compile_student", "launch", "student_location",
           "student_namespace"]

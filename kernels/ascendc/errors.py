"""Misuse of the DSL as exceptions a student learns from.

Every error is an :class:`AscendCError` carrying a message id (``ascendc.error.*``), the
values its message needs and where it happened: the line of the student's code (found on
the call stack when the error is raised) and the core (block index) that ran it. Nothing
here is translated; the layers above look the id up in the catalogues
(``explorer/core/locales/<lang>/ascendc.toml``).

The student's source is compiled with the file name :data:`STUDENT_FILENAME`; the line is
that of the innermost frame of that file. For a kernel written in an ordinary Python file
(a test), the innermost frame outside this package stands in.
"""
from __future__ import annotations

import functools
import sys
import sysconfig
from pathlib import Path

#: the file name the student's source is compiled with (``compile(src, STUDENT_FILENAME,
#: "exec")``): errors report the line of the innermost frame of this file
STUDENT_FILENAME = "<student>"
_PACKAGE_DIR = str(Path(__file__).resolve().parent)
#: frames of these folders are never the student's: this package, the standard library and
#: installed packages (numpy raising inside a student's call points at the student's line)
_NOT_STUDENT = tuple(sorted({_PACKAGE_DIR, *(str(Path(sysconfig.get_paths()[key]).resolve())
                                             for key in ("stdlib", "purelib", "platlib"))}))


class AscendCError(Exception):
    """A misuse of the Ascend C model: ``message_id`` + ``values`` + ``line`` (+ ``core``)."""

    def __init__(self, message_id: str, values: dict | None = None, *,
                 line: int | None = None, filename: str | None = None) -> None:
        self.message_id = message_id
        self.values = dict(values or {})
        self.core: int | None = None
        if line is None:
            filename, line = student_location()
        self.line = line
        self.filename = filename
        super().__init__(message_id)

    def __str__(self) -> str:  # untranslated: the id, its values and the place
        where = f" (line {self.line})" if self.line is not None else ""
        core = f" [block {self.core}]" if self.core is not None else ""
        return f"{self.message_id} {self.values}{where}{core}"


class QueueError(AscendCError):
    """TQue misuse: DeQue of an empty queue, EnQue beyond its depth, no free buffer."""


class TensorStateError(AscendCError):
    """A LocalTensor used after FreeTensor or after EnQue moved it to a queue."""


class CapacityError(AscendCError):
    """InitBuffer beyond the UB / L1 / L0 capacity of the chip."""


class AlignmentError(AscendCError):
    """A DataCopy or a tensor offset off the 32-byte (or fractal) alignment."""


class BoundsError(AscendCError):
    """A count or a range outside the tensor it addresses."""


class OperandError(AscendCError):
    """Wrong operand: dtype, TPosition, copy path or parameter the hardware does not take."""


class PipeRaceError(AscendCError):
    """Two pipes touch one buffer with no EnQue / DeQue between them (a data race)."""


class SyncError(AscendCError):
    """SyncAll that can never complete (a core ended while others wait)."""


class LimitError(AscendCError):
    """The instruction cap or the step budget was reached (an endless loop ends here)."""


class StudentCodeError(AscendCError):
    """A plain Python exception raised by the student's code (NameError, IndexError ...)."""


def student_location(frame=None) -> tuple[str | None, int | None]:
    """(file name, line) of the innermost frame of the student's code on the stack: the
    frame compiled as STUDENT_FILENAME, else the innermost frame outside this package."""
    frame = frame or sys._getframe(1)
    fallback = (None, None)
    while frame is not None:
        name = frame.f_code.co_filename
        if name == STUDENT_FILENAME:
            return name, frame.f_lineno
        if fallback[1] is None and _may_be_student(name):
            fallback = (name, frame.f_lineno)
        frame = frame.f_back
    return fallback


def traceback_location(exc: BaseException) -> tuple[str | None, int | None]:
    """(file name, line) of the innermost student frame of an exception's traceback."""
    tb, found, fallback = exc.__traceback__, None, (None, None)
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name == STUDENT_FILENAME:
            found = (name, tb.tb_lineno)
        elif _may_be_student(name):
            fallback = (name, tb.tb_lineno)
        tb = tb.tb_next
    return found or fallback


@functools.lru_cache(maxsize=256)
def _may_be_student(filename: str) -> bool:
    """Whether a frame's file may hold the student's code (not this package, the
    standard library, an installed package or Python's frozen modules)."""
    if filename.startswith("<"):
        return False
    try:
        path = str(Path(filename).resolve())
    except OSError:
        return False
    return not path.startswith(_NOT_STUDENT)


class KernelStop(BaseException):
    """Stops one core's kernel: a limit was reached (``error`` is the LimitError) or another
    core failed while this one waited at SyncAll (``error`` None). A BaseException, so a
    student's ``except Exception`` cannot swallow it and loop on."""

    def __init__(self, error: AscendCError | None = None) -> None:
        self.error = error
        super().__init__(error.message_id if error else "stopped")

"""GM and local tensors, and the buffer bookkeeping that turns queue use into dependencies.

* :class:`GmAddr` is a kernel argument (Ascend C's ``GM_ADDR``): a pointer into one of
  the launch's GM arrays; ``x + n`` moves it by n elements.
* :class:`GlobalTensor` is a typed window on GM (``SetGlobalBuffer(addr, length)``);
  ``xGm[offset]`` is the window from ``offset`` on, as Ascend C's ``operator[]``.
* :class:`LocalTensor` is a typed view of one buffer of a TQue or TBuf (a :class:`Slot`),
  with an ownership token: AllocTensor and DeQue hand out a token, EnQue and FreeTensor
  take it back, and any later use of the old tensor is an error.

Dependencies (DESIGN.md: the ones TQue EnQue/DeQue create) come from the buffer's history:
the first instruction on each pipe after a DeQue waits for the last writes before the
EnQue; after an AllocTensor it waits for the last uses of the slot before its FreeTensor.
Within one phase (between two queue operations) one buffer may not be written on one pipe
and used on another: the pipes run in parallel, so that is a data race (an error).
"""
from __future__ import annotations

from enum import Enum

import numpy as np

from kernels.common.program import Level, Pipe

from . import dtypes as dt
from .context import current_chip
from .errors import AlignmentError, BoundsError, OperandError, PipeRaceError, TensorStateError


class TPosition(Enum):
    """Logical positions (Ascend C ``TPosition`` / ``QuePosition``); ``memory`` is the
    physical buffer each lives in."""

    VECIN = "VECIN"
    VECOUT = "VECOUT"
    VECCALC = "VECCALC"
    A1 = "A1"
    B1 = "B1"
    A2 = "A2"
    B2 = "B2"
    CO1 = "CO1"

    @property
    def memory(self) -> str:
        return MEMORY[self]


QuePosition = TPosition
#: the memory of each position: UB (vector), L1, L0A, L0B, L0C (cube)
MEMORY = {TPosition.VECIN: "UB", TPosition.VECOUT: "UB", TPosition.VECCALC: "UB",
          TPosition.A1: "L1", TPosition.B1: "L1", TPosition.A2: "L0A", TPosition.B2: "L0B",
          TPosition.CO1: "L0C"}
#: storage level of each memory (Program transfers name levels)
LEVELS = {"UB": Level.UB, "L1": Level.L1, "L0A": Level.L0A, "L0B": Level.L0B,
          "L0C": Level.L0C}


def as_int(value, what: str) -> int:
    """``value`` as a Python int, or an error naming what it was for."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise OperandError("ascendc.error.not_an_integer", {"what": what, "value": repr(value)})
    return int(value)


class GmAddr:
    """GM_ADDR: a kernel argument, pointing at element ``offset`` of a GM array."""

    __slots__ = ("name", "array", "offset")

    def __init__(self, name: str, array: np.ndarray, offset: int = 0) -> None:
        self.name, self.array, self.offset = name, array, offset

    def __add__(self, elements) -> GmAddr:
        moved = self.offset + as_int(elements, "GM_ADDR + offset")
        if not 0 <= moved <= self.array.size:
            raise BoundsError("ascendc.error.gm_out_of_range",
                              {"name": self.name, "start": moved, "end": moved,
                               "size": self.array.size})
        return GmAddr(self.name, self.array, moved)

    def __repr__(self) -> str:
        return f"GM_ADDR({self.name} + {self.offset})"


class GlobalTensor:
    """A typed window on a GM array (Ascend C ``GlobalTensor<T>``)."""

    def __init__(self, dtype: dt.DType | None = None) -> None:
        self.dtype = dtype
        self._addr: GmAddr | None = None
        self._length = 0

    def SetGlobalBuffer(self, addr: GmAddr, length=None) -> None:
        if not isinstance(addr, GmAddr):
            raise OperandError("ascendc.error.not_gm_addr", {"value": repr(addr)})
        actual = dt.of_array(addr.array)
        if self.dtype is not None and actual != self.dtype:
            raise OperandError("ascendc.error.gm_dtype_mismatch",
                               {"name": addr.name, "declared": self.dtype.name,
                                "actual": actual.name})
        left = addr.array.size - addr.offset
        length = left if length is None else as_int(length, "SetGlobalBuffer length")
        if length < 0 or length > left:
            raise BoundsError("ascendc.error.gm_out_of_range",
                              {"name": addr.name, "start": addr.offset,
                               "end": addr.offset + length, "size": addr.array.size})
        self.dtype, self._addr, self._length = actual, addr, length

    def __getitem__(self, offset) -> GlobalTensor:
        self._require()
        offset = as_int(offset, "GlobalTensor[offset]")
        if not 0 <= offset <= self._length:
            raise BoundsError("ascendc.error.gm_out_of_range",
                              {"name": self._addr.name, "start": self._addr.offset + offset,
                               "end": self._addr.offset + offset, "size": self._addr.array.size})
        view = GlobalTensor(self.dtype)
        view._addr = GmAddr(self._addr.name, self._addr.array, self._addr.offset + offset)
        view._length = self._length - offset
        return view

    def GetSize(self) -> int:
        return self._length

    def GetValue(self, index) -> object:
        return self.elements(as_int(index, "GetValue index"), 1)[0].item()

    def SetValue(self, index, value) -> None:
        self.elements(as_int(index, "SetValue index"), 1)[0] = dt.round_to(
            dt.exact(value), self.dtype)

    # ---- used by the copy operations ---------------------------------------------------
    @property
    def name(self) -> str:
        self._require()
        return self._addr.name

    @property
    def start(self) -> int:
        """Absolute element index of the window's first element in its GM array."""
        self._require()
        return self._addr.offset

    def elements(self, first: int, count: int) -> np.ndarray:
        """Writable view of elements [first, first + count) of the window, bounds checked."""
        self._require()
        if first < 0 or count < 0 or first + count > self._length:
            raise BoundsError("ascendc.error.gm_out_of_range",
                              {"name": self._addr.name, "start": self.start + first,
                               "end": self.start + first + count,
                               "size": self.start + self._length})
        return self._addr.array[self.start + first:self.start + first + count]

    def _require(self) -> None:
        if self._addr is None:
            raise OperandError("ascendc.error.gm_not_set", {})


# ---- local memory -------------------------------------------------------------------
OWNED, QUEUED, FREED = "owned", "queued", "freed"


class Token:
    """Who may use a buffer now: the tensor AllocTensor / DeQue / TBuf.Get handed out."""

    __slots__ = ("state", "pending", "synced", "end_line", "dtype")

    def __init__(self, pending: dict[Pipe, int], dtype: dt.DType) -> None:
        self.state = OWNED
        self.pending = pending  # pipe -> instruction this tenure / phase must wait for
        self.synced: set[Pipe] = set()  # pipes whose first access took the pending edges
        self.end_line: int | None = None  # where EnQue / FreeTensor took it back
        self.dtype = dtype


class Slot:
    """One buffer of a TQue or TBuf: its bytes and its access history (per core)."""

    def __init__(self, owner, position: TPosition, nbytes: int, index: int) -> None:
        self.owner, self.position, self.index = owner, position, index
        self.nbytes = nbytes
        self.data = np.zeros(nbytes, np.uint8)  # stale contents survive a FreeTensor
        self.prev_tenure: dict[Pipe, int] = {}  # last use per pipe before the FreeTensor
        self.tenure: dict[Pipe, int] = {}  # last use per pipe since the AllocTensor
        self.phase_writes: dict[Pipe, tuple[int, int | None]] = {}  # pipe -> (id, line)
        self.phase_uses: dict[Pipe, int | None] = {}  # pipe -> line of its last use
        self.written = False

    def start_tenure(self, dtype: dt.DType) -> Token:
        """AllocTensor: the new owner waits for the last uses before the FreeTensor."""
        if self.tenure:
            self.prev_tenure = self.tenure
        self.tenure, self.written = {}, False
        self._new_phase()
        return Token(dict(self.prev_tenure), dtype)

    def hand_over(self, token: Token) -> dict[Pipe, int]:
        """EnQue: the consumer will wait for the writes of the phase now ending (or, with
        none, for what the producer itself waited for)."""
        writes = {pipe: idx for pipe, (idx, _) in self.phase_writes.items()}
        self._new_phase()
        return writes or dict(token.pending)

    def end_tenure(self) -> None:
        """FreeTensor."""
        if self.tenure:
            self.prev_tenure = self.tenure
        self.tenure = {}
        self._new_phase()

    def _new_phase(self) -> None:
        self.phase_writes, self.phase_uses = {}, {}


class LocalTensor:
    """A typed view of one local buffer (Ascend C ``LocalTensor<T>``)."""

    __slots__ = ("_slot", "_token", "dtype", "_offset", "_size")

    def __init__(self, slot: Slot, token: Token, dtype: dt.DType, offset: int = 0,
                 size: int | None = None) -> None:
        self._slot, self._token, self.dtype = slot, token, dtype
        self._offset = offset
        self._size = (slot.nbytes // dtype.bytes - offset) if size is None else size

    @property
    def position(self) -> TPosition:
        return self._slot.position

    @property
    def memory(self) -> str:
        return self._slot.position.memory

    def GetSize(self) -> int:
        return self._size

    def GetPosition(self) -> TPosition:
        return self._slot.position

    def __getitem__(self, offset) -> LocalTensor:
        """The tensor from element ``offset`` on (its address must stay aligned)."""
        offset = as_int(offset, "LocalTensor[offset]")
        if not 0 <= offset < self._size:
            raise BoundsError("ascendc.error.local_out_of_range",
                              {"offset": offset, "size": self._size})
        align = local_alignment(self.memory)
        if (offset * self.dtype.bytes) % align:
            raise AlignmentError("ascendc.error.local_offset_unaligned",
                                 {"offset": offset, "dtype": self.dtype.name,
                                  "bytes": offset * self.dtype.bytes, "align": align})
        return LocalTensor(self._slot, self._token, self.dtype, self._offset + offset,
                           self._size - offset)

    def GetValue(self, index) -> object:  # scalar read: no instruction
        self.check_usable()
        return self.values(_checked_index(self, index), 1)[0].item()

    def SetValue(self, index, value) -> None:  # scalar write: no instruction
        self.check_usable()
        self.values(_checked_index(self, index), 1)[0] = dt.round_to(dt.exact(value),
                                                                     self.dtype)
        self._slot.written = True

    def __repr__(self) -> str:
        return f"LocalTensor<{self.dtype.name}>({self.position.name}, {self._size})"

    # ---- used by the operations --------------------------------------------------------
    def values(self, first: int = 0, count: int | None = None) -> np.ndarray:
        """Writable numpy view of ``count`` elements from ``first`` (no checks)."""
        count = self._size - first if count is None else count
        start = self._offset + first
        return self._slot.data.view(self.dtype.np)[start:start + count]

    def check_usable(self) -> None:
        """Refuse a tensor whose buffer was given back (FreeTensor) or queued (EnQue)."""
        token = self._token
        if token.state == FREED:
            raise TensorStateError("ascendc.error.use_after_free", {"free_line": token.end_line})
        if token.state == QUEUED:
            raise TensorStateError("ascendc.error.use_after_enque",
                                   {"enque_line": token.end_line})

    def access(self, pipe: Pipe, write: bool, idx: int, line: int | None) -> list[int]:
        """Record that instruction ``idx`` on ``pipe`` reads or writes this buffer; returns
        the instructions it must wait for. Raises on a freed / queued tensor and on a race
        with another pipe in the same phase."""
        self.check_usable()
        slot, token = self._slot, self._token
        others = slot.phase_uses if write else {p: ln for p, (_, ln) in slot.phase_writes.items()}
        for other, other_line in others.items():
            if other != pipe:
                raise _race(pipe, other, other_line, write)
        deps = []
        if pipe not in token.synced:
            deps = [i for p, i in token.pending.items() if p != pipe]
            token.synced.add(pipe)
        slot.phase_uses[pipe] = line
        slot.tenure[pipe] = idx
        if write:
            slot.phase_writes[pipe] = (idx, line)
            slot.written = True
        return deps

    @property
    def written(self) -> bool:
        return self._slot.written


def _race(pipe: Pipe, other: Pipe, other_line: int | None, write: bool) -> PipeRaceError:
    values = {"pipe": pipe.name, "other_pipe": other.name, "other_line": other_line}
    if write:
        return PipeRaceError("ascendc.error.pipe_race_write", values)
    return PipeRaceError("ascendc.error.pipe_race_read", values)


def _checked_index(tensor: LocalTensor, index) -> int:
    index = as_int(index, "element index")
    if not 0 <= index < tensor.GetSize():
        raise BoundsError("ascendc.error.local_out_of_range",
                          {"offset": index, "size": tensor.GetSize()})
    return index


#: bytes a local address and a DataCopy length must be a multiple of, per memory (the
#: chip presets hold the same figures: ub_align_bytes, l1_align_bytes, l0ab_align_bytes,
#: l0c_align_bytes); ``local_alignment`` reads the chip's when a launch is running
DEFAULT_ALIGN = {"UB": 32, "L1": 32, "L0A": 512, "L0B": 512, "L0C": 64}


def local_alignment(memory: str) -> int:
    """Alignment in bytes of addresses and copy lengths in ``memory`` on the running chip."""
    chip = current_chip()
    if chip is None:
        return DEFAULT_ALIGN[memory]
    return {"UB": chip.ub_align_bytes, "L1": chip.l1_align_bytes, "L0A": chip.l0ab_align_bytes,
            "L0B": chip.l0ab_align_bytes, "L0C": chip.l0c_align_bytes}[memory]

"""TPipe, TQue and TBuf: local memory handed out by buffers, and the queues between pipes.

``pipe.InitBuffer(que, num, len)`` gives a queue ``num`` buffers of ``len`` bytes (rounded
up to the memory's alignment) in the memory of its position; every InitBuffer of a core is
counted against that memory's size on the chip (UB for VECIN / VECOUT / VECCALC, L1 for
A1 / B1, L0A for A2, L0B for B2, L0C for CO1), and one over it is refused there.

A TQue of depth ``depth`` hands out buffers with AllocTensor (an error when all ``num``
are in use), takes a written tensor with EnQue (an error beyond ``depth`` queued tensors),
gives it to the consumer with DeQue (an error when empty) and takes it back with
FreeTensor. A TBuf (VECCALC scratch) has one buffer and no queue: ``Get`` views it.
"""
from __future__ import annotations

from collections import deque

from . import dtypes as dt
from .context import current
from .errors import CapacityError, OperandError, QueueError, TensorStateError, student_location
from .tensors import (
    FREED,
    QUEUED,
    LocalTensor,
    Slot,
    Token,
    TPosition,
    as_int,
    local_alignment,
)

KERNEL_TYPE_AIV_ONLY = "AIV"
KERNEL_TYPE_AIC_ONLY = "AIC"
#: memories a core of each kind has on a split chip (910B: AIV = UB, AIC = L1 + L0);
#: a coupled chip's AI core has them all
SPLIT_MEMORIES = {KERNEL_TYPE_AIV_ONLY: ("UB",),
                  KERNEL_TYPE_AIC_ONLY: ("L1", "L0A", "L0B", "L0C")}
CAPACITY_FIELDS = {"UB": "ub_bytes", "L1": "l1_bytes", "L0A": "l0a_bytes",
                   "L0B": "l0b_bytes", "L0C": "l0c_bytes"}


class TQue:
    """A queue of local tensors between two pipes (Ascend C ``TQue<position, depth>``)."""

    def __init__(self, position: TPosition, depth: int = 1) -> None:
        if not isinstance(position, TPosition):
            raise OperandError("ascendc.error.not_a_position", {"value": repr(position)})
        self.position = position
        self.depth = as_int(depth, "TQue depth")
        if self.depth < 1:
            raise OperandError("ascendc.error.bad_size", {"what": "TQue depth",
                                                          "value": self.depth})
        self._slots: list[Slot] = []
        self._free: deque[Slot] = deque()
        self._queued: deque[tuple[Slot, dict, dt.DType]] = deque()

    def AllocTensor(self, dtype: dt.DType) -> LocalTensor:
        self._require()
        _check_dtype(dtype)
        if not self._free:
            raise QueueError("ascendc.error.alloc_no_free_buffer",
                             {"position": self.position.name, "num": len(self._slots)})
        slot = self._free.popleft()
        return LocalTensor(slot, slot.start_tenure(dtype), dtype)

    def EnQue(self, tensor: LocalTensor) -> None:
        self._require()
        self._own(tensor, "EnQue")
        if len(self._queued) >= self.depth:
            raise QueueError("ascendc.error.enque_full",
                             {"position": self.position.name, "depth": self.depth})
        token = tensor._token
        pending = tensor._slot.hand_over(token)
        token.state, token.end_line = QUEUED, student_location()[1]
        self._queued.append((tensor._slot, pending, token.dtype))

    def DeQue(self, dtype: dt.DType | None = None) -> LocalTensor:
        self._require()
        if not self._queued:
            raise QueueError("ascendc.error.deque_empty", {"position": self.position.name})
        slot, pending, queued_dtype = self._queued.popleft()
        if dtype is not None:
            _check_dtype(dtype)
            if dtype != queued_dtype:
                raise OperandError("ascendc.error.deque_dtype",
                                   {"enqueued": queued_dtype.name, "dequeued": dtype.name})
        return LocalTensor(slot, Token(pending, queued_dtype), queued_dtype)

    def FreeTensor(self, tensor: LocalTensor) -> None:
        self._require()
        self._own(tensor, "FreeTensor")
        token = tensor._token
        token.state, token.end_line = FREED, student_location()[1]
        tensor._slot.end_tenure()
        self._free.append(tensor._slot)

    def HasTensorInQue(self) -> bool:
        return bool(self._queued)

    def GetTensorCountInQue(self) -> int:
        return len(self._queued)

    def VacantInQue(self) -> bool:
        return len(self._queued) < self.depth

    def _own(self, tensor, what: str) -> None:
        """``tensor`` must be a live tensor of one of this queue's buffers."""
        if not isinstance(tensor, LocalTensor):
            raise OperandError("ascendc.error.not_local", {"op": what, "value": repr(tensor)})
        tensor.check_usable()
        if tensor._slot.owner is not self:
            raise TensorStateError("ascendc.error.foreign_tensor",
                                   {"op": what, "position": self.position.name,
                                    "tensor_position": tensor.position.name})

    def _require(self) -> None:
        current()
        if not self._slots:
            raise QueueError("ascendc.error.not_initialized", {"position": self.position.name})

    def _init(self, core_slots: list[Slot]) -> None:
        self._slots = core_slots
        self._free = deque(core_slots)


class TBuf:
    """Scratch memory with no queue (Ascend C ``TBuf<TPosition::VECCALC>``)."""

    def __init__(self, position: TPosition = TPosition.VECCALC) -> None:
        if not isinstance(position, TPosition):
            raise OperandError("ascendc.error.not_a_position", {"value": repr(position)})
        self.position = position
        self._slot: Slot | None = None
        self._token: Token | None = None

    def Get(self, dtype: dt.DType, count=None) -> LocalTensor:
        current()
        if self._slot is None:
            raise QueueError("ascendc.error.not_initialized", {"position": self.position.name})
        _check_dtype(dtype)
        if self._token is None:
            self._token = self._slot.start_tenure(dtype)
        whole = self._slot.nbytes // dtype.bytes
        size = whole if count is None else as_int(count, "TBuf.Get count")
        if not 1 <= size <= whole:
            raise OperandError("ascendc.error.bad_size", {"what": "TBuf.Get count",
                                                          "value": size})
        return LocalTensor(self._slot, self._token, dtype, 0, size)


class TPipe:
    """Owns a core's local memory: InitBuffer carves queues and buffers out of it."""

    def __init__(self) -> None:
        self._core = current()

    def InitBuffer(self, buffer, *sizes) -> None:
        """``InitBuffer(que, num, len)`` for a TQue, ``InitBuffer(buf, len)`` for a TBuf."""
        if isinstance(buffer, TQue):
            if len(sizes) != 2:
                raise OperandError("ascendc.error.init_buffer_args", {"kind": "TQue"})
            num, length = as_int(sizes[0], "InitBuffer num"), as_int(sizes[1], "InitBuffer len")
            initialised = bool(buffer._slots)
        elif isinstance(buffer, TBuf):
            if len(sizes) != 1:
                raise OperandError("ascendc.error.init_buffer_args", {"kind": "TBuf"})
            num, length = 1, as_int(sizes[0], "InitBuffer len")
            initialised = buffer._slot is not None
        else:
            raise OperandError("ascendc.error.not_a_queue", {"value": repr(buffer)})
        if initialised:
            raise QueueError("ascendc.error.init_twice", {"position": buffer.position.name})
        for what, value in (("InitBuffer num", num), ("InitBuffer len", length)):
            if value < 1:
                raise OperandError("ascendc.error.bad_size", {"what": what, "value": value})
        slots = self._allocate(buffer, num, length)
        if isinstance(buffer, TQue):
            buffer._init(slots)
        else:
            buffer._slot = slots[0]

    def _allocate(self, owner, num: int, length: int) -> list[Slot]:
        core, position = self._core, owner.position
        memory, chip = position.memory, core.launch.chip
        kind = core.launch.kernel_type
        if chip.architecture == "split" and memory not in SPLIT_MEMORIES[kind]:
            raise OperandError("ascendc.error.position_unavailable",
                               {"position": position.name, "memory": memory,
                                "kernel_type": kind})
        align = local_alignment(memory)
        nbytes = -(-length // align) * align
        capacity = getattr(chip, CAPACITY_FIELDS[memory])
        used = core.memory_used.get(memory, 0)
        if used + num * nbytes > capacity:
            raise CapacityError("ascendc.error.over_capacity",
                                {"memory": memory, "position": position.name, "num": num,
                                 "len": nbytes, "used": used, "need": used + num * nbytes,
                                 "capacity": capacity, "chip": chip.display_name})
        core.memory_used[memory] = used + num * nbytes
        return [Slot(owner, position, nbytes, i) for i in range(num)]


def _check_dtype(dtype) -> None:
    if not isinstance(dtype, dt.DType):
        raise OperandError("ascendc.error.not_a_dtype",
                           {"value": repr(dtype), "allowed": ", ".join(dt.ALL)})

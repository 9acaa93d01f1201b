"""The TQue pattern: a CopyIn / Compute / CopyOut loop whose stages talk through queues.

In Ascend C, ``EnQue``/``DeQue`` make a consumer wait for its producer, and a producer's
``AllocTensor`` waits until a slot is freed (``FreeTensor``) by the consumer of the tile
BUFFER_NUM iterations earlier. Those two dependencies are all double buffering is, so
BUFFER_NUM is one parameter here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.common.program import Level, Pipe, ProgramBuilder, VClass


@dataclass(frozen=True, eq=False)
class Stage:
    """One instruction per loop iteration: a copy or a vector op (arrays per iteration)."""

    label: str
    pipe: Pipe
    src: Level | None = None
    dst: Level | None = None
    nbytes: np.ndarray | int = 0
    region: np.ndarray | int = -1
    elems: np.ndarray | int = 0
    dtype: str = ""
    vclass: VClass = VClass.SIMPLE

    @classmethod
    def copy(cls, label, pipe, src, dst, nbytes, region=-1) -> Stage:
        return cls(label, pipe, src, dst, nbytes=nbytes, region=region)

    @classmethod
    def vector(cls, label, elems, dtype, vclass=VClass.SIMPLE) -> Stage:
        return cls(label, Pipe.V, elems=elems, dtype=dtype, vclass=vclass)

    def emit(self, b: ProgramBuilder, cores, seq, tasks) -> np.ndarray:
        if self.src is not None:
            return b.transfer(cores, self.pipe, self.label, self.src, self.dst, self.nbytes,
                              seq, region=self.region, task=tasks)
        return b.vector(cores, self.label, self.elems, self.dtype, seq, vclass=self.vclass,
                        task=tasks)


def previous(ids: np.ndarray, iters: np.ndarray, depth: int) -> np.ndarray:
    """The id ``depth`` iterations earlier on the same core, -1 where there is none.
    Iterations must be laid out core by core with iteration numbers 0, 1, 2, ..."""
    prev = np.full(len(ids), -1, np.int64)
    if depth < len(ids):
        prev[depth:] = ids[:-depth]
    prev[iters < depth] = -1
    return prev


def iteration_index(owner: np.ndarray) -> np.ndarray:
    """Running index within each owner's run (arrays laid out owner by owner), i.e. the
    iteration number each core sees for its own instructions."""
    owner = np.asarray(owner)
    first = np.r_[0, np.flatnonzero(owner[1:] != owner[:-1]) + 1]
    return np.arange(len(owner)) - np.repeat(first, np.diff(np.r_[first, len(owner)]))


def staged_loop(b: ProgramBuilder, cores, iters, tasks, stages: list[Stage],
                queues: list[tuple[int, int, int]], seq0: int = 0) -> list[np.ndarray]:
    """Emit every stage for every iteration and the queue dependencies between them.

    ``queues`` lists (producer stage, consumer stage, BUFFER_NUM). Stages on one pipe run
    in program order (iteration-major), so only queue edges are needed. Returns the ids
    of each stage's instructions; program-order keys start at ``seq0``.
    """
    iters = np.asarray(iters, np.int64)
    seq = seq0 + iters * len(stages)
    ids = [stage.emit(b, cores, seq + s, tasks) for s, stage in enumerate(stages)]
    for producer, consumer, depth in queues:
        b.depend(ids[consumer], ids[producer])  # DeQue waits for EnQue
        b.depend(ids[producer], previous(ids[consumer], iters, depth))  # AllocTensor
    return ids


def previous_by(owner: np.ndarray, order: np.ndarray, ids: np.ndarray,
                depth: int) -> np.ndarray:
    """``previous`` for instructions in any layout: per ``owner`` (a lane, a core), the id
    ``depth`` places earlier in ``order`` (program order within the owner), -1 where there
    is none. For queues whose users interleave in the arrays (pieces of one tile handed to
    alternating vector cores)."""
    owner, order = np.asarray(owner), np.asarray(order)
    perm = np.lexsort((order, owner))
    prev = np.empty(len(perm), np.int64)
    prev[perm] = previous(np.asarray(ids, np.int64)[perm], iteration_index(owner[perm]), depth)
    return prev

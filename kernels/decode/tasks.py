"""Decode work cut into tasks and tiles, in the order each core executes them.

A task is one sequence's KV-head group (``heads_per_pass`` heads) over a token range: the
whole cache, or one split-KV chunk. A tile is ``tile_tokens`` tokens of a task's range,
the unit one DataCopy moves. Arrays are laid out core by core in execution order, with
per-core counters, so queue dependencies are `tque.previous` over them.

Program order ("iterations", each worth STAGES seq slots) gives every task a header
iteration, one iteration per tile, a spare one (the cube pipeline runs one tile behind)
and a trailer: ITER_EXTRA = 3 iterations besides its tiles.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.common.program import Level, Pipe, ProgramBuilder
from kernels.common.scheduling import assign, core_order
from kernels.common.tque import iteration_index

ITER_EXTRA = 3


@dataclass(frozen=True, eq=False)
class Tasks:
    """Tasks in execution order (core by core); every array has one entry per task."""

    tid: np.ndarray  # task id (sequence-major numbering): the dynamic queue's order
    seq: np.ndarray  # sequence index
    head0: np.ndarray  # first KV head
    heads: np.ndarray  # KV heads in the task
    t0: np.ndarray  # first token
    tokens: np.ndarray  # tokens in the task
    chunks: np.ndarray  # chunks of this (sequence, head group): > 1 means partial results
    slot: np.ndarray  # core slot
    ordinal: np.ndarray  # task counter on its core
    it0: np.ndarray  # header iteration on its core
    n_tiles: np.ndarray

    def __len__(self) -> int:
        return len(self.seq)

    @property
    def it_end(self) -> np.ndarray:
        """Trailer iteration."""
        return self.it0 + self.n_tiles + ITER_EXTRA - 1


@dataclass(frozen=True, eq=False)
class Tiles:
    """Tiles in execution order; ``task`` indexes `Tasks` (execution order)."""

    task: np.ndarray
    j: np.ndarray  # tile index within its task
    t0: np.ndarray
    tokens: np.ndarray
    u: np.ndarray  # tile counter on its core (queue iterations)
    it: np.ndarray  # program-order iteration on its core

    def __len__(self) -> int:
        return len(self.task)


def make_tasks(lengths, kv_heads: int, heads_per_pass: int, split_tokens: int,
               tile_tokens: int, n_cores: int, sched: dict, cost) -> Tasks:
    """Tasks (sequence-major, then head group, then chunk) mapped to cores by the policy
    in ``sched`` (`decode_params.schedule`), from ``cost(tokens, heads)`` cycles per task;
    tasks of one sequence share its key (cluster_lpt keeps them in one cluster).
    ``split_tokens`` 0 means one chunk per sequence (no split)."""
    lengths = np.asarray(lengths, np.int64)
    groups = -(-kv_heads // heads_per_pass)
    chunks = -(-lengths // split_tokens) if split_tokens else np.ones_like(lengths)
    per_seq = groups * chunks
    seq = np.repeat(np.arange(len(lengths)), per_seq)
    local = np.arange(len(seq)) - np.repeat(np.cumsum(per_seq) - per_seq, per_seq)
    group, chunk = local // chunks[seq], local % chunks[seq]
    span = split_tokens if split_tokens else lengths[seq]
    t0 = chunk * span
    tokens = np.minimum(span, lengths[seq] - t0)
    head0 = group * heads_per_pass
    heads = np.minimum(heads_per_pass, kv_heads - head0)
    slots = assign(cost(tokens, heads), n_cores, keys=seq, **sched)
    order, ordinal = core_order(slots)
    slot = slots[order]
    n_tiles = -(-tokens[order] // tile_tokens)
    width = n_tiles + ITER_EXTRA
    it0 = np.cumsum(width) - width
    it0 -= np.repeat(it0[ordinal == 0], np.diff(np.r_[np.flatnonzero(ordinal == 0), len(order)]))
    return Tasks(order, seq[order], head0[order], heads[order],
                 t0[order], tokens[order], chunks[seq][order], slot, ordinal, it0, n_tiles)


def make_tiles(tasks: Tasks, tile_tokens: int) -> Tiles:
    """Every task's tiles, task after task (so core by core, in execution order)."""
    task = np.repeat(np.arange(len(tasks)), tasks.n_tiles)
    j = np.arange(len(task)) - np.repeat(np.cumsum(tasks.n_tiles) - tasks.n_tiles,
                                         tasks.n_tiles)
    t0 = tasks.t0[task] + j * tile_tokens
    tokens = np.minimum(tile_tokens, tasks.t0[task] + tasks.tokens[task] - t0)
    return Tiles(task, j, t0, tokens, iteration_index(tasks.slot[task]),
                 tasks.it0[task] + 1 + j)


def emit_dispatch(b: ProgramBuilder, core, seqs, seq_at, before, order) -> np.ndarray:
    """The dynamic queue's GM atomic fetch-add before each task: a read and a write of the
    counter (one GM region, so after the first it hits L2), serialised over all cores in
    queue order, each after the core's previous task; returns the write ids (a task's
    first instruction waits for them). ``order``: tasks in queue order; ``before``: the
    last instruction of the core's previous task, -1 for a core's first."""
    counter = b.regions(32)[0]
    read = b.transfer(core, Pipe.MTE2, "Atomic fetch-add (task queue)", Level.GM, Level.UB,
                      32, seq_at, region=counter, task=seqs)
    write = b.transfer(core, Pipe.MTE3, "Atomic fetch-add (task queue)", Level.UB, Level.GM,
                       32, seq_at, region=counter, task=seqs)
    b.depend(write, read)
    b.depend(read, before)
    b.depend(read[order[1:]], write[order[:-1]])  # one counter: takes serialise
    return write

"""KV compression on the vector cores: score every cached token, select the kept ones, and
write a compact cache and its index (the blog's ``sparse_attention_kv_compress``, done as
an Ascend C kernel would, and for the other evicting policies).

Per (sequence, KV head) task, on the cores and policy of the attention:

1. scores: ``norm_high`` / ``norm_low`` stream K through UB in tiles (CopyIn K, Cast to
   fp32, Mul k*k, ReduceSum: ||k||^2); ``h2o`` reads the fp32 attention it accumulated
   during the previous steps; ``random`` draws no scores;
2. top-k: Sort32 then MrgSort passes over (score, index) pairs of 8 bytes, at the
   preset's sort rate (1 + ceil(log4(n / 32)) passes over n elements);
3. gather: the kept K and V rows come in by DMA, one DataCopy per row: a scalar issue
   cost per row (~12 cycles, CANN's data_copy sample, an estimate) plus the bytes, in
   batches that fill UB (BUFFER_NUM slots), and go out contiguous to the compact cache;
4. the index (int32 per kept token) is written.

``streaming`` keeps a ring buffer of sinks + window (nothing to compress) and ``quest``
evicts nothing (it scores pages at every step), so both have no compression phase.
"""
from __future__ import annotations

import numpy as np

from hardware_presets import Chip
from kernels.common.cycles import gm_read_cycles, vector_cycles
from kernels.common.program import Level, Pipe, ProgramBuilder, VClass
from kernels.common.scheduling import assign, core_order
from kernels.common.tque import iteration_index, previous
from kernels.decode.params import FP32, DecodeParams
from kernels.models import ModelShape
from kernels.sparse.policies import budget, keep_count

COMPRESSING = ("norm_high", "norm_low", "h2o", "random")
ISSUE_CYCLES_PER_ROW = 12  # scalar cost of issuing one DataCopy (CANN data_copy sample, M)
INDEX_BYTES = 4
STAGES = 6


def sort_passes(n) -> np.ndarray:
    """Sort32 over blocks of 32, then 4-way MrgSort until one list remains."""
    blocks = np.maximum(1, -(-np.asarray(n) // 32))
    return 1 + np.ceil(np.log(blocks) / np.log(4)).astype(np.int64)


def sort_words(n) -> np.ndarray:
    """fp32-sized words a full sort moves: (score, index) pairs, every pass."""
    return 2 * np.asarray(n) * sort_passes(n)


def kept_counts(p: DecodeParams, lengths) -> np.ndarray:
    """Tokens kept per sequence: ceil(keep_ratio x n), sinks and window included (the
    selection's count rule). Refused, as the selection refuses it, when the shortest
    sequence's budget cannot hold the sinks and window (the tightest case of the batch)
    or its cache is shorter than the window."""
    lengths = np.asarray(lengths, np.int64)
    budget(p.sparse, int(lengths.min()), p.keep_ratio, p.sinks, p.window, p.page_size)
    return np.array([keep_count(int(n), p.keep_ratio) for n in lengths], np.int64)


def row_bytes(p: DecodeParams, model: ModelShape) -> int:
    """One token of one KV head, K or V, as stored (codes + per-token scale)."""
    return p.head_row_bytes(model.head_dim)


def gather_rows(chip: Chip, p: DecodeParams, model: ModelShape) -> int:
    """Rows per gather batch: BUFFER_NUM slots of K and V rows fill UB."""
    return p.ub_rows(chip, row_bytes(p, model))


def _plan(chip: Chip, p: DecodeParams, model: ModelShape, lengths) -> dict:
    """Per task (sequence x KV head): tokens, kept, scoring tiles, gather batches."""
    lengths = np.asarray(lengths, np.int64)
    seq = np.repeat(np.arange(len(lengths)), model.kv_heads)
    n, kept = lengths[seq], kept_counts(p, lengths)[seq]
    scored = p.sparse in ("norm_high", "norm_low", "h2o")
    tiles = -(-n // p.tile_tokens) if scored else np.zeros_like(n)
    batches = -(-kept // gather_rows(chip, p, model))
    return {"seq": seq, "n": n, "kept": kept, "tiles": tiles, "batches": batches,
            "sorted": scored}


def task_cycles(chip: Chip, p: DecodeParams, model: ModelShape, plan: dict) -> np.ndarray:
    """Estimated cycles per task: scoring, the sort, and the gather (issue + bytes)."""
    cores, n, rows = p.vector_cores(chip), plan["n"], plan["kept"]
    cycles = 2 * rows * ISSUE_CYCLES_PER_ROW + gm_read_cycles(
        chip, 2 * rows * row_bytes(p, model), cores)
    if plan["sorted"]:
        norms = p.sparse != "h2o"
        cycles = cycles + vector_cycles(chip, sort_words(n), FP32, VClass.SORT)
        cycles = cycles + gm_read_cycles(chip, n * (row_bytes(p, model) if norms else FP32),
                                         cores)
        if norms:
            cycles = cycles + vector_cycles(chip, 3 * n * model.head_dim, FP32)
    return np.asarray(cycles, dtype=np.float64)


def instruction_count(chip: Chip, p: DecodeParams, model: ModelShape, lengths) -> int:
    if p.sparse not in COMPRESSING:
        return 0
    plan = _plan(chip, p, model, lengths)
    per_tile = 4 if p.sparse != "h2o" else 1
    return int(per_tile * plan["tiles"].sum() + 3 * plan["batches"].sum()
               + (len(plan["n"]) if plan["sorted"] else 0) + len(plan["n"]))


def emit(b: ProgramBuilder, chip: Chip, p: DecodeParams, model: ModelShape, lengths,
         seq0: int) -> int:
    """Emit the compression of every (sequence, KV head); returns the next free seq."""
    if p.sparse not in COMPRESSING:
        return seq0
    plan = _plan(chip, p, model, lengths)
    cores = p.vector_core_ids(chip)
    slots = assign(task_cycles(chip, p, model, plan), len(cores), keys=plan["seq"],
                   **p.schedule(chip, len(cores)))
    order, ordinal = core_order(slots)
    width = plan["tiles"][order] + plan["batches"][order] + 2
    it0 = np.cumsum(width) - width
    starts = np.flatnonzero(ordinal == 0)
    it0 -= np.repeat(it0[starts], np.diff(np.r_[starts, len(order)]))
    task = {"id": order, "core": cores[slots[order]], "it0": it0, "seq": plan["seq"][order]}
    last = _emit_scores(b, p, model, plan, task, seq0) if plan["sorted"] else None
    _emit_select_and_gather(b, chip, p, model, plan, task, seq0, last)
    return seq0 + int((it0 + width).max(initial=0)) * STAGES + STAGES


def _expand(counts: np.ndarray, task: dict) -> tuple[np.ndarray, np.ndarray]:
    """(task position, index within the task) of every item, task after task."""
    pos = np.repeat(np.arange(len(counts)), counts)
    j = np.arange(len(pos)) - np.repeat(np.cumsum(counts) - counts, counts)
    return pos, j


def _emit_scores(b, p, model, plan, task, seq0) -> np.ndarray:
    """Scoring tiles; returns the last scoring instruction of each task."""
    counts = plan["tiles"][task["id"]]
    pos, j = _expand(counts, task)
    n = plan["n"][task["id"]][pos]
    tk = np.minimum(p.tile_tokens, n - j * p.tile_tokens)
    core, seqs = task["core"][pos], task["seq"][pos]
    s = seq0 + (task["it0"][pos] + 1 + j) * STAGES
    u = iteration_index(core)
    if p.sparse == "h2o":
        ld = b.transfer(core, Pipe.MTE2, "CopyIn accumulated scores", Level.GM, Level.UB,
                        tk * FP32, s, task=seqs)
        b.depend(ld, previous(ld, u, p.buffer_num))
        last = ld
    else:
        d = model.head_dim
        ld = b.transfer(core, Pipe.MTE2, "CopyIn K", Level.GM, Level.UB,
                        tk * row_bytes(p, model), s, task=seqs)
        cast = b.vector(core, "Cast K -> fp32", tk * d, "fp32", s + 1, task=seqs)
        b.vector(core, "Mul k*k", tk * d, "fp32", s + 2, task=seqs)
        last = b.vector(core, "ReduceSum -> norms", tk * d, "fp32", s + 3, task=seqs)
        b.depend(cast, ld)
        b.depend(ld, previous(cast, u, p.buffer_num))
    ends = np.cumsum(counts) - 1
    return last[ends]


def _emit_select_and_gather(b, chip, p, model, plan, task, seq0, last) -> None:
    """Top-k sort (scored policies), gather batches, index write."""
    ids, core, seqs = task["id"], task["core"], task["seq"]
    it_sort = task["it0"] + plan["tiles"][ids] + 1
    n = plan["n"][ids]
    if plan["sorted"]:
        srt = b.vector(core, "Sort32 + MrgSort (top-k)", sort_words(n), "fp32",
                       seq0 + it_sort * STAGES, vclass=VClass.SORT, task=seqs)
        b.depend(srt, last)
    counts = plan["batches"][ids]
    pos, j = _expand(counts, task)
    rows = np.minimum(gather_rows(chip, p, model), plan["kept"][ids][pos] -
                      j * gather_rows(chip, p, model))
    c, sq = core[pos], seqs[pos]
    s = seq0 + (it_sort[pos] + 1 + j) * STAGES
    issue = b.scalar(c, "DataCopy issue (gather rows)", 2 * rows * ISSUE_CYCLES_PER_ROW, s,
                     task=sq)
    nbytes = 2 * rows * row_bytes(p, model)
    ld = b.transfer(c, Pipe.MTE2, "Gather kept K,V rows", Level.GM, Level.UB, nbytes, s + 1,
                    task=sq)
    st = b.transfer(c, Pipe.MTE3, "Store compact K,V", Level.UB, Level.GM, nbytes, s + 2,
                    task=sq)
    b.depend(ld, issue)
    b.depend(st, ld)
    b.depend(ld, previous(st, iteration_index(c), p.buffer_num))
    if plan["sorted"]:
        b.depend(issue, srt[pos])  # the rows are known once sorted
    idx = b.transfer(core, Pipe.MTE3, "Store index", Level.UB, Level.GM,
                     plan["kept"][ids] * INDEX_BYTES,
                     seq0 + (it_sort + counts + 1) * STAGES, task=seqs)
    if plan["sorted"]:
        b.depend(idx, srt)

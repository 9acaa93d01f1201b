"""Decode attention on the vector cores (AIV), and split-KV's combine step.

Per task (a sequence's group of ``heads_per_pass`` KV heads over a token range) the
vector core loads q once, then streams the cache tile by tile through UB, as an Ascend C
kernel with TQue ping-pong (BUFFER_NUM slots for K and V tiles) does:

    CopyIn K (MTE2) -> Cast/dequantise K -> Mul q*K -> ReduceSum (scores) ->
    online softmax update (max, sub, scale) -> Exp -> CopyIn V (MTE2) -> Cast V ->
    Mul p*V -> ReduceSum + rescale o

and at the end divides o by the running sum and writes the output (MTE3). The g query
heads of a GQA group are processed one at a time over a T x d fp32 scratch, so one API
call covers g x T x d elements. With split-KV (flash-decoding) a task covers one chunk
and writes (o, m, l) partials in fp32; after a SyncAll, one combine task per (sequence,
head group) streams the chunks' partials and rescales them with log-sum-exp weights.

Cache tiles are read once per step, so their reads carry no L2 region (L2 cannot serve
them); partials and q use regions, so L2 hits show where they happen.
"""
from __future__ import annotations

import numpy as np

from hardware_presets import Chip
from kernels.common.cycles import gm_read_cycles, vector_cycles
from kernels.common.program import DTYPE_BYTES, Level, Pipe, ProgramBuilder, VClass
from kernels.common.scheduling import assign, core_order
from kernels.common.tque import iteration_index, previous
from kernels.decode.params import FP32, DecodeParams
from kernels.decode.tasks import Tasks, emit_dispatch, make_tasks, make_tiles
from kernels.models import ModelShape

STAGES = 10
TILE_OPS = 10  # instructions per tile
TASK_OPS = 4  # CopyIn q, Cast q, Div/Cast, CopyOut
DISPATCH_OPS = 2  # the dynamic queue's atomic: read and write


def tile_vector_ops(p: DecodeParams, model: ModelShape, tk,
                    h) -> list[tuple[int, str, object, VClass]]:
    """(stage, label, elements, class) of the vector instructions of one tile of ``tk``
    tokens x ``h`` KV heads, all in fp32; stages 0 and 6 are the K and V loads."""
    g, d = model.gqa_group, model.head_dim
    passes = 2 if p.quantized_kv else 1  # codes: Cast, then Mul by the scale
    big = h * g * tk * d
    cast = ("Cast {} -> fp32" if passes == 1 else "Dequant {}")
    simple = VClass.SIMPLE
    return [(1, cast.format("K"), passes * tk * h * d, simple), (2, "Mul q*K", big, simple),
            (3, "ReduceSum -> scores", big, simple),
            (4, "Softmax update (max, sub, scale)", 3 * h * g * tk + 2 * h * g, simple),
            (5, "Exp", h * g * (tk + 1), VClass.SPECIAL),
            (7, cast.format("V"), passes * tk * h * d, simple), (8, "Mul p*V", big, simple),
            (9, "ReduceSum + rescale o", big + 2 * h * g * d, simple)]


def tile_bytes(p: DecodeParams, model: ModelShape, tk, h):
    """Bytes of one K (or V) tile as stored: codes plus per-token scales."""
    return tk * h * p.head_row_bytes(model.head_dim)


def task_cycles(chip: Chip, p: DecodeParams, model: ModelShape, tokens, heads) -> np.ndarray:
    """Estimated cycles of tasks of ``tokens`` x ``heads``: per tile the larger of its
    vector work and its two loads at a fair share of HBM (the cost model's formulas),
    summed over the tiles (full ones and the last partial one)."""
    tokens, heads = np.asarray(tokens), np.asarray(heads)
    cores = p.vector_cores(chip)

    def tile(tk):
        vec = sum(vector_cycles(chip, e, 4, c)
                  for _, _, e, c in tile_vector_ops(p, model, tk, heads))
        return np.where(tk > 0, np.maximum(vec, 2 * gm_read_cycles(
            chip, tile_bytes(p, model, tk, heads), cores)), 0.0)

    t = p.tile_tokens
    return (tokens // t) * tile(t) + tile(tokens % t) + chip.gm_read_latency_cycles


def tasks_for(chip: Chip, p: DecodeParams, model: ModelShape, lengths) -> Tasks:
    """The vector attention's tasks for these lengths, on block_dim vector cores."""
    cores = p.vector_cores(chip)
    return make_tasks(lengths, model.kv_heads, p.heads_per_pass, p.split_tokens,
                      p.tile_tokens, cores, p.schedule(chip, cores),
                      lambda tokens, heads: task_cycles(chip, p, model, tokens, heads))


def instruction_count(chip: Chip, p: DecodeParams, model: ModelShape, lengths) -> int:
    """Instructions `emit` will add (checked against the cap before building)."""
    tasks = tasks_for(chip, p, model, lengths)
    count = TILE_OPS * int(tasks.n_tiles.sum()) + TASK_OPS * len(tasks)
    count += DISPATCH_OPS * len(tasks) if p.policy == "dynamic" else 0
    split = tasks.chunks > 1
    if not split.any():
        return count
    combines = int((split & (tasks.t0 == 0)).sum())
    return count + 2 * int(split.sum()) + 2 * combines + p.vector_cores(chip)


def emit(b: ProgramBuilder, chip: Chip, p: DecodeParams, model: ModelShape, lengths,
         seq0: int) -> int:
    """Emit the attention (and the combine for split-KV); returns the next free seq."""
    cores = p.vector_core_ids(chip)
    tasks = tasks_for(chip, p, model, lengths)
    tiles = make_tiles(tasks, p.tile_tokens)
    core = cores[tasks.slot]
    head = _emit_headers(b, p, model, tasks, core, seq0)
    _emit_tiles(b, p, model, tiles, tasks, core, seq0)
    parts, out = _emit_trailers(b, p, model, tasks, core, seq0)
    if p.policy == "dynamic":
        s = seq0 + tasks.it0 * STAGES - 1  # before the task's header, after the last task
        taken = emit_dispatch(b, core, tasks.seq, s, previous(out, tasks.ordinal, 1),
                              np.argsort(tasks.tid))
        b.depend(head, taken)
    nxt = seq0 + int(tasks.it_end.max(initial=0) + 1) * STAGES
    if parts is None:
        return nxt
    b.sync_all(cores, nxt)
    return _emit_combine(b, p, model, tasks, cores, parts, nxt + 1)


def _emit_headers(b, p, model, tasks, core, seq0) -> np.ndarray:
    """CopyIn q (g query heads per KV head) and its Cast to fp32, per task."""
    g, d = model.gqa_group, model.head_dim
    qe = tasks.heads * g * d
    s = seq0 + tasks.it0 * STAGES
    load = b.transfer(core, Pipe.MTE2, "CopyIn q", Level.GM, Level.UB,
                      qe * DTYPE_BYTES[p.out_dtype], s, task=tasks.seq)
    cast = b.vector(core, "Cast q -> fp32", qe, "fp32", s + 1, task=tasks.seq)
    b.depend(cast, load)
    b.depend(load, previous(cast, tasks.ordinal, 1))  # one q buffer
    return load


def _emit_tiles(b, p, model, tiles, tasks, core, seq0) -> None:
    """The per-tile loop with K and V queues of BUFFER_NUM slots (the vector pipe runs
    its instructions in program order, so only the queues need edges)."""
    bn = p.buffer_num
    h, tk, c = tasks.heads[tiles.task], tiles.tokens, core[tiles.task]
    s, seqs = seq0 + tiles.it * STAGES, tasks.seq[tiles.task]
    in_bytes = tile_bytes(p, model, tk, h)
    ld_k = b.transfer(c, Pipe.MTE2, "CopyIn K", Level.GM, Level.UB, in_bytes, s, task=seqs)
    ld_v = b.transfer(c, Pipe.MTE2, "CopyIn V", Level.GM, Level.UB, in_bytes, s + 6, task=seqs)
    ops = {stage: b.vector(c, label, elems, "fp32", s + stage, vclass=vclass, task=seqs)
           for stage, label, elems, vclass in tile_vector_ops(p, model, tk, h)}
    cast_k, cast_v = ops[1], ops[7]
    for load, cast in ((ld_k, cast_k), (ld_v, cast_v)):
        b.depend(cast, load)  # DeQue waits for EnQue
        b.depend(load, previous(cast, tiles.u, bn))  # AllocTensor waits for a free slot


def _emit_trailers(b, p, model, tasks, core, seq0):
    """Divide by the running sum, Cast and CopyOut (whole tasks), or pack the fp32
    partials (o, m, l) of split tasks and write them; returns the partials' (CopyOut ids,
    regions) or None without split."""
    g, d = model.gqa_group, model.head_dim
    s = seq0 + tasks.it_end * STAGES
    part = tasks.chunks > 1
    oe = tasks.heads * g * d
    nbytes = np.where(part, tasks.heads * g * (d + 2) * FP32, oe * DTYPE_BYTES[p.out_dtype])
    fin = np.empty(len(tasks), np.int64)
    for mask, label, elems in ((~part, "Div o/l, Cast", 2 * oe),
                               (part, "Pack partials (o, m, l)", 2 * tasks.heads * g)):
        if mask.any():
            fin[mask] = b.vector(core[mask], label, elems[mask], "fp32", s[mask],
                                 task=tasks.seq[mask])
    region = b.regions(nbytes)
    out = b.transfer(core, Pipe.MTE3, "CopyOut o", Level.UB, Level.GM, nbytes, s + 1,
                     region=region, task=tasks.seq)
    b.depend(out, fin)
    b.depend(fin, previous(out, tasks.ordinal, p.buffer_num))
    return ((out, region) if part.any() else None), out


def _emit_combine(b, p, model, tasks, cores, parts, seq0) -> int:
    """One combine task per split (sequence, head group): stream its chunks' partials
    (CopyIn, log-sum-exp rescale and add), then divide and CopyOut the output."""
    g, d = model.gqa_group, model.head_dim
    out, region = parts
    split = np.flatnonzero(tasks.chunks > 1)
    key = tasks.seq[split] * 65536 + tasks.head0[split]
    srt = split[np.lexsort((tasks.t0[split], key))]  # partials grouped by combine task
    key = tasks.seq[srt] * 65536 + tasks.head0[srt]
    first = np.r_[True, key[1:] != key[:-1]]
    combine_of = np.cumsum(first) - 1
    n_comb = int(combine_of.max(initial=-1)) + 1
    # the combine kernel's tasks differ only in their chunk counts: the task's policy, but
    # without a queue (round-robin for "dynamic"; cluster_lpt has no shared data here)
    policy = {"dynamic": "round_robin", "cluster_lpt": "lpt"}.get(p.policy, p.policy)
    slots = assign(np.bincount(combine_of).astype(float), len(cores), policy,
                   inter_core_cost=p.inter_core_cost)
    order, ordinal = core_order(slots)
    rank = np.empty(n_comb, np.int64)
    rank[order] = np.arange(n_comb)
    pos = np.argsort(rank[combine_of], kind="stable")  # partials in execution order
    srt, comb = srt[pos], combine_of[pos]
    core = cores[slots[comb]]
    u = iteration_index(slots[comb])
    s = seq0 + (u + 2 * ordinal[rank[comb]]) * 3
    pe = tasks.heads[srt] * g * (d + 2)
    ld = b.transfer(core, Pipe.MTE2, "CopyIn partials", Level.GM, Level.UB, pe * FP32, s,
                    region=region[srt], task=tasks.seq[srt])
    b.depend(ld, out[srt])
    upd = b.vector(core, "Log-sum-exp combine", 3 * pe, "fp32", s + 1, task=tasks.seq[srt])
    b.depend(upd, ld)
    b.depend(ld, previous(upd, u, p.buffer_num))
    return _combine_outputs(b, p, model, tasks, srt, comb, core, s, int(s.max(initial=seq0)))


def _combine_outputs(b, p, model, tasks, srt, comb, core, s, top) -> int:
    """Per combine task, after its last partial: Div + Cast, CopyOut the output."""
    last = np.r_[np.flatnonzero(np.diff(comb)), len(comb) - 1] if len(comb) else comb
    oe = tasks.heads[srt[last]] * model.gqa_group * model.head_dim
    fin = b.vector(core[last], "Div o/l, Cast", 2 * oe, "fp32", s[last] + 2,
                   task=tasks.seq[srt[last]])
    st = b.transfer(core[last], Pipe.MTE3, "CopyOut o", Level.UB, Level.GM,
                    oe * DTYPE_BYTES[p.out_dtype], s[last] + 3, task=tasks.seq[srt[last]])
    b.depend(st, fin)
    return top + 6

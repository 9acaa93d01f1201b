"""Per-step work of the sparse policies that do not compress: Quest's page scoring before
attention and H2O's accumulation of attention after it.

* ``quest`` (query-aware, evicts nothing): per (sequence, KV head) read the per-page
  min and max of K (2 x head_dim x element bytes per page), bound q.k per page for the g
  query heads (Mul by min and by max, Max, ReduceSum: 4 x g x d per page), sort the page
  bounds and keep the top pages; attention then reads those pages only.
* ``h2o``: per (sequence, KV head) the fp32 accumulated attention of the kept tokens is
  read, the step's probabilities (summed over the g query heads) added, and written back.
  It runs after each core's attention (a fused kernel would do it per tile; the bytes and
  the vector work are the same).

Tasks go to the attention's vector cores with its policy.
"""
from __future__ import annotations

import numpy as np

from hardware_presets import Chip
from kernels.common.cycles import gm_read_cycles
from kernels.common.program import Level, Pipe, ProgramBuilder, VClass
from kernels.common.scheduling import assign, core_order
from kernels.decode.params import FP32, DecodeParams
from kernels.models import ModelShape
from kernels.sparse.compress import kept_counts, sort_words

STAGES = 4


def quest_pages(p: DecodeParams, lengths) -> np.ndarray:
    """Pages Quest reads per sequence: ceil(kept / page_size), at most all pages."""
    lengths = np.asarray(lengths, np.int64)
    pages = -(-lengths // p.page_size)
    return np.minimum(pages, -(-kept_counts(p, lengths) // p.page_size))


def attention_tokens(p: DecodeParams, lengths) -> np.ndarray:
    """Tokens attention reads per sequence under the sparse policy: all (none), the kept
    ones (evicting policies), or Quest's pages (at most the sequence's length)."""
    lengths = np.asarray(lengths, np.int64)
    if p.sparse == "none":
        return lengths
    if p.sparse == "quest":
        return np.minimum(lengths, quest_pages(p, lengths) * p.page_size)
    return kept_counts(p, lengths)


def instruction_count(p: DecodeParams, model: ModelShape, lengths) -> int:
    per_task = {"quest": 3, "h2o": 3}.get(p.sparse, 0)
    return per_task * len(lengths) * model.kv_heads


def _tasks(chip, p, model, lengths, cost_per_token):
    """(sequence of each task in execution order, its core, its ordinal, tokens)."""
    lengths = np.asarray(lengths, np.int64)
    seq = np.repeat(np.arange(len(lengths)), model.kv_heads)
    cores = p.vector_core_ids(chip)
    tokens = attention_tokens(p, lengths)[seq] if p.sparse == "h2o" else lengths[seq]
    slots = assign(gm_read_cycles(chip, tokens * cost_per_token, len(cores)), len(cores),
                   keys=seq, **p.schedule(chip, len(cores)))
    order, ordinal = core_order(slots)
    return seq[order], cores[slots[order]], ordinal, tokens[order]


def emit(b: ProgramBuilder, chip: Chip, p: DecodeParams, model: ModelShape, lengths,
         seq0: int, when: str) -> int:
    """Quest's scoring (``when`` = "before" attention) or H2O's accumulation ("after")."""
    if (p.sparse, when) not in (("quest", "before"), ("h2o", "after")):
        return seq0
    g, d = model.gqa_group, model.head_dim
    meta = 2 * d * p.kv_bytes / p.page_size  # metadata bytes per token
    seqs, core, ordinal, tokens = _tasks(chip, p, model, lengths,
                                         meta if p.sparse == "quest" else FP32)
    s = seq0 + ordinal * STAGES
    if p.sparse == "quest":
        pages = -(-tokens // p.page_size)
        ld = b.transfer(core, Pipe.MTE2, "CopyIn page min/max", Level.GM, Level.UB,
                        pages * 2 * d * p.kv_bytes, s, task=seqs)
        op = b.vector(core, "Page bounds (Mul, Max, ReduceSum)", 4 * g * d * pages, "fp32",
                      s + 1, task=seqs)
        out = b.vector(core, "Sort page bounds (top pages)", sort_words(pages), "fp32", s + 2,
                       vclass=VClass.SORT, task=seqs)
    else:
        ld = b.transfer(core, Pipe.MTE2, "CopyIn accumulated scores", Level.GM, Level.UB,
                        tokens * FP32, s, task=seqs)
        op = b.vector(core, "Add step attention (H2O)", (g + 1) * tokens, "fp32", s + 1,
                      task=seqs)
        out = b.transfer(core, Pipe.MTE3, "Store accumulated scores", Level.UB, Level.GM,
                         tokens * FP32, s + 2, task=seqs)
    b.depend(op, ld)
    b.depend(out, op)
    return int(s.max(initial=seq0)) + STAGES

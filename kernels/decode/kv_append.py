"""KV append, the first half of a decode step: put the new token's K and V in the cache.

* ``incremental`` (a fixed cache updated in place, as torchair / vLLM-Ascend's
  ``reshape_and_cache`` do): per sequence, MTE2 copies the new token's K and V rows
  (kv_heads x head_dim, from the QKV projection's output) into UB, quantised caches (int8,
  FP8 / HiF8, MX) quantise them on the vector unit (about 4 passes in fp32: abs, max, scale,
  multiply and cast), and MTE3 scatters each row to its slot: position length - 1 of
  the sequence's slab, or slot (length - 1) % block_size of block
  block_table[seq, (length - 1) // block_size]. Only the new token is written.
* ``concat`` (``torch.cat([cache, new])``, the pattern the blog replaces): per sequence
  the length - 1 cached tokens are copied through UB into a new buffer, tile by tile, K
  then V, and the new rows are written after them: every step reads length - 1 tokens
  and writes length tokens.

Tasks are sequences, mapped to vector cores by the scheduling policy from their cost
estimates; UB holds BUFFER_NUM row (or tile) slots for K and V. The append emits no
task-queue atomics: under "dynamic" its sequences go where the predicted queue sends them
(the attention, where the time is, emits and times its atomics).
"""
from __future__ import annotations

import numpy as np

from hardware_presets import Chip
from kernels.common.cycles import gm_read_cycles
from kernels.common.program import DTYPE_BYTES, Level, Pipe, ProgramBuilder
from kernels.common.scheduling import assign, core_order
from kernels.common.tque import iteration_index, previous
from kernels.decode.params import AttentionParams, DecodeParams
from kernels.models import ModelShape

STAGES = 6
LABELS = ("CopyIn new K,V", "Quantize K,V", "Scatter K -> cache", "Scatter V -> cache",
          "CopyIn cache tile", "CopyOut cache tile")


def row_bytes(p: AttentionParams, model: ModelShape) -> int:
    """One token's K (or V) row in the cache: kv_heads x head_dim codes + per-token scales."""
    return model.kv_heads * p.head_row_bytes(model.head_dim)


def traffic(p: AttentionParams, model: ModelShape, lengths) -> dict[str, int]:
    """GM bytes one layer's append moves, by strategy (the formulas the program follows):
    incremental reads the new rows (fp16) and writes them; concat also reads length - 1
    cached tokens and writes all length tokens, for K and V."""
    lengths = np.asarray(lengths, np.int64)
    new_in = 2 * model.kv_heads * model.head_dim * DTYPE_BYTES[p.out_dtype] * len(lengths)
    row = row_bytes(p, model)
    inc_write = 2 * row * len(lengths)
    return {"incremental_read": new_in, "incremental_write": inc_write,
            "concat_read": new_in + 2 * row * int((lengths - 1).sum()),
            "concat_write": 2 * row * int(lengths.sum())}


def concat_tile_tokens(chip: Chip, p: DecodeParams, model: ModelShape) -> int:
    """Tokens per concat tile: BUFFER_NUM slots of K or V rows in half the UB each."""
    return p.ub_rows(chip, row_bytes(p, model))


def task_cycles(chip: Chip, p: DecodeParams, model: ModelShape, lengths) -> np.ndarray:
    """Estimated cycles per sequence: its GM reads at a fair share of HBM plus a write
    latency (incremental: the new rows; concat: also the length - 1 cached tokens)."""
    lengths = np.asarray(lengths, np.int64)
    rows = 2 * model.kv_heads * model.head_dim * DTYPE_BYTES[p.out_dtype]
    old = 2 * row_bytes(p, model) * (lengths - 1) if p.append == "concat" else 0 * lengths
    cores = p.vector_cores(chip)
    return gm_read_cycles(chip, rows + old, cores) + chip.gm_write_latency_cycles


def instruction_count(chip: Chip, p: DecodeParams, model: ModelShape, lengths) -> int:
    """Instructions `emit` will add (checked against the cap before building)."""
    n = len(lengths)
    rows = n * (4 if p.quantized_kv else 3)
    if p.append == "incremental":
        return rows
    tiles = -(-(np.asarray(lengths, np.int64) - 1) // concat_tile_tokens(chip, p, model))
    return int(2 * 2 * tiles.sum()) + rows


def emit(b: ProgramBuilder, chip: Chip, p: DecodeParams, model: ModelShape, lengths,
         seq0: int) -> int:
    """Emit the append for every sequence; returns the next free seq value."""
    cores = p.vector_core_ids(chip)
    slots = assign(task_cycles(chip, p, model, lengths), len(cores),
                   **p.schedule(chip, len(cores)))
    order, ordinal = core_order(slots)
    if p.append == "incremental":
        return _incremental(b, p, model, cores[slots[order]], order, ordinal, seq0)
    return _concat(b, chip, p, model, np.asarray(lengths, np.int64), cores, slots, seq0)


def _incremental(b, p, model, core, seqs, ordinal, seq0) -> int:
    """Per sequence: CopyIn the new rows, (quantise,) scatter K and V, with TQue slots."""
    d_in = 2 * model.kv_heads * model.head_dim
    s = seq0 + ordinal * STAGES
    row = row_bytes(p, model)
    load = b.transfer(core, Pipe.MTE2, LABELS[0], Level.GM, Level.UB,
                      d_in * DTYPE_BYTES[p.out_dtype], s, task=seqs)
    ready = load
    if p.quantized_kv:  # abs, max, scale, multiply and cast: ~4 passes in fp32
        ready = b.vector(core, LABELS[1], 4 * d_in, "fp32", s + 1, task=seqs)
        b.depend(ready, load)
    k = b.transfer(core, Pipe.MTE3, LABELS[2], Level.UB, Level.GM, row, s + 2, task=seqs)
    v = b.transfer(core, Pipe.MTE3, LABELS[3], Level.UB, Level.GM, row, s + 3, task=seqs)
    b.depend(k, ready)
    b.depend(v, ready)
    b.depend(load, previous(v, ordinal, p.buffer_num))  # the UB slot is free again
    return int(s.max(initial=seq0)) + STAGES


def _concat(b, chip, p, model, lengths, cores, slots, seq0) -> int:
    """Per sequence: the length - 1 cached tokens of K, then of V, copied tile by tile
    through UB (CopyIn -> CopyOut), then the new rows written as the incremental path does."""
    tile = concat_tile_tokens(chip, p, model)
    row = row_bytes(p, model)
    order, ordinal = core_order(slots)
    per_seq = 2 * (-(-(lengths[order] - 1) // tile))  # K tiles then V tiles
    seqs = np.repeat(order, per_seq)
    j = np.arange(len(seqs)) - np.repeat(np.cumsum(per_seq) - per_seq, per_seq)
    j = j % np.maximum(1, np.repeat(per_seq // 2, per_seq))
    tokens = np.minimum(tile, lengths[seqs] - 1 - j * tile)
    u = iteration_index(slots[seqs])
    core = cores[slots[seqs]]
    s = seq0 + 2 * u
    load = b.transfer(core, Pipe.MTE2, LABELS[4], Level.GM, Level.UB, tokens * row, s,
                      task=seqs)
    store = b.transfer(core, Pipe.MTE3, LABELS[5], Level.UB, Level.GM, tokens * row, s + 1,
                       task=seqs)
    b.depend(store, load)
    b.depend(load, previous(store, u, p.buffer_num))
    nxt = int(s.max(initial=seq0)) + 2
    return _incremental(b, p, model, cores[slots[order]], order, ordinal, nxt)

"""Decode attention on the cube and the vector cores together (910B's AIC/AIV split).

Per task (one sequence's KV head with its GQA group of g query heads, padded to the
cube's 16 rows) the AIC streams the cache in tiles of T tokens and the first AIV of its
group runs the online softmax; they exchange data only through GM (served by L2), with
CrossCoreSetFlag / WaitFlag as the dependencies:

    AIC: Load K -> L1, LoadData K -> L0B, Mmad S = q K^T (M x T x d), Fixpipe S -> GM
    AIV: CopyIn S, softmax update (max, sub, scale), Exp, Cast P, CopyOut P -> GM
    AIC: Load V, Load P -> L1, LoadData P -> L0A, V -> L0B, Mmad O = P V, Fixpipe O -> GM
    AIV: CopyIn O, rescale and add into o; at the end o / l, Cast, CopyOut.

The cube runs one tile ahead (S of tile j + 1 is issued before O of tile j), as flash
attention kernels do, so the cube does not idle while the AIV works on P. Quantised
caches (int8, and the 8- and 4-bit floats) have no Mmad with fp16 q: the AIV dequantises
each K and V tile to fp16 in a GM workspace first (antiquant), which the AIC then loads
(the 950's cube takes FP8 / MX operands natively, but q and P would then have to be
quantised too; not modelled). Every buffer (L1, L0A, L0B, L0C, UB, the
workspace) is a ring of BUFFER_NUM slots. The second AIV of each group stays idle.
"""
from __future__ import annotations

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common.cycles import gm_read_cycles
from kernels.common.program import DTYPE_BYTES, Level, Pipe, ProgramBuilder, VClass
from kernels.common.tque import iteration_index, previous
from kernels.decode.params import FP32, DecodeParams, cube_rows
from kernels.decode.tasks import Tasks, Tiles, emit_dispatch, make_tasks, make_tiles
from kernels.models import ModelShape, kv_format

STAGES = 24
TILE_OPS = 17
INT8_TILE_OPS = 6
TASK_OPS = 4
DISPATCH_OPS = 2


def task_cycles(chip: Chip, p: DecodeParams, model: ModelShape, tokens,
                cores: int) -> np.ndarray:
    """Estimated cycles of tasks of ``tokens``: the AIC's MTE2, which loads K, V and P of
    every tile (its busiest pipe), at a fair share of HBM; three loads' latencies per tile."""
    tokens = np.asarray(tokens)
    m = cube_rows(model)
    cb = DTYPE_BYTES[p.out_dtype]
    nbytes = tokens * (2 * model.head_dim * cb + m * cb)
    tiles = -(-tokens // p.tile_tokens)
    return gm_read_cycles(chip, nbytes, cores) + 2 * tiles * chip.gm_read_latency_cycles


def tasks_for(chip: Chip, p: DecodeParams, model: ModelShape, lengths) -> Tasks:
    """One task per (sequence, KV head), on block_dim cube cores."""
    cores = p.cube_cores(chip)
    return make_tasks(lengths, model.kv_heads, 1, 0, p.tile_tokens, cores,
                      p.schedule(chip, cores),
                      lambda tokens, heads: task_cycles(chip, p, model, tokens, cores))


def require_split(chip: Chip) -> None:
    """The cube + vector variant models the AIC/AIV exchange through GM of split chips."""
    if chip.architecture != "split":
        raise InputError("params.impl", "cube_vector", Phrase("refusal.decode.cube_split",
                                                              chip=chip.display_name))


def instruction_count(chip: Chip, p: DecodeParams, model: ModelShape, lengths) -> int:
    tasks = tasks_for(chip, p, model, lengths)
    per_tile = TILE_OPS + (INT8_TILE_OPS if p.quantized_kv else 0)
    per_task = TASK_OPS + (DISPATCH_OPS if p.policy == "dynamic" else 0)
    return per_tile * int(tasks.n_tiles.sum()) + per_task * len(tasks)


def _ring(b, users, consumers, core, seq, depth) -> None:
    """A buffer of ``depth`` slots used in lane order: a user waits until the consumer of
    the use ``depth`` earlier on the same core has finished with the slot."""
    users, consumers = np.concatenate(users), np.concatenate(consumers)
    core, seq = np.concatenate(core), np.concatenate(seq)
    order = np.lexsort((seq, core))
    b.depend(users[order], previous(consumers[order], iteration_index(core[order]), depth))


class _Emitter:
    """Shared arrays of one emission (cores, seq bases, sizes per tile)."""

    def __init__(self, b, chip, p: DecodeParams, model, tasks: Tasks, tiles: Tiles,
                 seq0: int):
        self.b, self.p, self.bn = b, p, p.buffer_num
        self.g, self.d, self.m = model.gqa_group, model.head_dim, cube_rows(model)
        self.cb = DTYPE_BYTES[p.out_dtype]
        aic = np.asarray(chip.cube_core_ids(), np.int64)
        aiv = np.asarray(chip.vector_core_ids(), np.int64)
        self.aic, self.aiv = aic[tasks.slot], aiv[2 * tasks.slot]
        self.tasks, self.tiles = tasks, tiles
        self.c, self.v = self.aic[tiles.task], self.aiv[tiles.task]
        self.s = seq0 + tiles.it * STAGES
        self.seqs, self.tk = tasks.seq[tiles.task], tiles.tokens
        self.seq0 = seq0

    def tr(self, core, pipe, label, src, dst, nbytes, offset, region=-1):
        return self.b.transfer(core, pipe, label, src, dst, nbytes, self.s + offset,
                               region=region, task=self.seqs)

    def vec(self, label, elems, offset, vclass=VClass.SIMPLE):
        return self.b.vector(self.v, label, elems, "fp32", self.s + offset, vclass=vclass,
                             task=self.seqs)

    def workspace(self, kind: int, nbytes: int) -> np.ndarray:
        """GM workspace slot regions: BUFFER_NUM per core and kind (reused, so L2 keeps them)."""
        key = self.c * 64 + kind * self.bn + self.tiles.u % self.bn
        return self.b.regions_by_key(key, np.full(len(key), nbytes, np.int64))


def emit(b: ProgramBuilder, chip: Chip, p: DecodeParams, model: ModelShape, lengths,
         seq0: int) -> int:
    """Emit the cube + vector attention; returns the next free seq."""
    require_split(chip)
    tasks = tasks_for(chip, p, model, lengths)
    tiles = make_tiles(tasks, p.tile_tokens)
    e = _Emitter(b, chip, p, model, tasks, tiles, seq0)
    q_load, q_move = _header(e)
    k_src, v_src = _antiquant(e) if p.quantized_kv else (None, None)
    ids = _s_part(e, k_src)
    ids.update(_o_part(e, v_src))
    _buffers(e, ids, q_move)
    out = _trailer(e)
    if p.policy == "dynamic":  # the AIC takes the next task once its last one is out
        s = seq0 + tasks.it0 * STAGES - 1
        taken = emit_dispatch(b, e.aic, tasks.seq, s, previous(out, tasks.ordinal, 1),
                              np.argsort(tasks.tid))
        b.depend(q_load, taken)
    return seq0 + int(tasks.it_end.max(initial=0) + 1) * STAGES


def _header(e: _Emitter) -> tuple[np.ndarray, np.ndarray]:
    """Load q (M x d) into L1 and L0A once per task; returns both instructions."""
    t, b = e.tasks, e.b
    s = e.seq0 + t.it0 * STAGES
    qb = e.m * e.d * e.cb
    ld = b.transfer(e.aic, Pipe.MTE2, "Load q -> L1", Level.GM, Level.L1, qb, s, task=t.seq)
    mv = b.transfer(e.aic, Pipe.MTE1, "LoadData q -> L0A", Level.L1, Level.L0A, qb, s + 1,
                    task=t.seq)
    b.depend(mv, ld)
    return ld, mv


def _antiquant(e: _Emitter):
    """AIV: CopyIn a quantised K/V tile (int8 or 8-/4-bit float codes, + scales),
    dequantise to fp16, store to the workspace the AIC loads from. K one iteration ahead
    of its use, V in the iteration of S."""
    codes = kv_format(e.p.kv_dtype).storage
    in_bytes = e.tk * e.p.head_row_bytes(e.d)
    out_bytes = e.tk * e.d * e.cb
    stores = []
    for name, offset in (("K", 17 - STAGES), ("V", 20)):
        ld = e.tr(e.v, Pipe.MTE2, f"CopyIn {name} ({codes})", Level.GM, Level.UB, in_bytes, offset)
        dq = e.vec(f"Dequant {name} -> fp16", 2 * e.tk * e.d, offset + 1)
        st = e.tr(e.v, Pipe.MTE3, f"Store {name} fp16 -> workspace", Level.UB, Level.GM,
                  out_bytes, offset + 2, region=e.workspace(4 + (name == "V"),
                                                            e.p.tile_tokens * e.d * e.cb))
        e.b.depend(dq, ld)
        e.b.depend(st, dq)
        _ring(e.b, [ld], [st], [e.v], [e.s + offset], e.bn)
        stores.append(st)
    return stores[0], stores[1]


def _s_part(e: _Emitter, k_src) -> dict:
    """Scores: the AIC computes S = q K^T for tile j; the AIV turns it into P."""
    b, d, tk = e.b, e.d, e.tk
    kb = tk * d * (e.cb if k_src is not None else e.p.kv_bytes)
    region = e.workspace(4, e.p.tile_tokens * d * e.cb) if k_src is not None else -1
    ids = {"ld_k": e.tr(e.c, Pipe.MTE2, "Load K -> L1", Level.GM, Level.L1, kb, 0,
                        region=region)}
    if k_src is not None:
        b.depend(ids["ld_k"], k_src)
    ids["mv_k"] = e.tr(e.c, Pipe.MTE1, "LoadData K -> L0B", Level.L1, Level.L0B,
                       tk * d * e.cb, 1)
    ids["mm_s"] = b.mmad(e.c, "Mmad S = q K^T", e.m, tk, d, e.p.out_dtype, e.s + 2,
                         task=e.seqs)
    s_bytes = e.g * tk * FP32
    ids["fix_s"] = e.tr(e.c, Pipe.FIX, "Fixpipe S -> GM", Level.L0C, Level.GM, s_bytes, 3,
                        region=e.workspace(0, e.g * e.p.tile_tokens * FP32))
    ids["in_s"] = e.tr(e.v, Pipe.MTE2, "CopyIn S", Level.GM, Level.UB, s_bytes, 4,
                       region=e.workspace(0, e.g * e.p.tile_tokens * FP32))
    ids["sm"] = e.vec("Softmax update (max, sub, scale)", 3 * e.g * tk + 2 * e.g, 5)
    e.vec("Exp", e.g * (tk + 1), 6, VClass.SPECIAL)
    ids["cast_p"] = e.vec("Cast P", e.g * tk, 7)
    ids["out_p"] = e.tr(e.v, Pipe.MTE3, "CopyOut P -> GM", Level.UB, Level.GM,
                        e.g * tk * e.cb, 8, region=e.workspace(1, e.g * e.p.tile_tokens * e.cb))
    for after, before in (("mv_k", "ld_k"), ("mm_s", "mv_k"), ("fix_s", "mm_s"),
                          ("in_s", "fix_s"), ("sm", "in_s"), ("out_p", "cast_p")):
        b.depend(ids[after], ids[before])
    return ids


def _o_part(e: _Emitter, v_src) -> dict:
    """Output: one iteration later the AIC computes P V; the AIV rescales and adds it."""
    b, d, tk = e.b, e.d, e.tk
    lag = STAGES  # one iteration behind the scores
    vb = tk * d * (e.cb if v_src is not None else e.p.kv_bytes)
    ids = {"ld_v": e.tr(e.c, Pipe.MTE2, "Load V -> L1", Level.GM, Level.L1, vb, lag + 9,
                        region=e.workspace(5, e.p.tile_tokens * d * e.cb)
                        if v_src is not None else -1)}
    if v_src is not None:
        b.depend(ids["ld_v"], v_src)
    ids["ld_p"] = e.tr(e.c, Pipe.MTE2, "Load P -> L1", Level.GM, Level.L1, e.m * tk * e.cb,
                       lag + 10, region=e.workspace(1, e.g * e.p.tile_tokens * e.cb))
    ids["mv_p"] = e.tr(e.c, Pipe.MTE1, "LoadData P -> L0A", Level.L1, Level.L0A,
                       e.m * tk * e.cb, lag + 11)
    ids["mv_v"] = e.tr(e.c, Pipe.MTE1, "LoadData V -> L0B", Level.L1, Level.L0B,
                       tk * d * e.cb, lag + 12)
    ids["mm_o"] = b.mmad(e.c, "Mmad O = P V", e.m, d, tk, e.p.out_dtype, e.s + lag + 13,
                         task=e.seqs)
    ids["fix_o"] = e.tr(e.c, Pipe.FIX, "Fixpipe O -> GM", Level.L0C, Level.GM,
                        e.g * d * FP32, lag + 14, region=e.workspace(2, e.g * d * FP32))
    ids["in_o"] = e.tr(e.v, Pipe.MTE2, "CopyIn O", Level.GM, Level.UB, e.g * d * FP32,
                       lag + 15, region=e.workspace(2, e.g * d * FP32))
    ids["acc"] = e.vec("Rescale + add o", 3 * e.g * d, lag + 16)
    for after, before in (("ld_p", None), ("mv_p", "ld_p"), ("mv_v", "ld_v"), ("mm_o", "mv_p"),
                          ("fix_o", "mm_o"), ("in_o", "fix_o"), ("acc", "in_o")):
        if before is not None:
            b.depend(ids[after], ids[before])
    return ids


def _buffers(e: _Emitter, ids: dict, q_move: np.ndarray) -> None:
    """Cross-core hand-offs and the BUFFER_NUM rings of every buffer."""
    b, bn, s = e.b, e.bn, e.s
    lag = STAGES
    b.depend(ids["ld_p"], ids["out_p"])  # P is in GM (CrossCoreWaitFlag)
    b.depend(ids["mm_o"], ids["mv_v"])
    c, v = e.c, e.v
    _ring(b, [ids["ld_k"]], [ids["mv_k"]], [c], [s], bn)  # L1: K tiles
    _ring(b, [ids["ld_v"]], [ids["mv_v"]], [c], [s + lag + 9], bn)  # L1: V tiles
    _ring(b, [ids["ld_p"]], [ids["mv_p"]], [c], [s + lag + 10], bn)  # L1: P tiles
    _ring(b, [ids["mv_k"], ids["mv_v"]], [ids["mm_s"], ids["mm_o"]], [c, c],
          [s + 1, s + lag + 12], bn)  # L0B: K and V share it
    _ring(b, [ids["mv_p"]], [ids["mm_o"]], [c], [s + lag + 11], bn)  # L0A: P
    _ring(b, [ids["mm_s"], ids["mm_o"]], [ids["fix_s"], ids["fix_o"]], [c, c],
          [s + 2, s + lag + 13], bn)  # L0C: S and O share it
    _ring(b, [ids["fix_s"]], [ids["in_s"]], [c], [s + 3], bn)  # GM workspace for S
    _ring(b, [ids["out_p"]], [ids["ld_p"]], [v], [s + 8], bn)  # GM workspace for P
    _ring(b, [ids["fix_o"]], [ids["in_o"]], [c], [s + lag + 14], bn)  # GM workspace for O
    _ring(b, [ids["in_s"]], [ids["sm"]], [v], [s + 4], bn)  # UB: S
    _ring(b, [ids["cast_p"]], [ids["out_p"]], [v], [s + 7], bn)  # UB: P
    _ring(b, [ids["in_o"]], [ids["acc"]], [v], [s + lag + 15], bn)  # UB: O partial
    t = e.tasks
    first = np.flatnonzero(e.tiles.j == 0)
    last_s = ids["mm_s"][np.r_[first[1:] - 1, len(e.tiles) - 1]] if len(first) else first
    b.depend(q_move, previous(last_s, t.ordinal, 1))  # q stays in L0A for its task


def _trailer(e: _Emitter) -> np.ndarray:
    """o / l, Cast and CopyOut of the g output rows, once per task (AIV)."""
    t, b = e.tasks, e.b
    s = e.seq0 + t.it_end * STAGES
    oe = e.g * e.d
    fin = b.vector(e.aiv, "Div o/l, Cast", 2 * oe, "fp32", s, task=t.seq)
    out = b.transfer(e.aiv, Pipe.MTE3, "CopyOut o", Level.UB, Level.GM, oe * e.cb, s + 1,
                     task=t.seq)
    b.depend(out, fin)
    b.depend(fin, previous(out, t.ordinal, 1))
    return out

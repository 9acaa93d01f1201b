"""A linear layer at decode time as a skinny GEMM: y[M, N] = x[M, K] @ W[K, N], M = tokens.

At decode M is a batch of tokens (1..a few hundred) while N and K are model widths, so the
weights dominate: every weight is streamed from HBM once and the activations are small.
The cube cores split N (and M when it exceeds one L0C tile) into tasks of ``base_m x
base_n`` outputs, in contiguous blocks per core; each task loops over K in chunks of
``base_k``: MTE2 brings the x chunk (a region per (m-block, chunk), shared by every core
through L2) and the weight tile into L1, MTE1 moves them into L0A / L0B, the cube Mmads
into L0C (fp32), and after the last chunk the fixpipe writes y (coupled chips: L0C -> UB
-> GM). L1 slots follow ``buffer_num`` (the TQue rule); L0A/L0B are double buffered. The
L0 ping-pong inside one L1 chunk is folded into one MTE1 copy per operand and one Mmad
(its fixed costs counted once per chunk, its bytes and fractal steps all counted).

Weight-only int8 (W8A16, ``weight_dtype = "int8"``), as CANN's WeightQuantBatchMatmulV2
does it on these chips (hicann/ops-nn, matmul/weight_quant_batch_matmul_v2: the vector
antiquant kernels): the vector side loads int8 tiles into UB, antiquantises them (Cast to
fp16, Mul by the per-channel or per-group scale), and hands fp16 tiles to the cube. On
split chips (910B) the AIV and the AIC share no buffer, so the tile goes through a GM
workspace (MTE3 UB -> GM, then the AIC's MTE2 reads it, from L2), on the two AIVs of the
AIC's group; on coupled chips (310P) the AI core copies UB -> L1 itself. HBM then carries
half the weight bytes of fp16. ops-nn's other W8A16 variants (an int8 Mmad on decomposed
activations with the dequant on Fixpipe) are not modelled.

MXFP4 weights (``weight_dtype = "mxfp4"``, on chips whose units take the format: the 950)
take the same path: FP4 E2M1 codes plus an E8M0 scale per 32 K elements in GM (0.53 bytes
per weight, a quarter of fp16's plus the scales), Cast to the activation format and Mul by
the block's scale on the vector side (WeightQuantBatchMatmul's "mx" mode on Ascend 950,
aclnnWeightQuantBatchMatmulNz). The cube still multiplies fp16 / bf16.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common.lowp import on_chip
from kernels.common.params import ParamSpec, validate_params
from kernels.common.program import DTYPE_BYTES, Level, Pipe, Program, ProgramBuilder, stored_bytes
from kernels.common.sizes import ceil_div, round_up
from kernels.common.tque import iteration_index, previous
from kernels.linear import antiquant

NAME = "linear"
WEIGHT_DTYPES = ("fp16", "bf16") + antiquant.WEIGHT_FORMATS
ACT_DTYPES = ("fp16", "bf16")
TIMING_ONLY = frozenset({"base_n", "base_k", "block_dim", "buffer_num"})
#: base_n and base_k candidates (multiples of the 16 x 16 fractal)
BASE_N = (256, 192, 128, 96, 64, 48, 32, 16)
BASE_K = (1024, 512, 256, 128, 64, 32, 16)
L0_BUFFERS = 2
PARAMS = (
    ParamSpec("M", int, 64, 1, 4096, unit="tokens", log_scale=True),
    ParamSpec("N", int, 8192, 16, 1 << 20, unit="elements", log_scale=True),
    ParamSpec("K", int, 8192, 16, 1 << 20, unit="elements", log_scale=True),
    ParamSpec("weight_dtype", str, "fp16", choices=WEIGHT_DTYPES),
    ParamSpec("act_dtype", str, "fp16", choices=ACT_DTYPES),
    ParamSpec("group_size", int, 0, 0, 1 << 20, unit="K elements per scale (0 = per channel)"),
    ParamSpec("base_n", int, 0, 0, 4096, unit="elements (0 = auto)"),
    ParamSpec("base_k", int, 0, 0, 1 << 16, unit="elements (0 = auto)"),
    ParamSpec("block_dim", int, 0, 0, 256, unit="cube cores (0 = all)"),
    ParamSpec("buffer_num", int, 2, choices=(1, 2)),
)


@dataclass(frozen=True)
class LinearShape:
    """The sizes and choices of one linear layer (typed; ``plan`` resolves the autos)."""

    m: int
    n: int
    k: int
    weight_dtype: str = "fp16"
    act_dtype: str = "fp16"
    group_size: int = 0
    base_n: int = 0
    base_k: int = 0
    block_dim: int = 0
    buffer_num: int = 2


def shape_of(p: dict) -> LinearShape:
    return LinearShape(p["M"], p["N"], p["K"], p["weight_dtype"], p["act_dtype"],
                       p["group_size"], p["base_n"], p["base_k"], p["block_dim"],
                       p["buffer_num"])



@dataclass(frozen=True)
class Plan:
    """Resolved tiles and cores."""

    base_m: int
    base_n: int
    base_k: int
    cores: tuple[int, ...]  # cube cores used

    def tasks(self, s: LinearShape) -> tuple[np.ndarray, np.ndarray]:
        """(m-block, n-tile) of every task, n-tiles inner."""
        mb, nt = -(-s.m // self.base_m), -(-s.n // self.base_n)
        return np.repeat(np.arange(mb), nt), np.tile(np.arange(nt), mb)

    def chunks(self, s: LinearShape) -> int:
        return -(-s.k // self.base_k)


def _l1_bytes(s: LinearShape, bm: int, bn: int, bk: int) -> int:
    """L1 the x chunk and the (fp16 / bf16) weight tile take, times the buffers."""
    return s.buffer_num * (bm * bk + bk * bn) * DTYPE_BYTES[s.act_dtype]


def stream_cycles(chip: Chip, s: LinearShape, bm: int, bn: int, cores: int) -> float:
    """Estimated MTE2 cycles of the busiest core for tiles of ``bn`` columns: its tiles x K x
    (the weight column's bytes at its share of HBM + the x rows' bytes at its share of L2;
    W8A16 adds the fp16 workspace read from L2). Every x chunk is read once per tile, so a
    narrow tile re-reads x often: at M = 64 a 32-column tile moves twice as many x bytes
    as weight bytes."""
    clock_ghz = chip.clock_MHz / 1000.0
    hbm = min(chip.gm_read_hbm_bytes_per_cycle, chip.hbm_bytes_per_ns / clock_ghz / cores)
    l2 = min(chip.gm_read_l1_bytes_per_cycle, chip.l2_bytes_per_ns / clock_ghz / cores)
    act = DTYPE_BYTES[s.act_dtype]
    per_k = bn * DTYPE_BYTES[s.weight_dtype] / hbm + bm * act / l2
    if s.weight_dtype in antiquant.WEIGHT_FORMATS:
        per_k += bn * act / l2
    return ceil_div(ceil_div(s.n, bn), cores) * s.k * per_k


def plan(chip: Chip, s: LinearShape) -> Plan:
    """Tiles that fit L1 and L0C, spread over the cube cores (refusing what cannot fit)."""
    cubes = tuple(chip.cube_core_ids())
    if not 0 <= s.block_dim <= len(cubes):
        raise InputError("params.block_dim", s.block_dim, Phrase(
            "refusal.linear.block_dim", n=len(cubes), chip=chip.display_name))
    cores = cubes[:s.block_dim or None]
    bm = min(round_up(s.m, chip.cube_m0), 256)
    fits_c = [n for n in BASE_N if bm * n * 4 <= chip.l0c_bytes]
    if s.base_n:
        if s.base_n % chip.cube_n0 or bm * s.base_n * 4 > chip.l0c_bytes:
            raise InputError("params.base_n", s.base_n, Phrase(
                "refusal.linear.base_n", step=chip.cube_n0, bm=bm, l0c=f"{chip.l0c_bytes:,}"))
        bn = s.base_n
    else:  # the least streaming per core, then the widest tile
        bn = min(fits_c, key=lambda n: (stream_cycles(chip, s, bm, n, len(cores)), -n))
    kmax = round_up(s.k, chip.cube_k0(s.act_dtype))
    if s.base_k:
        if s.base_k % chip.cube_k0(s.act_dtype) or _l1_bytes(s, bm, bn, s.base_k) > chip.l1_bytes:
            raise InputError("params.base_k", s.base_k, Phrase(
                "refusal.linear.base_k", step=chip.cube_k0(s.act_dtype), buffers=s.buffer_num,
                l1=f"{chip.l1_bytes:,}"))
        bk = s.base_k
    else:
        bk = next((k for k in BASE_K if _l1_bytes(s, bm, bn, min(k, kmax)) <= chip.l1_bytes),
                  0)
        bk = min(bk, kmax)
    if bk == 0:
        raise InputError("params.M", s.m, Phrase("refusal.linear.batch", bm=bm,
                                                 l1=f"{chip.l1_bytes:,}"))
    return Plan(bm, bn, bk, cores)


def check(chip: Chip, params: dict) -> dict:
    """Validated parameters: formats the chip's cube has, whole scale groups, tiles that
    fit."""
    p = validate_params(PARAMS, params)
    if p["act_dtype"] not in chip.cube_precisions:
        raise InputError("params.act_dtype", p["act_dtype"], Phrase(
            "refusal.linear.act_dtype", chip=chip.display_name,
            options=", ".join(d for d in ACT_DTYPES if d in chip.cube_precisions)))
    if p["weight_dtype"] in ("fp16", "bf16") and p["weight_dtype"] != p["act_dtype"]:
        raise InputError("params.weight_dtype", p["weight_dtype"], Phrase(
            "refusal.linear.weight_dtype", act=p["act_dtype"]))
    if p["weight_dtype"] not in weight_dtypes_on(chip):
        raise InputError("params.weight_dtype", p["weight_dtype"], Phrase(
            "refusal.linear.weight_format", chip=chip.display_name,
            options=", ".join(weight_dtypes_on(chip))))
    g = p["group_size"]
    if g and (p["weight_dtype"] != "int8" or g % 32 or p["K"] % g):
        raise InputError("params.group_size", g, Phrase("refusal.linear.group_size",
                                                        K=p["K"]))
    p["block_dim"] = len(plan(chip, shape_of(p)).cores)  # 0: all, resolved
    return p


def weight_dtypes_on(chip: Chip) -> tuple[str, ...]:
    """The weight formats the chip runs: fp16, bf16 and int8 everywhere, MXFP4 where the
    chip's units take the format (``lowp.on_chip``)."""
    return tuple(w for w in WEIGHT_DTYPES if on_chip(chip, w))


def instruction_count(chip: Chip, s: LinearShape) -> int:
    p = plan(chip, s)
    m_blocks, n_tiles = p.tasks(s)
    steps = len(m_blocks) * p.chunks(s)
    per_step = 4  # x, L0A, L0B, Mmad, and what fills L1 with W:
    if s.weight_dtype in antiquant.WEIGHT_FORMATS:
        per_step += antiquant.instructions_per_tile(chip, _pieces(chip, s, p), s.act_dtype,
                                                    s.weight_dtype)
    else:
        per_step += 1
    out = 1 if chip.has_fixpipe else 2
    return steps * per_step + len(m_blocks) * out


def emit(b: ProgramBuilder, chip: Chip, s: LinearShape, nxt: int, *, src: int | None = None,
         dst: int | None = None) -> int:
    """Emit the layer with every seq >= nxt; returns the next free seq. ``src`` / ``dst``
    are the GM regions of x / y when neighbouring ops wrote / read them (None: cold
    regions of their own); weights always get their own (read once: cold)."""
    pl = plan(chip, s)
    b.reserve(instruction_count(chip, s), Phrase("refusal.hint.linear_tiles"))
    m_block, n_tile = pl.tasks(s)
    tasks = len(m_block)
    slot = (np.arange(tasks) * len(pl.cores)) // tasks
    core_of_task = np.asarray(pl.cores, np.int64)[slot]
    ordinal = iteration_index(slot)
    kc = pl.chunks(s)
    # one row per (task, chunk), tasks outer: the order each core executes them in
    task = np.repeat(np.arange(tasks), kc)
    chunk = np.tile(np.arange(kc), tasks)
    core = core_of_task[task]
    it = ordinal[task] * kc + chunk  # iteration of the core's loop
    rows = np.minimum(pl.base_m, s.m - m_block[task] * pl.base_m)
    cols = np.minimum(pl.base_n, s.n - n_tile[task] * pl.base_n)
    ks = np.minimum(pl.base_k, s.k - chunk * pl.base_k)
    ab = DTYPE_BYTES[s.act_dtype]
    w_bytes = ks * cols * ab  # in L1, after any antiquant
    w_span = _weight_span(chip, s, pl)
    stages = 4 + w_span  # x, the weight path, L0A, L0B, Mmad
    seq = nxt + it * stages
    x_region = np.full(len(task), src, np.int64) if src is not None else \
        b.regions_by_key(m_block[task] * kc + chunk, rows * ks * ab)
    x = b.transfer(core, Pipe.MTE2, "CopyIn x", Level.GM, Level.L1, rows * ks * ab, seq,
                   region=x_region, task=task)
    loop = {"core": core, "task": task, "it": it, "seq": seq, "w_bytes": w_bytes,
            "elements": ks * cols, "stored": stored_bytes(ks * cols, s.weight_dtype),
            "tile": n_tile[task] * kc + chunk}  # which weight tile: read once per m-block
    w, top = _weight_loads(b, chip, s, pl, loop, nxt)
    a = b.transfer(core, Pipe.MTE1, "LoadData x -> L0A", Level.L1, Level.L0A,
                   rows * ks * ab, seq + 1 + w_span, task=task)
    bb = b.transfer(core, Pipe.MTE1, "LoadData W -> L0B", Level.L1, Level.L0B, w_bytes,
                    seq + 2 + w_span, task=task)
    mm = b.mmad(core, "Mmad", rows, cols, ks, s.act_dtype, seq + 3 + w_span, task=task)
    b.depend(a, x)
    b.depend(bb, w)
    b.depend(mm, a)
    b.depend(mm, bb)
    b.depend(x, previous(a, it, s.buffer_num))  # L1 slots free once moved to L0
    b.depend(w, previous(bb, it, s.buffer_num))
    b.depend(a, previous(mm, it, L0_BUFFERS))  # L0A / L0B ping-pong
    b.depend(bb, previous(mm, it, L0_BUFFERS))
    last = chunk == kc - 1
    out_bytes = rows[last] * cols[last] * ab
    y_region = np.full(tasks, dst, np.int64) if dst is not None else b.regions(out_bytes)
    out_seq = seq[last] + stages
    if chip.has_fixpipe:
        out = b.transfer(core[last], Pipe.FIX, "Fixpipe y", Level.L0C, Level.GM, out_bytes,
                         out_seq, region=y_region, task=task[last])
        b.depend(out, mm[last])
    else:
        moved = b.transfer(core[last], Pipe.V, "L0C -> UB", Level.L0C, Level.UB, out_bytes,
                           out_seq, task=task[last])
        out = b.transfer(core[last], Pipe.MTE3, "CopyOut y", Level.UB, Level.GM, out_bytes,
                         out_seq + 1, region=y_region, task=task[last])
        b.depend(moved, mm[last])
        b.depend(out, moved)
    first = chunk == 0  # the next task's first Mmad waits for L0C to be written out
    b.depend(mm[first], previous(out, ordinal, 1))
    return max(int(seq.max(initial=nxt)) + stages + 2, top)


def _weight_loads(b: ProgramBuilder, chip: Chip, s: LinearShape, pl: Plan, loop: dict,
                  nxt: int) -> tuple[np.ndarray, int]:
    """The weight tile into L1: a GM read of fp16 / bf16 (a region per weight tile, so an
    m-block after the first finds it in L2 while it is resident), or (W8A16) the vector
    side's int8 load, antiquant and hand-over (``antiquant``). Returns (the instructions
    that fill L1, the next seq free on the vector side's lanes)."""
    if s.weight_dtype not in antiquant.WEIGHT_FORMATS:
        region = b.regions_by_key(loop["tile"], loop["stored"])
        return b.transfer(loop["core"], Pipe.MTE2, "CopyIn W", Level.GM, Level.L1,
                          loop["w_bytes"], loop["seq"] + 1, region=region,
                          task=loop["task"]), nxt
    return antiquant.weight_tiles(b, chip, loop, _pieces(chip, s, pl), s.act_dtype,
                                  s.buffer_num, pl.cores, nxt, s.weight_dtype)


def _pieces(chip: Chip, s: LinearShape, pl: Plan) -> int:
    return antiquant.pieces(chip, pl.base_k, pl.base_n, s.act_dtype, s.buffer_num,
                            s.weight_dtype)


def _weight_span(chip: Chip, s: LinearShape, pl: Plan) -> int:
    """Program-order slots the weight path takes on the AI core's own lanes."""
    if s.weight_dtype not in antiquant.WEIGHT_FORMATS:
        return 1
    return antiquant.seq_span(chip, _pieces(chip, s, pl), s.act_dtype, s.weight_dtype)


def build(chip: Chip, params: dict) -> Program:
    b = ProgramBuilder(NAME)
    emit(b, chip, shape_of(check(chip, params)), 0)
    return b.build()

"""W8A16's weight path: the vector side loads int8 weight tiles, antiquantises them and
hands fp16 tiles to the cube, as CANN's WeightQuantBatchMatmulV2 does on these chips.

Per weight tile of a (task, K chunk) iteration, cut into UB-sized pieces: CopyIn int8
(MTE2, GM -> UB, a region per piece of each weight tile), the antiquant on the vector unit
(fp16: Cast int8 -> fp16, Mul by the scale; bf16: Cast to fp16, Cast to fp32, Mul by the
scale, Cast to bf16, as the vector unit has no int8 -> bf16 Cast), and the hand-over
(MTE3). On split chips (910B) AIV and AIC share no buffer: the two AIVs of an
AIC's group take alternate pieces and write them to a GM workspace, a ring of
``buffer_num`` tile slots per AIC that every linear op of a program shares (the
framework's workspace pool) and that stays in L2 (written back to HBM only on eviction),
and the AIC's MTE2 reads the whole tile from L2 once every piece has landed
(CrossCoreSetFlag / WaitFlag). On coupled chips (310P) the AI core copies UB -> L1 itself.
Queues: a piece's UB slot is reused ``buffer_num`` pieces later on the same vector core (its
load waits for that hand-over), and a workspace slot ``buffer_num`` iterations later (its
hand-over waits for the AIC's read of the tile that used it). The per-channel or per-group
scales (N or N x K / group values) are not loaded in the model: a few KiB per layer.
"""
from __future__ import annotations

import numpy as np

from hardware_presets import Chip
from kernels.common.program import DTYPE_BYTES, Level, Pipe, ProgramBuilder
from kernels.common.sizes import ceil_div
from kernels.common.tque import previous, previous_by

#: the vector instructions of the antiquant, by activation format: (label, dtype)
VECTOR_STEPS = {
    "fp16": (("Cast W int8 -> fp16", "fp16"), ("Mul antiquant scale", "fp16")),
    "bf16": (("Cast W int8 -> fp16", "fp16"), ("Cast W fp16 -> fp32", "fp32"),
             ("Mul antiquant scale", "fp32"), ("Cast W fp32 -> bf16", "fp32")),
}


def stages(act_dtype: str) -> int:
    """Instructions per piece: the CopyIn, the vector steps, the hand-over."""
    return 2 + len(VECTOR_STEPS[act_dtype])


def pieces(chip: Chip, base_k: int, base_n: int, act_dtype: str, buffer_num: int) -> int:
    """UB pieces a weight tile is cut into: int8 in and the activation format out,
    ``buffer_num`` deep, plus an fp32 intermediate where the antiquant needs one (bf16)."""
    per_elem = (1 + DTYPE_BYTES[act_dtype]) * buffer_num + 4 * (act_dtype != "fp16")
    return max(1, ceil_div(base_k * base_n * per_elem, chip.ub_bytes))


def aiv_of(chip: Chip, cube: np.ndarray, piece: np.ndarray) -> np.ndarray:
    """The vector core of an AIC's group that handles a piece (alternating in the group)."""
    per = max(1, chip.vector_cores // max(chip.ai_cores, 1))
    return chip.ai_cores + cube * per + piece % per


def instructions_per_tile(chip: Chip, n_pieces: int, act_dtype: str) -> int:
    """Instructions per weight tile: every piece's stages, and on split chips the AIC's
    read of the workspace."""
    return stages(act_dtype) * n_pieces + (chip.architecture == "split")


def seq_span(chip: Chip, n_pieces: int, act_dtype: str) -> int:
    """Program-order slots the weight path takes on the AI core's own lanes: the AIC's
    read of the workspace on split chips, every piece's stages in turn on coupled ones."""
    return 1 if chip.architecture == "split" else stages(act_dtype) * n_pieces


def piece_bytes(stored: np.ndarray, n_pieces: int) -> np.ndarray:
    """The int8 bytes of every piece, tile by tile: the tile's bytes split as evenly as
    whole bytes allow."""
    piece = np.arange(n_pieces)
    return (stored[:, None] // n_pieces + (piece < stored[:, None] % n_pieces)).ravel()


def weight_tiles(b: ProgramBuilder, chip: Chip, loop: dict, n_pieces: int, act_dtype: str,
                 buffer_num: int, cores: tuple[int, ...], nxt: int) -> tuple[np.ndarray, int]:
    """Emit the int8 weight path for every iteration of ``loop`` (arrays per iteration,
    laid out core by core: ``core``, ``task``, ``it`` (the core's iteration), ``seq``,
    ``stored`` (int8 bytes), ``w_bytes`` (bytes in L1) and ``tile`` (which weight tile)),
    with ``seq_span`` slots after ``seq`` free on the AI core's lanes. Returns the
    instructions that fill L1 and the next seq free on the vector side's lanes."""
    core, it, task = loop["core"], loop["it"], loop["task"]
    rows, split, steps = len(core), chip.architecture == "split", stages(act_dtype)
    part = piece_bytes(loop["stored"], n_pieces)
    piece = np.tile(np.arange(n_pieces), rows)
    row = np.repeat(np.arange(rows), n_pieces)
    if split:  # the AIVs' own lanes: the loop's iterations in order
        vec = aiv_of(chip, core[row], piece)
        vseq = nxt + (it[row] * n_pieces + piece) * steps
    else:  # the AI core's own MTE2 / V / MTE3, piece after piece, before its MTE1 moves
        vec, vseq = core[row], loop["seq"][row] + 1 + piece * steps
    ptask = task[row]
    ring = _workspace(b, loop, buffer_num, cores) if split else None
    load = b.transfer(vec, Pipe.MTE2, "CopyIn W int8", Level.GM, Level.UB, part, vseq,
                      region=b.regions_by_key(loop["tile"][row] * n_pieces + piece, part),
                      task=ptask)
    last = load
    for k, (label, dtype) in enumerate(VECTOR_STEPS[act_dtype], start=1):
        step = b.vector(vec, label, part, dtype, vseq + k, task=ptask)
        b.depend(step, last)
        last = step
    hand = b.transfer(vec, Pipe.MTE3, "CopyOut W " + act_dtype, Level.UB,
                      Level.GM if split else Level.L1, part * DTYPE_BYTES[act_dtype],
                      vseq + steps - 1, region=ring[row] if split else -1, task=ptask)
    b.depend(hand, last)
    b.depend(load, previous_by(vec, vseq * n_pieces + piece, hand, buffer_num))  # UB slot
    top = int(vseq.max(initial=nxt)) + steps
    if not split:  # in order on the core's MTE3: the last piece lands last
        return hand[n_pieces - 1::n_pieces], top
    fetch = b.transfer(core, Pipe.MTE2, "CopyIn W workspace", Level.GM, Level.L1,
                       loop["w_bytes"], loop["seq"] + 1, region=ring, task=task)
    b.depend(fetch[row], hand)  # the AIC waits for every piece
    b.depend(hand, previous(fetch, it, buffer_num)[row])  # the workspace slot is free
    return fetch, top


def _workspace(b: ProgramBuilder, loop: dict, buffer_num: int,
               cores: tuple[int, ...]) -> np.ndarray:
    """The workspace slot of every iteration: a ring of ``buffer_num`` tile-sized GM
    regions per AIC, shared by the program's linear ops."""
    slot = np.searchsorted(np.asarray(cores), loop["core"])
    count = len(cores) * buffer_num
    ring = b.named_regions(f"W8A16 workspace ({count} slots)",
                           np.full(count, int(loop["w_bytes"].max(initial=0))))
    return ring[slot * buffer_num + loop["it"] % buffer_num]

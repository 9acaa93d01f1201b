"""W8A16's weight path: the vector side loads int8 weight tiles, antiquantises them and
hands fp16 tiles to the cube, as CANN's WeightQuantBatchMatmulV2 does on these chips.

Per weight tile of a (task, K chunk) iteration, cut into UB-sized pieces: CopyIn int8
(MTE2, GM -> UB, from HBM: cold), Cast int8 -> fp16, Mul by the antiquant scale (V), and
the hand-over (MTE3). On split chips (910B) AIV and AIC share no buffer: the two AIVs of an
AIC's group take alternate pieces and write them to a GM workspace, a ring of
``buffer_num`` tile slots per AIC that stays in L2 (written back to HBM only on eviction),
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

#: vector instructions plus copies per piece: CopyIn int8, Cast, Mul scale, hand-over
STAGES = 4


def pieces(chip: Chip, base_k: int, base_n: int, act_dtype: str, buffer_num: int) -> int:
    """UB pieces a weight tile is cut into: int8 in and fp16 out, ``buffer_num`` deep."""
    tile = base_k * base_n * (1 + DTYPE_BYTES[act_dtype]) * buffer_num
    return max(1, ceil_div(tile, chip.ub_bytes))


def aiv_of(chip: Chip, cube: np.ndarray, piece: np.ndarray) -> np.ndarray:
    """The vector core of an AIC's group that handles a piece (alternating in the group)."""
    per = max(1, chip.vector_cores // max(chip.ai_cores, 1))
    return chip.ai_cores + cube * per + piece % per


def instructions_per_tile(chip: Chip, n_pieces: int) -> int:
    """Instructions per weight tile: every piece's stages, and on split chips the AIC's
    read of the workspace."""
    return STAGES * n_pieces + (chip.architecture == "split")


def seq_span(chip: Chip, n_pieces: int) -> int:
    """Program-order slots the weight path takes on the AI core's own lanes: the AIC's
    read of the workspace on split chips, every piece's stages in turn on coupled ones."""
    return 1 if chip.architecture == "split" else STAGES * n_pieces


def weight_tiles(b: ProgramBuilder, chip: Chip, loop: dict, n_pieces: int, act_dtype: str,
                 buffer_num: int, cores: tuple[int, ...], nxt: int) -> tuple[np.ndarray, int]:
    """Emit the int8 weight path for every iteration of ``loop`` (arrays per iteration,
    laid out core by core: ``core``, ``task``, ``it`` (the core's iteration), ``seq``,
    ``stored`` (int8 bytes) and ``w_bytes`` (fp16 bytes in L1)), with ``seq_span`` slots
    after ``seq`` free on the AI core's lanes. Returns the instructions that fill L1 and
    the next seq free on the vector side's lanes."""
    core, it, task = loop["core"], loop["it"], loop["task"]
    rows, split = len(core), chip.architecture == "split"
    part = np.repeat(ceil_div(loop["stored"], n_pieces), n_pieces)
    piece = np.tile(np.arange(n_pieces), rows)
    row = np.repeat(np.arange(rows), n_pieces)
    if split:  # the AIVs' own lanes: the loop's iterations in order
        vec = aiv_of(chip, core[row], piece)
        vseq = nxt + (it[row] * n_pieces + piece) * STAGES
    else:  # the AI core's own MTE2 / V / MTE3, piece after piece, before its MTE1 moves
        vec, vseq = core[row], loop["seq"][row] + 1 + piece * STAGES
    ptask, scale_dtype = task[row], "fp16" if act_dtype == "fp16" else "fp32"
    ring = _workspace(b, chip, loop, buffer_num, cores) if split else -1
    load = b.transfer(vec, Pipe.MTE2, "CopyIn W int8", Level.GM, Level.UB, part, vseq,
                      region=b.regions(part), task=ptask)
    cast = b.vector(vec, "Cast W int8 -> fp16", part, "fp16", vseq + 1, task=ptask)
    mul = b.vector(vec, "Mul antiquant scale", part, scale_dtype, vseq + 2, task=ptask)
    hand = b.transfer(vec, Pipe.MTE3, "CopyOut W fp16", Level.UB,
                      Level.GM if split else Level.L1, part * DTYPE_BYTES[act_dtype],
                      vseq + 3, region=ring[row] if split else -1, task=ptask)
    b.depend(cast, load)
    b.depend(mul, cast)
    b.depend(hand, mul)
    b.depend(load, previous_by(vec, vseq * n_pieces + piece, hand, buffer_num))  # UB slot
    top = int(vseq.max(initial=nxt)) + STAGES
    last = hand[n_pieces - 1::n_pieces]
    if not split:  # in order on the core's MTE3: the last piece lands last
        return last, top
    fetch = b.transfer(core, Pipe.MTE2, "CopyIn W workspace", Level.GM, Level.L1,
                       loop["w_bytes"], loop["seq"] + 1, region=ring, task=task)
    b.depend(fetch[row], hand)  # the AIC waits for every piece
    b.depend(hand, previous(fetch, it, buffer_num)[row])  # the workspace slot is free
    return fetch, top


def _workspace(b: ProgramBuilder, chip: Chip, loop: dict, buffer_num: int,
               cores: tuple[int, ...]) -> np.ndarray:
    """The workspace slot of every iteration: a ring of ``buffer_num`` tile-sized GM
    regions per AIC."""
    slot = np.searchsorted(np.asarray(cores), loop["core"])
    ring = b.regions(np.full(len(cores) * buffer_num, int(loop["w_bytes"].max(initial=0))))
    return ring[slot * buffer_num + loop["it"] % buffer_num]

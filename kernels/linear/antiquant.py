"""The weight-only quantised path (W8A16, and MXFP4 weights on chips that take the
format): the vector side loads the weight tiles as stored, antiquantises them and hands
fp16 / bf16 tiles to the cube, as CANN's WeightQuantBatchMatmulV2 does (its "mx" mode on
Ascend 950: FLOAT4_E2M1 weights with a FLOAT8_E8M0 antiquantScale per 32 K elements,
aclnnWeightQuantBatchMatmulNz).

Per weight tile of a (task, K chunk) iteration, cut into UB-sized pieces: CopyIn the
codes (MTE2, GM -> UB, a region per piece of each weight tile; MXFP4 with its scales),
the antiquant on the vector unit (``VECTOR_STEPS``: int8 with fp16: Cast int8 -> fp16,
Mul by the scale; int8 with bf16: Cast to fp16, Cast to fp32, Mul by the scale, Cast to
bf16, as the vector unit has no int8 -> bf16 Cast; MXFP4: Cast fp4 -> the activation
format, Mul by the block's power-of-two scale), and the hand-over
(MTE3). On split chips (910B) AIV and AIC share no buffer: the two AIVs of an
AIC's group take alternate pieces and write them to a GM workspace, a ring of
``buffer_num`` tile slots per AIC that every linear op of a program shares (the
framework's workspace pool) and that stays in L2 (written back to HBM only on eviction),
and the AIC's MTE2 reads the whole tile from L2 once every piece has landed
(CrossCoreSetFlag / WaitFlag). On coupled chips (310P) the AI core copies UB -> L1 itself.
Queues: a piece's UB slot is reused ``buffer_num`` pieces later on the same vector core (its
load waits for that hand-over), and a workspace slot ``buffer_num`` iterations later (its
hand-over waits for the AIC's read of the tile that used it). int8's per-channel or
per-group scales (N or N x K / group values) are not loaded in the model (a few KiB per
layer); MXFP4's E8M0 scales (one byte per 32 weights) are part of its stored bytes.
"""
from __future__ import annotations

import numpy as np

from hardware_presets import Chip
from kernels.common.program import DTYPE_BYTES, Level, Pipe, ProgramBuilder, stored_bytes
from kernels.common.sizes import ceil_div
from kernels.common.tque import previous, previous_by

#: the weight formats this path antiquantises
WEIGHT_FORMATS = ("int8", "mxfp4")
#: the vector instructions of the antiquant, by (weight format, activation format):
#: (label, dtype)
VECTOR_STEPS = {
    ("int8", "fp16"): (("Cast W int8 -> fp16", "fp16"), ("Mul antiquant scale", "fp16")),
    ("int8", "bf16"): (("Cast W int8 -> fp16", "fp16"), ("Cast W fp16 -> fp32", "fp32"),
                       ("Mul antiquant scale", "fp32"), ("Cast W fp32 -> bf16", "fp32")),
    ("mxfp4", "fp16"): (("Cast W fp4 -> fp16", "fp16"), ("Mul E8M0 block scale", "fp16")),
    ("mxfp4", "bf16"): (("Cast W fp4 -> bf16", "bf16"), ("Mul E8M0 block scale", "bf16")),
}


def stages(act_dtype: str, weight: str = "int8") -> int:
    """Instructions per piece: the CopyIn, the vector steps, the hand-over."""
    return 2 + len(VECTOR_STEPS[(weight, act_dtype)])


def pieces(chip: Chip, base_k: int, base_n: int, act_dtype: str, buffer_num: int,
           weight: str = "int8") -> int:
    """UB pieces a weight tile is cut into: the stored weights in and the activation
    format out, ``buffer_num`` deep, plus an fp32 intermediate where the antiquant needs
    one (int8 to bf16)."""
    steps = VECTOR_STEPS[(weight, act_dtype)]
    per_elem = (DTYPE_BYTES[weight] + DTYPE_BYTES[act_dtype]) * buffer_num + \
        4 * any(dtype == "fp32" for _, dtype in steps)
    return max(1, ceil_div(int(np.ceil(base_k * base_n * per_elem)), chip.ub_bytes))


def aiv_of(chip: Chip, cube: np.ndarray, piece: np.ndarray) -> np.ndarray:
    """The vector core of an AIC's group that handles a piece (alternating in the group)."""
    per = max(1, chip.vector_cores // max(chip.ai_cores, 1))
    return chip.ai_cores + cube * per + piece % per


def instructions_per_tile(chip: Chip, n_pieces: int, act_dtype: str,
                          weight: str = "int8") -> int:
    """Instructions per weight tile: every piece's stages, and on split chips the AIC's
    read of the workspace."""
    return stages(act_dtype, weight) * n_pieces + (chip.architecture == "split")


def seq_span(chip: Chip, n_pieces: int, act_dtype: str, weight: str = "int8") -> int:
    """Program-order slots the weight path takes on the AI core's own lanes: the AIC's
    read of the workspace on split chips, every piece's stages in turn on coupled ones."""
    return 1 if chip.architecture == "split" else stages(act_dtype, weight) * n_pieces


def piece_elements(elements: np.ndarray, n_pieces: int) -> np.ndarray:
    """The weight elements of every piece, tile by tile: the tile's elements split as
    evenly as whole elements allow."""
    piece = np.arange(n_pieces)
    return (elements[:, None] // n_pieces + (piece < elements[:, None] % n_pieces)).ravel()


def weight_tiles(b: ProgramBuilder, chip: Chip, loop: dict, n_pieces: int, act_dtype: str,
                 buffer_num: int, cores: tuple[int, ...], nxt: int,
                 weight: str = "int8") -> tuple[np.ndarray, int]:
    """Emit the quantised weight path for every iteration of ``loop`` (arrays per
    iteration, laid out core by core: ``core``, ``task``, ``it`` (the core's iteration),
    ``seq``, ``elements`` (weights of the tile), ``w_bytes`` (bytes in L1) and ``tile``
    (which weight tile)), with ``seq_span`` slots after ``seq`` free on the AI core's
    lanes. Returns the instructions that fill L1 and the next seq free on the vector
    side's lanes."""
    core, it, task = loop["core"], loop["it"], loop["task"]
    rows, split = len(core), chip.architecture == "split"
    steps = stages(act_dtype, weight)
    elems = piece_elements(loop["elements"], n_pieces)
    part = stored_bytes(elems, weight)
    piece = np.tile(np.arange(n_pieces), rows)
    row = np.repeat(np.arange(rows), n_pieces)
    if split:  # the AIVs' own lanes: the loop's iterations in order
        vec = aiv_of(chip, core[row], piece)
        vseq = nxt + (it[row] * n_pieces + piece) * steps
    else:  # the AI core's own MTE2 / V / MTE3, piece after piece, before its MTE1 moves
        vec, vseq = core[row], loop["seq"][row] + 1 + piece * steps
    ptask = task[row]
    ring = _workspace(b, loop, buffer_num, cores) if split else None
    load = b.transfer(vec, Pipe.MTE2, "CopyIn W " + weight, Level.GM, Level.UB, part, vseq,
                      region=b.regions_by_key(loop["tile"][row] * n_pieces + piece, part),
                      task=ptask)
    last = load
    for k, (label, dtype) in enumerate(VECTOR_STEPS[(weight, act_dtype)], start=1):
        step = b.vector(vec, label, elems, dtype, vseq + k, task=ptask)
        b.depend(step, last)
        last = step
    hand = b.transfer(vec, Pipe.MTE3, "CopyOut W " + act_dtype, Level.UB,
                      Level.GM if split else Level.L1, stored_bytes(elems, act_dtype),
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

"""The decode step's kernel, one model layer: KV append, a kernel boundary, attention.

Protocol module (see kernels/__init__.py) for the kernel "decode". The program is one
layer; `explorer.core.decode_step` turns it into a whole-model step (layers are
identical, see there). Lengths and the paged block table are drawn from the scenario's
seed (``build(chip, params, seed)``, ``SEEDED``), the same way the numerics draw them.

* ``phases`` "layer" (the default): every op of a decoder layer and the LM head, each its
  own launch (kernels.decode.layer); "both": append, then SyncAll over every core used
  (the boundary between the two kernel launches), then attention; "append" or
  "attention" alone; "compress" the sparse policy's compression of the cache
  (kv_compress), run every compress_every steps.
* ``sparse``: attention reads only what the policy keeps (kv_compress.kept_counts
  tokens, or Quest's pages after its page scoring); H2O adds its accumulation after
  attention (sparse_select).
* ``impl``: "vector" (decode_attention), "cube_vector" (decode_cube, 910B only) or
  "split_kv" (decode_attention with chunks and a combine).
"""
from __future__ import annotations

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common.program import Program, ProgramBuilder
from kernels.decode import attention as decode_attention
from kernels.decode import cube as decode_cube
from kernels.decode import kv_append, layer
from kernels.decode import params as decode_params
from kernels.decode.kv_memory import kv_memory
from kernels.decode.numerics import (  # noqa: F401 (protocol)
    error_bound,
    execute,
    make_inputs,
    output_elements,
    reference,
    unit_roundoff,
)
from kernels.decode.params import PARAMS, DecodeParams, model_of, workload  # noqa: F401
from kernels.sparse import compress as kv_compress
from kernels.sparse import select as sparse_select

NAME = "decode"
SEEDED = True  # build() takes the scenario's seed (context lengths, block table)
#: which phases run, how tasks are placed and buffered, what the linear layers' weights
#: cost, the sparse policy (the check covers the attention over the full cache): none of
#: them changes an attention output (`DecodeParams`' own fields)
TIMING_ONLY_PARAMS = decode_params.TIMING_ONLY
APPEND_OPS = kv_append.LABELS


def attention_module(p: DecodeParams):
    """The module that emits the chosen attention implementation."""
    return decode_cube if p.impl == "cube_vector" else decode_attention


def check(chip: Chip, params: dict) -> dict:
    """Validated, auto values resolved; cube_vector refused on coupled chips."""
    p = decode_params.check(chip, params)
    if p["impl"] == "cube_vector":
        decode_cube.require_split(chip)
    return p


def _gib(nbytes: float) -> str:
    """Bytes as a number of GiB, as the decode page writes its sizes (two decimals)."""
    return f"{nbytes / 2 ** 30:,.2f}"


def memory_check(chip: Chip, p: DecodeParams, lengths, layout) -> dict:
    """KV bytes reserved by the layout plus the weights, against HBM; refused unless
    ``allow_overcommit`` (then the result says it does not fit)."""
    model = p.model_shape
    kv = kv_memory(model, len(lengths), lengths, p.kv_dtype, layout)
    need = kv["reserved_bytes"] + model.weight_bytes(p.weight_dtype)
    if need > chip.hbm_bytes and not p.allow_overcommit:
        per_seq = max(kv["per_sequence_reserved_bytes"])
        room = chip.hbm_bytes - model.weight_bytes(p.weight_dtype)
        fit = max(0, room // per_seq) if room > 0 else 0
        raise InputError("params.batch", p.batch, Phrase(
            "refusal.decode.memory", fit=fit, kv=_gib(kv["reserved_bytes"]),
            weights=_gib(model.weight_bytes(p.weight_dtype)), hbm=_gib(chip.hbm_bytes),
            chip=chip.display_name), hint=Phrase("refusal.hint.decode_memory"))
    return kv


def _attention_count(chip: Chip, p: DecodeParams, model, lengths) -> int:
    read = sparse_select.attention_tokens(p, lengths)
    return attention_module(p).instruction_count(chip, p, model, read) + \
        sparse_select.instruction_count(p, model, lengths)


def layer_ops(p: DecodeParams, model, lengths, *, head: bool = True) -> list:
    """The ops of the whole layer (``phases = "layer"``), see kernels.decode.layer."""
    return layer.ops(p, model, lengths, _attention, _attention_count, head=head)


def instruction_count(chip: Chip, p: DecodeParams, lengths) -> int:
    """Instructions the layer program will hold (refused above the cap before building)."""
    model = p.model_shape
    if p.phases == "layer":
        return layer.instruction_count(chip, layer_ops(p, model, lengths))
    if p.phases == "compress":
        return kv_compress.instruction_count(chip, p, model, lengths)
    count = 0
    if p.phases in ("both", "append"):
        count += kv_append.instruction_count(chip, p, model, lengths)
    if p.phases in ("both", "attention"):
        count += _attention_count(chip, p, model, lengths)
    return count + (chip.num_cores if p.phases == "both" else 0)


def build(chip: Chip, params: dict, seed: int = 0) -> Program:
    """Emit one layer's decode step for the batch drawn from ``seed``."""
    return build_layers(chip, params, seed, 1)


def build_layers(chip: Chip, params: dict, seed: int, layers: int) -> Program:
    """``layers`` identical layers back to back, a SyncAll between them (each layer is a
    new kernel launch): what `explorer.core.decode_step` replaces by one emulated layer
    times ``layers``; tests compare the two."""
    p = DecodeParams.of(check(chip, params))
    lengths, layout = p.draw(np.random.default_rng(seed))
    memory_check(chip, p, lengths, layout)
    b = ProgramBuilder(NAME)
    b.reserve(layers * instruction_count(chip, p, lengths) + layers * chip.num_cores,
              Phrase("refusal.hint.decode_tiles"))
    model = p.model_shape
    everyone = np.arange(chip.num_cores)
    nxt = 0
    for index in range(layers):
        if p.phases == "layer":  # each op ends with its own SyncAll
            nxt = layer.emit(b, chip, p, layer_ops(p, model, lengths,
                                                   head=index == layers - 1), nxt)
            continue
        if index:
            b.sync_all(everyone, nxt)
            nxt += 1
        if p.phases in ("both", "append"):
            nxt = kv_append.emit(b, chip, p, model, lengths, nxt)
        if p.phases == "both":
            b.sync_all(everyone, nxt)
            nxt += 1
        if p.phases in ("both", "attention"):
            nxt = _attention(b, chip, p, model, lengths, nxt)
        if p.phases == "compress":
            nxt = kv_compress.emit(b, chip, p, model, lengths, nxt)
    return b.build()


def _attention(b: ProgramBuilder, chip: Chip, p: DecodeParams, model, lengths,
               seq0: int) -> int:
    """Attention over what the sparse policy reads, with its per-step extras."""
    nxt = sparse_select.emit(b, chip, p, model, lengths, seq0, "before")
    nxt = attention_module(p).emit(b, chip, p, model,
                                   sparse_select.attention_tokens(p, lengths), nxt)
    return sparse_select.emit(b, chip, p, model, lengths, nxt, "after")

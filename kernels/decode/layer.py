"""One decoder layer of the decode step, every op emulated, then the LM head.

The program of ``phases = "layer"``: each op is its own kernel launch (``b.launch``) and a
SyncAll over every core follows it, as consecutive launches on one stream behave:

    attn_norm  RMSNorm of the layer input              (kernels.rmsnorm, vector cores)
    qkv        x @ W_qkv, N = (heads + 2 kv_heads) hd   (kernels.linear, skinny GEMM)
    rope       RoPE on the Q and K rows                 (kernels.rope)
    kv_append  K and V rows into the cache              (kernels.decode.kv_append)
    attention  over the KV cache                        (the decode kernel's attention)
    o_proj     attention output @ W_o                   (kernels.linear)
    mlp_norm   RMSNorm                                  (kernels.rmsnorm)
    gate_up    x @ W_gate|up, N = 2 x intermediate      (kernels.linear)
    swiglu     silu(gate) x up                          (kernels.swiglu)
    down       x @ W_down                               (kernels.linear)
    final_norm, lm_head   once per step, after the last layer

Activations pass between ops as GM regions (one per tensor), so an op reads what the op
before it wrote from L2 when it is still there; weights and the cache are regions of
their own, read cold. With ``tp`` > 1 the model is one card's share of a tensor-parallel
group (heads and the MLP width already divided, explorer.core.multicard): the column-split
projections (QKV, gate/up, LM head) keep the full hidden size as K, the row-split ones
(O, down) as N. Not emulated: the residual adds (2 x batch x hidden elements a layer) and
the embedding gather; Qwen's QKV bias.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip
from kernels.common.program import DTYPE_BYTES, ProgramBuilder
from kernels.decode import kv_append
from kernels.decode.params import DecodeParams
from kernels.linear import kernel as linear
from kernels.models import ModelShape
from kernels.rmsnorm import kernel as rmsnorm
from kernels.rope import kernel as rope
from kernels.swiglu import kernel as swiglu

LAYER_OPS = ("attn_norm", "qkv", "rope", "kv_append", "attention", "o_proj", "mlp_norm",
             "gate_up", "swiglu", "down")
HEAD_OPS = ("final_norm", "lm_head")
LINEAR_OPS = ("qkv", "o_proj", "gate_up", "down")
#: what each op mostly moves through HBM
OP_KIND = {**dict.fromkeys(("qkv", "o_proj", "gate_up", "down", "lm_head"), "weights"),
           **dict.fromkeys(("kv_append", "attention"), "kv"),
           **dict.fromkeys(("attn_norm", "rope", "mlp_norm", "swiglu", "final_norm"),
                           "activations")}


@dataclass(frozen=True)
class LayerShape:
    """The sizes of one layer's ops on one card (after tensor parallelism)."""

    batch: int
    hidden: int  # the model's full hidden size (the norms' width, K of QKV and gate/up)
    q_heads: int  # this card's
    kv_heads: int  # this card's
    head_dim: int
    intermediate: int  # this card's MLP width
    vocab: int  # this card's LM head rows
    act_dtype: str  # fp16 or bf16 activations
    weight_dtype: str  # fp16, bf16 or int8 (W8A16)
    eps: float

    @property
    def attention_width(self) -> int:
        """This card's query width (K of the O projection)."""
        return self.q_heads * self.head_dim


def layer_shape(p: DecodeParams, model: ModelShape | None = None) -> LayerShape:
    """The layer's shapes from checked decode parameters."""
    model = model or p.model_shape
    tp = p.tp
    return LayerShape(
        batch=p.batch, hidden=model.hidden * tp, q_heads=model.q_heads,
        kv_heads=model.kv_heads, head_dim=model.head_dim,
        intermediate=model.intermediate_size, vocab=-(-model.vocab_size // tp),
        act_dtype=p.out_dtype if p.weight_dtype != "bf16" else "bf16",
        weight_dtype=p.weight_dtype, eps=model.rms_norm_eps)


def activation_bytes(s: LayerShape) -> dict[str, int]:
    """Bytes of every activation tensor the layer hands from op to op."""
    e = DTYPE_BYTES[s.act_dtype] * s.batch
    qkv = (s.q_heads + 2 * s.kv_heads) * s.head_dim
    return {"x": e * s.hidden, "normed": e * s.hidden, "qkv": e * qkv,
            "attn_out": e * s.attention_width, "o": e * s.hidden, "normed2": e * s.hidden,
            "gate_up": e * 2 * s.intermediate, "act": e * s.intermediate, "y": e * s.hidden,
            "normed3": e * s.hidden, "logits": e * s.vocab}


# ---- the ops, as (name, emit(b, chip, nxt, regions) -> nxt) ------------------------------
def _norm_op(s: LayerShape, src: str, dst: str):
    shape = rmsnorm.RMSNormShape(s.batch, s.hidden, s.act_dtype, s.eps)
    return (lambda b, chip, nxt, r: rmsnorm.emit(b, chip, shape, nxt, src=r[src], dst=r[dst]),
            lambda chip: rmsnorm.instruction_count(chip, shape))


def _linear_op(s: LayerShape, n: int, k: int, src: str, dst: str):
    shape = linear.LinearShape(s.batch, n, k, s.weight_dtype, s.act_dtype)
    return (lambda b, chip, nxt, r: linear.emit(b, chip, shape, nxt, src=r[src], dst=r[dst]),
            lambda chip: linear.instruction_count(chip, shape))


def _rope_op(s: LayerShape):
    shape = rope.RopeShape(s.batch, s.q_heads, s.kv_heads, s.head_dim, s.act_dtype)
    return (lambda b, chip, nxt, r: rope.emit(b, chip, shape, nxt, src=r["qkv"]),
            lambda chip: rope.instruction_count(chip, shape))


def _swiglu_op(s: LayerShape):
    shape = swiglu.SwiGLUShape(s.batch, s.intermediate, s.act_dtype)
    return (lambda b, chip, nxt, r: swiglu.emit(b, chip, shape, nxt, src=r["gate_up"],
                                                dst=r["act"]),
            lambda chip: swiglu.instruction_count(chip, shape))


def ops(p: DecodeParams, model: ModelShape, lengths, attention: Callable,
        attention_count: Callable, *, head: bool = True) -> list[tuple[str, Callable, Callable]]:
    """The layer's ops in order, each (name, emit, instruction count); ``attention`` and
    ``attention_count`` emit and count the decode kernel's attention (its implementation
    and sparse policy are the kernel's)."""
    s = layer_shape(p, model)
    qkv_n = (s.q_heads + 2 * s.kv_heads) * s.head_dim
    append = (lambda b, chip, nxt, r: kv_append.emit(b, chip, p, model, lengths, nxt),
              lambda chip: kv_append.instruction_count(chip, p, model, lengths))
    attend = (lambda b, chip, nxt, r: attention(b, chip, p, model, lengths, nxt),
              lambda chip: attention_count(chip, p, model, lengths))
    steps = [("attn_norm", *_norm_op(s, "x", "normed")),
             ("qkv", *_linear_op(s, qkv_n, s.hidden, "normed", "qkv")),
             ("rope", *_rope_op(s)),
             ("kv_append", *append), ("attention", *attend),
             ("o_proj", *_linear_op(s, s.hidden, s.attention_width, "attn_out", "o")),
             ("mlp_norm", *_norm_op(s, "o", "normed2")),
             ("gate_up", *_linear_op(s, 2 * s.intermediate, s.hidden, "normed2", "gate_up")),
             ("swiglu", *_swiglu_op(s)),
             ("down", *_linear_op(s, s.hidden, s.intermediate, "act", "y"))]
    if head:
        steps += [("final_norm", *_norm_op(s, "y", "normed3")),
                  ("lm_head", *_linear_op(s, s.vocab, s.hidden, "normed3", "logits"))]
    return steps


def instruction_count(chip: Chip, steps) -> int:
    """Instructions of the layer program: every op plus a SyncAll per core after each."""
    return sum(count(chip) for _, _, count in steps) + len(steps) * chip.num_cores


def emit(b: ProgramBuilder, chip: Chip, p: DecodeParams, steps, nxt: int) -> int:
    """Emit the ops in order, each one launch followed by a SyncAll over every core."""
    s = layer_shape(p)
    names = list(activation_bytes(s))
    regions = dict(zip(names, b.regions([activation_bytes(s)[n] for n in names]).tolist()))
    everyone = np.arange(chip.num_cores)
    for name, emit_op, _ in steps:
        b.launch(name)
        nxt = emit_op(b, chip, nxt, regions)
        b.sync_all(everyone, nxt)
        nxt += 1
    return nxt

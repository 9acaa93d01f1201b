"""The KV memory calculator: what a batch's KV cache takes in HBM, per layout.

* `kv_memory(model, batch, lengths, kv_dtype, layout)`: bytes per token / sequence / batch,
  actual and reserved by the layout, and the waste (internal fragmentation).
* `fragmentation(model, lengths, ...)`: the waste of contiguous slabs against paged blocks.
* `max_batch_that_fits(model, chip, context_len, kv_dtype, weight_dtype)`: sequences of one
  length that fit in HBM next to the weights.
* `hbm_room(model, chip, kv, weight_dtype)`: one batch's KV and the weights against HBM (the
  check behind the decode kernel's and the page's refusal).

Bytes per token come from `ModelShape.kv_bytes_per_token` (2 x layers x kv_heads x head_dim
x element bytes, plus int8 per-token scales); static int8 scales are counted once per batch.
"""
from __future__ import annotations

from hardware_presets.errors import InputError, Phrase
from kernels.decode.workload import MAX_LEN, ContiguousLayout, PagedLayout, int_in, lengths_array
from kernels.models import ModelShape, kv_format


def kv_memory(model: ModelShape, batch: int, lengths, kv_dtype: str = "fp16",
              layout: ContiguousLayout | PagedLayout | None = None) -> dict:
    """KV-cache bytes of one batch: per token, per sequence, per batch, actual (the tokens
    held) and reserved (what the layout sets aside); waste = reserved - actual (internal
    fragmentation). Static int8 scales (per head / channel) count once in both totals.
    ``layout`` None means reserving exactly the tokens held. Plain ints, tuples per sequence.
    """
    if not isinstance(model, ModelShape):
        raise InputError("model", type(model).__name__, Phrase("refusal.decode.model_shape"))
    lengths = lengths_array(lengths, batch)
    fmt = kv_format(kv_dtype)
    per_token = model.kv_bytes_per_token(fmt.name)
    fixed = model.kv_scale_bytes_fixed(fmt.name)
    reserved = lengths if layout is None else layout.reserved_tokens(lengths)
    tokens, reserved_tokens = int(lengths.sum()), int(reserved.sum())
    return {
        "model": model.name, "kv_dtype": fmt.name,
        "layout": "exact" if layout is None else layout.name, "batch": len(lengths),
        "bytes_per_token": per_token,
        "bytes_per_token_per_layer": model.kv_bytes_per_token_per_layer(fmt.name),
        "scale_bytes_fixed": fixed,
        "tokens": tokens, "reserved_tokens": reserved_tokens,
        "per_sequence_bytes": tuple(int(n) * per_token for n in lengths),
        "per_sequence_reserved_bytes": tuple(int(n) * per_token for n in reserved),
        "batch_bytes": tokens * per_token + fixed,
        "reserved_bytes": reserved_tokens * per_token + fixed,
        "wasted_bytes": (reserved_tokens - tokens) * per_token,
        "waste_fraction": (reserved_tokens - tokens) / reserved_tokens,
        "bytes_per_block": (layout.block_bytes(model, fmt.name)
                            if isinstance(layout, PagedLayout) else None),
    }


def fragmentation(model: ModelShape, lengths, kv_dtype: str = "fp16", *, max_len: int,
                  block_size: int) -> dict:
    """Wasted KV bytes of the same lengths in contiguous slabs of ``max_len`` versus paged
    blocks of ``block_size`` (paged waste is below batch x block_size tokens)."""
    lengths = lengths_array(lengths)
    contiguous = kv_memory(model, len(lengths), lengths, kv_dtype, ContiguousLayout(max_len))
    paged = kv_memory(model, len(lengths), lengths, kv_dtype,
                      PagedLayout(block_size, tuple(int(n) for n in lengths), "interleaved"))
    return {
        "contiguous_wasted_bytes": contiguous["wasted_bytes"],
        "contiguous_waste_fraction": contiguous["waste_fraction"],
        "paged_wasted_bytes": paged["wasted_bytes"],
        "paged_waste_fraction": paged["waste_fraction"],
        "paged_waste_bound_bytes": len(lengths) * (block_size - 1) * paged["bytes_per_token"],
        "bytes_saved_by_paging": contiguous["reserved_bytes"] - paged["reserved_bytes"],
    }


def max_batch_that_fits(model: ModelShape, chip, context_len: int, kv_dtype: str = "fp16",
                        weight_dtype: str = "fp16", *, block_size: int | None = None,
                        reserve_bytes: int = 0) -> dict:
    """How many sequences of ``context_len`` tokens fit in one chip's HBM (chip.hbm_bytes)
    next to the model's weights: floor((HBM - weights - reserve - static scales) / KV bytes
    per sequence), 0 when nothing fits. With ``block_size`` a sequence reserves whole
    blocks. ``reserve_bytes`` stands for activations, workspace and the runtime (0 = none).
    ``weights_fit`` says whether the weights alone fit; ``min_chips_for_weights`` is
    ceil(weights / HBM), ignoring any sharding overhead.
    """
    if not isinstance(model, ModelShape):
        raise InputError("model", type(model).__name__, Phrase("refusal.decode.model_shape"))
    context_len = int_in("context_len", context_len, 1, MAX_LEN)
    reserve_bytes = int_in("reserve_bytes", reserve_bytes, 0, 2 ** 62)
    tokens = context_len
    if block_size is not None:
        tokens = -(-context_len // int_in("block_size", block_size, 1, 4096)) * block_size
    hbm = int(chip.hbm_bytes)
    weights = model.weight_bytes(weight_dtype)
    fixed = model.kv_scale_bytes_fixed(kv_dtype)
    per_seq = tokens * model.kv_bytes_per_token(kv_dtype)
    free = hbm - weights - reserve_bytes - fixed
    batch = max(0, free // per_seq)
    return {
        "max_batch": int(batch), "weights_fit": weights + reserve_bytes <= hbm,
        "hbm_bytes": hbm, "weight_bytes": weights, "reserve_bytes": reserve_bytes,
        "scale_bytes_fixed": fixed, "free_bytes": free,
        "kv_bytes_per_sequence": per_seq, "kv_bytes_at_max_batch": int(batch) * per_seq,
        "min_chips_for_weights": -(-weights // hbm),
    }


def hbm_room(model: ModelShape, chip, kv: dict, weight_dtype: str = "fp16") -> dict:
    """One batch against one chip's HBM: the KV its layout reserves (``kv_memory``) plus the
    weights, whether that fits, and how many sequences of its longest reservation would fit
    beside the weights (what a refusal offers instead). Sizes in bytes, for the caller to
    show in its own unit."""
    weights = model.weight_bytes(weight_dtype)
    hbm = int(chip.hbm_bytes)
    room = hbm - weights
    longest = max(kv["per_sequence_reserved_bytes"])
    return {"fits": kv["reserved_bytes"] + weights <= hbm, "kv_bytes": kv["reserved_bytes"],
            "weight_bytes": weights, "hbm_bytes": hbm,
            "max_batch": int(room // longest) if room > 0 else 0}

"""Decode attention in value: the kernel protocol (make_inputs, execute, reference,
error_bound, unit_roundoff, output_elements) of the KV-cache decode kernel.

For each verified (sequence, KV head) pair the g query heads of its GQA group attend over
the pair's cached tokens, read tile by tile from real storage in the chosen layout
(`kv_store`: contiguous slabs or a paged block pool, unused slots NaN) and computed by
`online_attention` in the kernel's order for the ``impl`` parameter:

* "vector": K and V tiles dequantised to fp32, q cast to fp32, everything in fp32;
* "cube_vector": q and the tiles in the compute format (fp16, bf16 for a bf16 cache; int8
  dequantised in fp32 first), S = q K^T and P V on the cube (fp32 accumulation, k0 = 16),
  the online softmax in fp32 on the vector;
* "split_kv": the vector algorithm per chunk of split_tokens, combined by log-sum-exp.
The fp32 result o / l is rounded to the output format (`AttentionParams.out_dtype`).

The protocol functions take the numerics' parameter dict (the timing-only parameters
left out) and read it once, as `AttentionParams`: what the attention's values depend on.

Which pairs are verified (`verified_pairs`) keeps memory and time bounded for any batch and
context; `Sample` says how many of all pairs were verified, and over how many tokens.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.common.attention_math import decode_attention_reference
from kernels.common.formats import UNIT_ROUNDOFF
from kernels.common.precision import round_to
from kernels.decode import online_attention
from kernels.decode.kv_store import StoredKV
from kernels.decode.params import AttentionParams

#: K elements (tokens x head_dim) of all verified pairs together, at most
VERIFY_ELEMENTS = 1 << 20
#: K elements of one pair, at most: a longer context is verified on its first
#: PAIR_ELEMENTS // head_dim tokens (the same kernel on a shorter sequence)
PAIR_ELEMENTS = 1 << 18
#: verified pairs, at most (each costs a Python loop over its tiles)
MAX_PAIRS = 16
#: sigma of the lognormal per-channel scales of K and V (uneven channels make int8
#: quantisation error visible, as real K caches have outlier channels)
CHANNEL_SIGMA = 0.5
#: spread positions tried for the sample (a power of two, see `verified_pairs`)
_SPREAD = 64


@dataclass(frozen=True)
class Sample:
    """The verified pairs: sequence, KV head, tokens verified (its length, or the first
    PAIR_ELEMENTS // head_dim when longer) and the sequence's length; plus all pairs."""

    seqs: tuple[int, ...]
    heads: tuple[int, ...]
    tokens: tuple[int, ...]
    lengths: tuple[int, ...]
    total_pairs: int
    head_dim: int

    @property
    def pairs(self) -> int:
        return len(self.seqs)

    @property
    def elements(self) -> int:
        """K elements the sample stores (V as many)."""
        return sum(self.tokens) * self.head_dim

    @property
    def truncated(self) -> int:
        """Verified pairs whose context is longer than the tokens verified."""
        return sum(t < n for t, n in zip(self.tokens, self.lengths))


def _spread(batch: int) -> list[int]:
    """Sequence indices floor(r batch / 2**b) for r in bit-reversed order over 2**b >=
    min(batch, 64) positions: every prefix is spread over the batch, and a batch of up to
    64 is covered entirely."""
    bits = max(1, (min(batch, _SPREAD) - 1).bit_length())
    order = sorted(range(1 << bits), key=lambda r: int(f"{r:0{bits}b}"[::-1], 2))
    return [r * batch >> bits for r in order]


def _candidates(lengths: np.ndarray, heads: int):
    """(sequence, KV head) in the sampling order of `verified_pairs`."""
    seqs = list(dict.fromkeys([int(np.argmax(lengths)), int(np.argmin(lengths))]
                              + _spread(len(lengths))))
    for r in range(heads):
        for k, s in enumerate(seqs):
            yield s, (k + r) % heads


def verified_pairs(p: AttentionParams, lengths) -> Sample:
    """The (sequence, KV head) pairs make_inputs materialises and execute verifies.

    Candidates, in order: the longest sequence, the shortest, then up to 64 sequences
    spread over the batch (bit-reversed positions); the k-th candidate is paired with KV
    head k mod kv_heads, and further rounds rotate the heads (k + r mod kv_heads), so
    all pairs are candidates when the batch has at most 64 sequences. A candidate is taken
    while the sample stays within VERIFY_ELEMENTS K elements (a pair costs min(length,
    PAIR_ELEMENTS // head_dim) x head_dim) and MAX_PAIRS pairs; one that does not fit is
    skipped. The longest and the shortest sequence are therefore always verified (one pair
    costs at most a quarter of the budget), and every pair when all fit. Deterministic:
    it depends on the lengths and the model only. Sorted by (sequence, head).
    """
    model = p.model_shape
    d, heads = model.head_dim, model.kv_heads
    lengths = np.asarray(lengths, np.int64)
    cap = max(1, PAIR_ELEMENTS // d)
    chosen, used = [], 0
    for s, h in _candidates(lengths, heads):
        cost = int(min(lengths[s], cap)) * d
        if used + cost <= VERIFY_ELEMENTS:
            chosen.append((s, h))
            used += cost
            if len(chosen) == MAX_PAIRS:
                break
    chosen.sort()
    seqs = tuple(s for s, _ in chosen)
    return Sample(seqs, tuple(h for _, h in chosen),
                  tuple(int(min(lengths[s], cap)) for s in seqs),
                  tuple(int(lengths[s]) for s in seqs), len(lengths) * heads, d)


def make_inputs(p: dict, rng: np.random.Generator) -> dict:
    """Inputs of the verified pairs for checked parameters ``p``.

    The first draws from ``rng`` are the workload's (`AttentionParams.draw`: lengths,
    layout), so the program and the numerics of one seed see the same batch. The values
    come from a child generator (``rng.spawn``), independent of what the layout drew: one
    seed gives the same q, K and V with either layout. Per KV head and channel, K and V
    get a lognormal(0, CHANNEL_SIGMA) scale; q [pairs, g, d] is standard normal rounded to
    the output format (q's dtype), K and V [tokens, d] are standard normal times their
    channel scales (float64, unquantised: the reference's data). The caches are stored
    in kv_dtype and laid out physically (`kv_store.StoredKV`), contiguous slabs with a
    NaN tail of one tile. A quantised cache also reports what K and V lost to their
    format ("quantization": a ``lowp.QuantError`` summary each).
    """
    a = AttentionParams.of(p)
    lengths, layout = a.draw(rng)
    sample = verified_pairs(a, lengths)
    vals = rng.spawn(1)[0]
    model = a.model_shape
    d, g = model.head_dim, model.gqa_group
    scales = vals.lognormal(0.0, CHANNEL_SIGMA, size=(2, model.kv_heads, d))
    q = round_to(vals.standard_normal((sample.pairs, g, d)), a.out_dtype)
    K, V = [], []
    for h, n in zip(sample.heads, sample.tokens):
        K.append(vals.standard_normal((n, d)) * scales[0, h])
        V.append(vals.standard_normal((n, d)) * scales[1, h])
    stored = [StoredKV.build(layout, sample.seqs, sample.heads, X, a.kv_dtype,
                             tail=a.tile_tokens) for X in (K, V)]
    inputs = {"q": q, "K": K, "V": V, "k_store": stored[0], "v_store": stored[1],
              "sample": sample, "lengths": lengths, "layout": layout}
    if a.quantized_kv:  # what the cache itself lost, apart from the attention's error
        inputs["quantization"] = {"K": stored[0].error(K).summary(),
                                  "V": stored[1].error(V).summary()}
    return inputs


def _working(inputs: dict, i: int, t0: int, t1: int, cube: str):
    """Tokens [t0, t1) of pair i's K and V as the arithmetic takes them: dequantised to
    fp32, then (cube) rounded to the cube's format."""
    K, V = (inputs[k].fp32(i, t0, t1) for k in ("k_store", "v_store"))
    return (round_to(K, cube), round_to(V, cube)) if cube else (K, V)


def execute(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    """{"out": [pairs, g, d]} float64 holders of the emulated outputs (see the module
    docstring), every tile read through the physical layout."""
    a = AttentionParams.of(p)
    cube = a.compute_dtype
    arith = online_attention.Arith(np.float32, cube)
    outs = [online_attention.attention(
        q, lambda t0, t1, i=i: _working(inputs, i, t0, t1, cube), n, tile=a.tile_tokens,
        split=a.split_tokens, arith=arith)
        for i, (q, n) in enumerate(zip(inputs["q"], inputs["sample"].tokens))]
    return {"out": round_to(np.stack(outs), a.out_dtype)}


def reference(inputs: dict) -> dict[str, np.ndarray]:
    """{"out": [pairs, g, d]}: float64 attention on the unquantised K and V."""
    return {"out": np.stack([decode_attention_reference(q, K, V)["out"]
                             for q, K, V in zip(inputs["q"], inputs["K"], inputs["V"])])}


def error_bound(p: dict, inputs: dict, ref_out: np.ndarray | None = None) -> np.ndarray:
    """Element-wise bound [pairs, g, d] on |execute - reference|: per pair
    `online_attention.error_bound` (its docstring derives it) for this impl's tiles,
    chunks and formats, with the cache's working values (storage and int8 quantisation
    error enter exactly) and the final rounding to the output format. ``ref_out`` is
    accepted for the protocol; the bound recomputes what it needs."""
    a = AttentionParams.of(p)
    cube = a.compute_dtype
    return np.stack([online_attention.error_bound(
        q, K, V, *_working(inputs, i, 0, n, cube), tile=a.tile_tokens,
        split=a.split_tokens, cube=cube, out=a.out_dtype)
        for i, (q, K, V, n) in enumerate(zip(inputs["q"], inputs["K"], inputs["V"],
                                             inputs["sample"].tokens))])


def unit_roundoff(p: dict) -> float:
    """Unit roundoff of the output format."""
    return UNIT_ROUNDOFF[AttentionParams.of(p).out_dtype]


def output_elements(p: dict) -> int:
    """Output elements of the whole decode step: batch x q_heads x head_dim."""
    a = AttentionParams.of(p)
    return a.batch * a.model_shape.q_heads * a.model_shape.head_dim

"""The decode workload: batch, per-sequence context lengths, KV format and KV layout.
Describes the work only (tokens, block tables); the decode kernels, the KV memory
calculator (``kv_memory``) and the page build on it.

* `PARAMS` / `check(params)`: the workload's ParamSpecs and their cross-field rules.
* `BatchParams`: the checked parameters that decide the batch, typed, and their ``draw``.
* `context_lengths(distribution, batch, mean=, max_len=, lengths=, rng=)`: tokens in the
  cache per sequence, drawn only through the given numpy Generator, all in [1, max_len].
* `ContiguousLayout(max_len)`: one slab of max_len tokens per sequence (the blog's layout).
* `PagedLayout(block_size, lengths, allocation, seed)`: vLLM-style blocks and block table.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import ClassVar, Self

import numpy as np

from hardware_presets.errors import InputError, Phrase
from kernels.common.budget import check_array_bytes
from kernels.common.params import ParamSpec, validate_params
from kernels.models import KV_DTYPES, WEIGHT_DTYPES, ModelShape, list_models

DISTRIBUTIONS = ("equal", "uniform", "lognormal", "bimodal", "list")
LAYOUTS = ("contiguous", "paged")
ALLOCATIONS = ("shuffled", "interleaved")
MAX_BATCH = 4096
MAX_LEN = 1 << 20  # tokens per sequence
MAX_SLOT_TOKENS = 1 << 25  # slot_mapping() refuses larger batches (memory)
LOGNORMAL_SIGMA = 0.6  # sigma of log(length); mu = ln(mean) - sigma^2 / 2 so E[length] = mean
BIMODAL_LONG_FRACTION = 0.2  # round(0.2 x batch) long sequences, the rest short
BIMODAL_LONG_FROM = 0.75  # long mode: uniform over [ceil(0.75 x max_len), max_len]

PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("model", str, "llama3-8b", choices=list_models()),
    ParamSpec("batch", int, 16, 1, MAX_BATCH, unit="sequences", log_scale=True),
    ParamSpec("distribution", str, "equal", choices=DISTRIBUTIONS),
    ParamSpec("mean_len", int, 2048, 1, MAX_LEN, unit="tokens", log_scale=True),
    ParamSpec("max_len", int, 8192, 1, MAX_LEN, unit="tokens", log_scale=True),
    ParamSpec("lengths", str, "", unit="tokens, comma-separated (distribution 'list')"),
    ParamSpec("kv_dtype", str, "fp16", choices=KV_DTYPES),
    ParamSpec("weight_dtype", str, "fp16", choices=WEIGHT_DTYPES),
    ParamSpec("layout", str, "paged", choices=LAYOUTS),
    ParamSpec("block_size", int, 128, 1, 4096, unit="tokens", log_scale=True),
    ParamSpec("allocation", str, "shuffled", choices=ALLOCATIONS),
)


def check(params: dict, where: str = "params") -> dict:
    """All workload parameters validated, defaults filled, cross-field rules checked:
    mean_len <= max_len, and for "list" one length per sequence, each <= max_len."""
    p = validate_params(PARAMS, params, where)
    if p["distribution"] == "list":
        lengths = parse_lengths(p["lengths"], f"{where}.lengths")
        _check_list(lengths, p["batch"], p["max_len"], f"{where}.lengths")
    elif p["mean_len"] > p["max_len"]:
        raise InputError(f"{where}.mean_len", p["mean_len"],
                         Phrase("refusal.int_range", low=1, high=f"max_len = {p['max_len']}"))
    return p


def parse_lengths(text: str, where: str = "lengths") -> tuple[int, ...]:
    """'512, 1024 8192' -> (512, 1024, 8192); commas and/or spaces separate."""
    parts = str(text).replace(",", " ").split()
    if not parts or len(parts) > MAX_BATCH:
        raise InputError(where, text, Phrase("refusal.decode.list_count", n=MAX_BATCH))
    try:
        return tuple(int(x) for x in parts)
    except ValueError:
        raise InputError(where, text, Phrase("refusal.decode.list_numbers")) from None


@dataclass(frozen=True)
class BatchParams:
    """The checked parameters that decide the batch, typed: its size, lengths and layout.
    The decode kernel's typed parameters extend it (`kernels.decode.params`)."""

    batch: int
    distribution: str
    mean_len: int
    max_len: int
    lengths: str
    layout: str
    block_size: int
    allocation: str

    @classmethod
    def of(cls, params: Mapping[str, object]) -> Self:
        """Checked parameters (a check's dict) typed: each field from its parameter only."""
        return cls(**{f.name: params[f.name] for f in fields(cls)})

    def draw(self, rng: np.random.Generator):
        """(lengths, layout), drawn from ``rng`` in that order."""
        lengths = lengths_from_params(self, rng)
        return lengths, layout_from_params(self, lengths, rng)


def lengths_from_params(w: BatchParams, rng: np.random.Generator) -> np.ndarray:
    """The context lengths of checked workload parameters (see `check`)."""
    listed = parse_lengths(w.lengths) if w.distribution == "list" else None
    return context_lengths(w.distribution, w.batch, mean=w.mean_len, max_len=w.max_len,
                           lengths=listed, rng=rng)


def layout_from_params(w: BatchParams, lengths, rng: np.random.Generator):
    """The KV layout of checked workload parameters for these lengths."""
    if w.layout == "contiguous":
        return ContiguousLayout(w.max_len)
    check_block_table(w.block_size, lengths, "params.block_size")
    return paged_layout(w.block_size, lengths, w.allocation, rng)


#: bytes per block while the table is built: the int32 table entry plus the int64 sequence,
#: position, id and permutation arrays of every block
_TABLE_BYTES_PER_BLOCK = 4 + 4 * 8


def check_block_table(block_size: int, lengths, field: str = "block_size") -> None:
    """Refuse, before it is built, a block table larger than the array budget (a batch of
    long contexts in one-token blocks is billions of entries)."""
    nb = -(-np.asarray(lengths, np.int64) // block_size)
    cells = len(nb) * int(nb.max(initial=0)) + int(nb.sum())
    check_array_bytes(cells * _TABLE_BYTES_PER_BLOCK, field, block_size,
                      Phrase("refusal.decode.block_table", blocks=f"{int(nb.sum()):,}",
                             block_size=block_size), hint=Phrase("refusal.hint.block_table"))


# ---- context lengths ---------------------------------------------------------------------
def context_lengths(distribution: str, batch: int, *, mean: int, max_len: int,
                    lengths: Sequence[int] | None = None,
                    rng: np.random.Generator) -> np.ndarray:
    """Tokens in the cache per sequence (int64, shape [batch]), all in [1, max_len].

    * "equal": every sequence has ``mean`` tokens.
    * "uniform": integers uniform over [mean - w, mean + w], w = min(mean - 1, max_len - mean),
      so the mean is exactly ``mean`` in expectation and nothing is clipped.
    * "lognormal": exp(N(mu, 0.6^2)) with mu = ln(mean) - 0.18 (expectation ``mean``), rounded
      and clipped to [1, max_len] (clipping lowers the mean of long-tailed draws).
    * "bimodal": round(0.2 x batch) long sequences at random positions, uniform over
      [ceil(0.75 x max_len), max_len] (long documents); the other 80 % short, uniform over
      [ceil(mean / 2), floor(3 mean / 2)] (chat turns; ``mean`` is the short mode's centre).
      The modes are distinct when 1.5 x mean < 0.75 x max_len.
    * "list": ``lengths`` exactly (one per sequence, each 1..max_len; refused otherwise);
      ``mean`` and ``rng`` are not used.

    Randomness only through ``rng``: the same seed gives the same lengths.
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng", type(rng).__name__, Phrase("refusal.decode.rng"))
    if distribution not in DISTRIBUTIONS:
        raise InputError("distribution", distribution,
                         Phrase("refusal.one_of", options=", ".join(DISTRIBUTIONS)))
    batch = int_in("batch", batch, 1, MAX_BATCH)
    max_len = int_in("max_len", max_len, 1, MAX_LEN)
    if distribution == "list":
        return _check_list(lengths, batch, max_len, "lengths")
    mean = int_in("mean", mean, 1, max_len, "max_len = ")
    draw = _DRAWS[distribution](batch, mean, max_len, rng)
    return np.clip(np.rint(draw), 1, max_len).astype(np.int64)


def _equal(batch, mean, max_len, rng):
    return np.full(batch, mean)


def _uniform(batch, mean, max_len, rng):
    w = min(mean - 1, max_len - mean)
    return rng.integers(mean - w, mean + w, size=batch, endpoint=True)


def _lognormal(batch, mean, max_len, rng):
    mu = math.log(mean) - LOGNORMAL_SIGMA ** 2 / 2
    return rng.lognormal(mu, LOGNORMAL_SIGMA, size=batch)


def _bimodal(batch, mean, max_len, rng):
    n_long = round(BIMODAL_LONG_FRACTION * batch)
    out = rng.integers(max(1, math.ceil(mean / 2)), max(1, 3 * mean // 2), size=batch,
                       endpoint=True)
    long_at = rng.permutation(batch)[:n_long]
    out[long_at] = rng.integers(math.ceil(BIMODAL_LONG_FROM * max_len), max_len, size=n_long,
                                endpoint=True)
    return out


_DRAWS = {"equal": _equal, "uniform": _uniform, "lognormal": _lognormal, "bimodal": _bimodal}


def int_in(field: str, value, lo: int, hi: int, hi_name: str = "") -> int:
    """``value`` as an int in [lo, hi], refused (naming ``field``) otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or not lo <= value <= hi:
        raise InputError(field, value, Phrase("refusal.int_range", low=lo, high=f"{hi_name}{hi}"))
    return int(value)


def _check_list(lengths, batch: int, max_len: int, where: str) -> np.ndarray:
    if lengths is None or isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__len__"):
        raise InputError(where, lengths, Phrase("refusal.decode.list_of", batch=batch))
    if len(lengths) != batch:
        raise InputError(where, Phrase("refusal.value.lengths", n=len(lengths)),
                         Phrase("refusal.decode.list_exact", batch=batch),
                         hint=Phrase("refusal.hint.batch_or_list"))
    for i, n in enumerate(lengths):
        int_in(f"{where}[{i}]", n, 1, max_len, "max_len = ")
    return np.asarray(lengths, dtype=np.int64)


def lengths_array(lengths, batch: int | None = None, where: str = "lengths") -> np.ndarray:
    """Lengths as int64, each 1..MAX_LEN, ``batch`` of them when given."""
    arr = np.asarray(lengths)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise InputError(where, lengths, Phrase("refusal.decode.list_nonempty"))
    n = len(arr) if batch is None else int_in("batch", batch, 1, MAX_BATCH)
    return _check_list(arr, n, MAX_LEN, where)


# ---- layouts -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ContiguousLayout:
    """One slab of ``max_len`` tokens per sequence, reserved whatever the sequence's length
    (the blog's layout); the waste is max_len - length tokens per sequence."""

    max_len: int
    name: ClassVar[str] = "contiguous"

    def __post_init__(self) -> None:
        int_in("max_len", self.max_len, 1, MAX_LEN)

    def reserved_tokens(self, lengths) -> np.ndarray:
        """Tokens reserved per sequence: max_len each (lengths above it are refused)."""
        lengths = lengths_array(lengths)
        _check_list(lengths, len(lengths), self.max_len, "lengths")
        return np.full(len(lengths), self.max_len, dtype=np.int64)


@dataclass(frozen=True)
class PagedLayout:
    """Paged KV cache as vLLM / vLLM-Ascend manage it: each sequence holds
    ceil(length / block_size) blocks of ``block_size`` tokens, found through its row of the
    block table; only the last block of a sequence is partly empty.

    Physical block ids come from one pool of exactly the blocks needed:
    * "shuffled": the free list is a permutation drawn with default_rng(seed), as after
      many requests came and went (a sequence's blocks are scattered);
    * "interleaved": sequences grow in lockstep and take the next free block in turn
      (block j of every sequence before block j + 1 of any), so blocks of one sequence
      are ``batch`` apart.
    A block here spans all layers, K and V; vLLM keeps one cache tensor per layer, all
    indexed by the same block table (`block_bytes_per_layer`).
    """

    block_size: int
    lengths: tuple[int, ...]
    allocation: str = "shuffled"
    seed: int = 0
    name: ClassVar[str] = "paged"

    def __post_init__(self) -> None:
        int_in("block_size", self.block_size, 1, 4096)
        object.__setattr__(self, "lengths", tuple(int(n) for n in lengths_array(self.lengths)))
        check_block_table(self.block_size, self.lengths)
        if self.allocation not in ALLOCATIONS:
            raise InputError("allocation", self.allocation,
                             Phrase("refusal.one_of", options=", ".join(ALLOCATIONS)))
        int_in("seed", self.seed, 0, 2 ** 63 - 1)

    @property
    def blocks_per_sequence(self) -> np.ndarray:
        """ceil(length / block_size) per sequence."""
        return -(-np.asarray(self.lengths, np.int64) // self.block_size)

    @property
    def num_blocks(self) -> int:
        """Blocks the whole batch holds."""
        return int(self.blocks_per_sequence.sum())

    def block_table(self) -> np.ndarray:
        """int32 [batch, max blocks per sequence]: physical block id of each sequence's
        j-th block, -1 past its end (vLLM's block_tables tensor). Read-only, cached."""
        return _block_table(self.block_size, self.lengths, self.allocation, self.seed)

    def slot_mapping(self) -> np.ndarray:
        """int64 physical slot (block id x block_size + offset) of every token, sequence
        by sequence, position by position (vLLM's slot_mapping for the whole cache)."""
        total = sum(self.lengths)
        if total > MAX_SLOT_TOKENS:
            raise InputError("tokens in the batch", total,
                             Phrase("refusal.decode.slot_tokens", n=MAX_SLOT_TOKENS),
                             hint=Phrase("refusal.hint.block_table_api"))
        seq = np.repeat(np.arange(len(self.lengths)), self.lengths)
        pos = np.arange(total) - np.repeat(np.cumsum(self.lengths) - self.lengths, self.lengths)
        blocks = self.block_table()[seq, pos // self.block_size].astype(np.int64)
        return blocks * self.block_size + pos % self.block_size

    def reserved_tokens(self, lengths=None) -> np.ndarray:
        """Tokens reserved per sequence: whole blocks (lengths must be the layout's own)."""
        if lengths is not None and tuple(int(n) for n in lengths_array(lengths)) != self.lengths:
            raise InputError("lengths", Phrase("refusal.value.different_lengths"),
                             Phrase("refusal.decode.same_lengths"),
                             hint=Phrase("refusal.hint.layout_lengths"))
        return self.blocks_per_sequence * self.block_size

    def block_bytes(self, model: ModelShape, kv_dtype: str = "fp16") -> int:
        """Bytes of one block over all layers, K and V (block_size x bytes per token)."""
        return self.block_size * model.kv_bytes_per_token(kv_dtype)

    def block_bytes_per_layer(self, model: ModelShape, kv_dtype: str = "fp16") -> int:
        """Bytes of one block in one layer's cache, K and V."""
        return self.block_size * model.kv_bytes_per_token_per_layer(kv_dtype)


@functools.lru_cache(maxsize=64)
def _block_table(block_size: int, lengths: tuple, allocation: str, seed: int) -> np.ndarray:
    nb = -(-np.asarray(lengths, np.int64) // block_size)
    total = int(nb.sum())
    seq = np.repeat(np.arange(len(nb)), nb)
    j = np.arange(total) - np.repeat(np.cumsum(nb) - nb, nb)  # logical block within sequence
    if allocation == "shuffled":
        ids = np.random.default_rng(seed).permutation(total)
    else:
        ids = np.empty(total, np.int64)
        ids[np.lexsort((seq, j))] = np.arange(total)
    table = np.full((len(nb), int(nb.max())), -1, dtype=np.int32)
    table[seq, j] = ids
    table.setflags(write=False)
    return table


def paged_layout(block_size: int, lengths, allocation: str = "shuffled",
                 rng: np.random.Generator | None = None) -> PagedLayout:
    """A PagedLayout whose shuffle seed is drawn from ``rng`` (the scenario's generator)."""
    seed = int(rng.integers(0, 2 ** 63 - 1)) if rng is not None and allocation == "shuffled" else 0
    return PagedLayout(block_size, tuple(int(n) for n in lengths_array(lengths)), allocation, seed)

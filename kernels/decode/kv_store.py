"""Physical KV-cache storage for the decode kernel's numerics: real arrays laid out as the
contiguous or the paged layout lays them out, for a set of (sequence, KV head) pairs.

* `build_cache(layout, seqs, heads, rows, capacity=, tail=)`: one K or V plane (or its
  per-token scales) of the given pairs. Contiguous: one slab per pair (`SlabCache`), the
  first rows written, the rest of the reserved slab poisoned. Paged: a block pool per KV
  head (`PagedCache`) holding the blocks the layout's block table names for the pairs,
  pool rows in physical block-id order; unwritten slots poisoned. Poison is NaN for float
  planes and the code -128 for int8 codes (symmetric quantisation never writes it), so a
  kernel that reads past a sequence's length produces NaN.
* `append_incremental(cache, new_rows)`: the decode step's KV append, one token per pair
  written in place at its next position (paged: block_table[seq, pos // bs], slot
  pos % bs); every other byte stays as it was.
* `append_concat(cache, new_rows)`: the torch.cat pattern, a new exact-size cache of the
  old tokens plus the new one; its traffic is the whole cache read and written.
* `StoredKV.build(layout, seqs, heads, values, kv_dtype)`: K or V of the pairs in a KV
  format (fp16 / bf16 values; int8 codes with per-token, per-head or per-channel fp32
  scales; FP8 / HiF8 codes with per-channel fp32 scales; MX values with their E8M0 block
  scales along head_dim applied) and `StoredKV.fp32(i, t0, t1)`, the tile the vector unit
  dequantises; `StoredKV.error(values)` what the cache lost against the real values.

Only the given pairs are materialised (the numerics verify a bounded sample), so memory is
bounded by the sample, not by the batch or max_len.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hardware_presets.errors import InputError, Phrase
from kernels.common.formats import round_to, rounding_bound
from kernels.common.lowp import QuantError, measure, row_scales, scaled_bound, scaled_codes
from kernels.common.precision import quantize
from kernels.decode.workload import ContiguousLayout, PagedLayout
from kernels.models import KVFormat, kv_format

POISON_CODE = -128  # the int8 code symmetric quantisation never produces


def poison(dtype) -> np.ndarray:
    """The fill of unwritten slots of a plane of ``dtype``: NaN, or -128 for int8 codes."""
    dtype = np.dtype(dtype)
    return np.array(POISON_CODE if dtype.kind in "iu" else np.nan, dtype)


def _check_range(i: int, t0: int, t1: int, limit: int, what: str) -> None:
    if not 0 <= t0 < t1 <= limit:
        raise InputError(f"pair {i} positions", (t0, t1), Phrase(
            "refusal.decode.positions", limit=limit, what=what),
            hint=Phrase("refusal.hint.kernel_bug"))


class _Cache:
    """What both layouts share: per-pair lengths (tokens written), the row format, and
    the raw bytes of all storage (for bit-identity checks, NaN payloads included)."""

    lengths: np.ndarray
    arrays: list[np.ndarray]

    @property
    def dtype(self) -> np.dtype:
        return self.arrays[0].dtype

    @property
    def width(self) -> int:
        return self.arrays[0].shape[-1]

    @property
    def row_bytes(self) -> int:
        """Bytes of one token of one pair (width x element bytes)."""
        return self.width * self.dtype.itemsize

    def raw(self) -> bytes:
        """Every stored byte, in storage order."""
        return b"".join(a.tobytes() for a in self.arrays)


class SlabCache(_Cache):
    """Contiguous layout: pair i owns slab ``arrays[i]`` [reserved rows, width]."""

    def __init__(self, slabs: list[np.ndarray], lengths) -> None:
        self.arrays = slabs
        self.lengths = np.array(lengths, np.int64)

    def gather(self, i: int, t0: int, t1: int) -> np.ndarray:
        """Rows [t0, t1) of pair i, a view of its slab (poison past its length)."""
        _check_range(i, t0, t1, len(self.arrays[i]), "the slab")
        return self.arrays[i][t0:t1]

    def write(self, i: int, pos: int, row: np.ndarray) -> None:
        _check_range(i, pos, pos + 1, len(self.arrays[i]), "the slab")
        self.arrays[i][pos] = row


class PagedCache(_Cache):
    """Paged layout: ``arrays[k]`` is the block pool [blocks, block_size, width] of the
    k-th KV head in ``pool_heads``, its rows the blocks ``ids[k]`` (sorted physical ids)."""

    def __init__(self, layout: PagedLayout, seqs, heads, capacity, width: int,
                 dtype) -> None:
        self.bs = layout.block_size
        self.table = layout.block_table()[np.asarray(seqs, np.int64)]
        self.blocks = -(-np.asarray(capacity, np.int64) // self.bs)
        if np.any(self.blocks > self.table.shape[1]) or any(
                np.any(self.table[i, :b] < 0) for i, b in enumerate(self.blocks)):
            raise InputError("capacity", tuple(capacity),
                             Phrase("refusal.decode.capacity_layout"))
        self.pool_heads = sorted(set(int(h) for h in heads))
        self.pool_of = np.array([self.pool_heads.index(int(h)) for h in heads], np.int64)
        self.ids = [np.sort(np.concatenate([self.table[i, :self.blocks[i]]
                                            for i in np.flatnonzero(self.pool_of == k)]))
                    for k in range(len(self.pool_heads))]
        self.arrays = [np.full((len(ids), self.bs, width), poison(dtype)) for ids in self.ids]
        self.lengths = np.zeros(len(self.table), np.int64)

    def _where(self, i: int, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(pool, pool rows, slots) of positions ``pos`` of pair i."""
        k = self.pool_of[i]
        block = self.table[i, pos // self.bs]
        return k, np.searchsorted(self.ids[k], block), pos % self.bs

    def gather(self, i: int, t0: int, t1: int) -> np.ndarray:
        """Rows [t0, t1) of pair i through its block table (poison past its length);
        a range inside one block is a view of the pool."""
        _check_range(i, t0, t1, int(self.blocks[i]) * self.bs, "the pair's blocks")
        k, rows, slots = self._where(i, np.arange(t0, t1))
        if rows[0] == rows[-1]:
            return self.arrays[k][rows[0], slots[0]:slots[-1] + 1]
        return self.arrays[k][rows, slots]

    def write(self, i: int, pos, rows: np.ndarray) -> None:
        pos = np.atleast_1d(np.asarray(pos, np.int64))
        _check_range(i, int(pos.min()), int(pos.max()) + 1, int(self.blocks[i]) * self.bs,
                     "the pair's blocks")
        k, prow, slots = self._where(i, pos)
        self.arrays[k][prow, slots] = rows


def build_cache(layout, seqs: Sequence[int], heads: Sequence[int],
                rows: Sequence[np.ndarray], *, capacity=None, tail: int = 0):
    """A SlabCache or PagedCache of the pairs (seqs[i], heads[i]) holding ``rows[i]``
    ([n_i, width], one dtype), reserving ``capacity[i]`` >= n_i tokens (default n_i).
    Contiguous slabs reserve min(max_len, capacity + tail) rows, so a tile that runs up to
    ``tail`` rows past the end reads poison; paged pairs hold their first
    ceil(capacity / block_size) blocks. The pairs must be distinct."""
    if not rows or len(seqs) != len(rows) or len(heads) != len(rows) or \
            len({(int(s), int(h)) for s, h in zip(seqs, heads)}) != len(rows):
        raise InputError("pairs", len(rows), Phrase("refusal.decode.pairs"))
    n = np.array([len(r) for r in rows], np.int64)
    cap = n if capacity is None else np.asarray(capacity, np.int64)
    if np.any(cap < n):
        raise InputError("capacity", tuple(cap), Phrase("refusal.decode.capacity_rows",
                                                        rows=tuple(n)))
    width, dtype = rows[0].shape[1], rows[0].dtype
    if isinstance(layout, ContiguousLayout):
        if np.any(cap > layout.max_len):
            raise InputError("capacity", int(cap.max()), Phrase("refusal.decode.capacity_max",
                                                                max_len=layout.max_len))
        slabs = [np.full((min(layout.max_len, c + tail), width), poison(dtype)) for c in cap]
        for slab, r in zip(slabs, rows):
            slab[:len(r)] = r
        return SlabCache(slabs, n)
    if not isinstance(layout, PagedLayout):
        raise InputError("layout", type(layout).__name__, Phrase("refusal.decode.layout"))
    cache = PagedCache(layout, seqs, heads, cap, width, dtype)
    for i, r in enumerate(rows):
        if len(r):
            cache.write(i, np.arange(len(r)), r)
    cache.lengths[:] = n
    return cache


def append_incremental(cache, new_rows: np.ndarray) -> dict[str, int]:
    """Write one token per pair in place at position length (so the new length counts it),
    nothing else. Traffic: the new rows read once and written once."""
    new_rows = np.asarray(new_rows, cache.dtype)
    for i, row in enumerate(new_rows):
        cache.write(i, int(cache.lengths[i]), row)
    cache.lengths += 1
    moved = len(new_rows) * cache.row_bytes
    return {"bytes_read": moved, "bytes_written": moved, "tokens_written": len(new_rows)}


def append_concat(cache, new_rows: np.ndarray) -> tuple[SlabCache, dict[str, int]]:
    """torch.cat((old, new)) per pair: a new exact-size SlabCache of length + 1 tokens.
    Traffic: every old token read and rewritten, plus the new one:
    read = (sum lengths + pairs) x row bytes, written = (sum lengths + pairs) x row bytes."""
    new_rows = np.asarray(new_rows, cache.dtype)
    slabs = [np.concatenate([cache.gather(i, 0, int(n)), row[None]]) if n else row[None].copy()
             for i, (n, row) in enumerate(zip(cache.lengths, new_rows))]
    moved = int(cache.lengths.sum() + len(new_rows)) * cache.row_bytes
    traffic = {"bytes_read": moved, "bytes_written": moved,
               "tokens_written": int(cache.lengths.sum()) + len(new_rows)}
    return SlabCache(slabs, cache.lengths + 1), traffic


# ---- a KV format on top of the planes ------------------------------------------------
@dataclass
class StoredKV:
    """K or V of the pairs in a KV format: ``codes`` (fp16 / bf16 values, int8 or FP8 /
    HiF8 codes, or MX values already scaled, float32), ``token_scales`` (int8_token: fp32
    [tokens, 1] in the same layout) and ``static`` (int8_head / int8_channel and the
    scaled 8-bit floats: each pair's fp32 scale, [1, 1] or [1, d], shared by the pairs of
    one KV head: calibrated on the data they quantise, as an offline calibration pass
    over this cache would, so nothing saturates)."""

    fmt: KVFormat
    codes: SlabCache | PagedCache
    token_scales: SlabCache | PagedCache | None = None
    static: list[np.ndarray] | None = None

    @classmethod
    def build(cls, layout, seqs, heads, values: Sequence[np.ndarray], kv_dtype: str, *,
              tail: int = 0) -> StoredKV:
        """Quantise / round ``values[i]`` ([n_i, d] float64) and lay them out."""
        fmt = kv_format(kv_dtype)
        if fmt.scales in ("", "block"):  # MX: blocks of 32 along head_dim, exact in fp32
            codes = [round_to(np.asarray(v, np.float64), fmt.storage, axis=-1)
                     for v in values]
            if fmt.scales == "block":
                codes = [c.astype(np.float32) for c in codes]
            return cls(fmt, build_cache(layout, seqs, heads, codes, tail=tail))
        if fmt.scales == "token":
            qs = [quantize(v, "int8", "symmetric", "token") for v in values]
            scales = [q.scale.astype(np.float32) for q in qs]
            return cls(fmt, build_cache(layout, seqs, heads, [q.codes for q in qs], tail=tail),
                       build_cache(layout, seqs, heads, scales, tail=tail))
        codes, static = _static_quantize(values, heads, fmt.granularity, fmt.storage)
        return cls(fmt, build_cache(layout, seqs, heads, codes, tail=tail), static=static)

    def fp32(self, i: int, t0: int, t1: int) -> np.ndarray:
        """Tokens [t0, t1) of pair i as the vector unit dequantises them: fp16 / bf16
        cast to fp32 (exact), MX values (exact), int8 or FP8 / HiF8 codes x fp32 scale
        (one fp32 rounding). The poison code reads as NaN: the emulator's marker for a
        read of an unwritten slot."""
        raw = self.codes.gather(i, t0, t1)
        if self.fmt.storage != "int8":
            x = raw.astype(np.float32)
            return x if self.static is None else x * self.static[i]
        scale = (self.token_scales.gather(i, t0, t1) if self.token_scales is not None
                 else self.static[i])
        return np.where(raw == POISON_CODE, np.float32(np.nan),
                        raw.astype(np.float32) * scale)


    def allowed(self, i: int, x: np.ndarray) -> np.ndarray:
        """The largest |fp32(i, 0, n) - x| the format allows for pair i's real values
        ``x``: the format's rounding bound (int8: half a step of the scale, plus its fp32
        rounding), plus the fp32 rounding of the dequantisation's multiply."""
        x = np.asarray(x, np.float64)
        name, mult = self.fmt.storage, 2.0 ** -23 * np.abs(x) + 2.0 ** -149
        if name == "int8":
            scale = (self.token_scales.gather(i, 0, len(x)) if self.token_scales is not None
                     else self.static[i]).astype(np.float64)
            return scale * (0.5 + 2.0 ** -16) + mult
        if self.static is not None:
            return scaled_bound(x, self.static[i], name) + mult
        return rounding_bound(x, name, axis=-1)

    def error(self, values: Sequence[np.ndarray]) -> QuantError:
        """What the stored cache lost against the real ``values`` of its pairs."""
        total = None
        for i, x in enumerate(values):
            e = measure(x, self.fp32(i, 0, len(x)), self.allowed(i, x), self.fmt.name)
            total = e if total is None else total.merge(e)
        return total


def _static_quantize(values, heads, granularity: str, storage: str = "int8"):
    """Codes per pair and fp32 scales shared by the pairs of each KV head, one per head
    ("tensor") or per channel ("channel"): int8 codes (symmetric), or FP8 / HiF8 codes
    of a scaled format (``lowp``, per channel)."""
    heads = np.asarray(heads)
    codes: list = [None] * len(values)
    static: list = [None] * len(values)
    for h in np.unique(heads):
        idx = np.flatnonzero(heads == h)
        joined = np.concatenate([values[i] for i in idx])
        if storage == "int8":
            q = quantize(joined, "int8", "symmetric", granularity, axis=-1)
            all_codes, scale = q.codes, q.scale.astype(np.float32)
        else:  # one scale per channel of head_dim: amax over the head's tokens
            scale = row_scales(joined, storage, axis=0)
            all_codes = scaled_codes(joined, scale, storage)
        cuts = np.cumsum([len(values[i]) for i in idx])[:-1]
        for i, c in zip(idx, np.split(all_codes, cuts)):
            codes[i], static[i] = c, scale
    return codes, static

"""Physical KV-cache storage (kernels/decode/kv_store.py): contiguous slabs and paged block pools
on real arrays, poison past the end, the incremental append versus the torch.cat pattern,
and K/V in each KV format."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hardware_presets import InputError
from kernels.decode import kv_store as ks
from kernels.decode import online_attention as oa
from kernels.decode.workload import ContiguousLayout, PagedLayout

LENGTHS = (9, 4, 13, 1)
SEQS, HEADS = (0, 1, 2, 2, 3), (0, 1, 0, 1, 1)
DTYPES = (np.float16, ml_dtypes.bfloat16, np.float32, np.int8)
KV_DTYPES = ("fp16", "bf16", "int8_token", "int8_head", "int8_channel")


def layouts(lengths=LENGTHS):
    return {"contiguous": ContiguousLayout(32),
            "paged": PagedLayout(4, lengths, "shuffled", 7),
            "interleaved": PagedLayout(4, lengths, "interleaved")}


def rows_of(lengths, dtype, width=3, seed=0, drop=0):
    """One distinct row array per pair, ``drop`` tokens short of the sequence's length."""
    rng = np.random.default_rng(seed)
    return [(rng.integers(-127, 128, (lengths[s] - drop, width)) if np.dtype(dtype).kind == "i"
             else rng.standard_normal((lengths[s] - drop, width))).astype(dtype) for s in SEQS]


def as_bytes(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["contiguous", "paged", "interleaved"])
def test_gather_returns_the_rows_and_poison_after_them(name, dtype):
    rows = rows_of(LENGTHS, dtype)
    cache = ks.build_cache(layouts()[name], SEQS, HEADS, rows, tail=4)
    for i, r in enumerate(rows):
        n = len(r)
        for t0 in range(n):
            for t1 in range(t0 + 1, n + 1):
                assert as_bytes(cache.gather(i, t0, t1)) == as_bytes(r[t0:t1])
        end = -(-n // 4) * 4 if name != "contiguous" else n + 4
        if end > n:
            assert as_bytes(cache.gather(i, n, end)) == as_bytes(
                np.full((end - n, 3), ks.poison(dtype)))
        with pytest.raises(InputError, match="positions"):
            cache.gather(i, n, end + 1)


def test_paged_pools_hold_only_the_pairs_blocks_in_block_id_order():
    layout = layouts()["paged"]
    cache = ks.build_cache(layout, SEQS, HEADS, rows_of(LENGTHS, np.float16))
    table = layout.block_table()
    for k, h in enumerate(cache.pool_heads):
        want = np.sort(np.concatenate([table[s][table[s] >= 0]
                                       for s, hh in zip(SEQS, HEADS) if hh == h]))
        np.testing.assert_array_equal(cache.ids[k], want)
        assert cache.arrays[k].shape == (len(want), 4, 3)


@pytest.mark.parametrize("name", ["contiguous", "paged", "interleaved"])
def test_incremental_append_writes_one_row_and_nothing_else(name):
    """Appending to n - 1 tokens gives, byte for byte (NaN poison included), the cache
    built with all n tokens; exactly one row per pair changed."""
    layout = layouts()[name]
    full = rows_of(LENGTHS, np.float16)
    old = ks.build_cache(layout, SEQS, HEADS, [r[:-1] for r in full],
                         capacity=[len(r) for r in full], tail=4)
    before = [a.copy() for a in old.arrays]
    traffic = ks.append_incremental(old, np.stack([r[-1] for r in full]))
    want = ks.build_cache(layout, SEQS, HEADS, full, tail=4)
    assert old.raw() == want.raw()
    np.testing.assert_array_equal(old.lengths, [len(r) for r in full])
    changed = sum(int(np.any(b.view(np.uint16) != a.view(np.uint16), axis=-1).sum())
                  for b, a in zip(before, old.arrays))
    assert changed == len(SEQS)
    assert traffic == {"bytes_read": 5 * 6, "bytes_written": 5 * 6, "tokens_written": 5}


@pytest.mark.parametrize("name", ["contiguous", "paged"])
def test_concat_copies_the_whole_cache(name):
    full = rows_of(LENGTHS, np.float32, width=8)
    old = ks.build_cache(layouts()[name], SEQS, HEADS, [r[:-1] for r in full],
                         capacity=[len(r) for r in full])
    new, traffic = ks.append_concat(old, np.stack([r[-1] for r in full]))
    tokens = sum(len(r) for r in full)  # (n - 1) old + 1 new per pair
    assert traffic == {"bytes_read": tokens * 32, "bytes_written": tokens * 32,
                       "tokens_written": tokens}
    assert len(new.raw()) == tokens * 32  # exact size, no reserve
    for i, r in enumerate(full):
        assert as_bytes(new.gather(i, 0, len(r))) == as_bytes(r)
    inc = ks.append_incremental(old, np.stack([r[-1] for r in full]))
    assert inc["bytes_written"] == len(SEQS) * 32
    assert traffic["bytes_written"] / inc["bytes_written"] == tokens / len(SEQS)


def test_refusals():
    layout = layouts()["paged"]
    rows = rows_of(LENGTHS, np.float16)
    with pytest.raises(InputError, match="distinct"):
        ks.build_cache(layout, (0, 0), (1, 1), rows[:2])
    with pytest.raises(InputError, match="capacity"):
        ks.build_cache(layout, SEQS, HEADS, rows, capacity=[len(r) + 4 for r in rows])
    with pytest.raises(InputError, match="capacity"):
        ks.build_cache(layout, SEQS, HEADS, rows, capacity=[len(r) - 1 for r in rows])
    with pytest.raises(InputError, match="max_len"):
        ks.build_cache(ContiguousLayout(10), SEQS, HEADS, rows)
    full = ks.build_cache(ContiguousLayout(13), SEQS, HEADS, rows)
    with pytest.raises(InputError, match="positions"):
        ks.append_incremental(full, np.zeros((5, 3)))


# ---- K / V in a KV format ----------------------------------------------------------
def kv_values(seed=3, d=16):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((LENGTHS[s], d)) * rng.lognormal(0, 0.5, d) for s in SEQS]


@pytest.mark.parametrize("kv", KV_DTYPES)
def test_stored_kv_dequantises_close_to_the_values_and_poisons_the_rest(kv):
    vals = kv_values()
    for layout in layouts().values():
        st = ks.StoredKV.build(layout, SEQS, HEADS, vals, kv, tail=4)
        for i, v in enumerate(vals):
            got = st.fp32(i, 0, len(v))
            assert got.dtype == np.float32
            if kv in ("fp16", "bf16"):  # one rounding: half an ulp
                tol = np.abs(v) * (2.0 ** -11 if kv == "fp16" else 2.0 ** -8)
            else:  # half a step (127 codes x the fp32 scale rounding) + the product rounding
                scale = st.token_scales.gather(i, 0, len(v)) if kv == "int8_token" \
                    else st.static[i]
                tol = scale * (0.5 + 2.0 ** -16) + 2.0 ** -24 * np.abs(got)
            assert np.all(np.abs(got - v) <= tol)
            if len(v) % 4:
                assert np.all(np.isnan(st.fp32(i, len(v), -(-len(v) // 4) * 4)))


def test_static_scales_are_shared_by_the_pairs_of_a_head():
    st = ks.StoredKV.build(layouts()["paged"], SEQS, HEADS, kv_values(), "int8_channel")
    by_head = {}
    for i, h in enumerate(HEADS):
        assert st.static[i].shape == (1, 16) and st.static[i].dtype == np.float32
        by_head.setdefault(h, st.static[i])
        np.testing.assert_array_equal(st.static[i], by_head[h])
    assert not np.array_equal(by_head[0], by_head[1])
    head = ks.StoredKV.build(layouts()["paged"], SEQS, HEADS, kv_values(), "int8_head")
    assert head.static[0].shape == (1, 1) and head.token_scales is None
    token = ks.StoredKV.build(layouts()["paged"], SEQS, HEADS, kv_values(), "int8_token")
    assert token.static is None and token.token_scales.width == 1


@pytest.mark.parametrize("kv", KV_DTYPES)
def test_paged_and_contiguous_give_identical_attention(kv):
    """The layout moves bytes, never values: the same tiles, the same bits."""
    vals = kv_values(d=8)
    q = np.random.default_rng(4).standard_normal((3, 8))
    outs = []
    for layout in layouts().values():
        K = ks.StoredKV.build(layout, SEQS, HEADS, vals, kv, tail=4)
        V = ks.StoredKV.build(layout, SEQS, HEADS, [v[::-1] for v in vals], kv, tail=4)
        outs.append([oa.attention(q, lambda a, b, i=i, K=K, V=V: (K.fp32(i, a, b),
                                                                  V.fp32(i, a, b)),
                                  len(v), tile=4) for i, v in enumerate(vals)])
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_array_equal(a, b)
            assert np.all(np.isfinite(a))

"""The jit engine's data structures, each a few array operations inlined into the loop:
a binary min-heap of (time, key) pairs in flat arrays (the event queue, and each bandwidth
class's finish tags), max-min fair rates of the bandwidth classes, and L2 residency as an
intrusive doubly-linked LRU list over region ids."""
from __future__ import annotations

from numba import njit

from ..config import JIT_OPTIONS


@njit(inline="always", **JIT_OPTIONS)
def less(ta, ka, tb, kb):
    return ta < tb or (ta == tb and ka < kb)


@njit(inline="always", **JIT_OPTIONS)
def heap_push(ht, hk, base, size, t, k):
    """Push (t, k) on the binary min-heap ht/hk[base:base+size]; returns the new size.
    Parents move down into the hole and the new entry is written once."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if not less(t, k, ht[base + p], hk[base + p]):
            break
        ht[base + i] = ht[base + p]
        hk[base + i] = hk[base + p]
        i = p
    ht[base + i] = t
    hk[base + i] = k
    return size + 1


@njit(inline="always", **JIT_OPTIONS)
def heap_pop(ht, hk, base, size):
    """Drop the minimum (read ht/hk[base] first); returns the new size. The last entry
    sinks from the root through a hole, written once where it stops."""
    size -= 1
    t, k = ht[base + size], hk[base + size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and less(ht[base + c + 1], hk[base + c + 1], ht[base + c],
                                  hk[base + c]):
            c += 1
        if not less(ht[base + c], hk[base + c], t, k):
            break
        ht[base + i] = ht[base + c]
        hk[base + i] = hk[base + c]
        i = c
    ht[base + i] = t
    hk[base + i] = k
    return size


@njit(inline="always", **JIT_OPTIONS)
def water_fill(cnt, class_cap, class_pool, pool_bw, rate):
    """Max-min fair rate per class; classes are sorted by (pool, cap) ascending."""
    for pool in range(2):
        left = pool_bw[pool]
        remaining = 0
        for k in range(len(cnt)):
            if class_pool[k] == pool:
                remaining += cnt[k]
        for k in range(len(cnt)):
            if class_pool[k] != pool:
                continue
            if cnt[k] == 0:
                rate[k] = 0.0
                continue
            r = min(class_cap[k], left / remaining)
            rate[k] = r
            left -= r * cnt[k]
            remaining -= cnt[k]


@njit(inline="always", **JIT_OPTIONS)
def lru_unlink(r, prev, nxt, ends):
    if prev[r] >= 0:
        nxt[prev[r]] = nxt[r]
    else:
        ends[0] = nxt[r]
    if nxt[r] >= 0:
        prev[nxt[r]] = prev[r]
    else:
        ends[1] = prev[r]
    prev[r] = -1
    nxt[r] = -1


@njit(inline="always", **JIT_OPTIONS)
def lru_append(r, prev, nxt, ends):
    prev[r] = ends[1]
    nxt[r] = -1
    if ends[1] >= 0:
        nxt[ends[1]] = r
    else:
        ends[0] = r
    ends[1] = r


@njit(inline="always", **JIT_OPTIONS)
def l2_install(r, region_bytes, capacity, resident, prev, nxt, ends, fst):
    """Make region r most recently used, evicting the oldest until it fits (fst[1]: used)."""
    if resident[r]:
        lru_unlink(r, prev, nxt, ends)
        lru_append(r, prev, nxt, ends)
        return
    size = region_bytes[r]
    if size > capacity:
        return
    while fst[1] + size > capacity:
        old = ends[0]
        lru_unlink(old, prev, nxt, ends)
        resident[old] = False
        fst[1] -= region_bytes[old]
    resident[r] = True
    fst[1] += size
    lru_append(r, prev, nxt, ends)

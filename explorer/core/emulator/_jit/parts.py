"""The jit engine's data structures, each a few array operations inlined into the loop:
a binary min-heap of (time, key) pairs in flat arrays (the event queue, and each bandwidth
class's finish tags), and L2 residency as an intrusive doubly-linked LRU list over region ids
(``lru``, one row per region). What the loop does at one place only (max-min fair rates,
taking a lane's next copy) is written there: numba reference-counts every array an inlined
helper takes, with atomic operations, which cost more than the helpers' own work."""
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


#: columns of the per-region state (int32), one row per region: its neighbours in the L2
#: LRU list (-1: none), the HBM read filling it into L2 (-1: none) and the first of the
#: reads waiting for that fill (-1: none). One array, not four: numba reference-counts every
#: array an inlined helper takes, with an atomic operation each time (at ~70 ns per install
#: with four arrays, the most expensive thing the loop did), and a copy that reads a region
#: for the first time missed the cache once per array (16-byte rows: one line). The list's
#: ends are plain numbers the helpers take and return; a region is resident when it has a
#: predecessor or heads the list (``lru_holds``).
PREV, NEXT, FILLER, WAITERS = 0, 1, 2, 3
REGION_COLUMNS = 4


@njit(inline="always", **JIT_OPTIONS)
def lru_holds(lru, r, head):
    """Whether region r is resident in L2 (in the list)."""
    return lru[r, PREV] >= 0 or head == r


@njit(inline="always", **JIT_OPTIONS)
def lru_unlink(lru, r, head, tail):
    """Take region r out of the list; returns the list's (head, tail)."""
    prev, nxt = lru[r, PREV], lru[r, NEXT]
    if prev >= 0:
        lru[prev, NEXT] = nxt
    else:
        head = nxt
    if nxt >= 0:
        lru[nxt, PREV] = prev
    else:
        tail = prev
    lru[r, PREV] = -1
    lru[r, NEXT] = -1
    return head, tail


@njit(inline="always", **JIT_OPTIONS)
def lru_append(lru, r, head, tail):
    """Put region r at the most recently used end; returns (head, tail)."""
    lru[r, PREV] = tail
    lru[r, NEXT] = -1
    if tail >= 0:
        lru[tail, NEXT] = r
    else:
        head = r
    return head, r

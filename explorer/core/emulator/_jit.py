"""The numba event loop: the same rules as reference.py, at millions of instructions/second.

Differences from the twin are only in bookkeeping, never in the rules:
* transfers of one pool with the same per-core cap form a class; max-min fairness gives
  every member of a class the same rate, so each class keeps a virtual clock (bytes each
  member has received since the class was last empty) and a min-heap of finish tags
  (virtual clock at entry + bytes). An event costs O(classes + log transfers), not O(n);
* L2 residency is an intrusive doubly-linked LRU list over region ids;
* in-flight multicast leaders and their joiners are intrusive singly-linked lists.
This is the only module that imports numba (a layering test enforces it).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .config import JIT_OPTIONS

COMPLETE, ENTER = 0, 1
SERVED_HBM, SERVED_L2, SERVED_MULTICAST = 1, 2, 3
GM_READ, GM_WRITE = 1, 2


@njit(**JIT_OPTIONS)
def _less(ta, ka, tb, kb):
    return ta < tb or (ta == tb and ka < kb)


@njit(**JIT_OPTIONS)
def _push(ht, hk, size, t, k):
    """Push (t, k) onto the binary min-heap stored in ht/hk; returns the new size."""
    i = size
    ht[i] = t
    hk[i] = k
    while i > 0:
        p = (i - 1) >> 1
        if not _less(ht[i], hk[i], ht[p], hk[p]):
            break
        ht[i], ht[p] = ht[p], ht[i]
        hk[i], hk[p] = hk[p], hk[i]
        i = p
    return size + 1


@njit(**JIT_OPTIONS)
def _pop(ht, hk, size):
    """Remove the minimum (kept in ht[0]/hk[0] by the caller before); returns new size."""
    size -= 1
    ht[0] = ht[size]
    hk[0] = hk[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        c = left
        if left + 1 < size and _less(ht[left + 1], hk[left + 1], ht[left], hk[left]):
            c = left + 1
        if not _less(ht[c], hk[c], ht[i], hk[i]):
            break
        ht[i], ht[c] = ht[c], ht[i]
        hk[i], hk[c] = hk[c], hk[i]
        i = c
    return size


@njit(**JIT_OPTIONS)
def _water_fill(cnt, class_cap, class_pool, pool_bw, rate):
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


@njit(**JIT_OPTIONS)
def _lru_unlink(r, prev, nxt, ends):
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


@njit(**JIT_OPTIONS)
def _lru_append(r, prev, nxt, ends):
    prev[r] = ends[1]
    nxt[r] = -1
    if ends[1] >= 0:
        nxt[ends[1]] = r
    else:
        ends[0] = r
    ends[1] = r


@njit(**JIT_OPTIONS)
def _l2_install(r, region_bytes, capacity, resident, prev, nxt, ends, used):
    """Make region r most recently used, evicting the oldest regions until it fits."""
    if resident[r]:
        _lru_unlink(r, prev, nxt, ends)
        _lru_append(r, prev, nxt, ends)
        return
    size = region_bytes[r]
    if size > capacity:
        return
    while used[0] + size > capacity:
        old = ends[0]
        _lru_unlink(old, prev, nxt, ends)
        resident[old] = False
        used[0] -= region_bytes[old]
    resident[r] = True
    used[0] += size
    _lru_append(r, prev, nxt, ends)


@njit(**JIT_OPTIONS)
def _find_leader(r, c, inflight_head, inflight_next, cluster):
    j = inflight_head[r]
    while j >= 0 and cluster[j] != c:
        j = inflight_next[j]
    return j


@njit(**JIT_OPTIONS)
def _drop_leader(i, r, inflight_head, inflight_next):
    prev = -1
    j = inflight_head[r]
    while j >= 0 and j != i:
        prev = j
        j = inflight_next[j]
    if j < 0:
        return
    if prev < 0:
        inflight_head[r] = inflight_next[i]
    else:
        inflight_next[prev] = inflight_next[i]


@njit(**JIT_OPTIONS)
def _event(ev_t, ev_k, ist, t, i, kind):
    ist[0] = _push(ev_t, ev_k, ist[0], t, 2 * i + kind)


@njit(**JIT_OPTIONS)
def _issue_read(i, P, S):
    """A GM read joins a same-cluster fetch in flight, hits L2, or goes to HBM."""
    fixed_ns, region, cluster = P[4], P[9], P[11]
    served, ev_t, ev_k, ist = S[2], S[6], S[7], S[8]
    join_head, join_next, inflight_head, inflight_next, resident = S[9:14]
    lru_prev, lru_next, lru_ends, fst = S[14], S[15], S[16], S[17]
    r, c = region[i], cluster[i]
    if r >= 0 and c >= 0:
        leader = _find_leader(r, c, inflight_head, inflight_next, cluster)
        if leader >= 0:
            served[i] = SERVED_MULTICAST
            join_next[i] = join_head[leader]
            join_head[leader] = i
            return
    if r >= 0 and resident[r]:
        _lru_unlink(r, lru_prev, lru_next, lru_ends)
        _lru_append(r, lru_prev, lru_next, lru_ends)
        served[i] = SERVED_L2
    else:
        served[i] = SERVED_HBM
    if r >= 0 and c >= 0:
        inflight_next[i] = inflight_head[r]
        inflight_head[r] = i
    _event(ev_t, ev_k, ist, fst[0] + fixed_ns[i], i, ENTER)


@njit(**JIT_OPTIONS)
def _try_start(lane, P, S):
    """Start the head of ``lane`` if the lane is idle and its dependencies have ended."""
    lane_ptr, fixed_ns, gm, barrier, bar_ptr, bar_members, sync_ns = (
        P[1], P[4], P[5], P[12], P[13], P[14], P[15])
    start, deps_left, head, busy, ev_t, ev_k, ist, arrived, fst = (
        S[0], S[3], S[4], S[5], S[6], S[7], S[8], S[18], S[17])
    i = head[lane]
    if busy[lane] or i >= lane_ptr[lane + 1] or deps_left[i] > 0:
        return
    busy[lane] = True
    now = fst[0]
    start[i] = now
    g = barrier[i]
    if g >= 0:
        arrived[g] += 1
        if arrived[g] == bar_ptr[g + 1] - bar_ptr[g]:
            for m in bar_members[bar_ptr[g]:bar_ptr[g + 1]]:
                _event(ev_t, ev_k, ist, now + sync_ns, m, COMPLETE)
    elif gm[i] == GM_READ:
        _issue_read(i, P, S)
    elif gm[i] == GM_WRITE:
        S[2][i] = SERVED_HBM
        _event(ev_t, ev_k, ist, now + fixed_ns[i], i, ENTER)
    else:
        _event(ev_t, ev_k, ist, now + fixed_ns[i], i, COMPLETE)


@njit(**JIT_OPTIONS)
def _finish_transfer(i, P, S):
    """Release multicast joiners and make the region resident in L2 (LRU)."""
    fixed_ns, region, region_bytes, cluster, l2_capacity = P[4], P[9], P[10], P[11], P[16]
    start, served, ev_t, ev_k, ist = S[0], S[2], S[6], S[7], S[8]
    join_head, join_next, inflight_head, inflight_next, resident = S[9:14]
    lru_prev, lru_next, lru_ends, fst = S[14], S[15], S[16], S[17]
    r = region[i]
    if r >= 0 and cluster[i] >= 0:
        _drop_leader(i, r, inflight_head, inflight_next)
    j = join_head[i]
    while j >= 0:
        _event(ev_t, ev_k, ist, max(fst[0], start[j] + fixed_ns[j]), j, COMPLETE)
        j = join_next[j]
    if r >= 0 and served[i] != SERVED_L2:
        _l2_install(r, region_bytes, l2_capacity, resident, lru_prev, lru_next, lru_ends,
                    fst[1:2])


@njit(**JIT_OPTIONS)
def _complete(i, P, S):
    lane, succ_ptr, succ_idx, gm = P[0], P[2], P[3], P[5]
    end, served, deps_left, head, busy, fst = S[1], S[2], S[3], S[4], S[5], S[17]
    end[i] = fst[0]
    if gm[i] != 0 and served[i] != SERVED_MULTICAST:
        _finish_transfer(i, P, S)
    ln = lane[i]
    busy[ln] = False
    head[ln] += 1
    _try_start(ln, P, S)
    for s in succ_idx[succ_ptr[i]:succ_ptr[i + 1]]:
        deps_left[s] -= 1
        if deps_left[s] == 0:
            _try_start(lane[s], P, S)


@njit(**JIT_OPTIONS)
def _enter_flow(i, P, S, F, tol):
    """After its fixed latency, a transfer's bytes join its bandwidth class."""
    nbytes, cls_hbm, cls_l2 = P[6], P[7], P[8]
    served, ev_t, ev_k, ist, fst = S[2], S[6], S[7], S[8], S[17]
    v, cnt, tags, ids, hsize = F[0], F[1], F[3], F[4], F[5]
    if nbytes[i] <= tol:
        _event(ev_t, ev_k, ist, fst[0], i, COMPLETE)
        return
    k = cls_l2[i] if served[i] == SERVED_L2 else cls_hbm[i]
    hsize[k] = _push(tags[k], ids[k], hsize[k], v[k] + nbytes[i], i)
    cnt[k] += 1


@njit(**JIT_OPTIONS)
def _next_flow_time(F, now):
    v, cnt, rate, tags = F[0], F[1], F[2], F[3]
    best = np.inf
    for k in range(len(cnt)):
        if cnt[k] > 0:
            best = min(best, now + (tags[k][0] - v[k]) / rate[k])
    return best


@njit(**JIT_OPTIONS)
def _advance(t, S, F, class_pool, seg, nseg, tol):
    """Move time to t: every class's virtual clock runs at its rate; finished flows end."""
    ev_t, ev_k, ist, fst = S[6], S[7], S[8], S[17]
    v, cnt, rate, tags, ids, hsize = F[0], F[1], F[2], F[3], F[4], F[5]
    dt = t - fst[0]
    if dt > 0:
        bw = np.zeros(2)
        for k in range(len(cnt)):
            bw[class_pool[k]] += rate[k] * cnt[k]
            v[k] += rate[k] * dt
        if nseg > 0 and seg[nseg - 1, 1] == fst[0] and seg[nseg - 1, 2] == bw[0] \
                and seg[nseg - 1, 3] == bw[1]:
            seg[nseg - 1, 1] = t
        else:
            seg[nseg, 0], seg[nseg, 1], seg[nseg, 2], seg[nseg, 3] = fst[0], t, bw[0], bw[1]
            nseg += 1
        fst[0] = t
    for k in range(len(cnt)):
        while cnt[k] > 0 and tags[k][0] - v[k] <= tol:
            _event(ev_t, ev_k, ist, fst[0], ids[k][0], COMPLETE)
            hsize[k] = _pop(tags[k], ids[k], hsize[k])
            cnt[k] -= 1
        if cnt[k] == 0:
            v[k] = 0.0
    return nseg


@njit(**JIT_OPTIONS)
def run_events(P, S, F, seg, eps_ns, tol):
    """The event loop. Returns the number of bandwidth segments written to ``seg``."""
    lane_ptr = P[1]
    ev_t, ev_k, ist, fst = S[6], S[7], S[8], S[17]
    rate, class_cap, class_pool, pool_bw = F[2], F[6], F[7], F[8]
    for lane in range(len(lane_ptr) - 1):
        _try_start(lane, P, S)
    nseg = 0
    while True:
        _water_fill(F[1], class_cap, class_pool, pool_bw, rate)
        t_event = ev_t[0] if ist[0] > 0 else np.inf
        t_flow = _next_flow_time(F, fst[0])
        if t_event == np.inf and t_flow == np.inf:
            break
        if t_flow < t_event - eps_ns:
            nseg = _advance(t_flow, S, F, class_pool, seg, nseg, tol)
            continue
        nseg = _advance(t_event, S, F, class_pool, seg, nseg, tol)
        key = ev_k[0]
        ist[0] = _pop(ev_t, ev_k, ist[0])
        if key & 1:
            _enter_flow(key >> 1, P, S, F, tol)
        else:
            _complete(key >> 1, P, S)
    return nseg

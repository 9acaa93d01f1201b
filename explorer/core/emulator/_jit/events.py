"""The numba event loop: the same rules as reference.py, at millions of instructions/second.

Differences from the twin are only in bookkeeping, never in the rules:
* an event key is rank, instruction and kind in one integer (``_key``), so the heap breaks
  ties as the twin's tuples do (by rank, then kind) and an event names its instruction
  without a lookup; a lane is walked through ``lane_next``, not a counter (internal ids
  are a memory layout, see ``graph.interleave``);
* transfers of one pool with the same per-core cap form a class; max-min fairness gives
  every member of a class the same rate, so each class keeps a virtual clock (bytes each
  member has received since the class was last empty) and a min-heap of finish tags
  (virtual clock at entry + bytes). An event costs O(classes + log transfers), not O(n);
* L2 residency is an intrusive doubly-linked LRU list over region ids;
* in-flight multicast leaders and their joiners, and each lane's copies waiting to stream,
  are intrusive singly-linked lists.
* a copy waits in its lane's list from its issue until it streams; its entry (the end of
  its latency) is an event only when its lane would be idle then, and the transfers found
  done at one moment complete from a sorted buffer merged with the heap in (time, key)
  order: fewer heap operations, the same order of events.
All state lives in flat arrays created once, so the hot loop allocates nothing. Numba may
reference-count, with atomic operations, every array an inlined helper takes (its pruning
misses some branchy helpers): the helpers left are the heap's and the LRU list's (checked in
the compiled code: no counting left in the loop), and what the loop does at one place only
is written there (perf found 38% of the loop's time in NRT_incref/decref before).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..config import JIT_OPTIONS
from ..cost import GM_WRITE, POOL_HBM, POOL_L2
from ..lowering import COMPLETE, ENTER, ISSUED
from ..schedule import SERVED_HBM, SERVED_L2, SERVED_MULTICAST
from .parts import (
    FILLER,
    REGION_COLUMNS,
    WAITERS,
    heap_pop,
    heap_push,
    less,
    lru_append,
    lru_holds,
    lru_unlink,
)
from .prefetch import prefetch
from .progress import load_acquire, publish

PENDING, FILL_WAIT = 1, 3  # where a copy waits to stream
ID_BITS = 30  # bits of an internal id in an event key
MAX_INSTRUCTIONS = (1 << ID_BITS) - 1  # what the keys can name (far above any budget)


@njit(inline="always", **JIT_OPTIONS)
def _key(rank, i, kind):
    """The event key of instruction ``i`` (of rank ``rank``): ordered by rank, then kind."""
    return (np.int64(rank) << (ID_BITS + 2)) | (np.int64(i) << 2) | kind


@njit(inline="always", **JIT_OPTIONS)
def _sync(t, t_v, n_flowing, rate, vclock, seg, nseg, hbm, l2):
    """Advance the classes' virtual clocks from t_v to t at their current rates and record
    the bandwidth segment [t_v, t] (merged into the last one when the rates are equal);
    returns the number of segments."""
    if t <= t_v:
        return nseg
    for k in range(n_flowing):
        vclock[k] += rate[k] * (t - t_v)
    if nseg > 0 and seg[nseg - 1, 1] == t_v and seg[nseg - 1, 2] == hbm \
            and seg[nseg - 1, 3] == l2:
        seg[nseg - 1, 1] = t
    else:
        seg[nseg, 0] = t_v
        seg[nseg, 1] = t
        seg[nseg, 2] = hbm
        seg[nseg, 3] = l2
        nseg += 1
    return nseg


@njit(**JIT_OPTIONS)
def run_events(inp, deps_left, state, seg, eps_ns, tol, done, block_bits):
    """The event loop; fills ``state`` (``_jit.state``) and ``seg`` and returns the number
    of segments. It counts in ``done`` the instructions complete in each block of
    2^block_bits ids (``progress``), for another thread to map blocks back while it runs.
    It reads an instruction's gathered fields only below ``inp.ready[0]``, which another
    thread may still be raising (it waits there; a negative value: that thread failed, and
    it returns -1).

    One loop iteration: start every lane queued in ``todo`` that can start, then take the
    next moment something happens (a queued event, or a transfer's last byte) and process
    one event. The bandwidth classes are advanced only when something reads or changes
    them (a transfer starts or finishes), not at every event. Written as one function so that
    arrays are never passed to helpers in the hot path (numba would reference-count them).
    """
    lane, lane_next, succ_ptr, succ_idx = inp.lane, inp.lane_next, inp.succ_ptr, inp.succ_idx
    rank = inp.rank
    issue_ns, route, route_depth = inp.issue_ns, inp.route, inp.route_depth
    route_latency, route_gm, route_class = inp.route_latency_ns, inp.route_gm, inp.route_class
    nbytes, region = inp.nbytes, inp.region
    region_bytes, cluster, barrier = inp.region_bytes, inp.cluster, inp.barrier
    bar_ptr, bar_members, sync_ns = inp.bar_ptr, inp.bar_members, inp.sync_ns
    l2_capacity, class_cap, class_pool = inp.l2_capacity, inp.class_cap, inp.class_pool
    pool_bw = inp.pool_bw
    start, end, served, link, pend = state.start, state.end, state.served, state.link, \
        state.pend
    join_head, join_next, inflight_next = state.join_head, state.join_next, \
        state.inflight_next
    ready_at = inp.ready
    ready = load_acquire(ready_at, 0)  # ids below are gathered
    n, n_lanes, n_cls, n_reg = len(lane), len(inp.lane_first), len(class_cap), len(region_bytes)
    cap = n_lanes + 1  # flows at once: one per lane
    max_depth = np.max(route_depth)
    ev_cap = n_lanes * (max_depth + 1) + 1  # in flight + ISSUED
    head = inp.lane_first.copy()
    holding = np.zeros(n_lanes, np.bool_)  # a compute instruction holds the lane
    slot_free = np.zeros(n_lanes)  # when the lane's last copy ends its issue
    slot_owner = np.zeros(n_lanes, np.int64)  # its key (kind 0)
    wake_queued = np.zeros(n_lanes, np.bool_)
    in_flight = np.zeros(n_lanes, np.int64)
    streaming = np.full(n_lanes, -1, np.int64)
    wait_head, wait_tail = np.full(n_lanes, -1, np.int64), np.full(n_lanes, -1, np.int64)
    # link: the next pointers of the lists an instruction can be in, one list at a time:
    # its lane's copies issued and waiting to stream (in order of entry), or the reads
    # waiting for their region's L2 fill; a copy's moment of entry (its latency over) is
    # kept in its end until it completes (an array of n fewer), and pend says where it
    # waits: PENDING in its lane's list, FILL_WAIT for its region's fill, 0 otherwise
    # (streaming, done or not a copy)
    enter_t = end
    ev_t, ev_k = np.zeros(ev_cap), np.zeros(ev_cap, np.int64)
    n_ev = 0
    now = 0.0
    # multicast lists only when clustered
    inflight_head = np.full(n_reg if len(join_head) else 0, -1, np.int32)
    # per region (parts.PREV, NEXT, FILLER, WAITERS): L2's LRU list, the HBM read filling
    # it into L2, the reads waiting for that fill
    lru = np.full((n_reg, REGION_COLUMNS), -1, np.int32)
    lru_head, lru_tail, l2_used = -1, -1, 0.0  # bytes in use: whole numbers, sums exact
    arrived = np.zeros(len(bar_ptr) - 1, np.int64)
    vclock, cnt, rate = np.zeros(n_cls), np.zeros(n_cls, np.int64), np.zeros(n_cls)
    in_pool = np.zeros(2, np.int64)  # transfers flowing from HBM and from L2
    # each class's finish tags (virtual clock at entry + bytes, with the COMPLETE key): in
    # a queue while they come in ascending order, as copies of one size entering one after
    # the other do (then taking the first costs one step, not a heap's log), in a min-heap
    # when one does not; the next to finish is the least of the two fronts
    ctag, cidx = np.zeros(n_cls * cap), np.zeros(n_cls * cap, np.int64)
    qtag, qidx = np.zeros(n_cls * cap), np.zeros(n_cls * cap, np.int64)
    hsz, qhead = np.zeros(n_cls, np.int64), np.zeros(n_cls, np.int64)  # heap size, queue
    qlen = np.zeros(n_cls, np.int64)  # front and length (a ring of cap entries per class)
    fin = np.zeros(n_cls * cap, np.int64)  # COMPLETE keys of transfers done at ``now``, ascending
    fin_p, fin_n = 0, 0  # fin[fin_p:fin_n] are still to be completed
    most_succ = 0  # (np.diff would allocate an array of n)
    for i in range(n):
        most_succ = max(most_succ, succ_ptr[i + 1] - succ_ptr[i])
    # FIFO of lanes to try: every lane, plus a retry after each copy a lane issues
    todo = np.zeros(n_lanes * (max_depth + 2) + most_succ + 1, dtype=np.int64)
    todo[:n_lanes] = np.arange(n_lanes)
    n_todo = n_lanes
    nseg = 0
    dirty = False
    n_flowing_classes = 0  # classes below this index may have members
    # virtual clocks are valid at t_v; rates, their totals and the next finish (t_flow;
    # t_check: within tol bytes of it) change only when the flowing set does
    t_v, hbm, l2, t_flow, t_check = 0.0, 0.0, 0.0, np.inf, np.inf
    stream_lane = -1  # a lane whose first waiting copy streams now (set by ENTER, COMPLETE)
    while True:
        if stream_lane >= 0:  # -- it leaves the list and its bytes flow in its class,
            i = wait_head[stream_lane]  # whose clock is advanced to now before it joins
            wait_head[stream_lane] = link[i]
            link[i] = -1
            if wait_head[stream_lane] < 0:
                wait_tail[stream_lane] = -1
            pend[i] = 0
            streaming[stream_lane] = i
            stream_lane = -1
            nseg = _sync(now, t_v, n_flowing_classes, rate, vclock, seg, nseg, hbm, l2)
            t_v = now
            k = route_class[route[i] + 1, POOL_L2 if served[i] == SERVED_L2 else POOL_HBM,
                            lane[i]]
            tag, key = vclock[k] + nbytes[i], _key(rank[i], i, COMPLETE)
            slot = qhead[k] + qlen[k]  # the ring's next slot (no %: a division)
            if slot >= cap:
                slot -= cap
            last = slot - 1 if slot > 0 else cap - 1
            if qlen[k] == 0 or less(qtag[k * cap + last], qidx[k * cap + last], tag, key):
                qtag[k * cap + slot], qidx[k * cap + slot] = tag, key
                qlen[k] += 1
            else:
                hsz[k] = heap_push(ctag, cidx, k * cap, hsz[k], tag, key)
            cnt[k] += 1
            in_pool[class_pool[k]] += 1
            dirty = True
            n_flowing_classes = max(n_flowing_classes, k + 1)
        q = 0
        while q < n_todo:  # -- try to start the head of each queued lane, in order
            ln = todo[q]
            q += 1
            i = head[ln]
            if i < 0 or holding[ln] or deps_left[i] > 0:
                continue
            if i >= ready:  # not gathered yet: the side thread is at it (run's lowering)
                ready = load_acquire(ready_at, 0)
                while 0 <= ready <= i:
                    ready = load_acquire(ready_at, 0)
                if ready < 0:
                    return -1
            if in_flight[ln] >= route_depth[route[i] + 1]:
                continue
            if now < slot_free[ln]:  # ready, but the last copy is still issuing: wake up
                if not wake_queued[ln]:
                    wake_queued[ln] = True
                    n_ev = heap_push(ev_t, ev_k, 0, n_ev, slot_free[ln],
                                     slot_owner[ln] + ISSUED)
                continue
            head[ln] = lane_next[i]
            nxt = head[ln]
            if nxt >= 0:  # its lines, read when it comes to start (and complete)
                prefetch(deps_left, nxt)
                prefetch(route, nxt)
                prefetch(rank, nxt)
                prefetch(issue_ns, nxt)
                prefetch(lane_next, nxt)
                prefetch(barrier, nxt)
                prefetch(start, nxt)
                prefetch(nbytes, nxt)
                prefetch(region, nxt)
                prefetch(succ_ptr, nxt)
                if nxt == i + 1 and nxt < ready:  # its region's row: region[nxt] shares
                    # i's line (a run)
                    r = region[nxt]
                    if r >= 0:
                        prefetch(lru, r)
            prefetch(succ_idx, succ_ptr[i])  # read when it completes (succ_ptr[i]: fetched)
            in_flight[ln] += 1
            start[i] = now
            if route[i] < 0:
                holding[ln] = True
            g = barrier[i]
            if g >= 0:  # SyncAll: the last arrival releases every participant
                arrived[g] += 1
                if arrived[g] == bar_ptr[g + 1] - bar_ptr[g]:
                    for m in range(bar_ptr[g], bar_ptr[g + 1]):
                        n_ev = heap_push(ev_t, ev_k, 0, n_ev, now + sync_ns,
                                         _key(rank[bar_members[m]], bar_members[m],
                                              COMPLETE))
                continue
            if route[i] < 0:
                n_ev = heap_push(ev_t, ev_k, 0, n_ev, now + issue_ns[i],
                                 _key(rank[i], i, COMPLETE))
                continue
            slot_free[ln] = now + issue_ns[i]
            slot_owner[ln] = _key(rank[i], i, 0)
            nxt = head[ln]  # the next copy may issue when this one's issue ends (tried
            # again at once if it is not gathered yet: a try that cannot start does nothing)
            if nxt >= 0 and deps_left[nxt] == 0 and (
                    nxt >= ready or in_flight[ln] < route_depth[route[nxt] + 1]):
                todo[n_todo] = ln
                n_todo += 1
            r = region[i]
            if r >= 0:  # read when it completes
                prefetch(region_bytes, r)
            if route_gm[route[i] + 1] == GM_WRITE:  # write-back L2: a resident region takes it
                if r >= 0 and lru_holds(lru, r, lru_head):
                    lru_head, lru_tail = lru_unlink(lru, r, lru_head, lru_tail)
                    lru_head, lru_tail = lru_append(lru, r, lru_head, lru_tail)
                    served[i] = SERVED_L2
                else:
                    served[i] = SERVED_HBM
            else:
                c = cluster[i]
                if r >= 0 and c >= 0:
                    j = inflight_head[r]
                    while j >= 0 and cluster[j] != c:
                        j = inflight_next[j]
                    if j >= 0:  # join the leader's fetch; no event until it completes
                        served[i] = SERVED_MULTICAST
                        join_next[i] = join_head[j]
                        join_head[j] = i
                        continue
                    inflight_next[i] = inflight_head[r]
                    inflight_head[r] = i
                if r >= 0 and lru_holds(lru, r, lru_head):
                    lru_head, lru_tail = lru_unlink(lru, r, lru_head, lru_tail)
                    lru_head, lru_tail = lru_append(lru, r, lru_head, lru_tail)
                    served[i] = SERVED_L2
                elif r >= 0 and lru[r, FILLER] >= 0:  # wait for the fill in flight, then L2
                    served[i] = SERVED_L2
                    pend[i] = FILL_WAIT
                    link[i] = lru[r, WAITERS]
                    lru[r, WAITERS] = i
                    continue
                else:
                    served[i] = SERVED_HBM
                    if r >= 0:
                        lru[r, FILLER] = i
            te = now + issue_ns[i] + route_latency[route[i] + 1, ln]
            if nbytes[i] <= tol:  # nothing to stream: done when its latency is over
                n_ev = heap_push(ev_t, ev_k, 0, n_ev, te, _key(rank[i], i, COMPLETE))
                continue
            # in the lane's list until it streams; its entry is an event (a wake-up) only
            # when the lane will be idle then: behind a streaming copy it just waits its turn
            enter_t[i] = te
            pend[i] = PENDING
            if wait_tail[ln] >= 0:
                link[wait_tail[ln]] = i
            else:
                wait_head[ln] = i
                if streaming[ln] < 0:
                    n_ev = heap_push(ev_t, ev_k, 0, n_ev, te, _key(rank[i], i, ENTER))
            wait_tail[ln] = i
        n_todo = 0
        if dirty:  # the set of flowing transfers changed: share the bandwidth again, by
            dirty = False  # max-min fair rates (classes sorted by (pool, cap): one pass)
            hbm_left, hbm_flows, l2_left, l2_flows = pool_bw[0], in_pool[0], pool_bw[1], \
                in_pool[1]
            hbm, l2, t_flow, t_check = 0.0, 0.0, np.inf, np.inf
            for k in range(n_flowing_classes):  # (no class above has ever had a member)
                if cnt[k] == 0:
                    rate[k] = 0.0
                    continue
                if class_pool[k] == POOL_HBM:
                    rate[k] = min(class_cap[k], hbm_left / hbm_flows)
                    hbm_left -= rate[k] * cnt[k]
                    hbm_flows -= cnt[k]
                    hbm += rate[k] * cnt[k]
                else:
                    rate[k] = min(class_cap[k], l2_left / l2_flows)
                    l2_left -= rate[k] * cnt[k]
                    l2_flows -= cnt[k]
                    l2 += rate[k] * cnt[k]
                # rates are now fixed until the next change, so each class's next finish
                # is a fixed moment
                left = ctag[k * cap] if hsz[k] > 0 else np.inf
                if qlen[k] > 0:
                    left = min(left, qtag[k * cap + qhead[k]])
                left -= vclock[k]
                t_flow = min(t_flow, now + left / rate[k])
                t_check = min(t_check, now + (left - tol) / rate[k])
        t_event = ev_t[0] if n_ev > 0 else np.inf
        if fin_p < fin_n:  # transfers found done are due now
            t_event = now
        if t_event == np.inf and t_flow == np.inf:
            break
        t = t_flow if t_flow < t_event - eps_ns else t_event
        now = max(now, t)
        if now >= t_check:  # some transfer has at most tol bytes left: it completes
            nseg = _sync(now, t_v, n_flowing_classes, rate, vclock, seg, nseg, hbm, l2)
            t_v = now
            fin_n -= fin_p  # keep the ones still due, then add these, in id order
            for q in range(fin_n):
                fin[q] = fin[fin_p + q]
            fin_p = 0
            for k in range(n_flowing_classes):
                while cnt[k] > 0:  # the least (tag, key) of the queue's and heap's fronts
                    f = k * cap + qhead[k]
                    queued = qlen[k] > 0 and (hsz[k] == 0 or less(
                        qtag[f], qidx[f], ctag[k * cap], cidx[k * cap]))
                    tag, key = (qtag[f], qidx[f]) if queued else (ctag[k * cap], cidx[k * cap])
                    if tag - vclock[k] > tol:
                        break
                    j = fin_n
                    while j > 0 and fin[j - 1] > key:
                        fin[j] = fin[j - 1]
                        j -= 1
                    fin[j] = key
                    fin_n += 1
                    if queued:
                        qhead[k] = qhead[k] + 1 if qhead[k] + 1 < cap else 0
                        qlen[k] -= 1
                    else:
                        hsz[k] = heap_pop(ctag, cidx, k * cap, hsz[k])
                    cnt[k] -= 1
                    in_pool[class_pool[k]] -= 1
                    dirty = True
                if cnt[k] == 0:
                    vclock[k] = 0.0
        # the next event in (time, key) order: a done transfer's COMPLETE (due now) or the
        # heap's top; done transfers skip the heap, where they would sort the same way
        if fin_p < fin_n and (n_ev == 0 or ev_t[0] > now or ev_k[0] > fin[fin_p]):
            key = fin[fin_p]  # a COMPLETE
            fin_p += 1
        elif t_flow < t_event - eps_ns:
            continue
        else:
            key = ev_k[0]
            n_ev = heap_pop(ev_t, ev_k, 0, n_ev)
        i = (key >> 2) & ((1 << ID_BITS) - 1)
        kind = key & 3
        ln = lane[i]
        if kind == ISSUED:  # -- the issue slot is free again and the lane was waiting
            wake_queued[ln] = False
            todo[0] = ln
            n_todo = 1
            continue
        if kind == ENTER:  # -- a copy's latency is over (or an idle lane's head's)
            if pend[i] == FILL_WAIT:  # its region's fill landed: it joins its lane's list
                pend[i] = 0
                if nbytes[i] <= tol:
                    n_ev = heap_push(ev_t, ev_k, 0, n_ev, now, _key(rank[i], i, COMPLETE))
                    continue
                enter_t[i] = now
                pend[i] = PENDING
                prev, j = -1, wait_head[ln]  # after every copy that entered before it
                while j >= 0 and (enter_t[j] < now or (enter_t[j] == now and rank[j] < rank[i])):
                    prev, j = j, link[j]
                link[i] = j
                if prev >= 0:
                    link[prev] = i
                else:
                    wait_head[ln] = i
                if j < 0:
                    wait_tail[ln] = i
            if pend[i] != PENDING or streaming[ln] >= 0:
                continue  # a stale wake-up, or it waits behind the streaming copy
            h = wait_head[ln]  # an idle lane: its head streams if it has entered
            if enter_t[h] < now or (enter_t[h] == now and rank[h] <= rank[i]):
                stream_lane = ln
            continue
        end[i] = now  # -- COMPLETE (the last write of i's times: now published)
        publish(done, i, block_bits)
        if route[i] >= 0 and served[i] != SERVED_MULTICAST:
            r = region[i]
            if r >= 0 and cluster[i] >= 0:  # no longer a leader others can join
                prev, j = -1, inflight_head[r]
                while j >= 0 and j != i:
                    prev, j = j, inflight_next[j]
                if j >= 0 and prev < 0:
                    inflight_head[r] = inflight_next[i]
                elif j >= 0:
                    inflight_next[prev] = inflight_next[i]
                j = join_head[i]
                while j >= 0:  # joiners end with the leader, not before their own latency
                    n_ev = heap_push(ev_t, ev_k, 0, n_ev,
                                     max(now, start[j] + issue_ns[j]
                                         + route_latency[route[j] + 1, lane[j]]),
                                     _key(rank[j], j, COMPLETE))
                    j = join_next[j]
            if r >= 0 and lru[r, FILLER] == i:  # reads waiting for this fill stream from L2
                lru[r, FILLER] = -1
                j = lru[r, WAITERS]
                lru[r, WAITERS] = -1
                while j >= 0:
                    n_ev = heap_push(ev_t, ev_k, 0, n_ev,
                                     max(now, start[j] + issue_ns[j]
                                         + route_latency[route[j] + 1, lane[j]]),
                                     _key(rank[j], j, ENTER))
                    nxt = link[j]
                    link[j] = -1
                    j = nxt
            if r >= 0 and served[i] != SERVED_L2 and (
                    lru_holds(lru, r, lru_head) or region_bytes[r] <= l2_capacity):
                # its region is now the most recently used in L2, where it may have to
                # evict the least recently used (a region larger than L2 never stays)
                if lru_holds(lru, r, lru_head):
                    lru_head, lru_tail = lru_unlink(lru, r, lru_head, lru_tail)
                else:
                    while l2_used + region_bytes[r] > l2_capacity:
                        old = lru_head
                        lru_head, lru_tail = lru_unlink(lru, old, lru_head, lru_tail)
                        l2_used -= region_bytes[old]
                    l2_used += region_bytes[r]
                lru_head, lru_tail = lru_append(lru, r, lru_head, lru_tail)
                # the next to be evicted, long untouched, and after it about the regions
                # numbered next (regions are numbered by first use, so L2 fills about in
                # that order; aimed without a load, which would itself stall)
                ahead = min(lru_head + 4, n_reg - 1)
                prefetch(lru, lru_head)
                prefetch(lru, ahead)
                prefetch(region_bytes, lru_head)
                prefetch(region_bytes, ahead)
        if streaming[ln] == i:  # the lane's next copy streams once it has entered
            streaming[ln] = -1
            h = wait_head[ln]
            if h >= 0:
                if enter_t[h] < now or (enter_t[h] == now and rank[h] < rank[i]):
                    stream_lane = ln
                else:
                    n_ev = heap_push(ev_t, ev_k, 0, n_ev, enter_t[h], _key(rank[h], h, ENTER))
        if route[i] < 0:
            holding[ln] = False
        in_flight[ln] -= 1
        todo[0] = ln  # its own lane first, then each successor that became ready
        n_todo = 1
        for q in range(succ_ptr[i], succ_ptr[i + 1]):
            s = succ_idx[q]
            deps_left[s] -= 1
            if deps_left[s] == 0:
                todo[n_todo] = lane[s]
                n_todo += 1
    return _sync(now, t_v, n_flowing_classes, rate, vclock, seg, nseg, hbm, l2)

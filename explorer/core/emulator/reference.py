"""The readable twin of the engine: DESIGN.md §4's rules written as plainly as possible.

It is the executable definition the numba engine is tested against. A lane (core, pipe)
issues in program order. A compute instruction holds its lane until it completes. A GM
copy holds it only for its issue cost (a lane whose next instruction is ready while the
slot is still taken wakes up when it frees: ISSUED), is in flight for its
latency (ENTER: its bytes may flow), and streams behind the lane's earlier copies (one
flow per lane: the per-core path cap is the pipe's); at most ``max_out`` copies per lane
are in flight between issue start and arrival (COMPLETE). A read of a region whose L2
fill from HBM is in flight waits for it and is then served by L2 (L2 merges misses). A
write to a resident region stays in L2 (write-back; eviction's write-back is not modelled),
any other write goes to HBM and allocates its region.
Shared bandwidth is
recomputed from scratch at every event by max-min water-filling over all active transfers,
and each transfer tracks its own remaining bytes; the jit engine gets the same answer with
per-class virtual clocks. Too slow for big programs, which is why the jit engine exists.
"""
from __future__ import annotations

import heapq
import math
from collections import OrderedDict, defaultdict, deque

import numpy as np

from .cost import GM_WRITE, POOL_HBM, POOL_L2, by_route
from .lowering import COMPLETE, ENTER, EPS_NS, ISSUED, TOL_BYTES, EngineInput
from .schedule import SERVED_HBM, SERVED_L2, SERVED_MULTICAST, Schedule


def max_min_rates(caps: list[float], bandwidth: float) -> list[float]:
    """Max-min fair shares of ``bandwidth`` under per-transfer caps (water-filling)."""
    rates = [0.0] * len(caps)
    left, remaining = bandwidth, len(caps)
    for i in sorted(range(len(caps)), key=lambda j: caps[j]):
        rates[i] = min(caps[i], left / remaining)
        left -= rates[i]
        remaining -= 1
    return rates


class ReferenceEngine:
    """Event-driven execution of one lowered program."""

    def __init__(self, inp: EngineInput) -> None:
        self.inp = inp
        n = inp.n
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.served = np.zeros(n, np.int8)
        self.deps_left = inp.dep_count.astype(np.int64)
        # what each instruction's route makes it (the jit engine reads the route's tables)
        self.gm = by_route(inp.route_gm, inp.route)
        self.max_out = by_route(inp.route_depth, inp.route)
        self.latency_ns = by_route(inp.route_latency_ns, inp.route, inp.lane)
        self.cls_hbm = by_route(inp.route_class, inp.route, POOL_HBM, inp.lane)
        self.cls_l2 = by_route(inp.route_class, inp.route, POOL_L2, inp.lane)
        self.head = inp.lane_first.copy()  # each lane's next instruction, -1: none left
        n_lanes = len(inp.lane_first)
        self.holding = np.zeros(n_lanes, bool)  # a compute instruction holds the lane
        self.slot_free = np.zeros(n_lanes)  # when the lane's last copy ends its issue
        self.slot_owner = np.zeros(n_lanes, np.int64)  # that copy
        self.wake_queued = np.zeros(n_lanes, bool)  # an ISSUED wake-up is queued
        self.in_flight = np.zeros(n_lanes, np.int64)  # started, not yet complete
        self.streaming = np.full(n_lanes, -1)  # the lane's copy whose bytes flow, or -1
        self.waiting: list[deque] = [deque() for _ in range(n_lanes)]  # latency over
        # (time, rank, kind, id): ties go to the lower rank (lane order), then kind
        self.events: list[tuple[float, int, int, int]] = []
        self.flows: dict[int, list] = {}  # id -> [pool, cap, remaining bytes]
        self.now = 0.0
        self.lru: OrderedDict[int, float] = OrderedDict()  # resident regions, oldest first
        self.l2_used = 0.0  # bytes of resident regions (whole numbers: sums stay exact)
        self.inflight: dict[tuple[int, int], int] = {}  # (region, cluster) -> leader
        self.joiners: dict[int, list[int]] = defaultdict(list)
        self.filling: dict[int, int] = {}  # region -> the HBM read filling it into L2
        self.fill_waiters: dict[int, list[int]] = defaultdict(list)  # filler -> reads
        self.arrived: dict[int, int] = defaultdict(int)
        self.segments: list[tuple[float, float, float, float]] = []

    def run(self) -> Schedule:
        self.start_lanes(range(len(self.holding)))
        while True:
            t_event = self.events[0][0] if self.events else math.inf
            t_flow = self.next_flow_time()
            if t_event == math.inf and t_flow == math.inf:
                break
            if t_flow < t_event - EPS_NS:
                self.advance(t_flow)
                continue
            self.advance(t_event)
            _, _, kind, i = heapq.heappop(self.events)
            if kind == ENTER:
                self.enter_flow(i)
            elif kind == ISSUED:
                self.wake_queued[self.inp.lane[i]] = False
                self.start_lanes([self.inp.lane[i]])
            else:
                self.complete(i)
        return Schedule.from_internal(self.inp, self.start, self.end, self.served,
                                      self.segments)

    # -- shared bandwidth -------------------------------------------------------------
    def rates(self) -> dict[int, float]:
        out = {}
        for pool, bw in ((POOL_HBM, self.inp.pool_bw[0]), (POOL_L2, self.inp.pool_bw[1])):
            ids = [i for i, f in self.flows.items() if f[0] == pool]
            out.update(zip(ids, max_min_rates([self.flows[i][1] for i in ids], bw)))
        return out

    def next_flow_time(self) -> float:
        rates = self.rates()
        return min((self.now + f[2] / rates[i] for i, f in self.flows.items()),
                   default=math.inf)

    def advance(self, t: float) -> None:
        """Move time to ``t``: flows progress at their shares; finished ones complete."""
        rates = self.rates()
        dt = t - self.now
        if dt > 0:
            hbm = sum(r for i, r in rates.items() if self.flows[i][0] == POOL_HBM)
            l2 = sum(r for i, r in rates.items() if self.flows[i][0] == POOL_L2)
            self.record_segment(self.now, t, hbm, l2)
            for i, flow in self.flows.items():
                flow[2] -= rates[i] * dt
        self.now = max(self.now, t)
        for i in sorted((i for i, f in self.flows.items() if f[2] <= TOL_BYTES),
                        key=lambda i: self.inp.rank[i]):
            del self.flows[i]
            self.push(self.now, i, COMPLETE)

    def record_segment(self, t0, t1, hbm, l2) -> None:
        if self.segments and self.segments[-1][1] == t0 and \
                self.segments[-1][2:] == (hbm, l2):
            self.segments[-1] = (self.segments[-1][0], t1, hbm, l2)
        else:
            self.segments.append((t0, t1, hbm, l2))

    # -- instructions -----------------------------------------------------------------
    def push(self, t: float, i: int, kind: int) -> None:
        heapq.heappush(self.events, (t, self.inp.rank[i], kind, i))

    def start_lanes(self, lanes) -> None:
        """Try each lane in turn; a lane that issued a copy is tried again after the others
        (its next copy may issue when this one's issue ends)."""
        queue = deque(lanes)
        while queue:
            lane = queue.popleft()
            if self.try_start(lane):
                queue.append(lane)

    def try_start(self, lane: int) -> bool:
        """Start the lane's next instruction if it can; True when it issued a copy."""
        i = self.head[lane]
        inp = self.inp
        if i < 0 or self.holding[lane] or self.deps_left[i] > 0 or \
                self.in_flight[lane] >= self.max_out[i]:
            return False
        if self.now < self.slot_free[lane]:  # ready, but the last copy is still issuing
            if not self.wake_queued[lane]:
                self.wake_queued[lane] = True
                self.push(self.slot_free[lane], self.slot_owner[lane], ISSUED)
            return False
        self.head[lane] = inp.lane_next[i]
        self.in_flight[lane] += 1
        self.start[i] = self.now
        if self.gm[i] == 0:
            self.holding[lane] = True
        if inp.barrier[i] >= 0:
            self.arrive(inp.barrier[i])
            return False
        if self.gm[i] == 0:
            self.push(self.now + inp.issue_ns[i], i, COMPLETE)
            return False
        self.slot_free[lane] = self.now + inp.issue_ns[i]
        self.slot_owner[lane] = i
        self._issue_copy(i)
        return True

    def _issue_copy(self, i: int) -> None:
        inp = self.inp
        if self.gm[i] == GM_WRITE:
            self.issue_write(i)
        elif self.issue_read(i):
            return  # a multicast joiner: no flow of its own
        self.push(self.now + inp.issue_ns[i] + self.latency_ns[i], i, ENTER)

    def arrive(self, group: int) -> None:
        """SyncAll: when the last participant arrives, all are released together."""
        self.arrived[group] += 1
        lo, hi = self.inp.bar_ptr[group], self.inp.bar_ptr[group + 1]
        if self.arrived[group] == hi - lo:
            for m in self.inp.bar_members[lo:hi]:
                self.push(self.now + self.inp.sync_ns, m, COMPLETE)

    def issue_write(self, i: int) -> None:
        """A GM write to a region resident in L2 stays there (L2 is write-back: its dirty
        lines reach HBM only on eviction, which is not modelled); any other write goes to
        HBM and makes its region resident (write-allocate)."""
        region = self.inp.region[i]
        if region >= 0 and region in self.lru:
            self.lru.move_to_end(region)
            self.served[i] = SERVED_L2
        else:
            self.served[i] = SERVED_HBM

    def issue_read(self, i: int) -> bool:
        """A GM read joins a same-cluster fetch in flight, hits L2, waits for the L2 fill of
        its region already coming from HBM (L2 merges misses: served by L2 once the fill
        lands), or goes to HBM and fills it. True when it must not enter a flow yet."""
        region, cluster = self.inp.region[i], self.inp.cluster[i]
        leader = self.inflight.get((region, cluster)) if region >= 0 and cluster >= 0 else None
        if leader is not None:
            self.served[i] = SERVED_MULTICAST
            self.joiners[leader].append(i)
            return True
        deferred = False
        if region >= 0 and region in self.lru:
            self.lru.move_to_end(region)
            self.served[i] = SERVED_L2
        elif region >= 0 and region in self.filling:
            self.served[i] = SERVED_L2
            self.fill_waiters[self.filling[region]].append(i)
            deferred = True
        else:
            self.served[i] = SERVED_HBM
            if region >= 0:
                self.filling[region] = i
        if region >= 0 and cluster >= 0:
            self.inflight[(region, cluster)] = i
        return deferred

    def enter_flow(self, i: int) -> None:
        """The latency is over: stream now, or behind the lane's copy that is streaming."""
        lane = self.inp.lane[i]
        if self.inp.nbytes[i] <= TOL_BYTES:
            self.push(self.now, i, COMPLETE)
        elif self.streaming[lane] >= 0:
            self.waiting[lane].append(i)
        else:
            self.stream(i)

    def stream(self, i: int) -> None:
        l2 = self.served[i] == SERVED_L2
        cap = self.inp.class_cap[self.cls_l2[i] if l2 else self.cls_hbm[i]]
        self.streaming[self.inp.lane[i]] = i
        self.flows[i] = [POOL_L2 if l2 else POOL_HBM, cap, self.inp.nbytes[i]]

    def complete(self, i: int) -> None:
        inp = self.inp
        self.end[i] = self.now
        lane = inp.lane[i]
        if self.gm[i] and self.served[i] != SERVED_MULTICAST:
            self.finish_transfer(i)
        if self.streaming[lane] == i:
            self.streaming[lane] = -1
            if self.waiting[lane]:
                self.stream(self.waiting[lane].popleft())
        if self.gm[i] == 0:
            self.holding[lane] = False
        self.in_flight[lane] -= 1
        ready = [lane]  # its own lane first, then each successor that became ready
        for s in inp.succ_idx[inp.succ_ptr[i]:inp.succ_ptr[i + 1]]:
            self.deps_left[s] -= 1
            if self.deps_left[s] == 0:
                ready.append(inp.lane[s])
        self.start_lanes(ready)

    def finish_transfer(self, i: int) -> None:
        """Release multicast joiners and reads waiting for this fill; make the region
        resident in L2 (LRU)."""
        inp = self.inp
        region, cluster = inp.region[i], inp.cluster[i]
        if self.inflight.get((region, cluster)) == i:
            del self.inflight[(region, cluster)]
        for j in self.joiners.pop(i, []):
            t = max(self.now, self.start[j] + inp.issue_ns[j] + self.latency_ns[j])
            self.push(t, j, COMPLETE)
        if self.filling.get(region) == i:
            del self.filling[region]
        for j in self.fill_waiters.pop(i, []):  # their bytes now stream from L2
            t = max(self.now, self.start[j] + inp.issue_ns[j] + self.latency_ns[j])
            self.push(t, j, ENTER)
        if region < 0 or self.served[i] == SERVED_L2:
            return
        size = inp.region_bytes[region]
        if region in self.lru:
            self.lru.move_to_end(region)
        elif size <= inp.l2_capacity:
            while self.l2_used + size > inp.l2_capacity:
                self.l2_used -= self.lru.popitem(last=False)[1]
            self.lru[region] = size
            self.l2_used += size


def run_reference(inp: EngineInput) -> Schedule:
    """Execute with the readable twin."""
    return ReferenceEngine(inp).run()

"""Lowering a program's lanes and dependency graph to internal ids, in linear passes.

Internal ids are a memory layout, not an order of execution: the event loop walks each
lane through ``lane_next`` and breaks ties by ``rank`` (the position in lane order), so the
ids are free to interleave the lanes by how far through its lane each instruction is. The
instructions that run at about the same moment then sit close together in every array, and
the loop's accesses stream through memory instead of jumping between hundreds of lanes
(at 10^7 instructions, 374 -> ~280 ns per instruction in the loop).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..config import JIT_OPTIONS

#: instructions of a lane kept side by side by ``interleave``: runs long enough for the
#: hardware to prefetch, short enough that one round over every lane stays in cache (32
#: against 16: `run` 1.034x and 1.036x at 10^6, 1.005x and 1.013x at 10^7, side by side;
#: 64: 1.039x and 0.990x)
RUN = 32


@njit(**JIT_OPTIONS)
def lane_sorted(core, pipe, seq, n_pipes, n_lanes):
    """Program ids in lane order (core, pipe, seq, id), int32, and each lane's first rank
    (``lane_ptr``, n_lanes + 1). A counting sort by lane (stable: ids ascend), then each
    lane sorted by seq, stably. A kernel emits a lane's instructions in a few ascending runs
    (one per stage it emits as a block), so a lane is sorted by merging its runs pairwise (a
    natural merge sort): at 10^7 instructions ~9 ns each, against ~15 for numpy's argsort
    of an int64 key, which also needs the key and the index in int64 (24 bytes more).
    A core or pipe outside the lanes stops it before anything is written: it returns no
    ids and that instruction's index as ``lane_ptr``'s only entry."""
    n = len(core)
    lane_ptr = np.zeros(n_lanes + 1, np.int64)
    for p in range(n):
        ln = core[p] * n_pipes + pipe[p]
        if core[p] < 0 or pipe[p] < 0 or pipe[p] >= n_pipes or ln >= n_lanes:
            return np.empty(0, np.int32), np.full(1, p, np.int64)
        lane_ptr[ln + 1] += 1
    for ln in range(n_lanes):
        lane_ptr[ln + 1] += lane_ptr[ln]
    fill = lane_ptr[:-1].copy()
    out = np.empty(n, np.int32)
    for p in range(n):
        ln = core[p] * n_pipes + pipe[p]
        out[fill[ln]] = p
        fill[ln] += 1
    widest = 0
    for ln in range(n_lanes):
        widest = max(widest, lane_ptr[ln + 1] - lane_ptr[ln])
    spare = np.empty(widest, np.int32)
    bounds = np.empty(widest + 1, np.int64)
    for ln in range(n_lanes):
        lo, hi = lane_ptr[ln], lane_ptr[ln + 1]
        runs = 0  # bounds[:runs + 1]: the starts of the lane's ascending runs, then its end
        for r in range(lo, hi):
            if r == lo or seq[out[r]] < seq[out[r - 1]]:
                bounds[runs] = r
                runs += 1
        bounds[runs] = hi
        src, dst = out, spare  # spare is indexed from lo's position 0
        base_src, base_dst, in_spare = 0, lo, False
        while runs > 1:
            merged = 0
            for k in range(0, runs, 2):
                a, m = bounds[k], bounds[k + 1]
                z = bounds[k + 2] if k + 2 <= runs else m
                x, y, w = a, m, a
                while x < m and y < z:  # equal seqs: the left run's lower ids first
                    if seq[src[y - base_src]] < seq[src[x - base_src]]:
                        dst[w - base_dst] = src[y - base_src]
                        y += 1
                    else:
                        dst[w - base_dst] = src[x - base_src]
                        x += 1
                    w += 1
                while x < m:
                    dst[w - base_dst] = src[x - base_src]
                    x += 1
                    w += 1
                while y < z:
                    dst[w - base_dst] = src[y - base_src]
                    y += 1
                    w += 1
                bounds[merged] = a
                merged += 1
            bounds[merged] = hi
            runs = merged
            src, dst = dst, src
            base_src, base_dst, in_spare = base_dst, base_src, not in_spare
        if in_spare:  # the sorted lane ended in spare: copy it back
            for r in range(lo, hi):
                out[r] = spare[r - lo]
    return out, lane_ptr


@njit(**JIT_OPTIONS)
def interleave(lane_ptr, ranked):
    """Internal id of each rank (lane order: lane l holds ranks lane_ptr[l]..lane_ptr[l+1]-1):
    runs of ``RUN`` ranks of a lane, ordered by the share of the lane done before the run,
    then lane; a counting sort. ``ranked[r]``: the program id of rank r. Returns, per
    internal id, its program id, its rank and the next internal id of its lane (-1 at the
    lane's end), per lane its first id (-1), and per program id its internal id."""
    n_lanes = len(lane_ptr) - 1
    n = lane_ptr[n_lanes]
    runs = 0
    for ln in range(n_lanes):
        runs += (lane_ptr[ln + 1] - lane_ptr[ln] + RUN - 1) // RUN
    active = 0
    for ln in range(n_lanes):
        if lane_ptr[ln + 1] > lane_ptr[ln]:
            active += 1
    steps = max(1, runs // max(active, 1))
    fill = np.zeros(steps + 1, np.int64)  # each block's size, then its next free id
    for ln in range(n_lanes):
        size = lane_ptr[ln + 1] - lane_ptr[ln]
        n_runs = (size + RUN - 1) // RUN
        for j in range(n_runs):  # (a division per run, not per instruction)
            fill[j * steps // n_runs + 1] += min(RUN, size - j * RUN)
    for b in range(steps):
        fill[b + 1] += fill[b]
    order, rank = np.empty(n, np.int32), np.empty(n, np.int32)
    lane_next, inverse = np.empty(n, np.int32), np.empty(n, np.int32)
    lane_first = np.full(n_lanes, -1, np.int32)
    for ln in range(n_lanes):  # each run's ids are consecutive: written as one stretch
        size = lane_ptr[ln + 1] - lane_ptr[ln]
        n_runs = (size + RUN - 1) // RUN
        last = -1  # the lane's id before this run
        for j in range(n_runs):
            b = j * steps // n_runs
            length = min(RUN, size - j * RUN)
            first = fill[b]
            fill[b] += length
            if last >= 0:
                lane_next[last] = first
            else:
                lane_first[ln] = first
            r0 = lane_ptr[ln] + j * RUN
            for k in range(length):
                i, r = first + k, r0 + k
                rank[i] = r
                order[i] = ranked[r]
                inverse[ranked[r]] = i
                lane_next[i] = i + 1
            last = first + length - 1
        if last >= 0:
            lane_next[last] = -1
    return order, rank, lane_next, lane_first, inverse


@njit(**JIT_OPTIONS)
def dependents(dep_idx, n):
    """How many instructions depend on each program id: one pass over the dependency lists,
    which needs no layout, so it runs while the lanes are still being laid out."""
    count = np.zeros(n, np.int32)
    for q in range(len(dep_idx)):
        count[dep_idx[q]] += 1
    return count


@njit(**JIT_OPTIONS)
def successors(dep_ptr, dep_idx, ranked, inverse, order, count):
    """``ranked[r]`` is the program id of rank ``r``, ``inverse`` maps a program id to its
    internal id and ``order`` back, and ``count`` is ``dependents``; returns, by internal
    id, the CSR (int32 pointers and ids) of the instructions that depend on each one, each
    list in ascending rank (the order in which the twin wakes them). The fill walks the
    ranks: a lane's instructions, and what they depend on, are close together in the
    program, so its arrays are read about in order."""
    n = len(ranked)
    succ_ptr = np.empty(n + 1, np.int32)
    succ_ptr[0] = 0
    for i in range(n):  # (succ_ptr[i + 1] starts as i's cursor: the start of its list)
        succ_ptr[i + 1] = succ_ptr[i] + count[order[i]]
    succ_idx = np.empty(succ_ptr[n], np.int32)
    for i in range(n, 0, -1):
        succ_ptr[i] = succ_ptr[i - 1]
    for r in range(n):  # ascending rank: every successor list comes out in rank order
        p = ranked[r]  # (succ_ptr[d + 1] is d's cursor meanwhile: it ends at d + 1's start)
        for q in range(dep_ptr[p], dep_ptr[p + 1]):
            d = inverse[dep_idx[q]]
            succ_idx[succ_ptr[d + 1]] = inverse[p]
            succ_ptr[d + 1] += 1
    return succ_ptr, succ_idx


@njit(**JIT_OPTIONS)
def lanes_and_dependencies(order, core, pipe, dep_ptr, n_pipes):
    """The lane and the number of dependencies of every internal id: the event loop reads
    them for instructions it has not reached yet (a successor's), so they are made in full
    before it starts, unlike ``gather``'s arrays."""
    n = len(order)
    lane, dep_count = np.empty(n, np.int16), np.empty(n, np.int32)
    for i in range(n):
        p = order[i]
        lane[i] = core[p] * n_pipes + pipe[p]
        dep_count[i] = dep_ptr[p + 1] - dep_ptr[p]
    return lane, dep_count


@njit(**JIT_OPTIONS)
def gather_arrays(n, regions):
    """Room for ``gather``'s arrays (made here, not by numpy: numpy asks for huge pages
    from 4 MB up, and on a virtual machine a process's first use of each costs ~8 ns a
    byte, measured here, against 0.36 for 4 KB pages) and for the regions' numbers and
    their bytes (0 for a region no instruction names: numbered last)."""
    out = (np.empty(n, np.int8), np.empty(n), np.empty(n, np.int32), np.empty(n, np.int32),
           np.empty(n), np.empty(n, np.int8))
    return out, np.full(regions, -1, np.int32), np.zeros(regions)


@njit(**JIT_OPTIONS)
def gather(order, lo, hi, core, nbytes, region, barrier, cluster_of_core, issue_ns, route,
           out, renumber, region_bytes, numbered_bytes, used):
    """The per-instruction arrays of the engine's input read only for the instructions the
    loop has reached, for internal ids lo..hi-1, in one pass over ``order`` (numpy would
    take a gather, and often a cast, per array), into ``out`` (cluster, nbytes, region,
    barrier, issue, route). Ranges are gathered in order, so regions are renumbered in
    order of first use (``renumber``: program region -> number, -1: none yet;
    ``numbered_bytes``: their bytes by number), and the loop's per-region state is read
    in about the order it is written, as the per-instruction arrays are; returns the count
    of numbers then used."""
    out_cluster, out_nbytes, out_region, out_barrier, out_issue, out_route = out
    for i in range(lo, hi):
        p = order[i]
        out_cluster[i] = cluster_of_core[core[p]]
        out_nbytes[i] = nbytes[p]
        r = region[p]
        if r >= 0:
            if renumber[r] < 0:
                renumber[r] = used
                numbered_bytes[used] = region_bytes[r]
                used += 1
            r = renumber[r]
        out_region[i] = r
        out_barrier[i] = barrier[p]
        out_issue[i] = issue_ns[p]
        out_route[i] = route[p]
    return used

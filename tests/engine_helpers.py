"""Shared helpers of the engine tests: the tiny test chip, the twin comparison, the
invariants of DESIGN.md §4 as checkers, and a Hypothesis strategy of random programs.

Random programs are drawn as a plain, printable *spec* (a dict of small tuples) and built
by :func:`build_program`, so a failing example reads as the program it stands for.
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

import hardware_presets
from explorer.core.emulator.cost import GM_NONE, GM_READ, Costs, compute_costs
from explorer.core.emulator.engine import run
from explorer.core.emulator.lowering import EPS_NS, TOL_BYTES
from explorer.core.emulator.schedule import SERVED_HBM, SERVED_L2, SERVED_MULTICAST, Schedule
from kernels.common.program import Kind, Level, Pipe, Program, ProgramBuilder, VClass, lane_order

TINY_CHIP = Path(__file__).resolve().parent / "data" / "tiny_chip.toml"
ENGINES = ("jit", "reference")
#: DataCopy issue cost of the presets for the tiny chip's reads: 12 cycles + 0.5 per 128 B
QUEUED = dict(gm_read_issue_cycles=12.0, gm_read_burst_cycles=0.5)
#: Twin agreement on times (the engines differ only in floating-point bookkeeping).
RTOL, ATOL = 1e-9, 1e-6


@functools.cache
def _tiny(items: tuple) -> hardware_presets.Chip:
    return hardware_presets.load_file(TINY_CHIP, **dict(items))


def tiny(**overrides) -> hardware_presets.Chip:
    """The tiny test chip (tests/data/tiny_chip.toml), optionally with overrides."""
    return _tiny(tuple(sorted(overrides.items())))


# ---- bandwidth segments ------------------------------------------------------------------
def integrals(segments: np.ndarray) -> tuple[float, float]:
    """Bytes moved by HBM and by L2: the integrals of the two rate columns over time."""
    dt = segments[:, 1] - segments[:, 0]
    return float(dt @ segments[:, 2]), float(dt @ segments[:, 3])


def cumulative(segments: np.ndarray, times: np.ndarray, col: int) -> np.ndarray:
    """Bytes moved through column ``col`` (2 HBM, 3 L2) up to each of ``times``."""
    t0, t1, rate = segments[:, 0], segments[:, 1], segments[:, col]
    covered = np.clip(times[:, None], t0[None, :], t1[None, :]) - t0[None, :]
    return covered @ rate


def merged(segments: np.ndarray) -> list[tuple[float, ...]]:
    """Segments as tuples, adjacent ones with equal rates merged (for exact comparisons)."""
    out: list[list[float]] = []
    for t0, t1, hbm, l2 in segments.tolist():
        if t1 <= t0:
            continue
        if out and out[-1][1] == t0 and out[-1][2:] == [hbm, l2]:
            out[-1][1] = t1
        else:
            out.append([t0, t1, hbm, l2])
    return [tuple(s) for s in out]


# ---- the twins -----------------------------------------------------------------------------
def assert_twins(program: Program, chip) -> tuple[Schedule, Schedule]:
    """Run both engines and assert they agree: served exactly, times within RTOL/ATOL,
    bytes moved through HBM and L2 equal (in total and as functions of time)."""
    jit = run(program, chip, engine="jit")
    ref = run(program, chip, engine="reference")
    np.testing.assert_array_equal(jit.served, ref.served, err_msg="served differs")
    np.testing.assert_allclose(jit.start_ns, ref.start_ns, rtol=RTOL, atol=ATOL,
                               err_msg="start_ns differs")
    np.testing.assert_allclose(jit.end_ns, ref.end_ns, rtol=RTOL, atol=ATOL,
                               err_msg="end_ns differs")
    np.testing.assert_allclose(integrals(jit.segments), integrals(ref.segments),
                               rtol=RTOL, atol=1e-6, err_msg="bytes moved differ")
    times = np.unique(np.concatenate([jit.segments[:, :2].ravel(),
                                      ref.segments[:, :2].ravel()]))
    for col in (2, 3):
        np.testing.assert_allclose(cumulative(jit.segments, times, col),
                                   cumulative(ref.segments, times, col), rtol=RTOL,
                                   atol=1e-3, err_msg=f"bytes over time differ (col {col})")
    return jit, ref


# ---- invariants ----------------------------------------------------------------------------
def served_bytes(program: Program, costs: Costs, schedule: Schedule) -> tuple[float, float]:
    """Bytes the HBM pool and the L2 pool must move: GM copies served by each (a write to a
    region resident in L2 stays there; multicast joiners move nothing)."""
    nbytes = program.cols["nbytes"].astype(float)
    gm = costs.gm != GM_NONE
    hbm = gm & (schedule.served == SERVED_HBM)
    l2 = gm & (schedule.served == SERVED_L2)
    return float(nbytes[hbm].sum()), float(nbytes[l2].sum())


def min_durations(program: Program, chip, costs: Costs, schedule: Schedule) -> np.ndarray:
    """A lower bound on each instruction's duration: its issue time, plus for a GM copy its
    latency and its bytes at the best rate its path allows (min of the per-core cap and
    the pool's bandwidth); a SyncAll at least the sync cost."""
    c = program.cols
    dur = costs.issue_ns + costs.latency_ns
    nbytes = c["nbytes"].astype(float)
    hbm_rate = np.minimum(costs.cap_hbm, chip.hbm_bytes_per_ns)
    l2_rate = np.minimum(costs.cap_l2, chip.l2_bytes_per_ns)
    gm = costs.gm != GM_NONE
    flows_hbm = gm & (schedule.served == SERVED_HBM)
    flows_l2 = gm & (schedule.served == SERVED_L2)
    dur[flows_hbm] += nbytes[flows_hbm] / hbm_rate[flows_hbm]
    dur[flows_l2] += nbytes[flows_l2] / l2_rate[flows_l2]
    dur[c["kind"] == Kind.BARRIER] = costs.sync_ns
    return dur


def time_tolerance(costs: Costs) -> float:
    """Slack a flow may finish early by: TOL_BYTES at the slowest per-core rate."""
    caps = np.concatenate([costs.cap_hbm[costs.cap_hbm > 0], costs.cap_l2[costs.cap_l2 > 0]])
    return 1e-6 + (TOL_BYTES / caps.min() if len(caps) else 0.0)


def critical_path(program: Program, weights: np.ndarray, issue: np.ndarray | None = None) -> float:
    """Longest path through dependencies plus lane (program) order: an instruction ends
    ``weights`` after it starts and lets the next of its lane start ``issue`` after it
    starts (default: when it ends); the members of one SyncAll are one node (they end
    together and hold their lanes until then)."""
    c = program.cols
    n = len(program)
    node = np.arange(n)
    groups = c["barrier"]
    for g in np.unique(groups[groups >= 0]):
        members = np.flatnonzero(groups == g)
        node[members] = members[0]
    issue = weights if issue is None else np.where(groups >= 0, weights, issue)
    lane_preds: list[set[int]] = [set() for _ in range(n)]
    dep_preds: list[set[int]] = [set() for _ in range(n)]
    order = lane_order(c)
    lane = c["core"][order].astype(np.int64) * 64 + c["pipe"][order]
    for a, b, same in zip(order[:-1], order[1:], lane[:-1] == lane[1:]):
        if same and node[a] != node[b]:
            lane_preds[node[b]].add(int(a))
    for i in range(n):
        for d in program.dep_idx[program.dep_ptr[i]:program.dep_ptr[i + 1]]:
            if node[d] != node[i]:
                dep_preds[node[i]].add(int(d))
    weight = np.zeros(n)
    np.maximum.at(weight, node, weights)
    begin = np.full(n, np.nan)  # earliest start of each node
    preds = [{int(node[p]) for p in lp | dp} for lp, dp in zip(lane_preds, dep_preds)]
    for v in _topological(preds, np.unique(node)):
        begin[v] = max([begin[node[p]] + weight[node[p]] for p in dep_preds[v]] +
                       [begin[node[p]] + issue[p] for p in lane_preds[v]], default=0.0)
    return float(np.nanmax(begin + weight)) if n else 0.0


def _topological(preds: list[set[int]], nodes: np.ndarray) -> list[int]:
    succs: dict[int, list[int]] = {int(v): [] for v in nodes}
    indeg = {int(v): len(preds[v]) for v in nodes}
    for v in nodes:
        for p in preds[v]:
            succs[p].append(int(v))
    ready = [v for v, d in indeg.items() if d == 0]
    out = []
    while ready:
        v = ready.pop()
        out.append(v)
        for s in succs[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready.append(s)
    assert len(out) == len(nodes), "dependencies plus lane order form a cycle"
    return out


def check_lanes(program: Program, costs: Costs, schedule: Schedule) -> None:
    """Each lane issues in program order, one issue at a time; a compute instruction holds
    its lane until it ends; no lane holds more than ``max_outstanding`` copies in flight."""
    c = program.cols
    start, end = schedule.start_ns, schedule.end_ns
    copies = costs.gm != 0
    np.testing.assert_allclose(schedule.issue_end_ns[copies],
                               start[copies] + costs.issue_ns[copies], rtol=0, atol=1e-9,
                               err_msg="a copy's issue end is not start + issue cost")
    issued = np.where(copies, schedule.issue_end_ns, end)  # compute holds its lane to the end
    order = lane_order(c)
    lanes = c["core"][order].astype(np.int64) * 64 + c["pipe"][order]
    same = lanes[1:] == lanes[:-1]
    gap = start[order][1:] - issued[order][:-1]
    assert (gap[same] >= 0).all(), "a lane issued two instructions at once or out of order"
    for lane in np.unique(lanes):
        ids = order[lanes == lane]
        # copies in flight when each instruction starts (those started before, not ended)
        before = np.arange(len(ids))[:, None] > np.arange(len(ids))[None, :]
        live = before & (end[ids][None, :] > start[ids][:, None])
        assert (live.sum(axis=1) < costs.max_outstanding[ids]).all(), \
            "a lane held more copies in flight than max_outstanding"


def check_invariants(program: Program, chip, schedule: Schedule) -> None:
    """Assert every invariant of DESIGN.md §4 on one schedule."""
    c = program.cols
    costs = compute_costs(program, chip)
    start, end = schedule.start_ns, schedule.end_ns
    assert not np.isnan(start).any() and not np.isnan(end).any(), "an instruction never ran"
    tol = time_tolerance(costs)
    check_lanes(program, costs, schedule)
    # dependencies
    after = np.repeat(np.arange(len(program)), np.diff(program.dep_ptr))
    assert (start[after] >= end[program.dep_idx]).all(), "started before a dependency ended"
    # durations
    assert (end >= start + costs.issue_ns + costs.latency_ns - tol).all(), \
        "shorter than its fixed cost"
    dur = min_durations(program, chip, costs, schedule)
    assert (end - start >= dur - tol).all(), "faster than its path allows"
    joiners = schedule.served == SERVED_MULTICAST
    assert (costs.gm[joiners] == GM_READ).all(), "only GM reads can be multicast"
    # SyncAll: all members released together, sync cost after the last arrival
    for g in np.unique(c["barrier"][c["barrier"] >= 0]):
        members = np.flatnonzero(c["barrier"] == g)
        np.testing.assert_allclose(end[members], start[members].max() + costs.sync_ns,
                                   rtol=1e-12, atol=1e-9, err_msg=f"SyncAll group {g}")
    # bandwidth never above the pools, bytes conserved per pool
    seg = schedule.segments
    assert (seg[:, 1] >= seg[:, 0]).all() and (seg[:, 2:] >= 0).all()
    assert (seg[:, 2] <= chip.hbm_bytes_per_ns * (1 + 1e-9)).all(), "HBM above bandwidth"
    assert (seg[:, 3] <= chip.l2_bytes_per_ns * (1 + 1e-9)).all(), "L2 above bandwidth"
    hbm_bytes, l2_bytes = served_bytes(program, costs, schedule)
    moved = integrals(seg)
    n_gm = int(np.count_nonzero(costs.gm))
    for got, want, bw, name in ((moved[0], hbm_bytes, chip.hbm_bytes_per_ns, "HBM"),
                                (moved[1], l2_bytes, chip.l2_bytes_per_ns, "L2")):
        slack = n_gm * (TOL_BYTES + bw * EPS_NS) + 1e-9 * want
        assert abs(got - want) <= slack, f"{name} moved {got} bytes, transfers need {want}"
    # makespan bounds: roofline and critical path
    makespan = schedule.makespan_ns
    lanes = c["core"].astype(np.int64) * 64 + c["pipe"]
    lane_busy = np.bincount(np.unique(lanes, return_inverse=True)[1], weights=costs.issue_ns)
    roofline = max(hbm_bytes / chip.hbm_bytes_per_ns, l2_bytes / chip.l2_bytes_per_ns,
                   lane_busy.max(initial=0.0))
    assert makespan >= roofline * (1 - 1e-9) - tol, f"makespan {makespan} < roofline {roofline}"
    path = critical_path(program, dur, costs.issue_ns)
    slack = tol * max(n_gm, 1) + 1e-9 * path
    assert makespan >= path - slack, f"makespan {makespan} < critical path {path}"


# ---- random programs -----------------------------------------------------------------------
#: Region sizes (KiB) of random programs: some tiny, some large enough to evict L2 (1-2 MiB).
REGION_KIB = (1, 4, 256, 384, 512, 768, 1024, 1536, 3072)
KINDS = ("read", "read", "read", "broadcast", "write", "write", "fixpipe", "vector",
         "scalar", "mte1", "mmad", "sync")


def _bytes():
    """Transfer sizes: tiny odd sizes, 32-byte multiples, and an occasional zero."""
    return st.one_of(st.integers(0, 40), st.integers(1, 128).map(lambda k: 32 * k),
                     st.integers(1, 5000))


@st.composite
def _op(draw, cores: list[int], n_regions: int, index: int) -> tuple:
    kind = draw(st.sampled_from(KINDS))
    core = draw(st.sampled_from(cores))
    deps = tuple(sorted(draw(st.lists(st.integers(0, index - 1), max_size=2, unique=True))
                        if index else []))
    region = draw(st.sampled_from([-1, *range(n_regions)]))
    if kind in ("read", "write", "fixpipe", "mte1"):
        return (kind, core, draw(_bytes()), region, deps)
    if kind == "broadcast":  # every core reads one region: multicast when clustered
        return (kind, draw(_bytes()), draw(st.integers(0, n_regions - 1)), deps)
    if kind == "vector":
        return (kind, core, draw(st.integers(1, 20000)), draw(st.sampled_from(["fp16", "fp32"])),
                draw(st.sampled_from([0, 1])), deps)
    if kind == "scalar":
        return (kind, core, draw(st.integers(0, 60)), deps)
    if kind == "mmad":
        dims = draw(st.tuples(*[st.integers(1, 48)] * 3))
        return (kind, core, *dims, deps)
    return ("sync", deps)


@st.composite
def _dma_overrides(draw) -> dict:
    """Queue numbers of the three DMA paths: serial (1 in flight) to deeply pipelined."""
    out = {"dma_burst_bytes": draw(st.sampled_from([32, 128]))}
    for prefix in ("gm_read", "gm_write", "fixpipe_gm"):
        out[f"{prefix}_issue_cycles"] = draw(st.sampled_from([0.0, 2.0, 12.5]))
        out[f"{prefix}_burst_cycles"] = draw(st.sampled_from([0.0, 0.5, 3.0]))
        out[f"{prefix}_latency_cycles"] = draw(st.sampled_from([0, 10, 40]))
        out[f"{prefix}_max_outstanding"] = draw(st.sampled_from([1, 2, 4]))
    if out["fixpipe_gm_latency_cycles"] == 0:
        out["fixpipe_gm_latency_cycles"] = 1  # a split chip's fixpipe latency is > 0
    return out


@st.composite
def program_specs(draw, max_ops: int = 24) -> dict:
    """A random small program on 2-4 cores of the tiny chip, with chip overrides.

    Ops are in program order: op k has seq k (a SyncAll's members share theirs, so every
    core meets them in the same order) and depends only on earlier ops, which keeps the
    program free of deadlock. ``emit`` is the order the builder receives them in, so
    program ids differ from program order.
    """
    cores = sorted(draw(st.one_of(  # whole clusters (k = 2: {0, 1}, {2, 3}, {4, 5}) or any
        st.sampled_from([(2, 3), (0, 1, 2, 3), (2, 3, 4, 5), (1, 2, 3, 4)]),
        st.lists(st.integers(0, 5), min_size=2, max_size=4, unique=True))))
    n_regions = draw(st.integers(1, 4))
    regions = tuple(draw(st.lists(st.sampled_from(REGION_KIB), min_size=n_regions,
                                  max_size=n_regions)))
    n_ops = draw(st.integers(1, max_ops))
    ops = tuple(draw(_op(cores, n_regions, k)) for k in range(n_ops))
    emit = tuple(draw(st.permutations(range(n_ops))))
    overrides = dict(cluster_size=draw(st.sampled_from([2, 1])),
                     l2_MiB=draw(st.sampled_from([1, 2])),
                     hbm_bandwidth_GBps=draw(st.sampled_from([16.0, 48.0, 64.0, 1000.0])),
                     l2_bandwidth_GBps=draw(st.sampled_from([64.0, 100.0, 256.0])),
                     **draw(_dma_overrides()))
    return dict(cores=tuple(cores), regions_kib=regions, ops=ops, emit=emit,
                overrides=overrides)


def build_program(spec: dict) -> tuple[Program, hardware_presets.Chip]:
    """The Program a spec stands for, and the tiny chip with the spec's overrides."""
    b = ProgramBuilder("random")
    regions = b.regions(np.asarray(spec["regions_kib"], np.int64) * 1024)
    ids: dict[int, np.ndarray] = {}
    for k in spec["emit"]:
        ids[k] = _emit(b, spec["ops"][k], k, spec["cores"], regions)
    for k, op in enumerate(spec["ops"]):
        for d in op[-1]:
            b.depend(ids[k][:1], ids[d][:1])
    return b.build(), tiny(**spec["overrides"])


def _emit(b: ProgramBuilder, op: tuple, seq: int, cores, regions) -> np.ndarray:
    kind = op[0]
    if kind == "sync":
        return b.sync_all(list(cores), seq)
    if kind == "broadcast":
        return b.transfer(list(cores), Pipe.MTE2, "broadcast", Level.GM, Level.UB, op[1], seq,
                          region=int(regions[op[2]]))
    core = op[1]
    if kind in ("read", "write", "fixpipe", "mte1"):
        nbytes, region = op[2], (int(regions[op[3]]) if op[3] >= 0 else -1)
        local = Level.L1 if core < 2 else Level.UB  # AIC reads into L1, AIV into UB
        path = {"read": (Pipe.MTE2, Level.GM, local), "write": (Pipe.MTE3, local, Level.GM),
                "fixpipe": (Pipe.FIX, Level.L0C, Level.GM),
                "mte1": (Pipe.MTE1, Level.L1, Level.L0A)}[kind]
        return b.transfer(core, path[0], kind, path[1], path[2], nbytes, seq,
                          region=region if kind != "mte1" else -1)
    if kind == "vector":
        return b.vector(core, "vector", op[2], op[3], seq, vclass=VClass(op[4]))
    if kind == "scalar":
        return b.scalar(core, "scalar", op[2], seq)
    return b.mmad(core, "mmad", op[2], op[3], op[4], "fp16", seq)

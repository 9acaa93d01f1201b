"""The linear layer's program (kernels/linear/kernel.py and antiquant.py) worked by hand on
tiny shapes: instructions per pipe and per core, bytes per path, every weight tile read
once, tasks in contiguous blocks, the dependencies read back from the program and from the
timeline (L1 slots ``buffer_num`` deep, the W8A16 hand-over through the GM workspace on
910B2 and UB -> L1 on 310P3), and the two engines on small fp16 and int8 programs."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

import hardware_presets as hp
from explorer.core import Scenario, simulate
from explorer.core.emulator.engine import run
from explorer.core.tables import timeline_table
from kernels.common.program import Level, Pipe, ProgramBuilder
from kernels.linear import antiquant
from kernels.linear import kernel as lk
from tests.rowwise_helpers import (
    B2,
    TOL_NS,
    assert_contiguous_blocks,
    assert_engines,
    depends_on,
    moved,
    op_names,
    pipe_counts,
)

P3 = hp.load("310P3")
CHIPS = {"910B2": B2, "310P3": P3}
#: 16 x 64 x 256 on two cube cores in 16-column tiles and 64-row K chunks: 4 tasks (2 per
#: core) of 4 chunks each, so 16 iterations (8 per core)
TINY = {"M": 16, "N": 64, "K": 256, "block_dim": 2, "base_n": 16, "base_k": 64}
TASKS, CHUNKS = 4, 4
#: W8A16 whose weight tiles take two UB pieces: 256 x 128 x (1 + 2) bytes x 2 buffers =
#: 196,608 B, over 910B2's 196,352-B UB. 4 tasks of 2 chunks on two AICs.
PIECES_B2 = {"M": 16, "N": 512, "K": 512, "block_dim": 2, "base_n": 128, "base_k": 256,
             "weight_dtype": "int8"}
#: the same on 310P3 (261,888-B UB): 256 x 256 tiles, 393,216 B -> two pieces; 2 tasks
PIECES_P3 = {**PIECES_B2, "base_n": 256}


def program(chip, **kw):
    p = lk.check(chip, kw)
    return p, lk.build(chip, p)


def timeline(chip: str, **kw) -> pd.DataFrame:
    return simulate(Scenario.make(chip, "linear", kw)).timeline


def rows(tl: pd.DataFrame, op: str) -> pd.DataFrame:
    """The instructions of one op in emission order: iterations (task outer, K chunk
    inner), which is each core's own loop order since tasks are in blocks per core."""
    return tl[tl["op"] == op].sort_values("instr").reset_index(drop=True)


def ids(prog, op: str) -> np.ndarray:
    return np.flatnonzero(op_names(prog) == op)


def per_core(prog) -> dict[int, dict[str, int]]:
    c = prog.cols
    out: dict[int, dict[str, int]] = {}
    for (core, pipe), n in Counter(zip(c["core"].tolist(), c["pipe"].tolist())).items():
        out.setdefault(core, {})[Pipe(pipe).name] = n
    return out


def loop_gaps(after: pd.DataFrame, before: pd.DataFrame, depth: int) -> np.ndarray:
    """Start of ``after`` of each core's iteration k minus the end of ``before`` of its
    iteration k - depth (both in emission order, one row per iteration)."""
    core = after["core"].to_numpy()
    assert (core == before["core"].to_numpy()).all()
    same = np.r_[np.zeros(depth, bool), core[depth:] == core[:-depth]]
    k = np.flatnonzero(same)
    return after["start_ns"].to_numpy()[k] - before["end_ns"].to_numpy()[k - depth]


# ---- fp16 / bf16 weights, by hand --------------------------------------------------------
@pytest.mark.parametrize("chip", CHIPS)
def test_fp16_program_by_hand(chip):
    """16 iterations of CopyIn x, CopyIn W (MTE2), LoadData x, W (MTE1) and Mmad, then y out
    once per task: by the fixpipe on 910B2, through UB (L0C -> UB, CopyOut) on 310P3."""
    p, prog = program(CHIPS[chip], **TINY)
    s = lk.shape_of(p)
    plan = lk.plan(CHIPS[chip], s)
    assert (plan.base_m, plan.base_n, plan.base_k, plan.cores) == (16, 16, 64, (0, 1))
    assert len(plan.tasks(s)[0]) == TASKS and plan.chunks(s) == CHUNKS
    it = TASKS * CHUNKS
    out = {"FIX": TASKS} if chip == "910B2" else {"V": TASKS, "MTE3": TASKS}
    assert pipe_counts(prog) == {"MTE2": 2 * it, "MTE1": 2 * it, "M": it, **out}
    assert len(prog) == lk.instruction_count(CHIPS[chip], s) == 5 * it + sum(out.values())
    half = {k: v // 2 for k, v in pipe_counts(prog).items()}  # two tasks per core
    assert per_core(prog) == {0: half, 1: half}
    # bytes: W once (64 x 16 x 2 per tile), x once per task, y once
    assert moved(prog, Level.GM, Level.L1) == 64 * 256 * 2 + TASKS * 16 * 256 * 2
    assert moved(prog, Level.L1, Level.L0A) == TASKS * 16 * 256 * 2
    assert moved(prog, Level.L1, Level.L0B) == 64 * 256 * 2
    if chip == "910B2":
        assert moved(prog, Level.L0C, Level.GM) == 16 * 64 * 2
    else:
        assert moved(prog, Level.L0C, Level.UB) == moved(prog, Level.UB, Level.GM) == 16 * 64 * 2
    assert assert_contiguous_blocks(prog, (0, 1)) == {0: [0, 1], 1: [2, 3]}


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("weight,nbytes", [("fp16", 2), ("int8", 1)])
def test_standalone_hbm_bytes(chip, weight, nbytes):
    """HBM carries at least the weights (N x K x 2 for fp16, x 1 for int8); with fp16
    weights it carries the weights, x and y once, plus at most a second cold read of an x
    chunk the two cores fetch at the same moment."""
    res = simulate(Scenario.make(chip, "linear", {**TINY, "weight_dtype": weight}))
    hbm = res.metrics["hbm_bytes"]
    w, x, y = 64 * 256 * nbytes, 16 * 256 * 2, 16 * 64 * 2
    assert hbm >= w + y
    if weight == "fp16":
        assert w + x + y <= hbm <= w + 2 * x + y, hbm


def test_every_weight_tile_is_read_once_and_x_chunks_are_shared():
    _, prog = program(B2, **TINY)
    c = prog.cols
    w, x = ids(prog, "CopyIn W"), ids(prog, "CopyIn x")
    assert len(np.unique(c["region"][w])) == len(w) == TASKS * CHUNKS  # a region per tile
    assert set(c["nbytes"][w].tolist()) == {64 * 16 * 2}
    assert c["nbytes"][w].sum() == 64 * 256 * 2  # N x K x 2: the weights, once
    assert (prog.region_bytes[c["region"][w]] == c["nbytes"][w]).all()
    # x: a region per K chunk, read by each of the 4 tasks
    assert Counter(Counter(c["region"][x].tolist()).values()) == {TASKS: CHUNKS}


def test_dependencies_in_the_program():
    """Per iteration: each LoadData after its CopyIn, the Mmad after both LoadDatas; the
    first Mmad of a core's second task after the first task's Fixpipe (L0C written out)."""
    _, prog = program(B2, **TINY)
    x, w = ids(prog, "CopyIn x"), ids(prog, "CopyIn W")
    a, b = ids(prog, "LoadData x -> L0A"), ids(prog, "LoadData W -> L0B")
    mm, fix = ids(prog, "Mmad"), ids(prog, "Fixpipe y")
    for i in range(TASKS * CHUNKS):
        assert depends_on(prog, a[i], x[i]) and depends_on(prog, b[i], w[i])
        assert depends_on(prog, mm[i], a[i]) and depends_on(prog, mm[i], b[i])
    assert depends_on(prog, mm[CHUNKS], fix[0]) and depends_on(prog, mm[3 * CHUNKS], fix[2])
    # buffer_num = 2: the CopyIns of iteration k wait for the LoadDatas of k - 2 on the core
    assert depends_on(prog, x[2], a[0]) and depends_on(prog, w[5], b[3])
    assert not depends_on(prog, x[8], a[6])  # iteration 8 is core 1's first


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("buffer_num", [1, 2])
def test_l1_slots_in_the_timeline(chip, buffer_num):
    """Read from the timeline: LoadData after its CopyIn, Mmad after both LoadDatas; a
    CopyIn never takes an L1 slot before the LoadData of ``buffer_num`` iterations earlier
    freed it. With one slot the next CopyIn x waits for the previous LoadData x (gap 0
    somewhere: the MTE2 lane is free then); with two it starts earlier (prefetch)."""
    tl = timeline(chip, **TINY, buffer_num=buffer_num)
    x, w = rows(tl, "CopyIn x"), rows(tl, "CopyIn W")
    a, b, mm = rows(tl, "LoadData x -> L0A"), rows(tl, "LoadData W -> L0B"), rows(tl, "Mmad")
    assert len(x) == len(w) == len(a) == len(b) == len(mm) == TASKS * CHUNKS
    assert (a["start_ns"] >= x["end_ns"] - TOL_NS).all()
    assert (b["start_ns"] >= w["end_ns"] - TOL_NS).all()
    assert (mm["start_ns"] >= np.maximum(a["end_ns"], b["end_ns"]) - TOL_NS).all()
    for copy, load in ((x, a), (w, b)):
        gaps = loop_gaps(copy, load, buffer_num)
        assert len(gaps) == 2 * (TASKS * CHUNKS // 2 - buffer_num) and gaps.min() >= -TOL_NS
    one = loop_gaps(x, a, 1)
    if buffer_num == 1:
        assert abs(one.min()) <= TOL_NS, one.min()
    else:
        assert one.min() < -TOL_NS, one.min()


# ---- W8A16 on 910B2: the AIVs of the AIC's group, the GM workspace -------------------------
def test_w8a16_program_by_hand_910b2():
    """8 iterations (4 tasks x 2 chunks), 2 pieces per tile: per piece CopyIn int8 (MTE2),
    Cast and Mul (V), CopyOut fp16 to the workspace (MTE3), on AIV 24 + 2 c + piece of AIC
    c; per iteration the AIC's CopyIn x and CopyIn W workspace (MTE2), two LoadDatas, an
    Mmad."""
    p, prog = program(B2, **PIECES_B2)
    s = lk.shape_of(p)
    plan = lk.plan(B2, s)
    pieces = antiquant.pieces(B2, plan.base_k, plan.base_n, "fp16", 2)
    assert pieces == 2 and 256 * 128 * 3 * 2 > B2.ub_bytes >= 256 * 128 * 3 * 2 / 2
    it, tasks = 8, 4
    assert pipe_counts(prog) == {"MTE2": 2 * it + it * pieces, "V": 2 * it * pieces,
                                 "MTE3": it * pieces, "MTE1": 2 * it, "M": it, "FIX": tasks}
    assert len(prog) == lk.instruction_count(B2, s) == it * (5 + 4 * pieces) + tasks
    aic = {"MTE2": 8, "MTE1": 8, "M": 4, "FIX": 2}
    aiv = {"MTE2": 4, "V": 8, "MTE3": 4}  # one piece of each of its AIC's 4 iterations
    assert B2.ai_cores == 24
    assert per_core(prog) == {0: aic, 1: aic, 24: aiv, 25: aiv, 26: aiv, 27: aiv}
    # int8 weights once from GM into UB, fp16 out to the workspace and into L1
    c, names = prog.cols, op_names(prog)
    load = names == "CopyIn W int8"
    assert moved(prog, Level.GM, Level.UB) == c["nbytes"][load].sum() == 512 * 512
    assert len(np.unique(c["region"][load])) == load.sum() == it * pieces
    assert moved(prog, Level.UB, Level.GM) == 512 * 512 * 2
    assert c["nbytes"][names == "CopyIn W workspace"].sum() == 512 * 512 * 2
    # the workspace: a ring of buffer_num = 2 tile slots per AIC, read where it was written
    hand, fetch = ids(prog, "CopyOut W fp16"), ids(prog, "CopyIn W workspace")
    assert (c["region"][hand].reshape(it, pieces) == c["region"][fetch][:, None]).all()
    ring = {core: set(c["region"][fetch][c["core"][fetch] == core].tolist()) for core in (0, 1)}
    assert [len(r) for r in ring.values()] == [2, 2] and not ring[0] & ring[1]
    # tasks in contiguous blocks on the AICs
    mm = ids(prog, "Mmad")
    assert c["core"][mm].tolist() == [0] * 4 + [1] * 4
    assert c["task"][mm].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize("buffer_num", [1, 2])
def test_w8a16_hand_over_in_the_timeline_910b2(buffer_num):
    tl = timeline("910B2", **PIECES_B2, buffer_num=buffer_num)
    pieces = 2 if buffer_num == 2 else 1  # one buffer: 98,304 B fit UB whole
    fetch = rows(tl, "CopyIn W workspace")
    hand, load = rows(tl, "CopyOut W fp16"), rows(tl, "CopyIn W int8")
    cast, mul = rows(tl, "Cast W int8 -> fp16"), rows(tl, "Mul antiquant scale")
    n = len(fetch)
    assert n == 8 and len(hand) == len(load) == n * pieces
    # every piece of a tile on the AIVs of its AIC's group: 24 + 2 c + piece (alternating)
    aic = np.repeat(fetch["core"].to_numpy(), pieces)
    aiv = B2.ai_cores + 2 * aic + np.tile(np.arange(pieces), n)
    for part in (load, cast, mul, hand):
        assert (part["core"].to_numpy() == aiv).all()
    # the AIC reads the tile after every piece's hand-over ended; L1 after that read
    handed = hand["end_ns"].to_numpy().reshape(n, pieces).max(axis=1)
    assert (fetch["start_ns"].to_numpy() >= handed - TOL_NS).all()
    assert (rows(tl, "LoadData W -> L0B")["start_ns"] >= fetch["end_ns"] - TOL_NS).all()
    # a piece's UB slot: the load of the AIV's k-th piece after the hand-over of its
    # (k - buffer_num)-th ended
    for core in np.unique(aiv):
        mine = aiv == core
        lo, ho = load["start_ns"].to_numpy()[mine], hand["end_ns"].to_numpy()[mine]
        assert (lo[buffer_num:] >= ho[:-buffer_num] - TOL_NS).all()
    # a workspace slot: the hand-over of iteration k after the AIC's read of k - buffer_num
    per_piece = fetch.loc[fetch.index.repeat(pieces)].reset_index(drop=True)
    gaps = loop_gaps(hand.assign(core=per_piece["core"]), per_piece, buffer_num * pieces)
    assert len(gaps) and gaps.min() >= -TOL_NS
    # the ring stays in L2: every read of it, and every write after the first buffer_num
    # iterations of each AIC (those write cold slots: the first write goes to HBM)
    assert set(fetch["served_from"]) == {"L2"}
    iteration = np.tile(np.repeat(np.arange(4), pieces), 2)
    assert set(hand["served_from"][iteration >= buffer_num]) == {"L2"}
    assert set(hand["served_from"][iteration < buffer_num]) <= {"HBM", "L2"}
    assert set(load["served_from"]) == {"HBM"}  # the int8 weights: cold, once


def test_w8a16_on_310p3_runs_on_the_ai_core():
    """Coupled chip: every piece's CopyIn int8, Cast, Mul and hand-over run on the AI core
    that runs the Mmad, the hand-over is UB -> L1 (no workspace), and LoadData W waits for
    the last piece (in order on the core's MTE3)."""
    p, prog = program(P3, **PIECES_P3)
    s = lk.shape_of(p)
    plan = lk.plan(P3, s)
    pieces = antiquant.pieces(P3, plan.base_k, plan.base_n, "fp16", 2)
    assert pieces == 2 and P3.architecture == "coupled"
    it, tasks = 4, 2  # 2 tasks of 256 columns, 2 chunks each
    assert pipe_counts(prog) == {"MTE2": it + it * pieces, "V": 2 * it * pieces + tasks,
                                 "MTE3": it * pieces + tasks, "MTE1": 2 * it, "M": it}
    assert len(prog) == lk.instruction_count(P3, s) == it * (4 + 4 * pieces) + 2 * tasks
    assert set(prog.cols["core"].tolist()) == {0, 1}
    assert moved(prog, Level.UB, Level.L1) == 512 * 512 * 2
    assert moved(prog, Level.GM, Level.UB) == 512 * 512
    assert "CopyIn W workspace" not in set(op_names(prog))
    tl = timeline("310P3", **PIECES_P3)
    hand, mm = rows(tl, "CopyOut W fp16"), rows(tl, "Mmad")
    assert (rows(tl, "CopyIn W int8")["core"].to_numpy() == np.repeat(mm["core"], pieces)).all()
    assert set(hand["src"]) == {"UB"} and set(hand["dst"]) == {"L1"}
    handed = hand["end_ns"].to_numpy().reshape(it, pieces).max(axis=1)
    assert (rows(tl, "LoadData W -> L0B")["start_ns"].to_numpy() >= handed - TOL_NS).all()


# ---- the engines -------------------------------------------------------------------------
@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("case", [
    {**TINY, "buffer_num": 1},
    {**TINY, "weight_dtype": "int8", "group_size": 64},
    {**PIECES_B2, "N": 320, "K": 384},  # tail tiles and chunks, 2 pieces on 910B2
], ids=["fp16", "int8", "int8_tails"])
def test_engines_agree_and_invariants_hold(chip, case):
    _, prog = program(CHIPS[chip], **case)
    assert assert_engines(prog, CHIPS[chip]) > 0


# ---- bugs found --------------------------------------------------------------------------
@pytest.mark.parametrize("weight,nbytes", [("fp16", 2), ("int8", 1)])
def test_weights_stream_once_when_m_spans_two_blocks(weight, nbytes):
    """M = 257: two m-blocks run one after the other on one core, each loading every weight
    tile into L1; the weights are 32 KiB, so the second m-block's reads hit L2."""
    kw = {**TINY, "M": 257, "block_dim": 1, "weight_dtype": weight}
    tl = timeline("910B2", **kw)
    load = tl[tl["op"].isin(["CopyIn W", "CopyIn W int8"])]
    assert load["bytes"].sum() == 2 * 64 * 256 * nbytes  # each m-block loads every tile
    assert load.loc[load["served_from"] == "HBM", "bytes"].sum() == 64 * 256 * nbytes


def test_ragged_w8a16_tiles_move_exactly_their_bytes():
    _, prog = program(B2, **{**PIECES_B2, "N": 501, "K": 511})
    assert moved(prog, Level.GM, Level.UB) == 501 * 511
    assert moved(prog, Level.UB, Level.GM) == 501 * 511 * 2


def test_linear_ops_of_one_program_share_the_workspace_ring():
    """Two W8A16 layers emitted into one program (as the decode layer does) write the same
    workspace ring: the second one's hand-overs find it resident and never go to HBM."""
    p = lk.check(B2, PIECES_B2)
    s = lk.shape_of(p)
    b = ProgramBuilder("two layers")
    b.launch("first")
    first_end = lk.emit(b, B2, s, 0)
    b.launch("second")
    lk.emit(b, B2, s, first_end)
    prog = b.build()
    tl = timeline_table(prog, run(prog, B2), B2)
    hand = tl[tl["op"] == "CopyOut W fp16"]
    second = hand["instr"] >= prog.launches[1][1]
    assert set(hand.loc[second, "served_from"]) == {"L2"}
    assert (hand.loc[~second, "served_from"] == "HBM").any()  # the ring's first writes

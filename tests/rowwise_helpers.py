"""Shared helpers of the row-wise kernel tests (RMSNorm, RoPE, SwiGLU): the numerical
check taken apart (error / bound ratios of any output, the fp32 path on its own), the
program read back (instructions per pipe and op, bytes per path, which core runs which
tile), the TQue slot dependencies read from a timeline, and the engine checks.

The thresholds the tests use are derived here once:

* ``TIGHT``: the storage rounding dominates every bound (``u_storage |ref|`` plus an fp32
  term ~1e-6 relative and a subnormal eta). One round-to-nearest of a value y in
  [2^e, 2^(e+1)), y = 2^e m, errs by U x half-spacing = U u 2^e with U roughly uniform
  on [0, 1]: its error / bound ratio is U / m, above 1/2 with probability 1 - m/2, about
  0.28 for mantissas spread over the binade (>= 1/4 unless they crowd near 2). The largest
  ratio over the >= 48 elements of every case tested is then below 1/2 with probability
  < (3/4)^48 ~ 1e-6 (and the seeds are fixed). So a bound 2x or more above the error it
  must allow fails the test; one a factor 100 loose would be far past that.
* ``FP32_TIGHT``: with the output kept in fp32 the bound is gamma_k(u32) |ref| for the k
  (<= 21 at the sizes tested) roundings of the path, each of which is hit, at its largest,
  by some of the thousands of elements: the observed maximum is at least ~1/k of the
  worst case, so a ratio below 1/100 would mean a bound more than 100x looser than the
  arithmetic it describes.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core.emulator.engine import run
from hardware_presets.errors import InputError
from kernels.common import rows as rw
from kernels.common.program import Kind, Level, Pipe, Program
from tests.engine_helpers import assert_twins, check_invariants

B2 = hp.load("910B2")
#: the vector cores of 910B2 (AIV ids)
VECTOR_CORES = tuple(B2.vector_core_ids())
#: smallest max(error / bound) accepted where the storage rounding dominates (see above)
TIGHT = 0.5
#: smallest max(error / bound) accepted for the fp32 path alone (see above)
FP32_TIGHT = 0.01
#: slack of time comparisons read from a timeline (ns)
TOL_NS = 1e-6


# ---- numerics ----------------------------------------------------------------------------
def ratios(num, p: dict, inputs: dict, out) -> tuple[float, bool]:
    """(max over elements of |out - ref| / error_bound, every element within its bound)
    for any candidate output ``out`` of ``num.execute``'s shape."""
    ref = next(iter(num.reference(inputs).values()))
    got = np.asarray(out, np.float64).reshape(ref.shape)
    err = np.abs(got - ref)
    allowed = num.error_bound(p, inputs, ref)
    assert np.all(allowed > 0), "a zero bound allows no rounding at all"
    return float((err / allowed).max()), bool(np.all(err <= allowed))


def executed(num, p: dict, inputs: dict) -> np.ndarray:
    """The kernel's own output (the first ``execute`` returns)."""
    return next(iter(num.execute(p, inputs).values()))


def fp32_path_ratio(num, p: dict, inputs: dict) -> float:
    """max error / bound of the fp32 arithmetic alone: the same inputs (in the storage
    format), the output left in fp32 and the bound stated for an fp32 output."""
    wide = {**p, "dtype": "fp32"}
    ratio, ok = ratios(num, wide, inputs, executed(num, wide, inputs))
    assert ok, f"the fp32 path breaks its own bound (ratio {ratio})"
    return ratio


# ---- the program -------------------------------------------------------------------------
def op_names(prog: Program) -> np.ndarray:
    return np.asarray(prog.op_names)[prog.cols["op"]]


def pipe_counts(prog: Program) -> dict[str, int]:
    """Instructions per pipe, by Pipe name."""
    return {Pipe(k).name: int(v) for k, v in Counter(prog.cols["pipe"].tolist()).items()}


def op_counts(prog: Program) -> Counter:
    return Counter(op_names(prog).tolist())


def moved(prog: Program, src: Level, dst: Level) -> int:
    """Bytes every transfer from ``src`` to ``dst`` moves."""
    c = prog.cols
    sel = (c["kind"] == Kind.TRANSFER) & (c["src"] == src) & (c["dst"] == dst)
    return int(c["nbytes"][sel].sum())


def expected_pipes(op: rw.RowOp, tiles: int, cores: int) -> dict[str, int]:
    """What ``row_op`` implies: each copy and vector op once per tile, the prologue once
    per core used."""
    pro_copies = sum(isinstance(s, rw.Copy) for s in op.prologue)
    out = {"MTE2": len(op.inputs) * tiles + pro_copies * cores,
           "V": len(op.compute) * tiles + (len(op.prologue) - pro_copies) * cores,
           "MTE3": len(op.outputs) * tiles}
    return {k: v for k, v in out.items() if v}


def tile_cores(prog: Program) -> dict[int, int]:
    """The core of every tile (task), asserting all of a tile's instructions share it."""
    c = prog.cols
    tiled = c["task"] >= 0
    out: dict[int, int] = {}
    for task, core in zip(c["task"][tiled].tolist(), c["core"][tiled].tolist()):
        assert out.setdefault(task, core) == core, f"tile {task} split over cores"
    return out


def assert_contiguous_blocks(prog: Program, cores: tuple[int, ...]) -> dict[int, list[int]]:
    """Tiles 0..n-1 go to ``cores`` in contiguous blocks, in core order, with sizes that
    differ by at most one; returns the tiles of each core."""
    of = tile_cores(prog)
    n = len(of)
    assert sorted(of) == list(range(n))
    seq = [of[t] for t in range(n)]
    assert set(seq) <= set(cores)
    order = [cores.index(c) for c in seq]
    assert order == sorted(order), "tiles are not in contiguous blocks in core order"
    blocks: dict[int, list[int]] = {}
    for t, c in enumerate(seq):
        blocks.setdefault(c, []).append(t)
    sizes = [len(v) for v in blocks.values()]
    assert max(sizes) - min(sizes) <= 1 and len(blocks) == min(n, len(cores))
    return blocks


def depends_on(prog: Program, after: int, before: int) -> bool:
    return before in prog.dep_idx[prog.dep_ptr[after]:prog.dep_ptr[after + 1]]


# ---- the timeline ------------------------------------------------------------------------
def per_task(tl, labels) -> dict[int, tuple[int, float, float]]:
    """{tile: (core, start_ns, end_ns)} of the one instruction per tile among ``labels``."""
    rows = tl[tl["op"].isin(list(labels)) & (tl["task"] >= 0)]
    assert rows["task"].is_unique, f"{labels}: more than one instruction per tile"
    return {int(t): (int(c), float(s), float(e))
            for t, c, s, e in zip(rows["task"], rows["core"], rows["start_ns"], rows["end_ns"])}


def slot_gaps(tl, after_labels, before_labels, depth: int) -> np.ndarray:
    """For every core's k-th tile with k >= depth: start of its ``after`` instruction minus
    the end of the ``before`` instruction of the core's (k - depth)-th tile. A TQue of
    ``depth`` slots makes every gap >= 0 when ``after`` needs the slot ``before`` frees."""
    after, before = per_task(tl, after_labels), per_task(tl, before_labels)
    assert after.keys() == before.keys()
    gaps = []
    for core in sorted({c for c, _, _ in after.values()}):
        tasks = sorted(t for t, (c, _, _) in after.items() if c == core)
        for k in range(depth, len(tasks)):
            gaps.append(after[tasks[k]][1] - before[tasks[k - depth]][2])
    return np.asarray(gaps)


def copy_overlaps_compute(tl) -> bool:
    """Some CopyIn (MTE2) runs while the same core's vector pipe computes."""
    for _, rows in tl.groupby("core"):
        mte2 = rows[rows["pipe"] == "MTE2"]
        vec = rows[rows["pipe"] == "VECTOR"]
        s1, e1 = mte2["start_ns"].to_numpy()[:, None], mte2["end_ns"].to_numpy()[:, None]
        s2, e2 = vec["start_ns"].to_numpy()[None, :], vec["end_ns"].to_numpy()[None, :]
        if np.any((s1 < e2 - TOL_NS) & (s2 < e1 - TOL_NS)):
            return True
    return False


def assert_queues(tl, op: rw.RowOp, parts: tuple[str, ...], buffer_num: int) -> None:
    """Every TQue of ``op`` keeps its depth in the timeline: an input's CopyIn never
    starts before the instruction that frees its slot ``buffer_num`` tiles earlier (the
    reader named by ``Copy.queue``) ended, an output's writer never before the CopyOut
    that frees its slot; with one slot the first input's wait binds somewhere (gap 0: the
    MTE2 pipe is idle otherwise, so the copy starts the moment its slot is freed)."""
    for copy in op.inputs:
        gaps = slot_gaps(tl, {copy.label.format(part=p) for p in parts}, {copy.queue},
                         buffer_num)
        assert len(gaps) and gaps.min() >= -TOL_NS, (copy.label, gaps.min())
        if buffer_num == 1 and copy is op.inputs[0]:
            assert abs(gaps.min()) <= TOL_NS, (copy.label, gaps.min())
    for copy in op.outputs:
        gaps = slot_gaps(tl, {copy.queue}, {copy.label.format(part=p) for p in parts},
                         buffer_num)
        assert len(gaps) and gaps.min() >= -TOL_NS, (copy.label, gaps.min())


# ---- engines and refusals ----------------------------------------------------------------
def assert_engines(prog: Program, chip=B2) -> float:
    """The jit engine and its pure-Python twin agree, and the DESIGN §4 invariants hold;
    returns the makespan (ns)."""
    jit, _ = assert_twins(prog, chip)
    check_invariants(prog, chip, jit)
    assert jit.makespan_ns == run(prog, chip).makespan_ns
    return jit.makespan_ns


def refused(check, params: dict, field: str, chip=B2) -> InputError:
    """``check(chip, params)`` raises an InputError naming ``field``."""
    with pytest.raises(InputError) as info:
        check(chip, params)
    assert info.value.field == field, str(info.value)
    return info.value

"""Engine benchmark: ``python -m bench.engine``.

Builds vector-add programs of about 10^4 .. 10^7 instructions on the Ascend 910B2 (all 48
AIVs contending for HBM) and prints, per size, measured side by side in this process (the
floor, the loop and ``run`` timed in turn, round after round):

* ``run``: instructions per second of the whole ``engine.run`` (cost model, lowering, event
  loop, schedule), median of warm runs (5 up to 10^6 instructions, 3 above);
* ``loop``: the jit event loop alone, and ``reference`` its pure-Python twin (up to 10^5);
* ``floor``: a numba loop of the same shape as any event engine of this kind, one pop and
  one push of a binary heap of the program's lanes per instruction, over the program's own
  lanes and durations (no costs, no dependencies, no bandwidth sharing);
* ``floor_over_engine``: the floor's rate over ``run``'s, how far the engine is from it;
* ``bytes/instr``: the peak memory of building the program and running it, over its
  instructions (the process's high-water mark, reset before each size).

The last line is ``engine jit_instr_per_s=... speedup_vs_reference=... floor_over_engine=...``
at 10^6 instructions, with the largest ratio of 10^6 and 10^7. Never used as a test
assertion: machines here are shared and noisy.
"""
from __future__ import annotations

import os
import statistics
import time

import numpy as np
from numba import njit

import hardware_presets as hp
from explorer.core import Scenario, simulate
from explorer.core.emulator._jit.parts import heap_pop, heap_push
from explorer.core.emulator.engine import execute, prepare, run
from explorer.plots import (
    bandwidth_figure,
    load_balance_figure,
    pipe_ratio_figure,
    timeline_figure,
    traffic_figure,
)
from kernels.vector_add import kernel as vector_add

SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
REFERENCE_MAX = 100_000  # the twin is too slow beyond this
TILE = 1024
#: the instruction cap the largest size needs (the default follows the CLI's memory budget)
BENCH_CAP = 12_000_000


def program_of_size(chip, instructions: int):
    """A 48-core fp16 vector add with about ``instructions`` instructions (4 per tile)."""
    params = {"n": instructions // 4 * TILE, "tile": TILE, "block_dim": 48, "dtype": "fp16"}
    return vector_add.build(chip, params)


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def side_by_side(fns: dict, repeats: int) -> dict[str, float]:
    """Median seconds of each of ``fns``, timed in turn round after round, so that a burst
    of load on a shared machine falls on all of them alike (a ratio of two rates measured
    minutes apart moved by up to 1.5x here)."""
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


@njit(cache=True, nogil=True)
def floor_loop(lane_first, lane_next, duration):
    """One heap pop and one push per instruction: each lane's instructions in order, the
    next one starting when the last ends, over the engine's own lanes and memory layout.
    Returns the instructions done and the end."""
    n_lanes = len(lane_first)
    ht, hk = np.empty(n_lanes), np.empty(n_lanes, np.int64)
    head = lane_first.copy()
    size = 0
    for ln in range(n_lanes):
        if head[ln] >= 0:
            size = heap_push(ht, hk, 0, size, 0.0, ln)
    done, last = 0, 0.0
    while size > 0:
        t, ln = ht[0], hk[0]
        size = heap_pop(ht, hk, 0, size)
        i = head[ln]
        head[ln] = lane_next[i]
        done += 1
        t_end = t + duration[i]
        last = max(last, t_end)
        if head[ln] >= 0:
            size = heap_push(ht, hk, 0, size, t_end, ln)
    return done, last


def _memory(name: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(name))


def peak_bytes(chip, size: int) -> float:
    """High-water mark of building and running a program, above the resident set before
    (Linux: VmHWM, reset through /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    base = _memory("VmRSS:")
    program = program_of_size(chip, size)
    run(program, chip)
    del program
    return _memory("VmHWM:") - base


def page_recompute_seconds() -> float:
    """simulate + every playground figure for the default scenario (warm, median of 5)."""
    scenario = Scenario.make()

    def once():
        r = simulate(scenario)
        timeline_figure(r.timeline, r.makespan_ns)
        pipe_ratio_figure(r.per_core)
        bandwidth_figure(r.bandwidth, r.chip.hbm_bandwidth_GBps, r.chip.l2_bandwidth_GBps)
        traffic_figure(r.traffic)
        load_balance_figure(r.per_core)
    once()
    return median_seconds(once, 5)


def rates(chip, size: int) -> dict[str, float]:
    """Rates (instructions/s) of run, the loop, the twin and the floor on one program."""
    program = program_of_size(chip, size)
    n, inp = len(program), prepare(program, chip)
    repeats = 5 if n <= 1_000_000 else 3
    floor = (inp.lane_first, inp.lane_next, inp.issue_ns)
    floor_loop(*floor)
    seconds = side_by_side({"floor": lambda: floor_loop(*floor), "loop": lambda: execute(inp),
                            "run": lambda: run(program, chip)}, repeats)
    out = {"n": n, **{name: n / s for name, s in seconds.items()}}
    if n <= REFERENCE_MAX:
        out["reference"] = n / median_seconds(lambda: execute(inp, "reference"),
                                              3 if n < 50_000 else 1)
    return out


def measure(chip, size: int) -> dict[str, float]:
    """``rates`` of one size, then its memory once the rates' arrays are gone."""
    out = rates(chip, size)
    out["bytes"] = peak_bytes(chip, size) / out["n"]
    return out


def main() -> None:
    os.environ.setdefault("EXPLORER_MAX_INSTRUCTIONS", str(BENCH_CAP))
    chip = hp.load("910B2")
    run(program_of_size(chip, 1000), chip)  # compile or load the numba cache
    rows = {}
    print(f"{os.cpu_count()} cores")
    for size in SIZES:
        m = rows[size] = measure(chip, size)
        ref = m.get("reference")
        print(f"size={m['n']:>10,}  run {m['run']:>11,.0f} instr/s  loop {m['loop']:>11,.0f}  "
              f"floor {m['floor']:>11,.0f}  floor_over_engine={m['floor'] / m['run']:.2f}  "
              f"{m['bytes']:5.0f} bytes/instr"
              + (f"  reference {ref:,.0f} (loop/reference {m['loop'] / ref:,.0f}x)" if ref
                 else ""), flush=True)
    print(f"page recompute (simulate + 5 figures, default vector add): "
          f"{page_recompute_seconds() * 1e3:.0f} ms warm (median of 5)")
    big, ref = rows[1_000_000], rows[REFERENCE_MAX]["reference"]
    r_max = max(rows[s]["floor"] / rows[s]["run"] for s in (1_000_000, 10_000_000))
    g6, g7 = rows[1_000_000]["run"], rows[10_000_000]["run"]
    print(f"rate at 10^7 / rate at 10^6: {g7 / g6:.2f}")
    print(f"engine jit_instr_per_s={big['run']:.0f} speedup_vs_reference={big['loop'] / ref:.1f} "
          f"floor_over_engine={r_max:.2f}")


if __name__ == "__main__":
    main()

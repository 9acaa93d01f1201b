"""Engine benchmark: ``python -m bench.engine``.

Builds vector-add programs of about 10^4, 10^5 and 10^6 instructions on a 48-vector-core
chip (Ascend 910B2, all 48 AIVs contending for HBM) and prints, per size, instructions
per second of the numba event loop and of the pure-Python twin on the same lowered input
(medians of warm runs, side by side in this process), and of the whole ``run()`` (cost
model + lowering + event loop). Then the wall time of one full playground recompute
(simulate + figures) for the default vector-add scenario. Never used as a test assertion.
"""
from __future__ import annotations

import statistics
import time

import hardware_presets as hp
from explorer.core import Scenario, simulate
from explorer.core.emulator.engine import execute, prepare, run
from explorer.plots import (
    bandwidth_figure,
    load_balance_figure,
    pipe_ratio_figure,
    timeline_figure,
    traffic_figure,
)
from kernels.vector_add import kernel as vector_add

SIZES = (10_000, 100_000, 1_000_000)
REFERENCE_MAX = 100_000  # the twin is too slow beyond this
TILE = 1024


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


def main() -> None:
    chip = hp.load("910B2")
    run(program_of_size(chip, 1000), chip)  # compile or load the numba cache
    loop_rate, ref_rate, e2e_rate = {}, {}, {}
    for size in SIZES:
        program = program_of_size(chip, size)
        n, inp = len(program), prepare(program, chip)
        repeats = 5 if n < 500_000 else 3
        loop_rate[size] = n / median_seconds(lambda inp=inp: execute(inp), repeats)
        e2e_rate[size] = n / median_seconds(lambda program=program: run(program, chip),
                                              repeats)
        line = (f"size={n:>9,}  jit loop {loop_rate[size]:>11,.0f} instr/s  "
                f"run() end to end {e2e_rate[size]:>11,.0f} instr/s")
        if size <= REFERENCE_MAX:
            ref_s = median_seconds(lambda inp=inp: execute(inp, "reference"),
                                   3 if n < 50_000 else 1)
            ref_rate[size] = n / ref_s
            line += f"  reference loop {ref_rate[size]:>8,.0f} instr/s " \
                    f"(jit/reference {loop_rate[size] / ref_rate[size]:,.0f}x)"
        print(line, flush=True)
    print(f"page recompute (simulate + 5 figures, default vector add): "
          f"{page_recompute_seconds() * 1e3:.0f} ms warm (median of 5)")
    big, ref_size = SIZES[-1], max(ref_rate)
    print(f"engine jit_instr_per_s={loop_rate[big]:.0f} "
          f"speedup_vs_reference={loop_rate[big] / ref_rate[ref_size]:.1f}")


if __name__ == "__main__":
    main()

"""Engine benchmark: ``python -m bench.engine``.

Builds vector-add programs of about 10^4, 10^5 and 10^6 instructions on a 48-vector-core
chip (Ascend 910B2, all 48 AIVs contending for HBM) and prints, per size, the numba
engine's and the pure-Python twin's instructions per second (medians of warm runs, both
measured in this process), then the wall time of one full playground recompute
(simulate + figures) for the default vector-add scenario. Never used as a test assertion.
"""
from __future__ import annotations

import statistics
import time

import hardware_presets as hp
from explorer.core import Scenario, simulate
from explorer.core.emulator.engine import run
from explorer.plots import (bandwidth_figure, load_balance_figure, pipe_ratio_figure,
                            timeline_figure, traffic_figure)
from kernels import vector_add

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
    jit_rate, ref_rate = {}, {}
    for size in SIZES:
        program = program_of_size(chip, size)
        n = len(program)
        jit_s = median_seconds(lambda: run(program, chip), 5 if n < 500_000 else 3)
        jit_rate[size] = n / jit_s
        line = f"size={n:>9,} jit: {jit_s * 1e3:9.1f} ms  {jit_rate[size]:>13,.0f} instr/s"
        if size <= REFERENCE_MAX:
            ref_s = median_seconds(lambda: run(program, chip, engine="reference"),
                                   3 if n < 50_000 else 1)
            ref_rate[size] = n / ref_s
            line += f"   reference: {ref_s:8.2f} s  {ref_rate[size]:>10,.0f} instr/s" \
                    f"   ratio {jit_rate[size] / ref_rate[size]:,.0f}x"
        print(line, flush=True)
    print(f"page recompute (simulate + 5 figures, default vector add): "
          f"{page_recompute_seconds() * 1e3:.0f} ms warm (median of 5)")
    big, ref_size = SIZES[-1], max(ref_rate)
    print(f"engine jit_instr_per_s={jit_rate[big]:.0f} "
          f"speedup_vs_reference={jit_rate[big] / ref_rate[ref_size]:.1f}")


if __name__ == "__main__":
    main()

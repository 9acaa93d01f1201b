"""Sweep benchmark: ``python -m bench.sweep``.

Two 10 x 10 grids on a 910B2 through the local executor with 1, 2 and all local worker
processes (one per core), the way the Sweep page and ``python -m explorer sweep`` run
them: 100 GEMMs (M and N from 128 to 1,280 by 128, K = 1,024, fp16, the default tiling)
and 100 vector adds (n from 2^14 to 2^23 elements, 4 to 40 cores, fp16). Each point is a
whole ``simulate``: program, emulated schedule, tables, metrics and the numerical check.
The result cache is empty at the start, so every scenario really runs. Prints, per worker
count, the pool's start-up, each grid's wall time and per-scenario cost, how the points
spread over the workers (``Throughput``: points, points/s and busy share of each), and
scenarios/s over both grids (start-up included), so the scaling is visible; the last line
is ``sweep scenarios_per_s=<float>`` with all local workers. Never used as a test
assertion.

What it showed: the workers' start-up (two interpreters importing numpy, pandas and the
emulator, numba loading its cache from NUMBA_CACHE_DIR) is about 1.3 s, the per-point
overhead (a JSON line each way) is negligible next to ``simulate``, and a GEMM point is
mostly its numerical check (float64 reference matmuls). With OpenBLAS's default of one
thread per core, two workers on two cores ran GEMM points 2.4x slower than with one BLAS
thread each, which the local executor now sets.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from explorer.core import Scenario
from explorer.core.sweep import ResultCache, Sweep, run_sweep
from explorer.core.sweep_exec import LocalExecutor

GRIDS = {
    "gemm": (Scenario.make("910B2", "gemm", {"K": 1024}),
             ["M=128:1280:128", "N=128:1280:128"]),
    "vector_add": (Scenario.make("910B2", "vector_add", {"tile": 4096}),
                   ["n=16384:8388608:*2", "block_dim=4:40:4"]),
}


def _warm(executor: LocalExecutor) -> float:
    """Start the workers (spawn, imports, numba cache load) with one tiny scenario each."""
    started = time.perf_counter()
    tiny = Sweep.parse(Scenario.make("910B2", "vector_add", {"n": 4096}),
                       [f"block_dim=1:{executor.workers}:1"])
    run_sweep(tiny, executor, cache=ResultCache())
    return time.perf_counter() - started


def scenarios_per_s(workers: int) -> float:
    """Both grids on ``workers`` local processes, start-up included; prints the details."""
    total, count = 0.0, 0
    with LocalExecutor(workers) as executor:
        startup = _warm(executor)
        total += startup
        print(f"{workers} workers: start-up {startup:.2f} s")
        for name, (base, axes) in GRIDS.items():
            sweep = Sweep.parse(base, axes)
            started = time.perf_counter()
            result = run_sweep(sweep, executor, cache=ResultCache())
            wall = time.perf_counter() - started
            total, count = total + wall, count + sweep.size
            print(f"  {name:<10} {sweep.size} scenarios ({result.refused} refused) in "
                  f"{wall:.2f} s: {wall / sweep.size * 1e3:.0f} ms per scenario, "
                  f"{sweep.size / wall:.1f} scenarios/s")
            for line in executor.throughput.lines()[:-1]:
                print(f"    {line}")
    rate = count / total
    print(f"  {workers} workers: {rate:.2f} scenarios/s")
    return rate


def main() -> None:
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parents[1]
                                                 / ".numba_cache"))
    every = os.cpu_count() or 1
    rates = {w: scenarios_per_s(w) for w in sorted({1, 2, every})}
    print("scaling: " + ", ".join(f"{w} workers {r:.2f}/s ({r / rates[1]:.2f}x)"
                                  for w, r in rates.items()))
    print(f"sweep scenarios_per_s={rates[every]:.3f}")


if __name__ == "__main__":
    main()

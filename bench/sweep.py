"""Sweep benchmark: ``python -m bench.sweep``.

Two 10 x 10 grids on a 910B2 through the local executor (2 worker processes), the way
the Sweep page and ``python -m explorer sweep`` run them: 100 GEMMs (M and N from 128 to
1,280 by 128, K = 1,024, fp16, the default tiling) and 100 vector adds (n from 2^14 to
2^23 elements, 4 to 40 cores, fp16). Each point is a whole ``simulate``: program, emulated
schedule, tables, metrics and the numerical check. The result cache is empty at the
start, so every scenario really runs. Prints the pool's start-up, each grid's wall time
and per-scenario cost; the last line is ``sweep scenarios_per_s=<float>`` over both grids
(start-up included). Never used as a test assertion.

What it showed: the workers' start-up (two interpreters importing numpy, pandas and the
emulator, numba loading its cache from NUMBA_CACHE_DIR) is about 1.3 s, the per-point
overhead (a JSON line each way) is negligible next to ``simulate``, and a GEMM point is
mostly its numerical check (float64 reference matmuls). With OpenBLAS's default of one
thread per core, two workers on two cores ran GEMM points 2.4x slower than with one
BLAS thread each, which the local executor now sets.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from explorer.core import Scenario
from explorer.core.sweep import ResultCache, Sweep, run_sweep
from explorer.core.sweep_exec import LocalExecutor

WORKERS = 2
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
                       [f"block_dim=1:{WORKERS}:1"])
    run_sweep(tiny, executor, cache=ResultCache())
    return time.perf_counter() - started


def main() -> None:
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parents[1]
                                                 / ".numba_cache"))
    total, count = 0.0, 0
    with LocalExecutor(WORKERS) as executor:
        startup = _warm(executor)
        total += startup
        print(f"worker start-up ({WORKERS} processes): {startup:.2f} s")
        for name, (base, axes) in GRIDS.items():
            sweep = Sweep.parse(base, axes)
            started = time.perf_counter()
            result = run_sweep(sweep, executor, cache=ResultCache())
            wall = time.perf_counter() - started
            total, count = total + wall, count + sweep.size
            print(f"{name:<10} {sweep.size} scenarios ({result.refused} refused) in {wall:.2f} s: "
                  f"{wall / sweep.size * 1e3:.0f} ms per scenario, "
                  f"{sweep.size / wall:.1f} scenarios/s")
    print(f"sweep scenarios_per_s={count / total:.3f}")


if __name__ == "__main__":
    main()

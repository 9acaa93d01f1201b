"""GEMM benchmark: ``python -m bench.gemm``.

Prints, for an fp16 4096 x 4096 x 4096 GEMM on the Ascend 910B2 with its default tiling,
the simulated time, achieved TFLOPS and aic_cube_ratio and the wall time to simulate it
(the whole simulate(): build, emulate, tables, metrics, numerics of the verified block),
then the wall time of the numerical execution of a 1024^3 fp16 GEMM (all of C, tile by
tile as the cube does it) next to numpy's float32 matmul of the same shape, measured side
by side (medians). Never used as a test assertion.
"""
from __future__ import annotations

import numpy as np

from bench.engine import median_seconds
from explorer.core import Scenario, simulate
from kernels.common.formats import round_to
from kernels.gemm import kernel as gemm

SHAPE = {"M": 4096, "N": 4096, "K": 4096, "dtype_in": "fp16", "dtype_out": "fp16"}
NUMERIC = {"M": 1024, "N": 1024, "K": 1024, "dtype_in": "fp16", "dtype_out": "fp16"}


def simulate_big() -> float:
    scenario = Scenario.make("910B2", "gemm", SHAPE)
    simulate(scenario)  # warm: numba cache, imports
    wall = median_seconds(lambda: simulate(scenario), 3)
    m = simulate(scenario).metrics
    peak = scenario.chip().peak_tflops("fp16")
    print(f"fp16 4096^3 on 910B2: simulated {m['makespan_us']:.1f} us, "
          f"{m['achieved_tflops']:.1f} TFLOPS of {peak:.1f} peak "
          f"({m['achieved_tflops'] / peak:.0%}), aic_cube_ratio {m['aic_cube_ratio']:.3f}, "
          f"{m['instructions']:,} instructions; wall {wall:.3f} s per simulate()")
    return wall


def numerics_ratio() -> float:
    chip = Scenario.make("910B2", "gemm", NUMERIC).chip()
    p = gemm.check(chip, NUMERIC)
    rng = np.random.default_rng(0)
    M, N, K = p["M"], p["N"], p["K"]  # all of C (make_inputs would verify a 512^2 block)
    inputs = {"A": round_to(rng.standard_normal((M, K)), "fp16"),
              "B": round_to(rng.standard_normal((K, N)), "fp16")}
    a32 = np.asarray(inputs["A"], np.float32)
    b32 = np.asarray(inputs["B"], np.float32)
    ours = median_seconds(lambda: gemm.execute(p, inputs), 5)
    blas = median_seconds(lambda: a32 @ b32, 5)
    print(f"numerics 1024^3 fp16 (tile by tile, fp32 accumulate): {ours * 1e3:.1f} ms; "
          f"numpy float32 matmul: {blas * 1e3:.1f} ms; ratio {ours / blas:.2f}x")
    return ours / blas


def main() -> None:
    wall = simulate_big()
    ratio = numerics_ratio()
    print(f"gemm sim_wall_s={wall:.3f} numerics_vs_numpy={ratio:.2f}")


if __name__ == "__main__":
    main()

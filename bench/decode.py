"""Decode benchmark: ``python -m bench.decode``.

One full decode step of Llama 3 70B, batch 64, every sequence at 8K context, on the
Ascend 910B2, emulated at tile granularity: each of the 80 layers is the same program
(KV append, kernel boundary, attention over 64 x 8 KV heads x 8192 tokens), emulated
once and replicated (exact; see explorer/core/decode_step.py), plus the linear layers'
roofline ESTIMATE. The model does not fit one 910B2 (141 GB of fp16 weights, 172 GB of
KV): the scenario allows overcommit and the figures are one device doing all the work.

Prints, per attention implementation, the simulated step time, tokens/s, the attention's
achieved HBM bandwidth against the peak, the instructions the step stands for and the
wall time of the whole ``simulate_decode`` (build, emulate, tables, metrics, numerics of
the verified sample, step model; median of 3 after a warm-up). The final line is for the
default implementation ("vector"). Never used as a test assertion.
"""
from __future__ import annotations

from bench.engine import median_seconds
from explorer.core import Scenario
from explorer.core.decode_step import simulate_decode

WORKLOAD = {"model": "llama3-70b", "batch": 64, "distribution": "equal", "mean_len": 8192,
            "max_len": 8192, "kv_dtype": "fp16", "allow_overcommit": True}
IMPLS = ("cube_vector", "split_kv", "vector")  # the default last: the final line's


def bench(impl: str) -> tuple[float, int]:
    """Wall seconds of one simulate_decode and the step's instruction count."""
    scenario = Scenario.make("910B2", "decode", {**WORKLOAD, "impl": impl})
    simulate_decode(scenario)  # warm: numba cache, imports
    wall = median_seconds(lambda: simulate_decode(scenario), 3)
    step = simulate_decode(scenario)
    per_layer = int(step.result.metrics["instructions"])
    total = per_layer * step.layers
    print(f"{impl:12s} step {step.step_ns / 1e6:7.2f} ms (attention {step.attention_ns / 1e3:7.1f} "
          f"us + append {step.append_ns / 1e3:5.1f} us per layer, x{step.layers}, + linear "
          f"{step.linear_ns * step.layers / 1e6:.2f} ms ESTIMATED), "
          f"{step.tokens_per_s:7.0f} tokens/s, attention HBM {step.attention_hbm_GBps:6.0f} of "
          f"{step.hbm_peak_GBps:.0f} GB/s, {total:,} instructions ({per_layer:,} emulated, "
          f"layer replicated), wall {wall:.3f} s")
    return wall, total


def main() -> None:
    for impl in IMPLS:
        wall, total = bench(impl)
    print(f"decode step_sim_wall_s={wall:.3f} instructions={total}")


if __name__ == "__main__":
    main()

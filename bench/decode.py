"""Decode benchmark: ``python -m bench.decode``.

One full decode step of Llama 3 70B, batch 64, every sequence at 8K context, on the
Ascend 910B2, every op emulated at tile granularity: one decoder layer (RMSNorm, QKV,
RoPE, KV append, attention over 64 x 8 KV heads x 8192 tokens, O, RMSNorm, gate/up,
SwiGLU, down), each op its own launch, emulated once and replicated over the 80 layers
(see explorer/core/decode_step.py), then the final norm and the LM head. The model does
not fit one 910B2 (141 GB of fp16 weights, 172 GB of KV): the scenario allows overcommit
and the figures are one device doing all the work.

Prints, per attention implementation, the step time, tokens/s, the attention's achieved
HBM bandwidth and the wall time of the whole ``simulate_decode`` (build, emulate, tables,
metrics, numerics of the verified sample, step model; median of 3 after a warm-up); then
the default implementation's step op by op and, last,
``decode ops_emulated=N step_sim_wall_s=S instructions=I``: N ops of the layer and head
emulated, I the instructions of the emulated program (one layer and the LM head; the
step stands for about ``layers`` times as many). Never used as a test assertion.
"""
from __future__ import annotations

from bench.engine import median_seconds
from explorer.core import Scenario
from explorer.core.decode_step import DecodeStep, linear_roofline, simulate_decode

WORKLOAD = {"model": "llama3-70b", "batch": 64, "distribution": "equal", "mean_len": 8192,
            "max_len": 8192, "kv_dtype": "fp16", "allow_overcommit": True}
IMPLS = ("cube_vector", "split_kv", "vector")  # the default last: the final lines'


def bench(impl: str) -> tuple[float, DecodeStep]:
    """Wall seconds of one simulate_decode, and the step."""
    scenario = Scenario.make("910B2", "decode", {**WORKLOAD, "impl": impl})
    simulate_decode(scenario)  # warm: numba cache, imports
    wall = median_seconds(lambda: simulate_decode(scenario), 3)
    step = simulate_decode(scenario)
    print(f"{impl:12s} step {step.step_ns / 1e6:7.2f} ms, {step.tokens_per_s:6.0f} tokens/s, "
          f"attention {step.attention_ns / 1e3:7.1f} us per layer at "
          f"{step.attention_hbm_GBps:5.0f} of {step.hbm_peak_GBps:.0f} GB/s, "
          f"{int(step.result.metrics['instructions']):,} instructions emulated, "
          f"wall {wall:.3f} s")
    return wall, step


def print_ops(step: DecodeStep) -> None:
    """The step op by op: time per run and per step, share, HBM bytes per run."""
    print(f"{'op':11s} {'runs':>5s} {'us/run':>9s} {'ms/step':>9s} {'share':>6s} "
          f"{'HBM MB/run':>11s}")
    for row in step.ops.itertuples():
        print(f"{row.op:11s} {row.count:5d} {row.ns / 1e3:9.1f} {row.step_ns / 1e6:9.3f} "
              f"{row.share:6.1%} {row.hbm_bytes / 1e6:11.1f}")
    p = step.result.params
    roof, bound = linear_roofline(step.model, step.result.chip, p["batch"], p["weight_dtype"])
    print(f"linear ops emulated {step.linear_ns * step.layers / 1e6:.2f} ms per step "
          f"(+ LM head {step.head_ns / 1e6:.2f} ms); roofline reference of all weights "
          f"{roof / 1e6:.2f} ms ({bound}-bound)")


def main() -> None:
    for impl in IMPLS:
        wall, step = bench(impl)
    print_ops(step)
    print(f"decode ops_emulated={len(step.ops)} step_sim_wall_s={wall:.3f} "
          f"instructions={int(step.result.metrics['instructions'])}")


if __name__ == "__main__":
    main()

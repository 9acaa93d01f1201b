"""Load-balance benchmark: ``python -m bench.balance``.

The emulated decode attention (vector implementation) on 24 vector cores of a 910B2,
for batches of 16, 32, 64 and 128 sequences with context lengths uniform over 128..8192
tokens, 200 seeds each. Every sequence is one task: the model is one KV head with a GQA
group of 8 and head_dim 128 (one KV head of Llama 3), so the batch is the task count.
For round-robin, LPT and split-KV + LPT it prints the mean efficiency (mean core busy /
max core busy over the 24 cores, measured on the emulated schedule: a core's busy time is
the union of its instructions' intervals, SyncAll waits excluded) and its spread, and the
ceiling 1 - e1/e2 of
what LPT's gain over round-robin can cut. The emulation is the same program and engine
simulate() uses (build + run; tables, metrics and numerics skipped). Two worker
processes. Never used as a test assertion.
"""
from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import hardware_presets as hp
from explorer.core.emulator.engine import run
from explorer.core.scheduling import ceiling
from explorer.core.tables import union_length
from kernels.common.program import Kind
from kernels.decode import kernel as decode

CORES = 24
BATCHES = (16, 32, 64, 128)
SEEDS = 200
SHAPE = {"model": "custom", "custom_layers": 1, "custom_q_heads": 8, "custom_kv_heads": 1,
         "custom_head_dim": 128, "custom_hidden": 1024, "custom_params_B": 0.1,
         "distribution": "uniform", "mean_len": 4160, "max_len": 8192,
         "phases": "attention", "block_dim": CORES}
VARIANTS = {"round_robin": {"policy": "round_robin"}, "lpt": {"policy": "lpt"},
            "split+lpt": {"policy": "lpt", "impl": "split_kv"}}


def efficiency(batch: int, variant: str, seed: int) -> float:
    """Mean / max of the cores' busy spans on the emulated schedule."""
    chip = hp.load("910B2")
    p = decode.check(chip, {**SHAPE, "batch": batch, **VARIANTS[variant]})
    prog = decode.build(chip, p, seed=seed)
    sched = run(prog, chip)
    work = prog.cols["kind"] != Kind.BARRIER
    busy = union_length(prog.cols["core"][work].astype(np.int64), sched.start_ns[work],
                        sched.end_ns[work], chip.num_cores)
    busy = busy[list(chip.vector_core_ids())[:CORES]]
    return float(busy.mean() / busy.max())


def _cell(args: tuple[int, str]) -> tuple[int, str, np.ndarray]:
    batch, variant = args
    return batch, variant, np.array([efficiency(batch, variant, s) for s in range(SEEDS)])


def main() -> None:
    started = time.perf_counter()
    cells = [(b, v) for b in BATCHES for v in VARIANTS]
    with ProcessPoolExecutor(2) as pool:
        results = {(b, v): e for b, v, e in pool.map(_cell, cells)}
    for b in BATCHES:
        line = ", ".join(f"{v} {results[b, v].mean():.3f} (sd {results[b, v].std():.3f})"
                         for v in VARIANTS)
        rr, lpt = results[b, "round_robin"].mean(), results[b, "lpt"].mean()
        print(f"batch {b:3d} on {CORES} cores: {line}; LPT over round-robin can cut at most "
              f"{max(0.0, ceiling(rr, lpt)):.1%}")
    print(f"{len(cells) * SEEDS} emulations in {time.perf_counter() - started:.1f} s")
    print(f"balance lpt_eff_b64={results[64, 'lpt'].mean():.3f} "
          f"split_eff_b16={results[16, 'split+lpt'].mean():.3f}")


if __name__ == "__main__":
    main()

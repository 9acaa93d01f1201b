"""The GEMM's own advisor rules: split-K for too few tasks, a tile shape that fills the
tail wave, a swizzled order when L2 misses. Each reads a run (duck-typed: ``params``,
``metrics``) and the advisor's context (``bound``, ``accepts(changes)``)."""
from __future__ import annotations

from kernels.common.record import percent, tip
from kernels.gemm.kernel import plan


def waves(params: dict) -> tuple[int, int, int]:
    """(tasks, waves, block_dim) of a GEMM's task grid."""
    grid = plan(params).grid
    return len(grid.x), grid.waves, grid.block_dim


def split_k(result, ctx) -> list[tuple]:
    p = result.params
    tasks, _, cores = waves(p)
    if tasks * 2 > cores or p["grid_z"] > 1:  # once split, more splits mostly add reduction
        return []
    z = min(64, max(2, cores // tasks * p["grid_z"]), -(-p["K"] // p["base_k"]))
    return [tip("advisor.tip.split_k", {"grid_z": z}, "makespan_us", "down",
                None, tasks=tasks, cores=cores, z=z)]


def tail(result, ctx) -> list[tuple]:
    """A tile of the same area (so the same traffic per flop) whose task count fills the
    waves better: base_m doubled and base_n halved, or the other way round."""
    if ctx["bound"] != "tail":
        return []
    p = result.params
    tasks, n_waves, cores = waves(p)
    best, best_eff = None, tasks / (n_waves * cores)
    for up, down in (("base_m", "base_n"), ("base_n", "base_m")):
        trial = {**p, up: p[up] * 2, down: p[down] // 2}
        if trial[down] < 16 or trial[down] % 16 or not ctx["accepts"](trial):
            continue
        t, w, c = waves(trial)
        if t / (w * c) > best_eff + 0.05:
            best, best_eff = {up: trial[up], down: trial[down]}, t / (w * c)
    if best is None:
        return []
    return [tip("advisor.tip.tail", best, "makespan_us", "down", None, tasks=tasks,
                cores=cores, tail=tasks % cores, eff=percent(best_eff), change=", ".join(
                    f"{k} = {v}" for k, v in best.items()))]


def swizzle(result, ctx) -> list[tuple]:
    p = result.params
    if ctx["bound"] != "memory" or p["policy"] == "swizzle":
        return []
    return [tip("advisor.tip.swizzle", {"policy": "swizzle"}, "l2_hit_rate", "up", None,
                hit=percent(result.metrics["l2_hit_rate"]))]


def buffer_use(chip, p: dict) -> tuple[str, float]:
    """The fullest of L1 / L0A / L0B / L0C / UB and its share."""
    from kernels.gemm.params import buffer_use as use_of
    use = use_of(chip, p)
    name = max(use, key=lambda b: use[b][0] / use[b][1])
    return name, use[name][0] / use[name][1]


RULES = (split_k, tail, swizzle)

"""The GEMM's own advisor rules: split-K for too few tasks, a tile shape that fills the
tail wave, a swizzled order when L2 misses. Each reads a run (duck-typed: ``params``,
``metrics``) and the advisor's context (``bound``, ``accepts(changes)``)."""
from __future__ import annotations

from dataclasses import replace

from kernels.common.record import percent, tip
from kernels.gemm.kernel import plan
from kernels.gemm.params import GemmParams
from kernels.gemm.params import buffer_use as use_of


def waves(params: dict) -> tuple[int, int, int]:
    """(tasks, waves, block_dim) of a GEMM's task grid."""
    return grid_waves(GemmParams.of(params))


def grid_waves(p: GemmParams) -> tuple[int, int, int]:
    """``waves`` of typed parameters (the rules try changed tilings with it)."""
    grid = plan(p).grid
    return len(grid.x), grid.waves, grid.block_dim


def split_k(result, ctx) -> list[tuple]:
    p = GemmParams.of(result.params)
    tasks, _, cores = grid_waves(p)
    if tasks * 2 > cores or p.grid_z > 1:  # once split, more splits mostly add reduction
        return []
    z = min(64, max(2, cores // tasks * p.grid_z), p.k_steps)
    return [tip("advisor.tip.split_k", {"grid_z": z}, "makespan_us", "down",
                None, tasks=tasks, cores=cores, z=z)]


def tail(result, ctx) -> list[tuple]:
    """A tile of the same area (so the same traffic per flop) whose task count fills the
    waves better: base_m doubled and base_n halved, or the other way round."""
    if ctx["bound"] != "tail":
        return []
    p = GemmParams.of(result.params)
    tasks, n_waves, cores = grid_waves(p)
    best, best_eff = None, tasks / (n_waves * cores)
    for up, down in (("base_m", "base_n"), ("base_n", "base_m")):
        change = {up: getattr(p, up) * 2, down: getattr(p, down) // 2}
        if change[down] < 16 or change[down] % 16 or \
                not ctx["accepts"]({**result.params, **change}):
            continue
        t, w, c = grid_waves(replace(p, **change))
        if t / (w * c) > best_eff + 0.05:
            best, best_eff = change, t / (w * c)
    if best is None:
        return []
    return [tip("advisor.tip.tail", best, "makespan_us", "down", None, tasks=tasks,
                cores=cores, tail=tasks % cores, eff=percent(best_eff), change=", ".join(
                    f"{k} = {v}" for k, v in best.items()))]


def swizzle(result, ctx) -> list[tuple]:
    if ctx["bound"] != "memory" or GemmParams.of(result.params).policy == "swizzle":
        return []
    return [tip("advisor.tip.swizzle", {"policy": "swizzle"}, "l2_hit_rate", "up", None,
                hit=percent(result.metrics["l2_hit_rate"]))]


def buffer_use(chip, params: dict) -> tuple[str, float]:
    """The fullest of L1 / L0A / L0B / L0C / UB and its share."""
    use = use_of(chip, GemmParams.of(params))
    name = max(use, key=lambda b: use[b][0] / use[b][1])
    return name, use[name][0] / use[name][1]


RULES = (split_k, tail, swizzle)

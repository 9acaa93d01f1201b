"""The decode kernel's own advisor rules: longest-first scheduling for uneven contexts,
an int8 KV cache when HBM bounds the step. Each reads a run (duck-typed: ``params``, read
once as `DecodeParams`) and the advisor's context (``bound``, ``balance``, ``thresholds``,
``shares``)."""
from __future__ import annotations

from kernels.common.record import percent, tip
from kernels.decode import params as dp


def lpt(result, ctx) -> list[tuple]:
    p = dp.DecodeParams.of(result.params)
    uneven = p.distribution != "equal"  # equal lengths: every order is as good
    if p.policy == "static" and uneven and \
            ctx["balance"] < ctx["thresholds"]["load_balance"]:
        return [tip("advisor.tip.lpt", {"policy": "lpt"}, "load_balance_mean_max",
                    "up", 1 / ctx["balance"], balance=percent(ctx["balance"]))]
    return []


def int8_kv(result, ctx) -> list[tuple]:
    p = dp.DecodeParams.of(result.params)
    if ctx["bound"] == "memory" and p.kv_dtype in ("fp16", "bf16") and p.phases != "append":
        return [tip("advisor.tip.int8_kv", {"kv_dtype": "int8_token"}, "makespan_us",
                    "down", None, memory=ctx["shares"]["memory"])]
    return []


def buffer_use(chip, params: dict) -> tuple[str, float]:
    """UB used by the implementation's buffers at its tile size."""
    p = dp.DecodeParams.of(params)
    model = p.model_shape
    if p.impl == "cube_vector":
        used = sum(dp.cube_buffers(p, model, p.tile_tokens)["UB"].values())
    else:
        used = sum(dp.vector_ub_bytes(p, model, p.tile_tokens, p.heads_per_pass).values())
    return "UB", used / chip.ub_bytes


RULES = (lpt, int8_kv)

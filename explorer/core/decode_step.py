"""One decode step of a whole model, every op of a layer emulated.

``simulate_decode(scenario)`` emulates the program of ``phases = "layer"``
(`kernels.decode.layer`): one decoder layer, every op a kernel launch with a SyncAll
after it (RMSNorm -> QKV -> RoPE -> KV append -> attention -> O -> RMSNorm -> gate/up ->
SwiGLU -> down), then the final RMSNorm and the LM head, and builds the step from it:

    step = layers x (sum of the layer's ops)  +  final norm + LM head      all emulated

An op's time is the span from the end of the launch before it to the end of its own
launch (its SyncAll included), so the ops add up to the makespan exactly. Replicating
the layer is exact up to one detail: every layer runs the same program on its own
weights and cache (disjoint GM regions, each layer cold in L2: a stale region is older
than every new one, so LRU evicts stale regions first); only the layer's input, the
batch x hidden activation the previous layer wrote, would be an L2 hit for layers after
the first and is an HBM read here (batch x hidden x 2 bytes, a few hundred ns at most).
tests/test_decode_step.py checks replication against emulating several layers in one
program. A scenario of another ``phases`` (the append or attention alone) gets its step
from the same scenario with ``phases = "layer"``. The linear roofline
(``linear_roofline``) stays as a reference line, never as a part of the step.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from kernels.decode import kernel as decode
from kernels.decode import kv_append, layer
from kernels.decode.kv_memory import max_batch_that_fits
from kernels.decode.numerics import verified_pairs
from kernels.decode.params import DecodeParams, cube_buffers, vector_ub_bytes
from kernels.models import ModelShape

from .scenario import Scenario
from .simulate import Result, simulate

#: columns of ``DecodeStep.ops``
OP_COLUMNS = ("op", "kind", "count", "ns", "step_ns", "hbm_bytes", "l2_bytes", "share")


@dataclass(frozen=True, eq=False)
class DecodeStep:
    """A decode step: the emulated layer and LM head, per op, and the totals."""

    result: Result  # the emulated program: one layer, then the final norm and the LM head
    model: ModelShape
    lengths: np.ndarray  # context length per sequence (counts the new token)
    layers: int  # the model's layers; one is emulated and replicated
    ops: pd.DataFrame  # one row per op (OP_COLUMNS): time and bytes of one run and per step
    seq_done_ns: np.ndarray  # per sequence: its attention's end, from the attention start
    kv: dict  # decode_workload.kv_memory for the batch and layout
    fit: dict  # decode_workload.max_batch_that_fits at the mean length
    append_bytes: dict  # GM bytes of one layer's append, both strategies
    ub_plan: dict  # buffer -> bytes of the attention's tiles
    notes: tuple[tuple[str, dict], ...]

    def _ns(self, ops) -> float:
        rows = self.ops[self.ops["op"].isin(ops)]
        return float(rows["ns"].sum())

    @property
    def append_ns(self) -> float:
        """One layer's KV append (up to the end of its kernel boundary)."""
        return self._ns(("kv_append",))

    @property
    def attention_ns(self) -> float:
        return self._ns(("attention",))

    @property
    def linear_ns(self) -> float:
        """One layer's linear layers (QKV, O, gate/up, down), emulated."""
        return self._ns(layer.LINEAR_OPS)

    @property
    def layer_ns(self) -> float:
        return self._ns(layer.LAYER_OPS)

    @property
    def head_ns(self) -> float:
        """The final norm and the LM head, once per step."""
        return self._ns(layer.HEAD_OPS)

    @property
    def step_ns(self) -> float:
        return float(self.ops["step_ns"].sum())

    @property
    def tokens_per_s(self) -> float:
        """Tokens the batch produces per second (one per sequence per step)."""
        return len(self.lengths) / self.step_ns * 1e9 if self.step_ns > 0 else 0.0

    @property
    def latency_p50_ns(self) -> float:
        """Median over sequences of their attention's completion within a layer."""
        return float(np.percentile(self.seq_done_ns, 50)) if len(self.seq_done_ns) else 0.0

    @property
    def latency_p99_ns(self) -> float:
        return float(np.percentile(self.seq_done_ns, 99)) if len(self.seq_done_ns) else 0.0

    @property
    def fits_hbm(self) -> bool:
        return self.kv["reserved_bytes"] + self.fit["weight_bytes"] <= self.fit["hbm_bytes"]

    @property
    def attention_hbm_bytes(self) -> float:
        """HBM bytes the attention moved (one layer)."""
        return float(self.ops.loc[self.ops["op"] == "attention", "hbm_bytes"].sum())

    @property
    def attention_hbm_GBps(self) -> float:
        """Achieved HBM bandwidth of the attention (bytes / ns = GB/s)."""
        ns = self.attention_ns
        return self.attention_hbm_bytes / ns if ns > 0 else 0.0

    @property
    def hbm_peak_GBps(self) -> float:
        return float(self.result.chip.hbm_bytes_per_ns)


def linear_roofline(model: ModelShape, chip, batch: int, weight_dtype: str) -> tuple[float, str]:
    """The linear layers' roofline in ns per step (a reference line, not part of the step):
    every weight streamed once from HBM, 2 x params x batch flops on the cube at its fp16
    (bf16 for bf16 weights) peak; the larger of the two, and which it was."""
    mem = model.weight_bytes(weight_dtype) / chip.hbm_bytes_per_ns
    prec = "bf16" if weight_dtype == "bf16" and "bf16" in chip.cube_precisions else "fp16"
    flops = 2.0 * model.params * batch / (chip.peak_tflops(prec) * 1e3)
    return (mem, "memory") if mem >= flops else (flops, "compute")


def op_table(result: Result, layers: int) -> pd.DataFrame:
    """Per launch of the layer program: its time (end of the launch before it to its own
    end), how often a step runs it, and the HBM and L2 bytes it moved."""
    tl = result.timeline
    names = [n for n in tl["launch"].cat.categories if n]  # "" is the categorical's blank
    ends = tl.groupby("launch", observed=False)["end_ns"].max().reindex(names).fillna(0.0)
    ends = np.maximum.accumulate(ends.to_numpy())
    ns = np.diff(np.concatenate([[0.0], ends]))
    served = tl["served_from"].astype(str)
    moved = {src: tl[served == src].groupby("launch", observed=False)["bytes"].sum()
             .reindex(names).fillna(0).to_numpy() for src in ("HBM", "L2")}
    count = np.array([layers if n in layer.LAYER_OPS else 1 for n in names])
    table = pd.DataFrame({"op": names, "kind": [layer.OP_KIND[n] for n in names],
                          "count": count, "ns": ns, "step_ns": ns * count,
                          "hbm_bytes": moved["HBM"], "l2_bytes": moved["L2"]})
    total = table["step_ns"].sum()
    table["share"] = table["step_ns"] / total if total > 0 else 0.0
    return table[list(OP_COLUMNS)]


def _seq_done(result: Result, batch: int) -> np.ndarray:
    """Per sequence, its attention's last instruction's end, from the attention's start."""
    tl = result.timeline
    attn = tl[tl["launch"] == "attention"]
    attn = attn[attn["op"] != "SyncAll"]
    if attn.empty:
        return np.zeros(0)
    start = float(tl.loc[tl["launch"] == "kv_append", "end_ns"].max())
    done = attn[attn["task"] >= 0].groupby("task")["end_ns"].max()
    per_seq = np.zeros(batch)
    per_seq[done.index.to_numpy()] = done.to_numpy() - start
    return per_seq


def layer_result(scenario: Scenario, result: Result | None = None) -> Result:
    """The emulated layer program of ``scenario`` (``result`` when it already is one)."""
    if result is not None and result.params["phases"] == "layer":
        return result
    if result is None and scenario.params_dict.get("phases", "layer") == "layer":
        return simulate(scenario)
    return simulate(scenario.replace(params={"phases": "layer"}))


def simulate_decode(scenario: Scenario, result: Result | None = None) -> DecodeStep:
    """The decode step of a "decode" scenario (``result``: its simulate(), if at hand)."""
    result = layer_result(scenario, result)
    p = DecodeParams.of(result.params)
    model = p.model_shape
    lengths, layout = p.draw(np.random.default_rng(scenario.seed))
    kv = decode.memory_check(result.chip, replace(p, allow_overcommit=True), lengths, layout)
    fit = max_batch_that_fits(model, result.chip, int(round(float(np.mean(lengths)))),
                              p.kv_dtype, p.weight_dtype,
                              block_size=p.block_size if p.layout == "paged" else None)
    plan = cube_buffers(p, model, p.tile_tokens) if p.impl == "cube_vector" else \
        {"UB": vector_ub_bytes(p, model, p.tile_tokens, p.heads_per_pass)}
    notes = [("note.decode_replicated", {"layers": model.layers})]
    if kv["reserved_bytes"] + fit["weight_bytes"] > fit["hbm_bytes"]:
        need = (kv["reserved_bytes"] + fit["weight_bytes"]) / 2 ** 30  # GiB, as the page
        notes.append(("note.decode_overcommit", {"need_GiB": f"{need:,.2f}",
                                                 "hbm_GiB": f"{fit['hbm_bytes'] / 2 ** 30:,.2f}"}))
    if p.sparse != "none":
        notes.append(("note.decode_sparse_numerics", {"policy": p.sparse}))
    sample = verified_pairs(p, lengths)
    if sample.truncated:
        notes.append(("note.decode_truncated", {"pairs": sample.truncated,
                                                "tokens": min(sample.tokens)}))
    return DecodeStep(result, model, lengths, model.layers, op_table(result, model.layers),
                      _seq_done(result, p.batch), kv, fit,
                      kv_append.traffic(p, model, lengths), plan,
                      tuple(result.notes) + tuple(notes))

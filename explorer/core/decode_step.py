"""One decode step of a whole model from one emulated layer.

``simulate_decode(scenario)`` emulates one layer (KV append, kernel boundary, attention;
`kernels.decode.kernel`) and builds the step from it:

    step = layers x (append + attention)   emulated, one layer replicated
         + linear layers                   ESTIMATED: max(weight bytes / HBM bandwidth,
                                           2 x params x batch / cube peak)

Replicating the layer is exact, not an approximation: every layer runs the same program
on its own cache (disjoint GM regions), each layer starts after a SyncAll with every pipe
drained, and the L2 holds nothing a later layer reads (its cache regions are new; a
stale region is always older than every new one, so LRU evicts stale regions first and
the new layer's hits and misses are those of a cold L2). tests/test_decode_step.py
checks it against emulating several layers in one program. The result says so in its
notes. The linear layers (QKV, O, MLP, LM head) are not emulated: their time is a
roofline estimate and is labelled as one everywhere it is shown.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernels.decode import kernel as decode

from kernels.decode import kv_append
from kernels.decode.numerics import verified_pairs
from kernels.decode.params import cube_buffers, model_of, vector_ub_bytes
from kernels.decode.workload import max_batch_that_fits
from kernels.models import ModelShape

from .scenario import Scenario
from .simulate import Result, simulate


@dataclass(frozen=True, eq=False)
class DecodeStep:
    """A decode step: the emulated layer, the estimated linear part, and the totals."""

    result: Result  # the emulated layer (append + attention)
    model: ModelShape
    lengths: np.ndarray  # context length per sequence (counts the new token)
    layers: int  # the model's layers; one is emulated and replicated
    append_ns: float  # per layer, emulated (up to the kernel boundary)
    attention_ns: float  # per layer, emulated
    linear_ns: float  # per layer, ESTIMATED
    linear_bound: str  # "memory" or "compute": which roofline term sets the estimate
    seq_done_ns: np.ndarray  # per sequence: its attention's end, from the attention start
    kv: dict  # decode_workload.kv_memory for the batch and layout
    fit: dict  # decode_workload.max_batch_that_fits at the mean length
    append_bytes: dict  # GM bytes of one layer's append, both strategies
    ub_plan: dict  # buffer -> bytes of the attention's tiles
    attention_hbm_bytes: float  # HBM bytes the attention phase moved (one layer)
    notes: tuple[tuple[str, dict], ...]

    @property
    def step_ns(self) -> float:
        return self.layers * (self.append_ns + self.attention_ns + self.linear_ns)

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
    def attention_hbm_GBps(self) -> float:
        """Achieved HBM bandwidth of the attention phase (bytes / ns = GB/s)."""
        return self.attention_hbm_bytes / self.attention_ns if self.attention_ns > 0 else 0.0

    @property
    def hbm_peak_GBps(self) -> float:
        return float(self.result.chip.hbm_bytes_per_ns)


def linear_estimate(model: ModelShape, chip, batch: int, weight_dtype: str) -> tuple[float, str]:
    """ESTIMATE of one step's linear layers in ns: every weight streamed once from HBM,
    2 x params x batch flops on the cube at its fp16 (bf16 for bf16 weights) peak; the
    larger of the two, and which it was. Embedding gathers and activations are ignored."""
    mem = model.weight_bytes(weight_dtype) / chip.hbm_bytes_per_ns
    prec = "bf16" if weight_dtype == "bf16" and "bf16" in chip.cube_precisions else "fp16"
    flops = 2.0 * model.params * batch / (chip.peak_tflops(prec) * 1e3)
    return (mem, "memory") if mem >= flops else (flops, "compute")


def _phases(result: Result, params: dict) -> tuple[float, float, np.ndarray]:
    """(append ns, attention ns, per-sequence attention end) from the layer's timeline."""
    tl = result.timeline
    makespan = result.makespan_ns
    if params["phases"] == "append":
        return makespan, 0.0, np.zeros(0)
    boundary = 0.0
    if params["phases"] == "both":
        boundary = float(tl.loc[tl["op"] == "SyncAll", "end_ns"].min())
    attn = tl[(tl["start_ns"] >= boundary) & (tl["op"] != "SyncAll")
              & ~tl["op"].isin(decode.APPEND_OPS)]
    done = attn.groupby("task", observed=True)["end_ns"].max()
    per_seq = np.zeros(params["batch"])
    per_seq[done.index.to_numpy()] = done.to_numpy() - boundary
    return boundary, makespan - boundary, per_seq


def _attention_hbm_bytes(result: Result, boundary: float) -> float:
    tl = result.timeline
    sel = (tl["start_ns"] >= boundary) & (tl["served_from"] == "HBM")
    return float(tl.loc[sel, "bytes"].sum())


def simulate_decode(scenario: Scenario, result: Result | None = None) -> DecodeStep:
    """The decode step of a "decode" scenario (``result``: its simulate(), if at hand)."""
    result = result if result is not None else simulate(scenario)
    p = result.params
    model = model_of(p)
    lengths, layout = decode.workload(p, np.random.default_rng(scenario.seed))
    append_ns, attention_ns, seq_done = _phases(result, p)
    linear, bound = linear_estimate(model, result.chip, p["batch"], p["weight_dtype"])
    kv = decode.memory_check(result.chip, {**p, "allow_overcommit": True}, lengths, layout)
    fit = max_batch_that_fits(model, result.chip, int(round(float(np.mean(lengths)))),
                              p["kv_dtype"], p["weight_dtype"],
                              block_size=p["block_size"] if p["layout"] == "paged" else None)
    plan = cube_buffers(p, model, p["tile_tokens"]) if p["impl"] == "cube_vector" else \
        {"UB": vector_ub_bytes(p, model, p["tile_tokens"], p["heads_per_pass"])}
    notes = [("note.decode_replicated", {"layers": model.layers}),
             (f"note.decode_linear_estimate_{bound}", {})]
    if kv["reserved_bytes"] + fit["weight_bytes"] > fit["hbm_bytes"]:
        need = (kv["reserved_bytes"] + fit["weight_bytes"]) / 1e9
        notes.append(("note.decode_overcommit", {"need_GB": f"{need:.1f}",
                                                 "hbm_GB": f"{fit['hbm_bytes'] / 1e9:.1f}"}))
    if p["sparse"] != "none":
        notes.append(("note.decode_sparse_numerics", {"policy": p["sparse"]}))
    sample = verified_pairs(p, lengths)
    if sample.truncated:
        notes.append(("note.decode_truncated", {"pairs": sample.truncated,
                                                "tokens": min(sample.tokens)}))
    boundary = append_ns if p["phases"] == "both" else 0.0
    return DecodeStep(result, model, lengths, model.layers, append_ns, attention_ns,
                      linear / model.layers, bound, seq_done, kv, fit,
                      kv_append.traffic(p, model, lengths), plan,
                      _attention_hbm_bytes(result, boundary) if attention_ns else 0.0,
                      tuple(result.notes) + tuple(notes))

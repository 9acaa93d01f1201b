"""Memory and time of a sparse-attention policy against dense decode, from emulation.

``simulate_sparse(scenario)`` takes a "decode" scenario with a sparse policy and emulates
three one-layer programs: the dense step (sparse = none), the sparse step (attention over
what the policy reads, with Quest's page scoring or H2O's accumulation) and, for evicting
policies, the compression itself (phases = "compress"). Then:

    amortised step = sparse step + layers x compression / compress_every
    break-even     = layers x compression / (dense step - sparse step)  [steps]

(a compression pays for itself once it serves that many steps). KV bytes before and
after come from `kernels.sparse.policies.footprint` per sequence and layer: kept rows plus
an int32 index per kept token (evicting policies), nothing extra (streaming), or the
whole cache plus per-page min/max keys (Quest); per-token int8 scales are not counted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kernels.decode.params import DecodeParams
from kernels.models import kv_format
from kernels.sparse.compress import COMPRESSING
from kernels.sparse.policies import Footprint, footprint
from kernels.sparse.select import attention_tokens

from .decode_step import DecodeStep, simulate_decode
from .scenario import Scenario
from .simulate import Result, simulate

#: the blog's figures (section 4.2): keeping 30% of the tokens cut 22.3 GB to 15.2 GB
BLOG_KEEP, BLOG_BEFORE_GB, BLOG_AFTER_GB = 0.3, 22.3, 15.2


@dataclass(frozen=True, eq=False)
class SparseStep:
    """The dense and the sparse decode step, the compression, and the bytes."""

    dense: DecodeStep
    sparse: DecodeStep
    compress: Result | None  # one layer's compression (None: the policy does not compress)
    compress_every: int
    bytes: Footprint  # whole model, whole batch

    @property
    def compress_ns(self) -> float:
        """One layer's compression, emulated."""
        return self.compress.makespan_ns if self.compress is not None else 0.0

    @property
    def saving_ns(self) -> float:
        """Step time the sparse attention saves (negative when it costs more)."""
        return self.dense.step_ns - self.sparse.step_ns

    @property
    def amortised_step_ns(self) -> float:
        return self.sparse.step_ns + self.sparse.layers * self.compress_ns / self.compress_every

    @property
    def break_even_steps(self) -> float:
        """Steps one compression must serve to pay for itself (inf: it never does)."""
        cost = self.sparse.layers * self.compress_ns
        if cost == 0:
            return 0.0
        return cost / self.saving_ns if self.saving_ns > 0 else math.inf


def batch_bytes(p: dict, model, lengths) -> Footprint:
    """KV bytes of the batch, all layers: dense, stored after compression, read per step."""
    elem = kv_format(p["kv_dtype"]).element_bytes
    kept = attention_tokens(DecodeParams.of(p), lengths)
    parts = [footprint(p["sparse"], int(n), int(k), model.kv_heads, model.head_dim, elem,
                       p["page_size"]) for n, k in zip(lengths, kept)]
    return Footprint(*(model.layers * sum(getattr(f, a) for f in parts)
                       for a in ("dense", "stored", "read")))


def simulate_sparse(scenario: Scenario) -> SparseStep:
    """Dense, sparse and compression runs of one decode scenario (see the module doc)."""
    p = scenario.params_dict
    if p["sparse"] == "none":
        raise ValueError("simulate_sparse needs a sparse policy (params.sparse)")
    dense = simulate_decode(scenario.replace(params={"sparse": "none"}))
    sparse = simulate_decode(scenario)
    compress = simulate(scenario.replace(params={"phases": "compress"})) \
        if p["sparse"] in COMPRESSING else None
    return SparseStep(dense, sparse, compress, p["compress_every"],
                      batch_bytes(p, dense.model, np.asarray(dense.lengths)))


def blog_claim(keep_ratio: float = BLOG_KEEP) -> dict[str, float]:
    """What keeping ``keep_ratio`` of the tokens does to the blog's 22.3 GB, next to its
    15.2 GB: the kept bytes (before indices), and the share 15.2 / 22.3 actually keeps."""
    return {"before_GB": BLOG_BEFORE_GB, "blog_after_GB": BLOG_AFTER_GB,
            "kept_GB": BLOG_BEFORE_GB * keep_ratio,
            "blog_share_kept": BLOG_AFTER_GB / BLOG_BEFORE_GB,
            "blog_cut": 1 - BLOG_AFTER_GB / BLOG_BEFORE_GB}

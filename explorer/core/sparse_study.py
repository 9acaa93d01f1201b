"""How much attention each KV-compression policy loses, measured on real arrays.

For every policy, keep ratio and KV head, the kept tokens (``kernels.sparse.policies``)
are compared with dense float64 attention of the head's group of query heads,
scores = q k^T / sqrt(d), p = softmax(scores), o = p v:

* ``mass_recall``: the share of the dense probability on the kept tokens, sum_{t kept} p_t,
  averaged over the group's heads (1 = nothing that mattered was dropped);
* ``output_error``: ||o_sparse - o_dense|| / ||o_dense|| over the group's [group, d]
  outputs (Frobenius), where o_sparse is softmax over the kept tokens' scores only
  (renormalised) times their values: what the compressed cache computes;
* ``topk_overlap``: |kept and the top-|kept| tokens of the group-mean dense probability|
  / |kept| (how close the selection is to the oracle of the same size).

The sparse output reuses the dense scores and the same ``softmax``, so keep ratio 1.0
gives the dense output bit for bit. The random policy draws from
np.random.default_rng([seed, head]) per KV head, scored once for all ratios: its
selections are nested and the heat map (``kept_mask``) shows the very tokens the table
measured.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from hardware_presets.errors import InputError, Phrase
from kernels.sparse.data import SparseInputs
from kernels.sparse.policies import POLICIES, budget, keep_count, pick, softmax, token_scores

METRICS = ("mass_recall", "output_error", "topk_overlap")
DEFAULT_RATIOS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
MAX_RATIOS = 64


def dense_head(q: np.ndarray, k: np.ndarray, v: np.ndarray):
    """(scores [group, n], probabilities [group, n], output [group, d]) in float64."""
    scores = q @ k.T / math.sqrt(k.shape[1])
    return scores, softmax(scores), attend(scores, v)


def attend(scores: np.ndarray, v: np.ndarray, kept: np.ndarray | None = None) -> np.ndarray:
    """softmax over the kept tokens' scores (all if ``kept`` is None) times their values.
    np.take keeps the rows C-contiguous (scores[:, kept] would not be), so the sums run in
    the same order as the dense ones."""
    if kept is None:
        return softmax(scores) @ v
    return softmax(np.take(scores, kept, axis=1)) @ np.take(v, kept, axis=0)


def head_metrics(scores, probs, out, v, kept: np.ndarray) -> dict[str, float]:
    """The three metrics of one KV head's selection (module docstring)."""
    recall = probs[:, kept].sum(axis=1).mean()
    error = np.linalg.norm(attend(scores, v, kept) - out) / np.linalg.norm(out)
    mean = probs.mean(axis=0)
    oracle = np.argsort(-mean, kind="stable")[:kept.size]
    overlap = np.intersect1d(kept, oracle).size / kept.size
    return {"mass_recall": float(recall), "output_error": float(error),
            "topk_overlap": float(overlap)}


def _check(data: SparseInputs, policies, keep_ratios, sinks, window, page_size) -> None:
    """Refuse every bad choice before any work: names, ratios, budgets, windows."""
    if not isinstance(data, SparseInputs):
        raise InputError("data", type(data).__name__, Phrase("refusal.sparse_study.data"))
    if not policies or not keep_ratios or len(keep_ratios) > MAX_RATIOS:
        raise InputError("policies and keep_ratios", (len(policies), len(keep_ratios)),
                         Phrase("refusal.sparse_study.counts", n=MAX_RATIOS))
    for policy in policies:
        for ratio in keep_ratios:
            budget(policy, data.tokens, ratio, sinks, window, page_size)


def _scores(policy: str, data: SparseInputs, h: int, page_size: int, seed: int):
    """``token_scores`` of KV head h, with the random policy's generator for (seed, h)."""
    q, k, _, past = data.head(h)
    rng = np.random.default_rng([seed, h]) if policy == "random" else None
    return token_scores(policy, q, k, q_past=past, page_size=page_size, rng=rng)


def study(data: SparseInputs, policies=POLICIES, keep_ratios=DEFAULT_RATIOS, *,
          sinks: int = 2, window: int = 16, page_size: int = 16, seed: int = 0
          ) -> pd.DataFrame:
    """One row per policy x keep ratio x KV head: policy, keep_ratio, head, kept (tokens
    read; Quest keeps whole pages), budget (ceil(keep_ratio * tokens)) and METRICS."""
    policies, keep_ratios = tuple(policies), tuple(keep_ratios)
    _check(data, policies, keep_ratios, sinks, window, page_size)
    rows = []
    for h in range(data.kv_heads):
        q, k, v, _ = data.head(h)
        dense = dense_head(q, k, v)
        for policy in policies:
            scores = _scores(policy, data, h, page_size, seed)
            for ratio in keep_ratios:
                kept = pick(policy, scores, data.tokens, ratio, sinks=sinks,
                            window=window, page_size=page_size)
                rows.append({"policy": policy, "keep_ratio": ratio, "head": h,
                             "kept": kept.size, "budget": keep_count(data.tokens, ratio),
                             **head_metrics(*dense, v, kept)})
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean of ``kept`` and the METRICS over the KV heads, per policy x keep ratio, in the
    order the policies and ratios were given."""
    cols = ["kept", *METRICS]
    return (table.groupby(["policy", "keep_ratio"], sort=False)[cols].mean()
            .reset_index())


def kept_mask(data: SparseInputs, head: int, policies=POLICIES, keep_ratio: float = 0.3, *,
              sinks: int = 2, window: int = 16, page_size: int = 16, seed: int = 0
              ) -> tuple[pd.DataFrame, pd.Series]:
    """For the heat map of one KV head: a boolean frame [policy x token] of the kept tokens
    (the same selections ``study`` measures for this seed) and the group-mean dense
    attention per token, to show next to it."""
    policies = tuple(policies)
    _check(data, policies, (keep_ratio,), sinks, window, page_size)
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not (
            0 <= head < data.kv_heads):
        raise InputError("head", head, Phrase("refusal.sparse_study.head", n=data.kv_heads - 1))
    q, k, v, _ = data.head(head)
    mask = np.zeros((len(policies), data.tokens), dtype=bool)
    for row, policy in enumerate(policies):
        scores = _scores(policy, data, head, page_size, seed)
        mask[row, pick(policy, scores, data.tokens, keep_ratio, sinks=sinks,
                       window=window, page_size=page_size)] = True
    attention = dense_head(q, k, v)[1].mean(axis=0)
    return (pd.DataFrame(mask, index=pd.Index(policies, name="policy")),
            pd.Series(attention, name="dense_attention"))

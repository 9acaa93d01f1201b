"""Which KV-cache tokens a sparse-attention policy keeps, on real arrays.

The blog (section 4.2, ``sparse_attention_kv_compress``) keeps the first 2 tokens as
attention sinks and then the tokens whose keys have the largest mean of squared values
(||k||^2 / d). Whether that is a good rule is what the sparse-attention page measures, so
this module implements it next to the published alternatives (``POLICY_INFO``).

Selection is per KV head: the ``group`` query heads that share a KV head (GQA; query head
i belongs to KV head i // group) share ONE selection, since the cache is stored per KV
head. How each policy pools the group is stated in ``token_scores``.

Count rule (the same for every policy, tested): with n tokens in the cache,
keep = ceil(keep_ratio * n) tokens, the ``sinks`` first and the ``window`` most recent
tokens included (sinks beyond the cache are simply the whole cache). ``keep_ratio`` must
lie in (0, 1]; a budget too small for the sinks and window, min(n, sinks + window) > keep,
is refused with the smallest ratio that works; a window longer than the cache is refused.
The product keep_ratio * n is taken as the decimal the user typed (0.1 x 10 is 1 although
the binary 0.1 is a little larger): within 1e-9 of an integer it counts as that integer.
Quest works in whole pages of ``page_size`` tokens: it keeps ceil(keep / page_size)
pages (a partial last page counts as a page), so it may read fewer than keep tokens.
Every selection is returned as ascending int64 token indices.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from hardware_presets.errors import InputError, Phrase


@dataclass(frozen=True)
class PolicyInfo:
    """What the page says about a policy: one line, its source (a paper's citation, kept
    as published, or the message id of words such as "the blog, section 4.2"), whether it
    needs the current query (decides per step, evicts nothing) and whether it stores
    indices."""

    name: str
    description: str
    reference: str
    query_aware: bool = False
    indexed: bool = True
    reference_id: str = ""


POLICY_INFO: dict[str, PolicyInfo] = {p.name: p for p in (
    PolicyInfo("norm_high", "keep the keys with the largest L2 norm (the blog's mean of "
               "squared key values, same order)", "", reference_id="sparse.reference.blog"),
    PolicyInfo("norm_low", "keep the keys with the smallest L2 norm",
               "Devoto et al. 2024, A Simple and Effective L2 Norm-Based Strategy for KV "
               "Cache Compression, arXiv 2406.11430"),
    PolicyInfo("h2o", "keep the heavy hitters: largest attention accumulated over past "
               "queries", "Zhang et al. 2023, H2O: Heavy-Hitter Oracle, arXiv 2306.14048"),
    PolicyInfo("streaming", "keep the sinks and the most recent tokens only",
               "Xiao et al. 2023, Efficient Streaming Language Models with Attention "
               "Sinks (StreamingLLM), arXiv 2309.17453", indexed=False),
    PolicyInfo("quest", "read only the pages whose min/max key bound of q.k is largest",
               "Tang et al. 2024, Quest: Query-Aware Sparsity for Efficient Long-Context "
               "LLM Inference, arXiv 2406.10774", query_aware=True, indexed=False),
    PolicyInfo("random", "keep uniformly random tokens besides the sinks and window "
               "(baseline)", "", reference_id="sparse.reference.baseline"),
)}
POLICIES: tuple[str, ...] = tuple(POLICY_INFO)
MAX_PAGE_SIZE = 4096
_DECIMAL_SLACK = 1e-9


def softmax(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax, max-subtracted; the one the study's dense and sparse attention
    share so that a full selection reproduces dense attention bit for bit."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def keep_count(n: int, keep_ratio: float) -> int:
    """ceil(keep_ratio * n), reading the product as a decimal (see the module docstring)."""
    if isinstance(keep_ratio, bool) or not (
            isinstance(keep_ratio, numbers.Real) and 0 < keep_ratio <= 1):
        raise InputError("keep_ratio", keep_ratio, Phrase("refusal.sparse.keep_ratio"))
    product = float(keep_ratio) * n
    nearest = round(product)
    if abs(product - nearest) <= _DECIMAL_SLACK * max(1.0, product):
        return max(1, int(nearest))
    return math.ceil(product)


def _check_int(field: str, value, low: int, high: int) -> int:
    """``value`` as an int in [low, high], or an InputError naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not (
            low <= value <= high):
        raise InputError(field, value, Phrase("refusal.int_range", low=low, high=high))
    return int(value)


def forced_tokens(n: int, sinks: int, window: int) -> np.ndarray:
    """Boolean mask [n] of the tokens every policy keeps: the first ``sinks`` and the last
    ``window``. A window longer than the cache is refused rather than silently clipped."""
    sinks = _check_int("sinks", sinks, 0, 1 << 30)
    window = _check_int("window", window, 0, 1 << 30)
    if window > n:
        raise InputError("window", window, Phrase("refusal.sparse.window", n=n),
                         Phrase("refusal.hint.window"))
    mask = np.zeros(n, dtype=bool)
    mask[:sinks] = True
    mask[n - window:] = True
    return mask


def _page_mask(mask: np.ndarray, page_size: int) -> np.ndarray:
    """Pages [ceil(n / page_size)] holding at least one True token of ``mask``."""
    pages = -(-mask.size // page_size)
    padded = np.zeros(pages * page_size, dtype=bool)
    padded[:mask.size] = mask
    return padded.reshape(pages, page_size).any(axis=1)


def budget(policy: str, n: int, keep_ratio: float, sinks: int, window: int,
           page_size: int = 16) -> tuple[int, np.ndarray]:
    """(units to keep, forced mask over units): tokens, or for Quest pages. Refuses a
    ratio whose budget cannot hold the sinks and window, naming the smallest that can."""
    if policy not in POLICY_INFO:
        raise InputError("policy", policy, Phrase("refusal.one_of", options=", ".join(POLICIES)))
    n = _check_int("tokens", n, 1, 1 << 40)
    keep = keep_count(n, keep_ratio)
    forced = forced_tokens(n, sinks, window)
    needed = int(forced.sum())
    units = keep
    if policy == "quest":
        page_size = _check_int("page_size", page_size, 1, MAX_PAGE_SIZE)
        forced = _page_mask(forced, page_size)
        units = -(-keep // page_size)
        needed = (int(forced.sum()) - 1) * page_size + 1
    if needed > keep:
        smallest = math.ceil(needed / n * 1e4) / 1e4
        raise InputError("keep_ratio", keep_ratio, Phrase("refusal.sparse.keep_smallest",
                                                          smallest=smallest),
                         Phrase("refusal.hint.sinks_window_pages" if policy == "quest" else
                                "refusal.hint.sinks_window", needed=needed, n=n))
    return units, forced


def top_units(scores: np.ndarray, forced: np.ndarray, units: int) -> np.ndarray:
    """The forced units plus the highest-scoring others, ``units`` in all, ascending.
    Ties go to the earlier unit (a stable sort), so selections are reproducible."""
    order = np.argsort(-scores, kind="stable")
    free = order[~forced[order]][:units - int(forced.sum())]
    return np.sort(np.concatenate([np.flatnonzero(forced), free])).astype(np.int64)


def quest_bounds(q: np.ndarray, k: np.ndarray, page_size: int) -> np.ndarray:
    """Upper bounds [heads, pages] of q.k over each page's tokens (Quest): with the
    per-channel min and max of K on a page, sum_j max(q_j kmin_j, q_j kmax_j) >= q.k_t
    for every token t of the page, channel by channel."""
    n, d = k.shape
    pages = -(-n // page_size)
    padded = np.empty((pages * page_size, d))
    padded[:n] = k
    padded[n:] = k[-1]  # repeat the last key: the partial page's min/max are its own
    blocks = padded.reshape(pages, page_size, d)
    kmin, kmax = blocks.min(axis=1), blocks.max(axis=1)
    qe = q[:, None, :]
    return np.maximum(qe * kmin[None], qe * kmax[None]).sum(axis=-1)


def _h2o_scores(q: np.ndarray, k: np.ndarray, q_past: np.ndarray | None) -> np.ndarray:
    """Attention probability accumulated over the group's heads and the past queries.
    Past query s of S sits at position n - 1 - S + s and sees tokens 0 .. n - 1 - S + s
    (causal), as it did when it ran; one step at a time keeps memory at [group, n].
    Without ``q_past`` the current query alone is used (it sees every token): then H2O
    sees the query it is judged on, an optimistic case."""
    n, d = k.shape
    if q_past is None:
        return softmax(q @ k.T / math.sqrt(d)).sum(axis=0)
    steps = q_past.shape[0]
    if steps >= n:
        raise InputError("q_past steps", steps, Phrase("refusal.sparse.q_past_steps", n=n),
                         Phrase("refusal.hint.past_query"))
    total = np.zeros(n)
    for s, past in enumerate(q_past):
        seen = n - steps + s
        total[:seen] += softmax(past @ k[:seen].T / math.sqrt(d)).sum(axis=0)
    return total


def token_scores(policy: str, q: np.ndarray, k: np.ndarray, *, q_past=None,
                 page_size: int = 16, rng: np.random.Generator | None = None) -> np.ndarray:
    """Scores of one KV head, higher kept first: [n] per token, or [pages] for Quest.

    q [group, d] are the group's current queries, k [n, d] the head's keys, q_past
    [steps, group, d] its past queries. Group pooling: norms ignore queries; H2O sums the
    probabilities of every head and step; Quest takes each page's largest bound over the
    heads (a page any head needs is read); streaming scores by position (the window grows
    to fill the budget); random draws one uniform number per token from ``rng``.
    """
    if policy in ("norm_high", "norm_low"):
        squares = (k * k).sum(axis=1)  # the blog's mean of squares, times d: same order
        return squares if policy == "norm_high" else -squares
    if policy == "h2o":
        return _h2o_scores(q, k, q_past)
    if policy == "streaming":
        return np.arange(k.shape[0], dtype=np.float64)
    if policy == "quest":
        return quest_bounds(q, k, _check_int("page_size", page_size, 1, MAX_PAGE_SIZE)
                            ).max(axis=0)
    if policy == "random":
        if not isinstance(rng, np.random.Generator):
            raise InputError("rng", rng, Phrase("refusal.sparse.rng"))
        return rng.random(k.shape[0])
    raise InputError("policy", policy, Phrase("refusal.one_of", options=", ".join(POLICIES)))


def pick(policy: str, scores: np.ndarray, n: int, keep_ratio: float, *, sinks: int = 2,
         window: int = 0, page_size: int = 16) -> np.ndarray:
    """Token indices kept for ``scores`` from ``token_scores`` under the count rule; the
    study scores once and picks for every ratio (so a random selection at 30% lies
    inside the one at 50%)."""
    units, forced = budget(policy, n, keep_ratio, sinks, window, page_size)
    chosen = top_units(scores, forced, units)
    if policy != "quest":
        return chosen
    tokens = (chosen[:, None] * page_size + np.arange(page_size)[None, :]).ravel()
    return tokens[tokens < n]


def select(policy: str, q, k, keep_ratio: float, *, sinks: int = 2, window: int = 0,
           page_size: int = 16, q_past=None, rng: np.random.Generator | None = None
           ) -> np.ndarray:
    """Kept token indices (ascending int64) of one KV head: q [group, d], k [n, d],
    q_past [steps, group, d] or None; see the module docstring for the count rule."""
    q, k = np.atleast_2d(np.asarray(q, np.float64)), np.asarray(k, np.float64)
    if k.ndim != 2 or q.ndim != 2 or q.shape[1] != k.shape[1]:
        raise InputError("q, k shapes", (q.shape, k.shape), Phrase("refusal.sparse.qk_shapes"))
    if q_past is not None:
        q_past = np.asarray(q_past, np.float64)
        if q_past.shape[1:] != q.shape:
            raise InputError("q_past shape", q_past.shape, Phrase(
                "refusal.sparse.q_past_shape", group=q.shape[0], d=q.shape[1]))
    budget(policy, k.shape[0], keep_ratio, sinks, window, page_size)  # refuse first
    scores = token_scores(policy, q, k, q_past=q_past, page_size=page_size, rng=rng)
    return pick(policy, scores, k.shape[0], keep_ratio, sinks=sinks, window=window,
                page_size=page_size)


@dataclass(frozen=True)
class Footprint:
    """Bytes of K and V for all KV heads of one layer: ``dense`` (the whole cache),
    ``stored`` (what stays in HBM after compression) and ``read`` (what one decode step
    reads)."""

    dense: int
    stored: int
    read: int


def footprint(policy: str, tokens: int, kept: int, kv_heads: int, head_dim: int,
              elem_bytes: int, page_size: int = 16, index_bytes: int = 4) -> Footprint:
    """KV bytes before and after, ``kept`` tokens per KV head (sinks and window included).

    row = 2 * head_dim * elem_bytes (one token's K and V); dense = kv_heads * tokens * row.
    Evicting policies store the kept rows plus an index per kept token per KV head
    (int32: index_bytes = 4): stored = read = kv_heads * kept * (row + index_bytes);
    streaming needs no index (sinks + a ring buffer). Quest evicts nothing and adds
    per-page min and max keys: stored = dense + kv_heads * pages * row with
    pages = ceil(tokens / page_size); a step reads all that metadata and the kept pages:
    read = kv_heads * (kept + pages) * row.
    """
    row = 2 * head_dim * elem_bytes
    dense = kv_heads * tokens * row
    if policy == "quest":
        pages = -(-tokens // page_size)
        return Footprint(dense, dense + kv_heads * pages * row,
                         kv_heads * (kept + pages) * row)
    index = index_bytes if POLICY_INFO[policy].indexed else 0
    compact = kv_heads * kept * (row + index)
    return Footprint(dense, compact, compact)

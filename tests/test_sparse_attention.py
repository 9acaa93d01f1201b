"""Selection policies of kernels.sparse.policies: the count rule, what is always kept,
Quest's bounds, H2O's causal accumulation, the random baseline and the byte formulas."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hardware_presets.errors import InputError
from kernels.sparse import policies as sa

TOKEN_POLICIES = tuple(p for p in sa.POLICIES if p != "quest")


def _head(seed: int, n: int, d: int = 8, group: int = 2):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((group, d)), rng.standard_normal((n, d))


def _select(policy, q, k, ratio, **kw):
    return sa.select(policy, q, k, ratio, rng=np.random.default_rng(0), **kw)


@given(n=st.integers(1, 400), permille=st.integers(1, 1000), sinks=st.integers(0, 6),
       window=st.integers(0, 40), seed=st.integers(0, 2**16))
def test_token_policies_keep_exactly_ceil_ratio_n_with_sinks_and_window(
        n, permille, sinks, window, seed):
    window = min(window, n)
    ratio, keep = permille / 1000, -(-permille * n // 1000)
    q, k = _head(seed, n)
    for policy in TOKEN_POLICIES:
        if min(n, sinks + window) > keep:
            with pytest.raises(InputError) as err:
                _select(policy, q, k, ratio, sinks=sinks, window=window)
            assert err.value.field == "keep_ratio"
            continue
        kept = _select(policy, q, k, ratio, sinks=sinks, window=window)
        assert kept.dtype == np.int64 and kept.size == keep
        assert np.all(np.diff(kept) > 0) and kept[0] >= 0 and kept[-1] < n
        forced = np.flatnonzero(sa.forced_tokens(n, sinks, window))
        assert np.isin(forced, kept).all()


@given(n=st.integers(1, 300), permille=st.integers(1, 1000), page=st.integers(1, 32),
       sinks=st.integers(0, 4), window=st.integers(0, 20), seed=st.integers(0, 2**16))
def test_quest_keeps_whole_pages_ceil_keep_over_page_size(n, permille, page, sinks, window,
                                                        seed):
    window = min(window, n)
    keep = -(-permille * n // 1000)
    q, k = _head(seed, n)
    try:
        kept = sa.select("quest", q, k, permille / 1000, sinks=sinks, window=window,
                         page_size=page)
    except InputError as err:
        assert err.field == "keep_ratio"
        return
    pages = np.unique(kept // page)
    assert pages.size == -(-keep // page)
    whole = np.concatenate([np.arange(p * page, min(n, (p + 1) * page)) for p in pages])
    assert np.array_equal(kept, whole)
    assert np.isin(np.flatnonzero(sa.forced_tokens(n, sinks, window)), kept).all()


def test_ratio_one_keeps_every_token():
    q, k = _head(1, 37)
    for policy in sa.POLICIES:
        kept = _select(policy, q, k, 1.0, sinks=2, window=5, page_size=8)
        assert np.array_equal(kept, np.arange(37))


def test_the_decimal_reading_of_the_ratio():
    """0.1 x 10 is 1 token and 0.3 x 10 is 3, although binary 0.1 and 0.3 are not exact."""
    assert sa.keep_count(10, 0.1) == 1 and sa.keep_count(10, 0.3) == 3
    assert sa.keep_count(10, 0.31) == 4 and sa.keep_count(3, 1e-9) == 1


@pytest.mark.parametrize("ratio", [0, -0.1, 1.01, float("nan"), True, "0.3"])
def test_keep_ratio_outside_zero_one_is_refused(ratio):
    q, k = _head(2, 20)
    with pytest.raises(InputError) as err:
        _select("norm_low", q, k, ratio)
    assert err.value.field == "keep_ratio"


@pytest.mark.parametrize("policy", sa.POLICIES)
def test_too_small_a_budget_names_the_smallest_ratio_that_works(policy):
    q, k = _head(3, 1000)
    with pytest.raises(InputError) as err:
        _select(policy, q, k, 0.01, sinks=4, window=64, page_size=16)
    assert err.value.field == "keep_ratio"
    smallest = float(err.value.allowed.split("at least ")[1].split()[0])
    kept = _select(policy, q, k, smallest, sinks=4, window=64, page_size=16)
    assert kept.size >= 68


def test_windows_longer_than_the_cache_are_refused():
    q, k = _head(4, 10)
    with pytest.raises(InputError, match="longer than the cache") as err:
        _select("streaming", q, k, 1.0, window=11)
    assert err.value.field == "window"


@pytest.mark.parametrize("field,kw", [("policy", {"policy": "lru"}),
                                      ("sinks", {"sinks": -1}),
                                      ("page_size", {"policy": "quest", "page_size": 0}),
                                      ("rng", {"policy": "random", "rng": None})])
def test_bad_arguments_are_refused_by_name(field, kw):
    q, k = _head(5, 50)
    args = {"policy": "norm_low", "rng": np.random.default_rng(0), **kw}
    with pytest.raises(InputError) as err:
        sa.select(args.pop("policy"), q, k, 0.5, **args)
    assert err.value.field == field


def test_norm_rules_follow_the_key_norm():
    """norm_high is the blog's rule: its order is that of the mean of squared values."""
    q, k = _head(6, 200)
    blog = np.argsort(-(k * k).mean(axis=1), kind="stable")[:50]
    high = sa.select("norm_high", q, k, 0.25, sinks=0)
    low = sa.select("norm_low", q, k, 0.25, sinks=0)
    assert np.array_equal(high, np.sort(blog))
    norms = np.linalg.norm(k, axis=1)
    assert norms[low].max() <= np.delete(norms, low).min()


def test_streaming_keeps_sinks_and_the_newest_tokens():
    q, k = _head(7, 100)
    kept = sa.select("streaming", q, k, 0.2, sinks=3, window=4)
    assert np.array_equal(kept, np.r_[0:3, 83:100])


@given(group=st.integers(1, 3), d=st.integers(1, 6), n=st.integers(1, 40),
       page=st.integers(1, 9), data=st.data())
def test_quest_page_bounds_are_upper_bounds_of_every_token(group, d, n, page, data):
    floats = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
    q = data.draw(hnp.arrays(np.float64, (group, d), elements=floats))
    k = data.draw(hnp.arrays(np.float64, (n, d), elements=floats))
    bounds = sa.quest_bounds(q, k, page)
    exact = q @ k.T  # [group, n]
    slack = 1e-9 * (np.abs(q) @ np.abs(k).T)
    assert np.all(exact <= bounds[:, np.arange(n) // page] + slack)


def test_h2o_accumulates_causally_over_past_queries():
    """Past query s of S sees tokens 0 .. n - 1 - S + s: the newest token is unseen."""
    q, k = _head(8, 6, group=2)
    past = np.random.default_rng(9).standard_normal((3, 2, 8))
    scores = sa.token_scores("h2o", q, k, q_past=past)
    assert scores[5] == 0 and scores[4] > 0
    assert scores.sum() == pytest.approx(3 * 2)
    with pytest.raises(InputError) as err:
        sa.token_scores("h2o", q, k, q_past=np.zeros((6, 2, 8)))
    assert err.value.field == "q_past steps"


def test_random_is_reproducible_and_unbiased():
    q, k = _head(10, 500)
    first = sa.select("random", q, k, 0.3, rng=np.random.default_rng(42))
    again = sa.select("random", q, k, 0.3, rng=np.random.default_rng(42))
    other = sa.select("random", q, k, 0.3, rng=np.random.default_rng(43))
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    rng = np.random.default_rng(0)
    probs = sa.softmax(3 * rng.standard_normal(500))  # far from uniform
    recall = [probs[sa.select("random", q, k, 0.3, sinks=0, rng=rng)].sum()
              for _ in range(300)]
    assert np.mean(recall) == pytest.approx(0.3, abs=0.02)


def test_footprint_formulas():
    """8 KV heads x 128 dims in fp16, 8192 tokens, 30% kept (2458 tokens)."""
    row, dense = 2 * 128 * 2, 8 * 8192 * 2 * 128 * 2
    kept = sa.keep_count(8192, 0.3)
    blog = sa.footprint("norm_high", 8192, kept, 8, 128, 2)
    assert kept == 2458 and blog.dense == dense
    assert blog.stored == blog.read == 8 * kept * (row + 4)
    assert sa.footprint("streaming", 8192, kept, 8, 128, 2).stored == 8 * kept * row
    quest = sa.footprint("quest", 8192, 2464, 8, 128, 2, page_size=16)
    assert quest.stored == dense + 8 * 512 * row
    assert quest.read == 8 * (2464 + 512) * row

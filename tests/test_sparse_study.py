"""Accuracy of the policies against dense float64 attention (explorer.core.sparse_study)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from explorer.core import sparse_study as ss
from hardware_presets.errors import InputError
from kernels.sparse import data as sd
from kernels.sparse import policies as sa

SMALL = {"tokens": 512, "head_dim": 32, "kv_heads": 2, "group": 4, "past_queries": 8}
RATIOS = (0.1, 0.3, 1.0)


def _data(seed: int = 0, **knobs) -> sd.SparseInputs:
    return sd.synthetic(np.random.default_rng(seed), **{**SMALL, **knobs})


def test_one_row_per_policy_ratio_and_head():
    table = ss.study(_data(), keep_ratios=RATIOS, window=8)
    assert len(table) == len(sa.POLICIES) * len(RATIOS) * 2
    assert list(table.columns) == ["policy", "keep_ratio", "head", "kept", "budget",
                                   *ss.METRICS]
    tokens = table[table.policy != "quest"]
    assert (tokens.kept == tokens.budget).all()
    assert set(table.budget) == {52, 154, 512}
    quest = table[table.policy == "quest"]
    assert (quest.kept == np.minimum(-(-quest.budget // 16) * 16, 512)).all()


def test_ratio_one_reproduces_dense_attention_bit_for_bit():
    data = _data(1)
    for h in range(data.kv_heads):
        q, k, v, past = data.head(h)
        scores, _, dense = ss.dense_head(q, k, v)
        for policy in sa.POLICIES:
            kept = sa.select(policy, q, k, 1.0, window=8, q_past=past,
                             rng=np.random.default_rng(0))
            assert np.array_equal(ss.attend(scores, v, kept), dense)
    table = ss.study(data, keep_ratios=(1.0,), window=8)
    assert (table.output_error == 0).all() and (table.topk_overlap == 1).all()
    assert np.allclose(table.mass_recall, 1, atol=1e-12)


def test_metrics_by_hand():
    """Two tokens, one query: keeping the likelier token recalls its probability."""
    q, k = np.array([[1.0, 0.0]]), np.array([[2.0, 0.0], [0.0, 0.0]])
    v = np.array([[1.0, 0.0], [0.0, 1.0]])
    scores, probs, out = ss.dense_head(q, k, v)
    p = 1 / (1 + np.exp(-2 / np.sqrt(2)))
    metrics = ss.head_metrics(scores, probs, out, v, np.array([0]))
    assert metrics["mass_recall"] == pytest.approx(p)
    assert metrics["output_error"] == pytest.approx((1 - p) * np.sqrt(2) / np.hypot(p, 1 - p))
    assert metrics["topk_overlap"] == 1
    assert ss.head_metrics(scores, probs, out, v, np.array([1]))["topk_overlap"] == 0


@pytest.mark.parametrize("relation,better,worse", [(-1.0, "norm_low", "norm_high"),
                                                   (1.0, "norm_high", "norm_low")])
def test_the_norm_rule_that_wins_follows_the_norm_relation(relation, better, worse):
    means = ss.summary(ss.study(_data(2, norm_relation=relation),
                                policies=(better, worse), keep_ratios=(0.1, 0.3)))
    recall = means.set_index(["policy", "keep_ratio"]).mass_recall
    for ratio in (0.1, 0.3):
        assert recall[better, ratio] > recall[worse, ratio] + 0.1


def test_random_keeps_the_expected_mass():
    """Without sinks or window, random's mean recall is the keep ratio, whatever the
    attention looks like (the mean over 16 KV heads)."""
    table = ss.study(_data(3, kv_heads=16, group=1), policies=("random",),
                     keep_ratios=(0.3,), sinks=0, window=0)
    assert table.mass_recall.mean() == pytest.approx(0.3, abs=0.05)


def test_deterministic_for_a_seed():
    data = _data(4)
    first = ss.study(data, keep_ratios=RATIOS, seed=7)
    pd.testing.assert_frame_equal(first, ss.study(data, keep_ratios=RATIOS, seed=7))
    other = ss.study(data, keep_ratios=RATIOS, seed=8)
    same = first.policy != "random"
    pd.testing.assert_frame_equal(first[same], other[same])
    assert not first[~same].equals(other[~same])


def test_kept_mask_shows_what_the_study_measured():
    data = _data(5)
    mask, attention = ss.kept_mask(data, 1, keep_ratio=0.3, sinks=2, window=8, seed=3)
    table = ss.study(data, keep_ratios=(0.3,), sinks=2, window=8, seed=3)
    kept = table[table["head"] == 1].set_index("policy").kept
    assert mask.sum(axis=1).to_dict() == kept.to_dict()
    assert mask.iloc[:, [0, 1, *range(504, 512)]].all().all()
    assert attention.sum() == pytest.approx(1) and len(attention) == 512


@pytest.mark.parametrize("call,field", [
    (lambda d: ss.study(d, keep_ratios=(0.0,)), "keep_ratio"),
    (lambda d: ss.study(d, keep_ratios=(0.01,), window=16), "keep_ratio"),
    (lambda d: ss.study(d, policies=("oracle",)), "policy"),
    (lambda d: ss.study(d, keep_ratios=()), "policies and keep_ratios"),
    (lambda d: ss.kept_mask(d, 2), "head"),
])
def test_bad_choices_are_refused_by_name(call, field):
    with pytest.raises(InputError) as err:
        call(_data(6))
    assert err.value.field == field

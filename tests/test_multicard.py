"""explorer.core.multicard: the alpha-beta all-reduce against its formula, one card's
share of the model (heads, hidden, parameters / N) and the refusals, the step as layers x
(per-card append + attention + linear + all-reduce), and the scaling table's shape."""
from __future__ import annotations

import functools
import math

import pytest

from explorer.core import Scenario
from explorer.core import multicard as mc
from explorer.core.decode_step import simulate_decode
from hardware_presets.errors import InputError
from kernels.decode.params import model_of


@functools.cache
def decode(scenario: Scenario):
    return simulate_decode(scenario)


def scenario(model="llama3-70b", batch=8, ctx=2048, impl="split_kv", **extra) -> Scenario:
    return Scenario.make("910B2", "decode", {"model": model, "batch": batch, "mean_len": ctx,
                                             "max_len": 8192, "impl": impl,
                                             "allow_overcommit": True, **extra})


# ---- all-reduce --------------------------------------------------------------------------
@pytest.mark.parametrize("cards", [2, 3, 4, 8])
@pytest.mark.parametrize("nbytes", [0, 131_072, 64e6])
def test_allreduce_is_the_alpha_beta_ring_formula(cards, nbytes):
    alpha_ns = 1.5e3  # HCCS default: 1.5 us per step
    bw = min(392.0, (cards - 1) * 56.0)  # full mesh: all N - 1 links, capped per card
    want = 2 * (cards - 1) * alpha_ns + 2 * (cards - 1) / cards * nbytes / bw
    assert mc.allreduce_ns(nbytes, cards, mc.HCCS) == pytest.approx(want, rel=1e-12)


def test_allreduce_on_a_ring_uses_one_link_and_one_card_costs_nothing():
    ring = mc.make_interconnect(50.0, 400.0, 2.0, "ring")
    assert mc.allreduce_ns(1e6, 4, ring) == pytest.approx(6 * 2e3 + 1.5 * 1e6 / 50.0)
    assert mc.allreduce_ns(1e9, 1, mc.HCCS) == 0.0
    assert mc.bw_per_card(mc.HCCS, 2) == 56.0 and mc.bw_per_card(mc.HCCS, 8) == 392.0


def test_interconnects_carry_provenance_and_overrides_are_marked():
    for ic in mc.INTERCONNECTS.values():
        for field in ("link_GBps", "per_card_GBps", "latency_us", "topology"):
            assert ic.status(field) in ("published", "derived", "estimated"), field
    assert mc.HCCS.status("latency_us") == "estimated"
    assert mc.HCCS.status("link_GBps") == "published"
    user = mc.make_interconnect(56.0, 392.0, 5.0, "full_mesh")
    assert user.status("latency_us") == "override" and user.status("link_GBps") == "published"
    with pytest.raises(InputError, match="topology"):
        mc.make_interconnect(56.0, 392.0, 1.0, "torus")
    with pytest.raises(InputError, match="link_GBps"):
        mc.make_interconnect(0.0, 392.0, 1.0, "ring")


# ---- one card's share --------------------------------------------------------------------
def test_per_card_shape_splits_heads_hidden_and_parameters():
    s = scenario()
    share = mc.per_card_scenario(s, 8)
    p = share.params_dict
    assert p["model"] == "custom" and p["allow_overcommit"] is True
    m, full = model_of(p), model_of(s.params_dict)
    assert (m.layers, m.head_dim) == (full.layers, full.head_dim)
    assert (m.q_heads, m.kv_heads, m.hidden) == (64 // 8, 8 // 8, 8192 // 8)
    assert m.params_B == pytest.approx(full.params_B / 8)
    assert m.gqa_group == full.gqa_group
    assert m.kv_bytes_per_token("fp16") * 8 == full.kv_bytes_per_token("fp16")
    assert mc.per_card_scenario(s, 1).params_dict["model"] == "llama3-70b"


@pytest.mark.parametrize("model,cards", [("llama3-8b", 3), ("llama3-70b", 6),
                                         ("qwen2.5-7b", 8)])
def test_cards_that_do_not_divide_the_kv_heads_are_refused(model, cards):
    with pytest.raises(InputError, match="kv_heads") as info:
        mc.per_card_scenario(scenario(model=model, ctx=512), cards)
    assert info.value.field == "cards" and info.value.value == cards


def test_bad_cards_and_kernels_are_refused():
    for cards in (0, 65, 2.0, True):
        with pytest.raises(InputError, match="cards"):
            mc.per_card_scenario(scenario(), cards)
    with pytest.raises(InputError, match="kernel"):
        mc.per_card_scenario(Scenario.make("910B2", "vector_add"), 2)


# ---- the group's step --------------------------------------------------------------------
@pytest.mark.parametrize("cards", [1, 2, 8])
def test_step_is_layers_times_share_plus_allreduce(cards):
    s = scenario()
    step = mc.simulate_multicard(s, cards, decode=decode)
    share = step.per_card
    nbytes = 8 * 8192 * 2  # batch x hidden x fp16
    assert step.allreduce_bytes == nbytes
    assert step.allreduce_ns_per_layer == pytest.approx(2 * mc.allreduce_ns(nbytes, cards,
                                                                           mc.HCCS))
    want = 80 * (share.layer_ns + step.allreduce_ns_per_layer) + share.head_ns
    assert step.step_ns == pytest.approx(want, rel=1e-12)
    assert step.tokens_per_s == pytest.approx(8 / want * 1e9)
    assert step.per_token_latency_ms == pytest.approx(want / 1e6)
    assert step.roofline_ns <= step.step_ns


def test_one_card_is_the_single_card_decode_step():
    s = scenario(model="llama3-8b", impl="vector")
    assert mc.simulate_multicard(s, 1, decode=decode).step_ns == \
        pytest.approx(simulate_decode(s).step_ns)


def test_a_free_interconnect_adds_nothing():
    free = mc.make_interconnect(1e6, 1e6, 0.0, "full_mesh")
    step = mc.simulate_multicard(scenario(), 4, free, decode=decode)
    assert step.step_ns == pytest.approx(step.per_card.step_ns, rel=1e-3)


def test_fit_follows_the_share_and_is_noted():
    one = mc.simulate_multicard(scenario(), 1, decode=decode)
    eight = mc.simulate_multicard(scenario(), 8, decode=decode)
    assert not one.fits and eight.fits  # 141 GB of fp16 weights vs 64 GiB per card
    assert "note.multicard_overcommit" in [n for n, _ in one.notes]
    assert "note.multicard_overcommit" not in [n for n, _ in eight.notes]


# ---- scaling -----------------------------------------------------------------------------
def test_scaling_table_is_monotone_where_expected():
    table = mc.scaling(scenario(), range(1, 9), decode=decode)
    assert list(table["N"]) == [1, 2, 4, 8]  # 3, 5, 6, 7 do not divide 8 KV heads
    assert table["step_ms"].is_monotonic_decreasing
    assert table["tokens_per_s"].is_monotonic_increasing
    assert table["per_token_latency_ms"].is_monotonic_decreasing
    assert table["allreduce_ms"].is_monotonic_increasing and table["allreduce_ms"][0] == 0
    assert table["efficiency"].is_monotonic_decreasing
    assert table["efficiency"].iloc[0] == 1.0 and (table["efficiency"] <= 1.0 + 1e-9).all()
    ratios = table["linear_ms"].iloc[0] / table["linear_ms"]
    # weights / N, memory-bound: emulated, so within the tiles' imbalance of the ideal
    assert list(ratios) == pytest.approx([1, 2, 4, 8], rel=0.2)
    assert list(table["fits"]) == [False, False, True, True]
    assert math.isclose(table["speedup"].iloc[-1], table["step_ms"].iloc[0]
                        / table["step_ms"].iloc[-1])


def test_scaling_without_one_card_still_compares_with_one_card():
    full = mc.scaling(scenario(), (1, 2, 4), decode=decode)
    part = mc.scaling(scenario(), (4, 2), decode=decode)
    assert list(part["N"]) == [2, 4]
    assert list(part["speedup"]) == pytest.approx(list(full["speedup"][1:]))


def test_littles_law_and_the_claim_scenario():
    assert mc.littles_law_batch(3850, 15) == pytest.approx(57.75)
    assert mc.littles_law_batch(1200, 45) == pytest.approx(54.0)
    p = mc.claim11_scenario().params_dict
    assert (p["model"], p["batch"], p["mean_len"]) == ("llama3-70b", 58, 8192)

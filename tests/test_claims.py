"""The Claims cards (explorer/core/claims.py): every figure equals an independent,
formula-level computation here, every verdict follows its card's stated rule, the texts
exist in both languages with the card's placeholders, and another chip changes the figures.
"""
from __future__ import annotations

import heapq
from pathlib import Path

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core import Scenario, scheduling, simulate
from explorer.core import claims as cl
from explorer.core import multicard as mc
from explorer.core.claims_data import BLOG, VERDICTS, counts, text_values
from explorer.core.i18n import LANGUAGES, catalogue, t
from kernels.models import load_model

SEED = Path("/work/shared/seed/000_f6c259df8f5b9d74.txt")
GB = 1e9


@pytest.fixture(scope="module")
def b2():
    return {c.id: c for c in cl.claims(hp.load("910B2"))}


@pytest.fixture(scope="module")
def b4():
    return {c.id: c for c in cl.claims(hp.load("910B4"))}


def approx(x, rel=1e-9):
    return pytest.approx(x, rel=rel)


# ---- shape of the cards -----------------------------------------------------------------
def test_twelve_cards_with_verdicts_references_and_links(b2):
    assert sorted(b2) == list(range(1, 13))
    for card in b2.values():
        assert card.verdict in VERDICTS and card.references and card.quote
        assert card.link().startswith(f"./{card.page}?preset=910B2")
        assert any(f.source == "blog" for f in card.figures) or card.id in (9, 12)
        assert any(f.source != "blog" for f in card.figures)
    assert sum(counts(b2.values()).values()) == 12


@pytest.mark.skipif(not SEED.exists(), reason="the seed blog is not on this machine")
def test_quotes_are_the_seeds_own_sentences(b2):
    seed = SEED.read_text(encoding="utf-8")
    for card in b2.values():
        for piece in card.quote.split(" / "):
            assert piece in seed, (card.id, piece)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_text_exists_and_fills(b2, lang):
    cat = catalogue(lang)
    for card in b2.values():
        for f in card.figures:
            assert f"claims.fig.{f.name}" in cat
        values = text_values(card, lang)
        for msg in (card.claim_id, card.rule_id):
            assert t(msg, lang)
        assert "{" not in t(card.explain_id, lang, **values)
        assert t(f"claims.verdict.{card.verdict}", lang)


# ---- figures against formulas -----------------------------------------------------------
def test_card1_int8_peak_per_core(b2):
    chip, c = hp.load("910B2"), b2[1]
    macs = chip.cube_m0 * chip.cube_n0 * chip.cube_k0_int8
    per_core = macs * 2 * chip.clock_MHz * 1e6 / 1e12
    assert c.figure("int8_tops_core") == approx(per_core)
    assert c.figure("int8_tops_chip") == approx(per_core * chip.ai_cores)
    assert c.figure("clock_needed_GHz") == approx(256e12 / (macs * 2) / 1e9)
    assert c.verdict == ("holds" if per_core >= 0.9 * 256 else "wrong") == "wrong"


def test_card2_ub_bandwidth_like_for_like(b2):
    chip, c = hp.load("910B2"), b2[2]
    ub_core = 256 * 3 * chip.vector_clock_MHz * 1e6 / 1e12
    assert c.figure("ub_TBps_core") == approx(ub_core)
    assert c.figure("ub_TBps_chip") == approx(ub_core * chip.vector_cores)
    ratio = ub_core * chip.vector_cores * 1e3 / chip.hbm_bandwidth_GBps
    assert c.figure("ub_hbm_ratio") == approx(ratio)
    bw_ok = abs(ub_core - 4) <= 1 or abs(ub_core * chip.vector_cores - 4) <= 1
    assert c.verdict == ("holds" if bw_ok and 8 <= ratio <= 10 else
                         "inconsistent" if bw_ok != (8 <= ratio <= 10) else "wrong")


def test_card3_density_is_unverifiable_without_power_and_area(b2):
    chip, c = hp.load("910B2"), b2[3]
    assert c.figure("tpp") == approx(chip.peak_tflops("fp16") * 16)
    assert c.figure("watts_for_claim") == approx(chip.peak_tflops("int8") / 3.2)
    assert c.figure("has_power_area") is False and c.verdict == "unverifiable"


def test_card4_kv_cache_of_llama3_70b(b2):
    c = b2[4]
    per_seq = 2 * 80 * 8 * 128 * 2 * 8192
    weights = load_model("llama3-70b").params_B * 1e9 * 2
    assert c.figure("kv_GB_per_seq") == approx(per_seq / GB)
    assert c.figure("batch_implied") == approx(48.7e9 / per_seq)
    assert c.figure("kv_over_weights") == approx(48.7e9 / weights)
    assert c.figure("weights_GB") == approx(weights / GB)
    assert c.figure("chips_for_weights") == np.ceil(weights / hp.load("910B2").hbm_bytes)
    assert c.verdict == "inconsistent"  # 48.7 GB is 0.34x the weights, not 1.8x


def test_card5_cluster_traffic_from_the_emulator(b2):
    chip, c = hp.load("910B2"), b2[5]
    gemm = {"M": 2048, "N": 2048, "K": 2048, "block_dim": chip.ai_cores}
    alone = simulate(Scenario.make("910B2", "gemm", gemm)).metrics["hbm_bytes"]
    assert c.figure("hbm_MB_alone") == approx(alone / 1e6)
    assert c.figure("traffic_cut") == approx(1 - c.figure("hbm_MB_cluster") / (alone / 1e6))
    # L2 already merges the cores' concurrent misses: sharing saves little or no HBM
    assert 0 <= c.figure("traffic_cut") < 0.4
    assert c.figure("cycles_in_10ns") == approx(10 * chip.clock_MHz / 1e3)
    assert c.figure("cluster_size") == 1 and c.verdict == "wrong"
    assert "chip.cluster_size=4" in c.link()


def test_card6_append_saves_bytes_not_flops_and_overlap_is_buffer_num(b2):
    c = b2[6]
    assert abs(c.figure("flops_cut")) < 1e-9  # the same attention flops either way
    assert c.figure("hbm_MB_concat") > c.figure("hbm_MB_incremental")
    m = load_model("llama3-8b")
    row = 2 * m.kv_heads * m.head_dim * 2  # K and V of one token, fp16
    assert c.figure("append_MB_layer_incremental") == approx(2 * row * 4 / 1e6)
    assert c.figure("append_MB_layer_concat") == approx((row * 4 + row * 4 * 511 + row * 4 * 512)
                                                        / 1e6)
    assert c.figure("overlap_bn1") < 0.1 < 0.8 < c.figure("overlap_bn2")
    assert c.verdict == "wrong"


def test_card7_sparsity_ceilings_and_support(b2):
    c = b2[7]
    assert c.figure("compute_ceiling") == 2.0
    assert c.figure("memory_ceiling") == approx(2 / (1 + 2 / 8 / 2))  # half + 2-bit index
    assert c.figure("fp16_sparse_native") is False and c.figure("int8_sparse_native") is True
    assert 1 < c.figure("emulated_speedup") < 2
    assert c.verdict == "wrong"


def test_card8_thirty_percent_of_22_3_gb(b2):
    c = b2[8]
    assert c.figure("kept_GB") == approx(0.3 * 22.3)
    assert c.figure("blog_share_kept") == approx(15.2 / 22.3)
    assert c.verdict == "inconsistent"


def test_card9_the_routine_is_not_kahan(b2):
    c = b2[9]
    assert c.figure("zero_compensation") is True
    assert c.figure("rel_error_blog_beta0") == approx(c.figure("rel_error_fp32"))
    assert c.figure("rel_error_kahan") < c.figure("rel_error_fp32")
    assert c.verdict == "wrong"


def _lpt_efficiency(costs, m: int) -> float:
    heap = [(0.0, i) for i in range(m)]
    for cost in sorted(costs, reverse=True):
        load, i = heapq.heappop(heap)
        heapq.heappush(heap, (load + cost, i))
    loads = np.array([load for load, _ in heap])
    return loads.mean() / loads.max()


def test_card10_ceiling_and_lpt(b2):
    c = b2[10]
    assert c.figure("ceiling") == approx(1 - 0.65 / 0.92)
    tasks = scheduling.synthetic_tasks(**cl.BALANCE_WORKLOAD, kv_heads=8)
    assert c.figure("eff_lpt") == approx(_lpt_efficiency(tasks.costs, 48), rel=1e-6)
    assert c.figure("eff_static") < c.figure("eff_lpt")
    assert c.figure("graham_bound") == approx(4 / 3 - 1 / (3 * 48))
    assert c.verdict == "inconsistent"  # 47% > 29.3%


def test_card11_littles_law_and_roofline(b2):
    chip, c = hp.load("910B2"), b2[11]
    assert c.figure("batch_before") == approx(1200 * 0.045)
    assert c.figure("batch_after") == approx(3850 * 0.015)
    m, batch, hcc = load_model("llama3-70b"), 58, mc.HCCS
    nbytes = batch * m.hidden * 2
    ar = 2 * 7 * hcc.latency_us * 1e3 + 2 * 7 / 8 * nbytes / min(hcc.per_card_GBps,
                                                                 7 * hcc.link_GBps)
    roof = (m.params_B * 1e9 * 2 + batch * 2 * 80 * 8 * 128 * 2 * 8192) / \
        (8 * chip.hbm_bandwidth_GBps) + 80 * 2 * ar
    assert c.figure("roofline_step_ms") == approx(roof / 1e6)
    assert c.figure("roofline_tps") == approx(batch / roof * 1e9)
    assert c.verdict == ("wrong" if 3850 > batch / roof * 1e9 or 15 < roof / 1e6 else "?")


def test_card12_efficiency_is_speedup_over_cards(b2):
    c = b2[12]
    assert c.figure("efficiency") == approx(c.figure("speedup") / c.figure("cards"))
    assert c.verdict == ("holds" if c.figure("efficiency") >= 0.9 else "wrong")


# ---- another chip -----------------------------------------------------------------------
def test_another_preset_recomputes_the_cards(b2, b4):
    changed = {n for n in b2 if b2[n].values() != b4[n].values()}
    assert {1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12} <= changed
    assert b4[1].figure("clock_GHz") == 1.5 and b4[10].figure("cores") == 40
    assert b4[4].figure("chips_for_weights") > b2[4].figure("chips_for_weights")
    assert all(c.link().startswith(f"./{c.page}?preset=910B4") for c in b4.values())


def test_an_override_is_in_the_figures_and_the_links():
    chip = hp.load("910B2", clock_MHz=1000)
    c = cl.card(chip, 1)
    assert c.figure("int8_tops_core") == approx(16 * 16 * 32 * 2 * 1e9 / 1e12)
    assert "chip.clock_MHz=1000" in c.link()
    with pytest.raises(hp.InputError):
        cl.card(chip, 13)
    assert BLOG["int8_tops_per_core"] == c.figure("int8_tops_per_core")

"""The mixed-precision study (explorer/core/precision_study.py) and its figures.

Errors: fp32 everywhere is the most accurate GEMM configuration; per-channel int8 beats
per-tensor on outlier channels; fp16 accumulation grows faster with K than fp32 and stays
under its worst-case bound. Cost: one row per configuration, GEMM time and bytes from the
emulator, attention time as a labelled estimate; unsupported and impossible settings are
labelled rows. Determinism for a seed, the blog routine's zero compensation at beta = 0,
footprints that agree with the quantiser, the sandwich stages, and the figures.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import hardware_presets as hp
from explorer.core import Scenario, simulate
from explorer.core import precision_numerics as pn
from explorer.core import precision_study as ps
from explorer.plots import precision as pp
from hardware_presets.errors import InputError
from kernels.common import precision

C = ps.PrecisionConfig
GEMM = (128, 128, 512)
ATTN = (512, 64)
W8 = C("int8", "fp16", "fp32", "fp16", "channel")


def _clear_caches() -> None:
    pn.gemm_operands.cache_clear()
    pn.attention_operands.cache_clear()


# ---- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("distribution", ps.DISTRIBUTIONS)
def test_fp32_everywhere_is_the_most_accurate_gemm(distribution):
    errs = {name: ps.errors("gemm", GEMM, distribution, 3, cfg)
            for name, cfg in ps.STANDARD["gemm"].items()}
    best = errs.pop("fp32")
    assert best["rel_fro"] < 1e-6
    for name, e in errs.items():
        assert best["rel_fro"] < e["rel_fro"], name
        assert best["max_abs"] < e["max_abs"], name
        assert best["mean_rel"] < e["mean_rel"], name


def test_errors_follow_the_formats_unit_roundoff():
    e = {n: ps.errors("gemm", GEMM, "gaussian", 0, c)["rel_fro"]
         for n, c in ps.STANDARD["gemm"].items()}
    assert e["fp32"] < e["hf32"] < e["sandwich"] < e["bf16"]  # u: 2^-24 < 2^-12 < 2^-11 < 2^-8
    assert e["sandwich"] < e["fp16_acc"]  # same inputs, a shorter accumulator
    assert e["w8_channel"] < e["w4_group"]
    # one rounding of the inputs to fp16 bounds the typical relative error near u
    assert e["sandwich"] < 4 * precision.format_of("fp16").unit_roundoff


def test_per_channel_int8_beats_per_tensor_on_outlier_channels():
    tensor = ps.errors("gemm", GEMM, "outliers", 0, C("int8", "fp16", "fp32", "fp16", "tensor"))
    channel = ps.errors("gemm", GEMM, "outliers", 0, W8)
    assert channel["rel_fro"] < tensor["rel_fro"] / 3
    assert channel["mean_rel"] < tensor["mean_rel"] / 3
    # the K cache's outlier channels: per-channel K/V scales beat per-token ones
    by_token = ps.errors("attention_score", ATTN, "outliers", 0,
                         C("int8", "fp16", "fp32", "fp32", "token"))
    by_channel = ps.errors("attention_score", ATTN, "outliers", 0,
                           C("int8", "fp16", "fp32", "fp32", "channel"))
    assert by_channel["rel_fro"] < by_token["rel_fro"] / 2


def test_group_scales_beat_tensor_scales_for_int4():
    tensor = ps.errors("gemm", GEMM, "outliers", 1, C("int4", "fp16", "fp32", "fp32", "tensor"))
    group = ps.errors("gemm", GEMM, "outliers", 1, C("int4", "fp16", "fp32", "fp32", "group", 32))
    assert group["rel_fro"] < tensor["rel_fro"]


def test_attention_kernels_measure_scores_and_output():
    cfg = C("fp16", "fp16", "fp32", "fp32")
    scores = ps.errors("attention_score", ATTN, "gaussian", 0, cfg)
    out = ps.errors("kv_storage", ATTN, "gaussian", 0, cfg)
    exact = ps.errors("kv_storage", ATTN, "gaussian", 0, C("fp32", "fp32", "fp32", "fp32"))
    assert 0 < scores["rel_fro"] < 1e-2 and 0 < out["rel_fro"] < 1e-1
    assert exact["rel_fro"] < out["rel_fro"]
    assert ps.element_errors("attention_score", ATTN, "gaussian", 0, cfg).shape == (ATTN[0],)
    assert ps.element_errors("kv_storage", ATTN, "gaussian", 0, cfg).shape == (ATTN[1],)


def test_element_errors_cover_the_measured_block():
    errs = ps.element_errors("gemm", (512, 64, 256), "gaussian", 0, W8)
    assert errs.shape == (ps.ERROR_BLOCK * 64,)
    assert np.all(errs >= 0) and np.all(np.isfinite(errs))


# ---- error against K ---------------------------------------------------------------------
def test_fp16_accumulation_grows_faster_with_k_and_stays_under_its_bound():
    ks = (64, 256, 1024, 4096)
    df = ps.error_vs_k("fp16", ks=ks, seed=0)
    assert list(df.columns) == ["k", "strategy", "rel_error", "bound_worst", "bound_prob"]
    assert len(df) == len(ks) * 4
    err = df.pivot(index="k", columns="strategy", values="rel_error")
    growth = err.loc[ks[-1]] / err.loc[ks[0]]
    assert growth["fp16"] > 4 * growth["fp32"]
    assert (err["fp16"] > err["fp32"]).all()
    assert err["fp16"].is_monotonic_increasing
    assert (df["rel_error"] <= df["bound_worst"]).all()
    assert (err["kahan"] <= err["fp32"]).all() and (err["pairwise"] <= err["fp32"]).all()
    fp16 = df[df["strategy"] == "fp16"]
    assert np.allclose(fp16["bound_worst"], fp16["k"] * 2.0 ** -11)
    assert np.allclose(fp16["bound_prob"], np.sqrt(fp16["k"]) * 2.0 ** -11)


def test_error_vs_k_refuses_int8():
    with pytest.raises(InputError, match="compute"):
        ps.error_vs_k("int8", ks=(64,))


# ---- the table ---------------------------------------------------------------------------
def test_table_has_a_row_per_config_with_emulated_time_and_bytes():
    configs = ps.STANDARD["gemm"]
    df = ps.error_table("gemm", (256, 256, 256), "gaussian", 0, configs, "910B2")
    assert list(df["name"]) == list(configs)
    assert (df["status"] == "ok").all() and (df["time_source"] == "emulator").all()
    sandwich = df.set_index("name").loc["sandwich"]
    run = simulate(Scenario.make("910B2", "gemm", {"M": 256, "N": 256, "K": 256,
                                                   "dtype_in": "fp16", "dtype_out": "fp16"}))
    assert sandwich["time_us"] == pytest.approx(run.metrics["makespan_us"])
    assert sandwich["moved_bytes"] == pytest.approx(run.metrics["hbm_bytes"])
    t = df.set_index("name")["time_us"]
    assert t["w8a8"] < t["sandwich"] < t["fp32"]  # the cube's int8 > fp16 > fp32 rates
    fp = df.set_index("name")["footprint_bytes"]
    assert fp["w4_group"] < fp["w8_channel"] < fp["sandwich"] < fp["fp32"]


def test_attention_time_is_a_labelled_memory_roofline_estimate():
    df = ps.error_table("kv_storage", ATTN, "gaussian", 0, ps.STANDARD["attention"], "910B4")
    assert (df["time_source"] == "estimate").all()
    chip = hp.load("910B4")
    for _, r in df.iterrows():
        assert r["time_us"] == pytest.approx(r["moved_bytes"] / chip.hbm_bandwidth_GBps / 1e3)
    t = df.set_index("name")["time_us"]
    assert t["kv4_group"] < t["kv8_token"] < t["sandwich"] < t["fp32"]


def test_unsupported_pairs_become_labelled_rows():
    for preset in ("910", "310P3"):
        df = ps.error_table("gemm", GEMM, "gaussian", 0, ps.STANDARD["gemm"], preset)
        rows = df.set_index("name")
        for name in ("fp32", "hf32", "bf16"):
            assert rows.loc[name, "status"] == "not_on_chip"
            assert rows.loc[name, "note_id"] == "precision.problem.cube_lacks"
            assert rows.loc[name, "note_values"]["fmt"] == ps.STANDARD["gemm"][name].compute
            assert math.isnan(rows.loc[name, "time_us"])
            assert np.isfinite(rows.loc[name, "rel_fro"])  # the arithmetic is still measured
        assert rows.loc["sandwich", "status"] == "ok" and rows.loc["sandwich", "time_us"] > 0
    bf16_out = ps.table_row("gemm", GEMM, "gaussian", 0, C("fp16", "fp16", "fp32", "bf16"), "910")
    assert bf16_out["note_id"] == "precision.problem.output_lacks"


@pytest.mark.parametrize(("cfg", "msg_id"), [
    (C("int8", "fp16", "fp32", "fp16", "group", 100), "precision.problem.group_size"),
    (C("int4", "fp16", "fp32", "fp16", "group", 1024), "precision.problem.group_size"),
    (C("int8", "int8", "fp32", "fp16", "group", 128), "precision.problem.int8_scales_along_k"),
    (C("int8", "int8", "fp32", "fp16", "token"), "precision.problem.int8_scales_along_k"),
    (C("int8", "int8", "fp32", "fp16", "channel", 128, "asymmetric"),
     "precision.problem.int8_asymmetric"),
    (C("fp16", "int8", "fp32", "fp16"), "precision.problem.int8_needs_codes"),
])
def test_impossible_scale_settings_are_labelled_rows(cfg, msg_id):
    row = ps.table_row("gemm", GEMM, "gaussian", 0, cfg, "910B2")
    assert row["status"] == "impossible" and row["note_id"] == msg_id
    assert math.isnan(row["rel_fro"]) and math.isnan(row["time_us"])


def test_problems_are_empty_for_a_supported_config():
    assert ps.problems("gemm", GEMM, W8, "910B2") == ()
    assert ps.problems("kv_storage", ATTN, C("int4", "fp16", "fp32", "fp16", "group", 32),
                       "310P3") == ()
    found = ps.problems("attention_score", ATTN, C("fp32", "fp32", "fp32", "fp32"), "310P3")
    assert [p.msg_id for p in found] == ["precision.problem.cube_lacks"]


def test_bad_names_and_shapes_are_refused():
    with pytest.raises(InputError, match="precision.K"):
        ps.errors("gemm", (64, 64, 10**6), "gaussian", 0, W8)
    with pytest.raises(InputError, match="precision.compute"):
        ps.errors("kv_storage", ATTN, "gaussian", 0, C("fp16", "int8", "fp32", "fp16"))
    with pytest.raises(InputError, match="kernel"):
        ps.errors("conv", GEMM, "gaussian", 0, W8)
    with pytest.raises(InputError, match="distribution"):
        ps.data("A", (4, 4), "cauchy", 0)


# ---- determinism, data -------------------------------------------------------------------
def test_deterministic_for_a_seed():
    first = ps.error_table("gemm", GEMM, "outliers", 7, ps.STANDARD["gemm"], "910B2")
    _clear_caches()
    again = ps.error_table("gemm", GEMM, "outliers", 7, ps.STANDARD["gemm"], "910B2")
    pd.testing.assert_frame_equal(first, again)
    other = ps.errors("gemm", GEMM, "outliers", 8, W8)
    assert other != ps.errors("gemm", GEMM, "outliers", 7, W8)
    assert np.array_equal(ps.data("K", (64, 32), "uniform", 5),
                          ps.data("K", (64, 32), "uniform", 5))
    assert not np.array_equal(ps.data("K", (64, 32), "uniform", 5),
                              ps.data("V", (64, 32), "uniform", 5))


def test_outlier_data_has_a_few_large_channels():
    x = ps.data("B", (4096, 256), "outliers", 0)
    rms = np.sqrt((x ** 2).mean(axis=0))
    big = np.flatnonzero(rms > 10)
    assert len(big) == 256 // 64
    assert np.allclose(rms[big], pn.OUTLIER_FACTOR, rtol=0.1)
    u = ps.data("A", (1000,), "uniform", 0)
    assert u.min() >= -1 and u.max() < 1


# ---- the blog routine --------------------------------------------------------------------
def test_blog_routine_compensation_is_zero_at_beta_zero():
    r = ps.blog_vs_kahan(4096, 0, beta=0.5)
    assert r["zero_at_beta0"] and r["returns_alpha_c"]
    assert np.all(r["compensation"][0.0] == 0.0)
    assert np.any(r["compensation"][0.5] != 0.0)
    tab = r["table"].set_index("method")
    assert tab.loc["blog_beta_0", "abs_error"] == tab.loc["fp32", "abs_error"]
    assert tab.loc["kahan", "abs_error"] < tab.loc["fp32", "abs_error"]
    assert tab.loc["blog_beta_0", "max_abs_compensation"] == 0.0
    assert ps.blog_vs_kahan(4096, 0, beta=0.5)["table"].equals(r["table"])


def test_blog_routine_with_another_alpha_still_returns_alpha_c():
    r = ps.blog_vs_kahan(1000, 3, alpha=1.5, beta=0.25)
    assert r["zero_at_beta0"] and r["returns_alpha_c"]


# ---- footprint and the sandwich ----------------------------------------------------------
@pytest.mark.parametrize("granularity", ps.GRANULARITIES)
@pytest.mark.parametrize("scheme", ps.SCHEMES)
def test_footprint_counts_scales_as_the_quantiser_does(granularity, scheme):
    M, N, K = 64, 96, 256
    cfg = C("int4", "fp16", "fp32", "fp16", granularity, 64, scheme)
    fp = ps.footprint("gemm", (M, N, K), cfg)
    axis = 0 if granularity == "group" else -1
    q = precision.quantize(np.ones((K, N)), "int4", scheme, granularity, axis=axis,
                           group_size=64)
    a_scales = 0  # A stays fp16 for a float compute format
    assert fp["store_bytes"] + fp["scale_bytes"] == pytest.approx(q.nbytes + a_scales)
    assert fp["in_bytes"] == M * K * 2 and fp["out_bytes"] == M * N * 2
    kv = ps.footprint("kv_storage", (128, 64), C("int8", "fp16", "fp32", "fp16",
                                                  granularity, 32, scheme))
    qk = precision.quantize(np.ones((128, 64)), "int8", scheme, granularity, axis=-1,
                            group_size=32)
    assert kv["store_bytes"] + kv["scale_bytes"] == pytest.approx(2 * qk.nbytes)


def test_stages_name_the_format_and_operation_at_each_level():
    w8 = ps.stages("gemm", W8, "910B2")
    assert (w8["gm_in"], w8["vector_op"], w8["l0"], w8["l0c"], w8["fixpipe"]) == \
        ("int8", "antiquant", "fp16", "fp32", "F322F16")
    w8a8 = ps.stages("gemm", ps.STANDARD["gemm"]["w8a8"], "910B2")
    assert (w8a8["vector_op"], w8a8["l0c"], w8a8["acc"], w8a8["fixpipe"]) == \
        ("", "int32", "int32", "VDEQF16")
    hf32 = ps.stages("gemm", ps.STANDARD["gemm"]["hf32"], "910B2")
    assert hf32["hf32"] and hf32["vector_op"] == "" and hf32["fixpipe"] == "NoQuant"
    cast = ps.stages("gemm", C("fp32", "fp16", "kahan", "bf16"), "910B2")
    assert (cast["vector_op"], cast["acc"], cast["fixpipe"]) == ("cast", "kahan", "F322BF16")
    coupled = ps.stages("kv_storage", C("int8", "fp16", "fp32", "fp16", "token"), "910")
    assert not coupled["has_fixpipe"] and coupled["fixpipe"] == ""


# ---- figures -----------------------------------------------------------------------------
def test_pareto_front():
    assert pp.pareto_front([1, 2, 3, 4], [5, 3, 4, 1]) == [0, 1, 3]
    assert pp.pareto_front([2, 1], [1, 1]) == [1]
    assert pp.pareto_front([], []) == []


def _table(lang="en"):
    df = ps.error_table("gemm", GEMM, "gaussian", 0,
                        {**ps.STANDARD["gemm"], "yours": ps.STANDARD["gemm"]["sandwich"]},
                        "910B2")
    return df.assign(display=df["name"])


def test_pareto_figure_merges_equal_points_and_stars_the_users():
    fig = pp.pareto_figure(_table(), "en", highlight="yours")
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    metas = [tr.meta for tr in fig.data]
    assert metas[0] == "front"
    points = [t for tr in fig.data if tr.meta != "front" for t in tr.text]
    assert "sandwich = yours" in points
    assert "star" in [s for tr in fig.data if tr.meta != "front" for s in tr.marker.symbol]
    fp32 = _table().set_index("name").loc["fp32"]
    front = fig.data[0]
    assert fp32["rel_fro"] == pytest.approx(min(front.y))


def test_pareto_figure_without_times_is_an_empty_message():
    df = ps.error_table("gemm", GEMM, "gaussian", 0, {"fp32": ps.STANDARD["gemm"]["fp32"]}, "910")
    fig = pp.pareto_figure(df.assign(display=df["name"]), "zh")
    assert not fig.data and "本芯片" in fig.layout.annotations[0].text


def test_error_vs_k_figure_draws_bounds_per_strategy():
    df = ps.error_vs_k("bf16", ks=(64, 256), seed=0)
    fig = pp.error_vs_k_figure(df, "en", compute="bf16", highlight="kahan")
    metas = {tr.meta for tr in fig.data}
    for s in ("fp32", "fp16", "pairwise", "kahan"):
        assert {f"error:{s}", f"bound_worst:{s}", f"bound_prob:{s}"} <= metas
    dashes = {tr.meta: tr.line.dash for tr in fig.data}
    assert dashes["bound_worst:fp16"] == "dash" and dashes["bound_prob:fp16"] == "dot"
    assert fig.layout.xaxis.type == "log" and "bf16" in fig.layout.title.text


def test_histogram_and_blog_and_sandwich_figures():
    errs = ps.element_errors("gemm", GEMM, "gaussian", 0, W8)
    hist = pp.error_histogram_figure(errs, "en", label="w8")
    assert sum(hist.data[0].y) == errs.size
    assert pp.error_histogram_figure(np.zeros(4), "en").layout.annotations
    blog = pp.blog_kahan_figure(ps.blog_vs_kahan(512, 0), "zh")
    assert {tr.meta for tr in blog.data} == {"errors", "comp:0", "comp:0.5"}
    fig = pp.sandwich_figure(ps.stages("gemm", W8, "910B2"), "en", label=W8.short())
    texts = " ".join(a.text for a in fig.layout.annotations)
    for word in ("GM", "L1", "L0A / L0B", "L0C", "Fixpipe", "F322F16", "AscendAntiQuant",
                 "DataCopy", "LoadData", "Mmad", "int8", "per channel"):
        assert word in texts, word
    coupled = pp.sandwich_figure(ps.stages("gemm", W8, "310P3"), "en")
    assert "Cast fp32" in " ".join(a.text for a in coupled.layout.annotations)


def test_every_stage_has_its_words_in_both_languages():
    from explorer.core.i18n import LANGUAGES, has

    for operation in ps.OPERATIONS:
        fam = ps.family(operation)
        for storage in ps.STORAGE_FORMATS:
            for compute in ps.COMPUTE_FORMATS[fam]:
                for out in ps.OUTPUT_FORMATS[fam]:
                    for acc in ("fp32", "fp16", "pairwise", "kahan"):
                        for gran in ps.GRANULARITIES:
                            st = ps.stages(operation, C(storage, compute, acc, out, gran), "910B2")
                            for lang in LANGUAGES:
                                assert has(f"ui.precision.map.mode.{st['fixpipe']}", lang)
                                assert has(f"ui.precision.map.acc.{st['acc']}", lang)
                                assert has(f"plots.precision.sandwich.acc.{st['acc']}", lang)
                                assert has(f"plots.precision.granularity.{gran}", lang)

"""The seed blog's twelve quantitative claims, each recomputed now for a given chip.

``claims(chip)`` returns one `Card` per claim (see `claims_data`): the blog's figures
next to figures computed from the chip preset, the model shapes and the emulator, and a
verdict from an explicit rule (the rule text is the card's ``claims.c<N>.rule`` message;
the code below is its executable form). Nothing but the blog's own numbers is typed in:
change the chip (910B4 instead of 910B2, an override) and every card is recomputed.

Emulation inputs (shapes, batches) are scenario choices stated on the card's link; the
emulator runs them on the chip given, so they take a few seconds in all.
"""
from __future__ import annotations

import hardware_presets as hp
from hardware_presets.errors import Phrase
from kernels.common.scheduling import graham_bound
from kernels.decode import kernel as decode
from kernels.decode import kv_append
from kernels.decode.kv_memory import max_batch_that_fits
from kernels.gemm import params as gemm_params
from kernels.models import load_model

from . import multicard, scheduling
from .claims_data import (
    BLOG,
    BLOG_MODEL,
    GB,
    QUOTES,
    REFERENCES,
    SECTIONS,
    Card,
    Figure,
    chip_params,
)
from .precision_numerics import blog_vs_kahan
from .scenario import Scenario
from .simulate import simulate
from .sparse_step import BLOG_KEEP as BLOG_KEEP_RATIO
from .sparse_step import blog_claim

TOL = 0.10  # a computed figure "matches" a claimed one within 10%
UB_TOL = 0.25  # the UB bandwidth has no vendor figure: within 25%
OPERAND_STREAMS = 3  # a binary vector op reads two 256 B streams and writes one
WHATIF_CLUSTER = 4  # cluster size of the what-if when the chip has none
GEMM_SIDE = 2048  # M = N = K of the emulated GEMMs (cards 5 and 7)
NEAR_LINEAR = 0.9  # "near-linear": efficiency (speed-up / cards) of at least 90%
CARD_COUNTS = (1, 2, 4, 8)
SCALING_BATCH = 16  # sequences of the scaling study (card 12)
MULTICARD_IMPL = "vector"  # attention kernel of cards 11-12 (split_kv emulates ~10x slower)
APPEND_WORKLOAD = {"model": "llama3-8b", "batch": 4, "mean_len": 512, "max_len": 512,
                   "distribution": "equal"}
BALANCE_WORKLOAD = {"distribution": "lognormal", "batch": 16, "mean_len": 2048,
                    "max_len": 8192, "seed": 0}


def fig(name: str, value, fmt: str, source: str) -> Figure:
    return Figure(name, bool(value) if fmt == "yesno" else float(value), fmt, source)


def blog(name: str, fmt: str, key: str | None = None) -> Figure:
    return fig(name, BLOG[key or name], fmt, "blog")


def near(value: float, target: float, tol: float = TOL) -> bool:
    return abs(value - target) <= tol * abs(target)


def _card(n: int, chip, figures: list[Figure], verdict: str, page: str,
          params: list | None = None) -> Card:
    return Card(n, SECTIONS[n], QUOTES[n], tuple(figures), verdict, REFERENCES[n], page,
                tuple(chip_params(chip) + list(params or [])))


def _scenario(chip, kernel: str, params: dict, **overrides) -> Scenario:
    return Scenario.make(chip.name, kernel, params, {**chip.overridden, **overrides})


def _vector_core_count(chip) -> int:
    return len(chip.vector_core_ids())


# ---- 1-4: figures of the chip and the model ---------------------------------------------
def card_int8_peak(chip) -> Card:
    macs = chip.cube_macs_per_cycle("int8")
    per_core = macs * 2 * chip.clock_MHz * 1e6 / 1e12
    need_GHz = BLOG["int8_tops_per_core"] * 1e12 / (macs * 2) / 1e9
    figures = [blog("int8_tops_per_core", ",.0f"),
               fig("int8_macs_per_cycle", macs, ",.0f", "preset"),
               fig("clock_GHz", chip.clock_MHz / 1e3, ".2f", "preset"),
               fig("int8_tops_core", per_core, ",.1f", "model"),
               fig("int8_tops_chip", chip.peak_tflops("int8"), ",.1f", "model"),
               fig("clock_needed_GHz", need_GHz, ",.1f", "model")]
    verdict = "holds" if per_core >= (1 - TOL) * BLOG["int8_tops_per_core"] else "wrong"
    return _card(1, chip, figures, verdict, "")


def card_ub_bandwidth(chip) -> Card:
    cores = _vector_core_count(chip)
    ub_core = chip.vector_bytes_per_cycle * OPERAND_STREAMS * chip.vector_clock_MHz * 1e6 / 1e12
    hbm_share = chip.hbm_bandwidth_GBps / cores
    ratio = ub_core * 1e3 / hbm_share
    figures = [blog("ub_TBps", ".1f"), blog("ub_ratio_lo", ".0f"), blog("ub_ratio_hi", ".0f"),
               fig("ub_TBps_core", ub_core, ",.2f", "model"),
               fig("ub_TBps_chip", ub_core * cores, ",.1f", "model"),
               fig("hbm_TBps_chip", chip.hbm_bandwidth_GBps / 1e3, ",.2f", "preset"),
               fig("hbm_GBps_core", hbm_share, ",.1f", "model"),
               fig("ub_hbm_ratio", ratio, ",.1f", "model"),
               fig("blog_ub_over_hbm", BLOG["ub_TBps"] * 1e3 / chip.hbm_bandwidth_GBps, ",.1f",
                   "model")]
    bw_ok = near(ub_core, BLOG["ub_TBps"], UB_TOL) or near(ub_core * cores, BLOG["ub_TBps"],
                                                           UB_TOL)
    ratio_ok = BLOG["ub_ratio_lo"] <= ratio <= BLOG["ub_ratio_hi"]
    verdict = "holds" if bw_ok and ratio_ok else "inconsistent" if bw_ok != ratio_ok else "wrong"
    return _card(2, chip, figures, verdict, "vector_add")


def card_density(chip) -> Card:
    int8 = chip.peak_tflops("int8") if "int8" in chip.cube_precisions else 0.0
    tpp = chip.peak_tflops("fp16") * 16  # TPP = 2 x MacTOPS x bit length
    target = BLOG["tops_per_w_per_mm2"]
    figures = [blog("tops_per_w_per_mm2", ".1f"),
               fig("int8_tops_chip", int8, ",.1f", "model"),
               fig("tpp", tpp, ",.0f", "model"),
               fig("watts_for_claim", int8 / target, ",.0f", "model"),
               fig("mm2_for_tpp_density", tpp / target, ",.0f", "model"),
               fig("has_power_area", _has_power_area(chip), "yesno", "preset")]
    return _card(3, chip, figures, "unverifiable", "")  # the unit has no datasheet quantity


def _has_power_area(chip) -> bool:
    return all(name in hp.FIELDS for name in ("power_W", "die_mm2"))


def card_kv_cache(chip) -> Card:
    model = load_model(BLOG_MODEL)
    per_token = model.kv_bytes_per_token("fp16")
    per_seq = per_token * BLOG["context"]
    weights = model.weight_bytes("fp16")
    fit = max_batch_that_fits(model, chip, BLOG["context"])
    implied = BLOG["kv_GB"] * GB / per_seq
    ratio = BLOG["kv_GB"] * GB / weights
    figures = [blog("kv_GB", ".1f"), blog("kv_ratio", ".1f"),
               fig("kv_KiB_per_token", per_token / 1024, ",.0f", "model"),
               fig("kv_GB_per_seq", per_seq / GB, ",.2f", "model"),
               fig("weights_GB", weights / GB, ",.1f", "model"),
               fig("batch_implied", implied, ",.1f", "model"),
               fig("kv_over_weights", ratio, ",.2f", "model"),
               fig("kv_GB_at_ratio", BLOG["kv_ratio"] * weights / GB, ",.1f", "model"),
               fig("hbm_GB", chip.hbm_bytes / GB, ",.1f", "preset"),
               fig("chips_for_weights", fit["min_chips_for_weights"], ",.0f", "model"),
               fig("max_batch_one_chip", fit["max_batch"], ",.0f", "model")]
    verdict = "holds" if near(ratio, BLOG["kv_ratio"]) else "inconsistent"
    params = [("model", BLOG_MODEL), ("batch", max(1, round(implied))),
              ("distribution", "equal"), ("mean_len", BLOG["context"]),
              ("max_len", BLOG["context"]), ("allow_overcommit", True)]
    return _card(4, chip, figures, verdict, "decode", params)


# ---- 5-7: the emulator ------------------------------------------------------------------
def card_cluster(chip) -> Card:
    k = chip.cluster_size if chip.cluster_size > 1 else WHATIF_CLUSTER
    gemm = {"M": GEMM_SIDE, "N": GEMM_SIDE, "K": GEMM_SIDE, "block_dim": chip.ai_cores}
    alone = simulate(_scenario(chip, "gemm", gemm, cluster_size=1)).metrics["hbm_bytes"]
    shared = simulate(_scenario(chip, "gemm", gemm, cluster_size=k)).metrics["hbm_bytes"]
    cut = 1 - shared / alone
    rt_cycles = chip.gm_write_latency_cycles + chip.gm_read_latency_cycles
    rt_ns = rt_cycles * 1e3 / chip.clock_MHz
    figures = [blog("cluster_cut_lo", ".0%"), blog("cluster_cut_hi", ".0%"),
               blog("neighbour_ns", ".0f"),
               fig("cluster_size", chip.cluster_size, ".0f", "preset"),
               fig("whatif_cluster", k, ".0f", "model"),
               fig("hbm_MB_alone", alone / 1e6, ",.1f", "emulated"),
               fig("hbm_MB_cluster", shared / 1e6, ",.1f", "emulated"),
               fig("traffic_cut", cut, ".1%", "emulated"),
               fig("cycles_in_10ns", BLOG["neighbour_ns"] * chip.clock_MHz / 1e3, ",.0f",
                   "model"),
               fig("gm_round_trip_cycles", rt_cycles, ",.0f", "preset"),
               fig("gm_round_trip_ns", rt_ns, ",.0f", "model")]
    holds = chip.cluster_size > 1 and rt_ns < BLOG["neighbour_ns"] and \
        BLOG["cluster_cut_lo"] <= cut <= BLOG["cluster_cut_hi"]
    params = [(key, v) for key, v in gemm.items() if key != "block_dim"]
    return _card(5, chip, figures, "holds" if holds else "wrong", "gemm",
                 params + [("chip.cluster_size", k)] if chip.cluster_size == 1 else params)


def card_kv_update(chip) -> Card:
    runs = {}
    for append in ("incremental", "concat"):
        m = simulate(_scenario(chip, "decode", {**APPEND_WORKLOAD, "append": append})).metrics
        runs[append] = (m["achieved_tflops"] * m["makespan_us"] * 1e6, m["hbm_bytes"])
    overlap = {bn: simulate(_scenario(chip, "vector_add", {"buffer_num": bn}))
               .metrics["overlap_ratio"] for bn in (1, 2)}
    (f_inc, b_inc), (f_cat, b_cat) = runs["incremental"], runs["concat"]
    compute_cut = 1 - f_inc / f_cat if f_cat > 0 else 0.0
    model = load_model(APPEND_WORKLOAD["model"])
    lengths = [APPEND_WORKLOAD["mean_len"]] * APPEND_WORKLOAD["batch"]
    fp16 = decode.check(chip, {**APPEND_WORKLOAD, "kv_dtype": "fp16", "weight_dtype": "fp16"})
    t = kv_append.traffic(decode.DecodeParams.of(fp16), model, lengths)
    figures = [blog("compute_cut", ".0%"), blog("ub_hit_after", ".0%"),
               blog("overlap_before", ".0%"), blog("overlap_after", ".0%"),
               fig("flops_cut", compute_cut, ".1%", "emulated"),
               fig("hbm_MB_incremental", b_inc / 1e6, ",.1f", "emulated"),
               fig("hbm_MB_concat", b_cat / 1e6, ",.1f", "emulated"),
               fig("append_MB_layer_incremental",
                   (t["incremental_read"] + t["incremental_write"]) / 1e6, ",.3f", "model"),
               fig("append_MB_layer_concat", (t["concat_read"] + t["concat_write"]) / 1e6,
                   ",.1f", "model"),
               fig("overlap_bn1", overlap[1], ".1%", "emulated"),
               fig("overlap_bn2", overlap[2], ".1%", "emulated")]
    measured_ok = abs(compute_cut - BLOG["compute_cut"]) <= TOL and \
        abs(overlap[1] - BLOG["overlap_before"]) <= TOL and \
        abs(overlap[2] - BLOG["overlap_after"]) <= TOL
    params = [(k, v) for k, v in APPEND_WORKLOAD.items()] + [("append", "concat")]
    return _card(6, chip, figures, "unverifiable" if measured_ok else "wrong", "decode", params)


def _sparse_supported(chip, dtype: str) -> bool:
    p = {"M": 256, "N": 256, "K": 256, "dtype_in": dtype, "sparsity": "4:2",
         "dtype_out": "int32" if dtype == "int8" else dtype, "block_dim": 1}
    try:
        gemm_params.check(chip, p)
    except hp.InputError:
        return False
    return True


def card_sparsity(chip) -> Card:
    gemm = {"M": GEMM_SIDE, "N": GEMM_SIDE, "K": GEMM_SIDE, "dtype_in": "fp16",
            "block_dim": chip.ai_cores}
    dense = simulate(_scenario(chip, "gemm", gemm)).makespan_ns
    sparse = simulate(_scenario(chip, "gemm", {**gemm, "sparsity": "2:4"})).makespan_ns
    p = {"dtype_in": "fp16", "sparsity": "2:4"}
    bytes_dense = gemm_params.b_tile_bytes(p["dtype_in"], "dense", GEMM_SIDE, GEMM_SIDE)
    bytes_sparse = gemm_params.b_tile_bytes(p["dtype_in"], p["sparsity"], GEMM_SIDE, GEMM_SIDE)
    fp16_native = _sparse_supported(chip, "fp16")
    kept, group = (int(x) for x in p["sparsity"].split(":"))  # keep 2 of every 4
    figures = [blog("sparse_speedup", ".1f"),
               fig("fp16_sparse_native", fp16_native, "yesno", "model"),
               fig("int8_sparse_native", _sparse_supported(chip, "int8"), "yesno", "model"),
               fig("compute_ceiling", group / kept, ".2f", "model"),
               fig("memory_ceiling", bytes_dense / bytes_sparse, ".2f", "model"),
               fig("emulated_speedup", dense / sparse, ".2f", "emulated")]
    verdict = "holds" if fp16_native and near(dense / sparse, BLOG["sparse_speedup"]) \
        else "wrong"
    params = [(k, v) for k, v in gemm.items() if k != "block_dim"] + [("sparsity", "2:4")]
    return _card(7, chip, figures, verdict, "gemm", params)


# ---- 8-12: sparse KV, precision, balance, multi-card ------------------------------------
def card_sparse_kv(chip) -> Card:
    c = blog_claim()
    figures = [fig("before_GB", c["before_GB"], ".1f", "blog"),
               fig("blog_after_GB", c["blog_after_GB"], ".1f", "blog"),
               fig("keep_ratio", BLOG_KEEP_RATIO, ".0%", "blog"),
               fig("kept_GB", c["kept_GB"], ".2f", "model"),
               fig("blog_share_kept", c["blog_share_kept"], ".1%", "model"),
               fig("hbm_GB", chip.hbm_bytes / GB, ",.1f", "preset"),
               fig("before_hbm_share", c["before_GB"] * GB / chip.hbm_bytes, ".1%", "model")]
    verdict = "holds" if near(c["blog_after_GB"], c["kept_GB"]) else "inconsistent"
    return _card(8, chip, figures, verdict, "sparse",
                 [("sparse", "h2o"), ("keep_ratio", BLOG_KEEP_RATIO)])


def card_kahan(chip) -> Card:
    r = blog_vs_kahan()
    err = r["table"].set_index("method")["rel_error"]
    beta = f"blog_beta_{r['beta']:g}"
    figures = [fig("rel_error_fp32", err["fp32"], ".2e", "emulated"),
               fig("rel_error_kahan", err["kahan"], ".2e", "emulated"),
               fig("rel_error_blog_beta0", err["blog_beta_0"], ".2e", "emulated"),
               fig("rel_error_blog_beta", err[beta], ".2e", "emulated"),
               fig("blog_beta", r["beta"], "g", "model"),
               fig("zero_compensation", r["zero_at_beta0"], "yesno", "emulated"),
               fig("fp16_tflops_chip", chip.peak_tflops("fp16"), ",.1f", "model")]
    corrects = err["blog_beta_0"] < err["fp32"] and not r["zero_at_beta0"]
    return _card(9, chip, figures, "holds" if corrects else "wrong", "precision",
                 [("kernel", "gemm"), ("storage", "int8"), ("compute", "fp16"),
                  ("accumulate", "kahan")])


def card_balance(chip) -> Card:
    model = load_model(BLOG_MODEL)
    tasks = scheduling.synthetic_tasks(**BALANCE_WORKLOAD, kv_heads=model.kv_heads)
    cores = _vector_core_count(chip)
    eff = {p: scheduling.plan(tasks, cores, p).balance for p in ("static", "round_robin", "lpt")}
    ceiling = scheduling.ceiling(BLOG["util_before"], BLOG["util_after"])
    figures = [blog("util_before", ".0%"), blog("util_after", ".0%"), blog("p99_cut", ".0%"),
               fig("cores", cores, ".0f", "preset"),
               fig("eff_static", eff["static"].efficiency, ".1%", "model"),
               fig("eff_round_robin", eff["round_robin"].efficiency, ".1%", "model"),
               fig("eff_lpt", eff["lpt"].efficiency, ".1%", "model"),
               fig("lpt_time_cut", 1 - eff["lpt"].makespan / eff["static"].makespan, ".1%",
                   "model"),
               fig("graham_bound", graham_bound(cores), ".4f", "model"),
               fig("ceiling", ceiling, ".1%", "model")]
    verdict = "inconsistent" if BLOG["p99_cut"] > ceiling else \
        "holds" if eff["lpt"].efficiency >= BLOG["util_after"] - TOL / 2 else "wrong"
    params = [(k, v) for k, v in BALANCE_WORKLOAD.items() if k != "seed"]
    return _card(10, chip, figures, verdict, "balance",
                 [("source", "synthetic"), ("policy", "lpt"), *params,
                  ("kv_heads", model.kv_heads)])


def _decode_scenario(chip, batch: int) -> Scenario:
    return _scenario(chip, "decode", {
        "model": BLOG_MODEL, "batch": batch, "distribution": "equal", "impl": MULTICARD_IMPL,
        "mean_len": BLOG["context"], "max_len": BLOG["context"], "allow_overcommit": True})


def card_multicard(chip) -> Card:
    cards, model = BLOG["cards"], load_model(BLOG_MODEL)
    before = multicard.littles_law_batch(BLOG["tps_before"], BLOG["p99_before_ms"])
    after = multicard.littles_law_batch(BLOG["tps_after"], BLOG["p99_after_ms"])
    batch = max(1, round(after))
    step = multicard.simulate_multicard(_decode_scenario(chip, batch), cards)
    kv = model.kv_bytes_per_token("fp16") * BLOG["context"] * batch
    roof_ns = (model.weight_bytes("fp16") + kv) / (cards * chip.hbm_bandwidth_GBps)
    roof_ns += step.layers * step.allreduce_ns_per_layer
    figures = [blog("tps_before", ",.0f"), blog("tps_after", ",.0f"),
               blog("p99_before_ms", ".0f"), blog("p99_after_ms", ".0f"),
               fig("batch_before", before, ",.1f", "model"),
               fig("batch_after", after, ",.1f", "model"),
               fig("roofline_step_ms", roof_ns / 1e6, ",.1f", "model"),
               fig("roofline_tps", batch / roof_ns * 1e9, ",.0f", "model"),
               fig("allreduce_ms", step.layers * step.allreduce_ns_per_layer / 1e6, ",.2f",
                   "estimate"),
               fig("emulated_step_ms", step.step_ns / 1e6, ",.1f", "emulated"),
               fig("emulated_tps", step.tokens_per_s, ",.0f", "emulated")]
    if BLOG["tps_after"] > batch / roof_ns * 1e9 or BLOG["p99_after_ms"] < roof_ns / 1e6:
        verdict = "wrong"
    elif step.tokens_per_s >= (1 - TOL) * BLOG["tps_after"]:
        verdict = "holds"
    else:
        verdict = "unverifiable"
    return _card(11, chip, figures, verdict, "multicard", _multicard_params(batch))


def _multicard_params(batch: int) -> list:
    """The multi-card page's parameters for the same scenario."""
    return [("model", BLOG_MODEL), ("batch", batch), ("mean_len", BLOG["context"]),
            ("impl", MULTICARD_IMPL), ("cards", BLOG["cards"])]


def card_scaling(chip) -> Card:
    df = multicard.scaling(_decode_scenario(chip, SCALING_BATCH), CARD_COUNTS)
    row = df.set_index("N").loc[max(df["N"])]
    figures = [fig("cards", row.name, ".0f", "model"),
               fig("scaling_batch", SCALING_BATCH, ".0f", "model"),
               fig("speedup", row["speedup"], ".2f", "emulated"),
               fig("efficiency", row["efficiency"], ".1%", "emulated"),
               fig("allreduce_share", row["allreduce_ms"] / row["step_ms"], ".1%", "estimate"),
               fig("near_linear", NEAR_LINEAR, ".0%", "model")]
    verdict = "holds" if row["efficiency"] >= NEAR_LINEAR else "wrong"
    return _card(12, chip, figures, verdict, "multicard", _multicard_params(SCALING_BATCH))


BUILDERS = (card_int8_peak, card_ub_bandwidth, card_density, card_kv_cache, card_cluster,
            card_kv_update, card_sparsity, card_sparse_kv, card_kahan, card_balance,
            card_multicard, card_scaling)


def claims(chip) -> list[Card]:
    """The twelve cards for ``chip`` (a `hardware_presets.Chip`), in the blog's order."""
    if isinstance(chip, str):
        chip = hp.load(chip)
    return [build(chip) for build in BUILDERS]


def card(chip, n: int) -> Card:
    """One card (1..12) for ``chip``."""
    if not isinstance(n, int) or not 1 <= n <= len(BUILDERS):
        raise hp.InputError("claim", n, Phrase("refusal.range", low=1, high=len(BUILDERS)))
    return BUILDERS[n - 1](chip if not isinstance(chip, str) else hp.load(chip))


__all__ = ["BUILDERS", "Card", "Figure", "card", "claims"]

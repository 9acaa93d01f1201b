"""What the decode page checks and shows about one scenario: what it refuses before
emulating (``prepare`` and ``check_runs``: the kernel's check, HBM, the emulation size;
``runs`` also decides the widgets' ranges), the KV memory calculator (before any
emulation: the shapes alone decide it), the decode step (time, tokens/s, per-sequence
completion, the step op by op, every op of the layer emulated), the
timeline and summary figures of the emulated layer, HBM bandwidth against its peak and
the roofline, incremental vs concat append, and the numerical check.

The step is cached as a resource on the scenario (it reuses ``state.simulate``'s cached
layer, so figures drawn through ``run_view`` and the step come from one emulation).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer import plots
from explorer.core import Scenario
from explorer.core.decode_step import DecodeStep, linear_roofline, simulate_decode
from explorer.plots import decode as decode_plots
from explorer.plots.style import format_bytes
from explorer.ui import run_view, state
from explorer.ui.decode_controls import CHOICE_IDS
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.decode import kernel as decode
from kernels.decode import params as dp
from kernels.decode.kv_memory import fragmentation, hbm_room, kv_memory, max_batch_that_fits

#: the page refuses bigger layer programs: the emulator and the tables would take seconds
UI_MAX_INSTRUCTIONS = 1_000_000
#: the append comparison emulates both strategies alone; concat grows with the context
APPEND_MAX_INSTRUCTIONS = 300_000
LAYER_METRICS = ("makespan_us", "hbm_GBps", "hbm_utilization", "bound",
                 "mte2_ratio", "aiv_vec_ratio", "l2_hit_rate", "load_balance_mean_max")
FIGURE_ROWS = (("pipe_ratio", "traffic"), ("bandwidth", "load_balance"))
#: what each figure of the layer shows on this page (the roofline's under it)
CAPTION_IDS = {"pipe_ratio": "ui.decode.caption.pipe_ratio",
               "traffic": "ui.decode.caption.traffic",
               "bandwidth": "ui.decode.caption.bandwidth",
               "load_balance": "ui.decode.caption.load_balance"}
#: the labels of the largest batch and of the waste of each layout
FIT_IDS = {"contiguous": "ui.decode.mem.fit_contiguous", "paged": "ui.decode.mem.fit_paged"}
WASTE_IDS = {"contiguous": "ui.decode.mem.waste_contiguous",
             "paged": "ui.decode.mem.waste_paged"}


# ---- cached step and figures -------------------------------------------------------------
def layer_scenario(scenario: Scenario) -> Scenario:
    """The scenario's whole layer (what the step is built on, whatever its phases)."""
    if scenario.params_dict.get("phases", "layer") == "layer":
        return scenario
    return scenario.replace(params={"phases": "layer"})


@st.cache_resource(max_entries=8, show_spinner=False, hash_funcs={Scenario: state.scenario_key})
def step(scenario: Scenario) -> DecodeStep:
    """The whole-model decode step built on the (cached, shared) emulated layer."""
    return simulate_decode(scenario, state.simulate(layer_scenario(scenario)))


@st.cache_resource(max_entries=16, show_spinner=False,
                   hash_funcs={Scenario: state.scenario_key})
def roofline(scenario: Scenario, lang: str) -> go.Figure:
    """The emulated layer as one point under the chip's roofs (vector and cube)."""
    result = state.simulate(scenario)
    p, m = result.params, result.metrics
    point = {"label": state.tr("ui.decode.roofline_point", impl=p["impl"],
                               group=dp.model_of(p).gqa_group),
             "intensity": m["arithmetic_intensity"], "tflops": m["achieved_tflops"]}
    return plots.roofline_figure(result.chip, [point], lang,
                                 precision=dp.DecodeParams.of(p).out_dtype)


def append_only(scenario: Scenario, strategy: str) -> Scenario:
    """The scenario's append alone, with the given strategy (for the comparison)."""
    return scenario.replace(params={"append": strategy, "phases": "append"})


# ---- what the page refuses before emulating ---------------------------------------------
@dataclass(frozen=True)
class Prepared:
    """Kernel parameters as given (``run``) and checked (``p``, every auto resolved), and
    the batch drawn from the seed."""

    run: dict
    p: dict
    lengths: np.ndarray
    layout: object


def prepare(chip: Chip, run: dict, seed: int) -> Prepared:
    """The kernel's check of ``run`` and the batch the seed draws (InputError if refused)."""
    p = decode.check(chip, run)
    return Prepared(run, p, *decode.workload(p, np.random.default_rng(seed)))


def check_hbm(chip: Chip, w: Prepared) -> None:
    """Refuse a batch whose reserved KV and weights exceed HBM (unless allow_overcommit),
    naming the sizes as the rest of the page does."""
    if w.p["allow_overcommit"]:
        return
    model = dp.model_of(w.p)
    kv = kv_memory(model, len(w.lengths), w.lengths, w.p["kv_dtype"], w.layout)
    room = hbm_room(model, chip, kv, w.p["weight_dtype"])
    if not room["fits"]:
        raise InputError("params.batch", w.p["batch"], state.tr(
            "ui.decode.mem.refusal", fit=f"{room['max_batch']:,}",
            kv=format_bytes(room["kv_bytes"]), weights=format_bytes(room["weight_bytes"]),
            hbm=format_bytes(room["hbm_bytes"]), chip=chip.display_name),
            hint=state.tr("ui.decode.mem.refusal_hint"))


def check_size(chip: Chip, p: dict, lengths) -> None:
    """Refuse layer programs too big to emulate interactively, saying what to change."""
    count = decode.instruction_count(chip, decode.DecodeParams.of(p), lengths)
    if count > UI_MAX_INSTRUCTIONS:
        raise InputError("params.batch", p["batch"], state.tr(
            "ui.decode.too_many", count=f"{count:,}", limit=f"{UI_MAX_INSTRUCTIONS:,}",
            batch=f"{len(lengths):,}", mean=f"{int(np.mean(lengths)):,}"),
            hint=state.tr("ui.decode.too_many_hint"))


def check_runs(chip: Chip, w: Prepared) -> None:
    """Refuse what the page would not run: over HBM, or a program too big to emulate here,
    the whole layer included (the step is built on it whatever the phases)."""
    check_hbm(chip, w)
    check_size(chip, w.p, w.lengths)
    if w.p["phases"] != "layer":
        check_size(chip, decode.check(chip, {**w.p, "phases": "layer"}), w.lengths)


def runs(chip: Chip, run: dict, seed: int) -> None:
    """Whether the page runs these kernel parameters: InputError if it would refuse them."""
    check_runs(chip, prepare(chip, run, seed))


# ---- KV memory calculator ----------------------------------------------------------------
def memory(chip: Chip, p: dict, lengths, layout) -> dict:
    """The calculator's numbers: the chosen layout's KV, both layouts' waste, and the
    largest batch next to the weights (contiguous slabs of max_len; paged blocks at the
    mean length)."""
    model = dp.model_of(p)
    mem = kv_memory(model, len(lengths), lengths, p["kv_dtype"], layout)
    frag = fragmentation(model, lengths, p["kv_dtype"], max_len=p["max_len"],
                         block_size=p["block_size"])
    mean = max(1, int(round(float(np.mean(lengths)))))
    fit = {"contiguous": max_batch_that_fits(model, chip, p["max_len"], p["kv_dtype"],
                                             p["weight_dtype"]),
           "paged": max_batch_that_fits(model, chip, mean, p["kv_dtype"], p["weight_dtype"],
                                        block_size=p["block_size"])}
    held = mem["batch_bytes"]
    layouts = {"contiguous": (held, held + frag["contiguous_wasted_bytes"]),
               "paged": (held, held + frag["paged_wasted_bytes"])}
    return {"model": model, "mem": mem, "frag": frag, "fit": fit, "layouts": layouts,
            "mean": mean}


def _metric(column, label_id: str, text: str, help_id: str = "", **values) -> None:
    column.metric(state.tr(label_id), text, border=True,
                  help=state.tr(help_id, **values) if help_id else None)


def _memory_metrics(chip: Chip, p: dict, n: dict) -> None:
    mem, model, fit = n["mem"], n["model"], n["fit"]
    per_seq = np.asarray(mem["per_sequence_bytes"])
    row = st.columns(4)
    _metric(row[0], "ui.decode.mem.per_token", format_bytes(mem["bytes_per_token"]),
            "ui.decode.mem.per_token_help", layers=model.layers, kv_heads=model.kv_heads,
            head_dim=model.head_dim, dtype=p["kv_dtype"], bytes=f"{mem['bytes_per_token']:,}")
    _metric(row[1], "ui.decode.mem.per_sequence", format_bytes(per_seq.mean()),
            "ui.decode.mem.per_sequence_help", max=format_bytes(per_seq.max()),
            tokens=f"{n['mean']:,}")
    _metric(row[2], "ui.decode.mem.batch", format_bytes(mem["reserved_bytes"]),
            "ui.decode.mem.batch_help", held=format_bytes(mem["batch_bytes"]),
            layout=state.tr(CHOICE_IDS["layout"][p["layout"]]))
    _metric(row[3], "ui.decode.mem.weights", format_bytes(fit["paged"]["weight_bytes"]),
            "ui.decode.mem.weights_help", dtype=p["weight_dtype"],
            params=f"{model.params_B:g}", hbm=format_bytes(chip.hbm_bytes))
    row = st.columns(4)
    for column, name in zip(row, FIT_IDS):
        _metric(column, FIT_IDS[name], f"{fit[name]['max_batch']:,}",
                "ui.decode.mem.fit_help", max_len=f"{p['max_len']:,}", mean=f"{n['mean']:,}",
                block=p["block_size"])
    for column, name in zip(row[2:], WASTE_IDS):
        _metric(column, WASTE_IDS[name],
                f"{n['frag'][f'{name}_waste_fraction']:.1%}", "ui.decode.mem.waste_help",
                bytes=format_bytes(n["frag"][f"{name}_wasted_bytes"]))


def show_memory(chip: Chip, p: dict, lengths, layout) -> None:
    """Bytes per token / sequence / batch, weights vs HBM, the largest batch, and the
    contiguous vs paged waste, in numbers and as a bar against the HBM line."""
    st.subheader(state.tr("ui.decode.mem.title"))
    n = memory(chip, p, lengths, layout)
    _memory_metrics(chip, p, n)
    fig = decode_plots.kv_memory_figure(chip.hbm_bytes, n["fit"]["paged"]["weight_bytes"],
                                        n["layouts"], state.language())
    run_view.show(fig, key="kv_memory")
    fit = n["fit"]["paged"]
    if not fit["weights_fit"]:
        st.warning(state.tr("ui.decode.mem.weights_too_big", chips=fit["min_chips_for_weights"],
                            weights=format_bytes(fit["weight_bytes"]),
                            hbm=format_bytes(chip.hbm_bytes), chip=chip.display_name),
                   icon=":material/warning:")
    st.caption(state.tr("ui.decode.mem.caption", block=p["block_size"],
                        bound=format_bytes(n["frag"]["paged_waste_bound_bytes"])))


# ---- the step ----------------------------------------------------------------------------
def show_step(s: DecodeStep) -> None:
    """Step time, tokens/s and P50/P99 completion."""
    row = st.columns(4)
    _metric(row[0], "ui.decode.step.time", f"{s.step_ns / 1e6:,.2f} ms",
            "ui.decode.step.time_help", layers=s.layers)
    _metric(row[1], "ui.decode.step.tokens", f"{s.tokens_per_s:,.0f}",
            "ui.decode.step.tokens_help", batch=len(s.lengths))
    _metric(row[2], "ui.decode.step.p50", f"{s.latency_p50_ns / 1e3:,.1f} µs",
            "ui.decode.step.p_help")
    _metric(row[3], "ui.decode.step.p99", f"{s.latency_p99_ns / 1e3:,.1f} µs",
            "ui.decode.step.p_help")


def show_latency(s: DecodeStep) -> None:
    """When each sequence of the batch is done, with P50 and P99."""
    if len(s.seq_done_ns):
        run_view.show(decode_plots.latency_figure(
            s.seq_done_ns, s.lengths, s.latency_p50_ns, s.latency_p99_ns, state.language()),
            key="latency")
        st.caption(state.tr("ui.decode.step.latency_caption"))


def show_ops(s: DecodeStep) -> None:
    """The step op by op: the stacked shares of time and HBM bytes (every op emulated; the
    linear roofline quoted as a reference), and the table folded."""
    st.subheader(state.tr("ui.decode.ops.title"))
    run_view.show(decode_plots.op_breakdown_figure(s.ops, s.layers, state.language()),
                  key="ops")
    p = s.result.params
    roofline_ns, _ = linear_roofline(s.model, s.result.chip, p["batch"], p["weight_dtype"])
    st.caption(state.tr("ui.decode.ops.caption", roofline_ms=f"{roofline_ns / 1e6:,.2f}"))
    with st.expander(state.tr("apply.ops_table"), icon=":material/table:"):
        _ops_table(s)


def _ops_table(s: DecodeStep) -> None:
    """Each op's time per layer and per step, share and HBM bytes."""
    lang = state.language()
    table = pd.DataFrame({
        state.tr("ui.decode.ops.table_op"): [decode_plots.op_name(op, lang)
                                            for op in s.ops["op"]],
        state.tr("ui.decode.ops.table_time"): s.ops["ns"] / 1e3,
        state.tr("ui.decode.ops.table_step"): s.ops["step_ns"] / 1e6,
        state.tr("ui.decode.ops.table_share"): 100 * s.ops["share"],
        state.tr("ui.decode.ops.table_hbm"): [format_bytes(b) for b in s.ops["hbm_bytes"]]})
    st.dataframe(table, hide_index=True, column_config={
        table.columns[1]: st.column_config.NumberColumn(format="%.1f"),
        table.columns[2]: st.column_config.NumberColumn(format="%.3f"),
        table.columns[3]: st.column_config.NumberColumn(format="%.1f%%")})


def show_layer(scenario: Scenario, s: DecodeStep) -> None:
    """The emulated layer: key metrics and the timeline."""
    result = s.result
    st.subheader(state.tr("ui.decode.layer_title"))
    names = LAYER_METRICS
    if result.params["impl"] == "cube_vector":
        names = (*names[:4], "aic_cube_ratio", *names[4:7])
    run_view.show_metrics(result, names)
    st.subheader(state.tr("ui.va.timeline"))
    cores, window = run_view._view_controls(result)
    run_view.show(run_view.timeline(scenario, state.language(), cores, window), key="timeline")
    st.caption(state.tr("ui.decode.timeline_help"))


def show_layer_figures(scenario: Scenario) -> None:
    """The summary figures of the emulated run, two per row, each with its caption."""
    lang = state.language()
    for row in FIGURE_ROWS:
        for column, kind in zip(st.columns(2), row):
            with column:
                run_view.show(run_view.result_figure(kind, scenario, lang), key=kind)
                st.caption(state.tr(CAPTION_IDS[kind]))


def show_hbm(s: DecodeStep) -> None:
    """The attention's achieved HBM bandwidth as a share of the chip's peak."""
    share = s.attention_hbm_GBps / s.hbm_peak_GBps if s.hbm_peak_GBps else 0.0
    st.metric(state.tr("ui.decode.step.hbm"), f"{s.attention_hbm_GBps:,.0f} GB/s",
              delta=state.tr("ui.decode.step.of_peak", share=f"{share:.0%}",
                             peak=f"{s.hbm_peak_GBps:,.0f}"),
              delta_color="off", border=True, help=state.tr("ui.decode.step.hbm_help"))


def show_roofline(scenario: Scenario) -> None:
    run_view.show(roofline(scenario, state.language()), key="roofline")
    st.caption(state.tr("ui.decode.caption.roofline"))


# ---- append strategies -------------------------------------------------------------------
def _append_times(scenario: Scenario, s: DecodeStep) -> dict[str, float]:
    """Emulated append time per layer of both strategies (those small enough to emulate)."""
    lengths, times = s.lengths, {}
    for strategy in decode_plots.STRATEGIES:
        other = append_only(scenario, strategy)
        p = decode.DecodeParams.of(other.params_dict)
        if decode.instruction_count(s.result.chip, p, lengths) <= APPEND_MAX_INSTRUCTIONS:
            times[strategy] = state.simulate(other).makespan_ns
    return times


def show_append(scenario: Scenario, s: DecodeStep) -> None:
    """Incremental vs concat: bytes per layer (formulas) and emulated time per layer (under
    the caller's heading: the page folds it under ``ui.decode.append.title``)."""
    b = s.append_bytes
    moved = {k: b[f"{k}_read"] + b[f"{k}_write"] for k in decode_plots.STRATEGIES}
    with st.spinner(state.tr("ui.decode.running")):
        times = _append_times(scenario, s)
    chosen = s.result.params["append"]
    run_view.show(decode_plots.append_figure(moved, times, chosen, state.language()),
                  key="append")
    ratio = moved["concat"] / moved["incremental"] if moved["incremental"] else 0.0
    st.caption(state.tr("ui.decode.append.caption", ratio=f"{ratio:,.0f}",
                        inc=format_bytes(moved["incremental"]),
                        concat=format_bytes(moved["concat"])))
    if len(times) < 2:
        st.caption(state.tr("ui.decode.append.untimed", limit=f"{APPEND_MAX_INSTRUCTIONS:,}"))


# ---- numerics ----------------------------------------------------------------------------
def notes(s: DecodeStep) -> tuple[tuple[str, dict], ...]:
    """The step's notes, the overcommit one with its sizes written as on the rest of the
    page (``format_bytes``) instead of the core's decimal GB."""
    need = format_bytes(s.kv["reserved_bytes"] + s.fit["weight_bytes"])
    return tuple(("ui.decode.mem.overcommit_note",
                  {"need": need, "hbm": format_bytes(s.fit["hbm_bytes"])})
                 if msg_id == "note.decode_overcommit" else (msg_id, values)
                 for msg_id, values in s.notes)


def show_numerics(s: DecodeStep) -> None:
    """The float64 check of the attention output (explorer.core.verdict), and the step's
    notes (replicated layer, estimated linear part, overcommit)."""
    p = s.result.params
    subject = state.tr("verdict.subject.attention", kv=p["kv_dtype"],
                       out=dp.DecodeParams.of(p).out_dtype)
    run_view.show_check(s.result.numerics, subject, notes(s))

"""Decode figures: where HBM goes (weights, KV cache, layout waste), what one decode step
spends its time on (every op of the layer and the LM head, in time and in HBM bytes), when
each sequence of the batch is done, and what the append strategy costs.

Pure functions of plain numbers (bytes, nanoseconds, per-sequence arrays), so the page,
the report and the tests draw the same pictures; no streamlit. Every trace carries a
``meta`` tag ("weights", "kv", "waste", "append", ...) that tests and callers can find.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from explorer.plots.style import (
    PIPE_COLOURS,
    SOURCE_COLOURS,
    base_layout,
    byte_unit,
    empty_figure,
    format_bytes,
    msg,
    panels,
    reference_line,
)

NS_PER_US, NS_PER_MS = 1e3, 1e6
#: one colour per part of HBM and per phase of the step
COLOURS = {"weights": "#7F7F7F", "kv": SOURCE_COLOURS["L2"], "waste": "#E69F00",
           "attention": PIPE_COLOURS["VECTOR"], "incremental": "#009E73", "concat": "#D55E00"}
STRATEGIES = ("incremental", "concat")
#: message ids (under ``plots.``, what ``msg`` takes) of the KV layouts, the parts of HBM
#: and the append strategies, written out (see tests/test_message_ids.py)
LAYOUT_IDS = {"contiguous": "decode.layout.contiguous", "paged": "decode.layout.paged"}
PART_IDS = {"weights": "decode.part.weights", "kv": "decode.part.kv",
            "waste": "decode.part.waste"}
STRATEGY_IDS = {"incremental": "decode.strategy.incremental",
                "concat": "decode.strategy.concat"}
#: sequences drawn one by one in the latency chart (beyond: every k-th)
MAX_POINTS = 4096


# ---- HBM budget --------------------------------------------------------------------------
def kv_memory_figure(hbm_bytes: int, weight_bytes: int,
                     layouts: Mapping[str, tuple[int, int]], lang: str = "en") -> go.Figure:
    """One horizontal bar per KV layout: weights, the KV cache the tokens hold and what the
    layout reserves beyond it (waste), stacked against a dashed line at the chip's HBM.

    ``layouts`` maps a layout name ("contiguous", "paged", ...) to (held, reserved) bytes.
    """
    if not layouts:
        return empty_figure(msg("decode.memory_empty", lang), msg("decode.memory_title", lang))
    names = list(layouts)
    rows = [msg(LAYOUT_IDS[n], lang) for n in names]
    held = np.array([layouts[n][0] for n in names], dtype=np.float64)
    waste = np.array([layouts[n][1] - layouts[n][0] for n in names], dtype=np.float64)
    weights = np.full(len(names), float(weight_bytes))
    top = max(float(hbm_bytes), float((weights + held + waste).max()))
    divisor, unit = byte_unit(top)
    fig = go.Figure()
    for part, values in (("weights", weights), ("kv", held), ("waste", waste)):
        text = [format_bytes(v) for v in values]
        fig.add_trace(go.Bar(y=rows, x=values / divisor, orientation="h", meta=part,
                             name=msg(PART_IDS[part], lang), text=text,
                             textposition="inside", marker_color=COLOURS[part],
                             hovertemplate="%{fullData.name}: %{text}<extra></extra>"))
    reference_line(fig, "x", hbm_bytes / divisor, dict(dash="dash", color="#000000", width=2),
                   msg("decode.hbm_line", lang, value=format_bytes(hbm_bytes)))
    base_layout(fig, msg("decode.memory_title", lang), barmode="stack",
                height=200 + 70 * len(names))
    fig.update_xaxes(title_text=msg("decode.bytes_axis", lang, unit=unit), rangemode="tozero")
    return fig


# ---- the step ----------------------------------------------------------------------------
#: one colour per op of the layer, ramps by what the op mostly moves: weights (blues),
#: the KV cache (oranges), activations (greens)
OP_COLOURS = {"qkv": "#08519C", "o_proj": "#3182BD", "gate_up": "#6BAED6", "down": "#9ECAE1",
              "lm_head": "#C6DBEF", "kv_append": "#E6550D", "attention": "#FD8D3C",
              "attn_norm": "#31A354", "rope": "#74C476", "mlp_norm": "#A1D99B",
              "swiglu": "#C7E9C0", "final_norm": "#E5F5E0"}


#: the catalogue id of each op's name (ids written literally, see tests/test_message_ids.py)
OP_LABELS = {"attn_norm": "decode.op.attn_norm", "qkv": "decode.op.qkv",
             "rope": "decode.op.rope", "kv_append": "decode.op.kv_append",
             "attention": "decode.op.attention", "o_proj": "decode.op.o_proj",
             "mlp_norm": "decode.op.mlp_norm", "gate_up": "decode.op.gate_up",
             "swiglu": "decode.op.swiglu", "down": "decode.op.down",
             "final_norm": "decode.op.final_norm", "lm_head": "decode.op.lm_head"}


def op_name(op: str, lang: str) -> str:
    """An op of the decode layer as the figures and tables name it."""
    return msg(OP_LABELS[op], lang)


def op_breakdown_figure(ops, layers: int, lang: str = "en") -> go.Figure:
    """The step split by op, as two stacked bars of shares: time and HBM bytes, each op
    counted as often as a step runs it (``layers`` times for the layer's ops, once for the
    final norm and the LM head). ``ops`` is ``DecodeStep.ops`` (op, count, step_ns,
    hbm_bytes, ...): at small batch the weight-streaming ops dominate, at long context the
    attention over the KV cache does."""
    ops = ops[ops["step_ns"] > 0]
    if ops.empty:
        return empty_figure(msg("decode.ops.empty", lang), msg("decode.ops.title", lang))
    step_ns = float(ops["step_ns"].sum())
    hbm = ops["hbm_bytes"].to_numpy(float) * ops["count"].to_numpy(float)
    rows = [msg("decode.ops.row_time", lang, ms=f"{step_ns / NS_PER_MS:,.2f}"),
            msg("decode.ops.row_hbm", lang, bytes=format_bytes(hbm.sum()))]
    fig = go.Figure()
    for (_, op), op_hbm in zip(ops.iterrows(), hbm):
        shares = [op["step_ns"] / step_ns, op_hbm / hbm.sum() if hbm.sum() else 0.0]
        name = op_name(op["op"], lang)
        text = [msg("decode.ops.time_text", lang, ms=f"{op['step_ns'] / NS_PER_MS:,.2f}",
                    us=f"{op['ns'] / NS_PER_US:,.1f}", count=int(op["count"])),
                format_bytes(op_hbm)]
        fig.add_trace(go.Bar(y=rows, x=[100 * s for s in shares], orientation="h",
                             name=name, meta=op["op"], customdata=text,
                             marker_color=OP_COLOURS.get(op["op"], "#999999"),
                             hovertemplate="%{fullData.name}: %{x:.1f}% (%{customdata})"
                                           "<extra></extra>"))
    base_layout(fig, msg("decode.ops.title_values", lang, layers=layers), barmode="stack",
                height=300 + 22 * -(-len(ops) // 4), legend=dict(traceorder="normal"))
    fig.update_xaxes(title_text=msg("decode.ops.share_axis", lang), range=[0, 100])
    fig.update_yaxes(autorange="reversed")
    return fig


def _thin(n: int) -> np.ndarray:
    """Indices of the sequences drawn: all, or evenly spaced ones beyond MAX_POINTS."""
    return np.arange(n) if n <= MAX_POINTS else np.linspace(0, n - 1, MAX_POINTS).astype(int)


def latency_figure(seq_done_ns, lengths, p50_ns: float, p99_ns: float,
                   lang: str = "en") -> go.Figure:
    """When each sequence's attention is done within a layer (µs, from the attention's
    start) against its context length, with the P50 and P99 as dashed lines: long
    sequences and the cores they land on decide the tail."""
    done = np.asarray(seq_done_ns, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if done.size == 0:
        return empty_figure(msg("decode.latency_empty", lang), msg("decode.latency_title", lang))
    keep = _thin(done.size)
    fig = go.Figure(go.Scatter(
        x=lengths[keep], y=done[keep] / NS_PER_US, mode="markers", meta="sequences",
        customdata=keep, name=msg("decode.sequences", lang),
        marker=dict(color=COLOURS["attention"], size=8, opacity=0.75),
        hovertemplate=msg("decode.latency_hover", lang, seq="%{customdata}", tokens="%{x:,}",
                          us="%{y:,.1f}") + "<extra></extra>"))
    for label_id, value, dash in (("decode.p50", p50_ns, "dot"), ("decode.p99", p99_ns, "dash")):
        reference_line(fig, "y", value / NS_PER_US, dict(dash=dash, color="#000000", width=1.5),
                       msg(label_id, lang, us=f"{value / NS_PER_US:,.1f}"))
    base_layout(fig, msg("decode.latency_title", lang))
    fig.update_xaxes(title_text=msg("decode.tokens_axis", lang))
    fig.update_yaxes(title_text=msg("decode.us_axis", lang), rangemode="tozero")
    return fig


# ---- append strategies -------------------------------------------------------------------
def _strategy_bars(values: Mapping[str, float], scale: float, text: list[str], meta: str,
                   chosen: str, lang: str) -> go.Bar:
    """One bar per strategy (values / scale), the chosen one outlined in black."""
    names = list(values)
    return go.Bar(x=[msg(STRATEGY_IDS[s], lang) for s in names],
                  y=[float(values[s]) / scale for s in names], meta=meta, showlegend=False,
                  text=text, textposition="auto",
                  marker=dict(color=[COLOURS[s] for s in names],
                              line=dict(width=[3 if s == chosen else 0 for s in names],
                                        color="#000000")),
                  hovertemplate="%{x}: %{text}<extra></extra>")


def append_figure(bytes_per_layer: Mapping[str, float], ns_per_layer: Mapping[str, float],
                  chosen: str, lang: str = "en") -> go.Figure:
    """Incremental vs concat append: GM bytes moved per layer (left) and the emulated time
    per layer (right, for the strategies that were emulated); the chosen one is outlined."""
    moved = {s: float(bytes_per_layer[s]) for s in STRATEGIES if s in bytes_per_layer}
    if not moved:
        return empty_figure(msg("decode.append_empty", lang), msg("decode.append_title", lang))
    timed = {s: float(ns_per_layer[s]) for s in STRATEGIES if s in ns_per_layer}
    fig = panels((msg("decode.append_bytes", lang), msg("decode.append_time", lang)), 0.15)
    divisor, unit = byte_unit(max(moved.values()))
    fig.add_traces([
        _strategy_bars(moved, divisor, [format_bytes(v) for v in moved.values()], "bytes",
                       chosen, lang),
        _strategy_bars(timed, NS_PER_US, [f"{v / NS_PER_US:,.1f} µs" for v in timed.values()],
                       "time", chosen, lang).update(xaxis="x2", yaxis="y2")])
    base_layout(fig, msg("decode.append_title", lang), height=340,
                yaxis_title_text=msg("decode.bytes_axis", lang, unit=unit),
                yaxis2_title_text=msg("decode.us_axis", lang))
    return fig

"""Rules every figure the pages draw follows (issue 19; the conventions are listed in
explorer/plots/style.py), checked on the figure JSON of each figure function, built from
the pages' default scenarios and the gallery's:

* every log axis has ticks at 1, 2, 5 x 10^k only, each labelled with its own value and,
  for a quantity that has one, its unit (item 9);
* no two annotations of a figure overlap, their boxes estimated from position, anchors,
  font size and text length at the narrowest width a page draws the figure, and every
  annotation is placed inside the figure: paper or domain fractions in [0, 1], data
  inside the axis range (item 8);
* the legend is never where a subplot title is (item 8);
* where the vector add run's HBM throughput drops to 0 while MTE2 is busy, the bandwidth
  figure says why (item 11);
* the tables of the reports hold formatted numbers.

tests/browser/test_figures_browser.py checks the same figures as a browser draws them.
"""
from __future__ import annotations

import base64
import functools
import math
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import hardware_presets as hp
from explorer.core import Scenario
from explorer.core import compare as cmp
from explorer.core import precision_formats as pf
from explorer.core import precision_study as ps
from explorer.core import scheduling as sc
from explorer.core import sparse_study as ss
from explorer.core.chip_compare import compared_chips
from explorer.core.i18n import t
from explorer.core.simulate import simulate
from explorer.plots import balance as bp
from explorer.plots import compare as cp
from explorer.plots import decode as dp
from explorer.plots import multicard as mp
from explorer.plots import precision as pp
from explorer.plots import precision_formats as pfp
from explorer.plots import report_figures
from explorer.plots import sparse as sp
from explorer.plots.chip_compare import comparison_figure as chip_compare_figure
from explorer.plots.core_diagram import core_diagram_figure
from explorer.plots.other_reports import compare_report
from explorer.plots.sweep import sweep_figure
from kernels.sparse.data import synthetic

GALLERY = Path(__file__).resolve().parents[1] / "explorer" / "scenarios"
LANGS = ("en", "zh")
#: px wide of the narrowest column a page draws a figure in: half, 3/5 and the whole page
HALF, WIDE, FULL = 440, 540, 900
GiB = 1 << 30


# ---- the figures -------------------------------------------------------------------------
def array(data) -> np.ndarray:
    """A figure JSON's data array as numpy (plotly may write it base64-encoded)."""
    if isinstance(data, dict) and "bdata" in data:
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
    return np.asarray(data, dtype=object)



@functools.cache
def run(name: str):
    """A kernel page's default run ("vector_add", "gemm") or a gallery scenario's."""
    if (GALLERY / f"{name}.toml").exists():
        return simulate(Scenario.from_toml((GALLERY / f"{name}.toml").read_text("utf-8")))
    return simulate(Scenario.make(kernel=name))


#: the width each figure of a run is drawn at on the kernel pages
RUN_WIDTHS = {"timeline": FULL, "task_grid": FULL, "ops": FULL, "latency": FULL,
              "roofline": HALF, "pipe_ratio": HALF, "bandwidth": HALF, "traffic": HALF,
              "load_balance": HALF}
RUNS = ("vector_add", "double_buffer_a", "gemm", "tail_wave", "decode_memory_bound")


@functools.cache
def run_figures(name: str, lang: str) -> dict[str, go.Figure]:
    """Every figure a kernel page (and its report) draws of the run, by kind."""
    return dict(report_figures.figures(run(name), lang))


def run_figure(name: str, kind: str) -> Callable[[str], go.Figure]:
    return lambda lang: run_figures(name, lang)[kind]


def _precision_table(operation: str, lang: str) -> pd.DataFrame:
    family = ps.family(operation)
    shape = (256, 256, 256) if family == "gemm" else (512, 64)
    configs = {**ps.STANDARD[family], "yours": next(iter(ps.STANDARD[family].values()))}
    table = ps.error_table(operation, shape, "gaussian", 0, configs, "910B2")
    return table.assign(display=[t(f"ui.precision.config.{n}", lang) for n in table["name"]])


def _multicard_table() -> pd.DataFrame:
    n = np.array([1, 2, 4, 8])
    step = np.array([130.0, 66.0, 35.0, 21.0])
    return pd.DataFrame({"N": n, "step_ms": step, "tokens_per_s": 8e3 / step,
                         "per_token_latency_ms": step, "speedup": step[0] / step,
                         "efficiency": step[0] / step / n, "fits": [False, False, True, True],
                         "append_ms": step * 0.01, "attention_ms": step * 0.3,
                         "linear_ms": step * 0.6, "allreduce_ms": step * 0.09})


def _balance_loads(lang: str) -> go.Figure:
    """Cores balanced to within 2%: the mean, max and bound lines all but coincide."""
    loads = np.r_[np.full(47, 15.8), 16.0]
    return bp.loads_figure(loads, 15.9, lang, predicted_us=loads * 1.01,
                           names=[f"AIV{i}" for i in range(48)])


def _gantt(lang: str) -> go.Figure:
    tasks = sc.synthetic_tasks("lognormal", 16, mean_len=1024, max_len=8192, seed=0,
                               kv_heads=8)
    plan = sc.plan(tasks, 48, "lpt")
    pieces = pd.DataFrame({"slot": plan.slots, "seq": tasks.seq[plan.parent],
                           "start_us": plan.end - plan.costs, "end_us": plan.end})
    return bp.gantt_figure(pieces, 48, lang, lower_bound_us=float(plan.end.max()) * 0.9)


def _policies() -> pd.DataFrame:
    policies = list(bp.COLOURS)
    return pd.DataFrame({"policy": policies * 2, "series": ["predicted"] * 5 + ["emulated"] * 5,
                         "efficiency": np.linspace(0.4, 0.97, 10),
                         "makespan_us": np.linspace(100, 40, 10), "p50_us": 30.0,
                         "p99_us": np.linspace(110, 50, 10)})


@functools.cache
def _sparse_data():
    return synthetic(np.random.default_rng(0), tokens=256, kv_heads=2)


def _kept(lang: str) -> go.Figure:
    mask, attention = ss.kept_mask(_sparse_data(), 1, keep_ratio=0.25)
    return sp.kept_figure(mask, attention, lang, "h2o", 0.25)


def _sweep_table() -> pd.DataFrame:
    n = 2 ** np.arange(14, 23, 2)
    return pd.DataFrame({"n": n, "error": [""] * 4 + ["refused"],
                         "makespan_us": [1.2, 2.5, 7.9, 28.0, np.nan]})


def _comparison():
    return cmp.compare(run("double_buffer_a"), run("double_buffer_b"))


W8 = ps.PrecisionConfig("int8", "fp16", "fp32", "fp16", "channel")
FIGURES: dict[str, tuple[Callable[[str], go.Figure], int]] = {
    **{f"{name}:{kind}": (run_figure(name, kind), width) for name in RUNS
       for kind, width in RUN_WIDTHS.items()
       if kind != "task_grid" or "gemm" in name or name == "tail_wave"
       if kind not in ("ops", "latency") or name.startswith("decode")},
    "decode:kv_memory": (lambda lang: dp.kv_memory_figure(
        64 * GiB, 16 * GiB, {"contiguous": (8 * GiB, 32 * GiB), "paged": (8 * GiB, 9 * GiB)},
        lang), FULL),
    "decode:append": (lambda lang: dp.append_figure(
        {"incremental": 2e6, "concat": 5e8}, {"incremental": 3e4, "concat": 9e5},
        "incremental", lang), FULL),
    "precision:pareto": (lambda lang: pp.pareto_figure(
        _precision_table("gemm", lang), lang, highlight="yours"), FULL),
    "precision:pareto_attention": (lambda lang: pp.pareto_figure(
        _precision_table("kv_storage", lang), lang, highlight="yours", estimate=True), FULL),
    "precision:vs_k": (lambda lang: pp.error_vs_k_figure(
        ps.error_vs_k("fp16", seed=0), lang, highlight="fp32"), HALF),
    "precision:histogram": (lambda lang: pp.error_histogram_figure(
        ps.element_errors("gemm", (256, 64, 256), "gaussian", 0, W8), lang, label="w8"), HALF),
    "precision:blog": (lambda lang: pp.blog_kahan_figure(
        ps.blog_vs_kahan(4096, 0, beta=0.5), lang), FULL),
    "precision:sandwich": (lambda lang: pp.sandwich_figure(
        ps.stages("gemm", W8, "910B2"), lang, label=W8.short()), FULL),
    "precision:sandwich_coupled": (lambda lang: pp.sandwich_figure(
        ps.stages("kv_storage", W8, "310P3"), lang), FULL),
    "formats:errors": (lambda lang: pfp.element_error_figure(
        pf.element_study("outliers", 0, 0).rel_errors, lang, highlight="mxfp4"), HALF),
    "formats:outcomes": (lambda lang: pfp.outcome_figure(
        pf.element_study("outliers", 0, 0).table, lang), HALF),
    "formats:dots": (lambda lang: pfp.dot_figure(
        pf.dot_study("gaussian", 0, 0), lang, highlight="fp8_e4m3"), FULL),
    "multicard:scaling": (lambda lang: mp.scaling_figure(_multicard_table(), lang), FULL),
    "multicard:split": (lambda lang: mp.split_figure(_multicard_table(), lang), FULL),
    "balance:loads": (_balance_loads, FULL),
    "balance:gantt": (_gantt, FULL),
    "balance:policies": (lambda lang: bp.policies_figure(
        _policies(), lang, chosen="lpt"), HALF),
    "balance:completion": (lambda lang: bp.completion_figure(
        _policies().head(5), lang), HALF),
    "balance:sweep": (lambda lang: bp.sweep_figure(sc.sweep_batches(
        (1, 4, 16, 48, 96, 256), 48, distribution="bimodal", mean_len=1024, max_len=8192,
        seed=0, policies=("static", "lpt")), 48, 1, lang), FULL),
    "sparse:accuracy": (lambda lang: sp.accuracy_figure(
        ss.summary(ss.study(_sparse_data(), keep_ratios=(0.1, 0.3, 1.0))), lang, "h2o", 0.3),
        FULL),
    "sparse:kept": (_kept, FULL),
    "sparse:norm": (lambda lang: sp.norm_figure(
        np.linspace(1, 9, 200), np.geomspace(1e-6, 0.2, 200), lang, rho=0.3), FULL),
    "sparse:memory": (lambda lang: sp.memory_figure(
        {"dense": 4 * GiB, "stored": GiB, "read": 2 * GiB}, lang), FULL),
    "sparse:time": (lambda lang: sp.time_figure(10e6, 6e6, 0.5e6, lang), FULL),
    "sweep:line": (lambda lang: sweep_figure(
        _sweep_table(), ["n"], "makespan_us", lang, units={"n": "elements"}), FULL),
    "compare:timelines": (lambda lang: cp.timelines_figure(
        run("double_buffer_a"), run("double_buffer_b"), lang), FULL),
    "compare:traffic": (lambda lang: cp.traffic_figure(
        run("double_buffer_a"), run("double_buffer_b"), lang), HALF),
    "compare:ratio": (lambda lang: cp.ratio_figure(_comparison(), lang), HALF),
    "chip:split": (lambda lang: core_diagram_figure(hp.load("910B2"), lang), WIDE),
    "chip:coupled": (lambda lang: core_diagram_figure(hp.load("910"), lang), WIDE),
    "chip:compare": (lambda lang: chip_compare_figure(compared_chips(), lang), FULL),
}
#: log axes of quantities without a unit: relative errors, attention, counts
DIMENSIONLESS = {("precision:pareto", "yaxis"), ("precision:pareto_attention", "yaxis"),
                 ("precision:vs_k", "xaxis"), ("precision:vs_k", "yaxis"),
                 ("precision:blog", "yaxis"), ("sparse:kept", "yaxis"),
                 ("formats:errors", "xaxis"), ("formats:dots", "xaxis"),
                 ("formats:dots", "yaxis"),
                 ("sparse:norm", "yaxis"), ("balance:sweep", "xaxis")}


@functools.cache
def figure(name: str, lang: str) -> dict:
    """The figure's JSON (what the browser receives), built once per test session."""
    return FIGURES[name][0](lang).to_plotly_json()


def cases():
    return [pytest.param(name, lang, id=f"{name}-{lang}") for name in FIGURES
            for lang in LANGS]


# ---- log axes ----------------------------------------------------------------------------
_SUPERSCRIPT = dict(zip("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789"))
_TICK = re.compile(r"^(?:(?P<m>[\d.]+)×)?10(?P<e>[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)\s?(?P<u1>.*)$"
                   r"|^(?P<n>[\d.,]+)(?P<si>[kMGT]?)\s?(?P<u2>.*)$")
_SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
#: a tick in one of these units is a time of the axis' µs
_TIME = {"ns": 1e-3, "µs": 1.0, "ms": 1e3, "s": 1e6}


def read_tick(text: str) -> tuple[float, str]:
    """(value, unit) of a tick label such as "50 µs", "2×10⁻⁴", "20k flop/B", "0.5×"."""
    match = _TICK.match(text.strip())
    assert match, f"unreadable tick label {text!r}"
    if match["e"]:
        exponent = int("".join(_SUPERSCRIPT[c] for c in match["e"]))
        return float(match["m"] or 1) * 10.0 ** exponent, match["u1"].strip()
    return float(match["n"].replace(",", "")) * _SI[match["si"]], match["u2"].strip()


def log_axes(fig: dict) -> dict[str, dict]:
    return {key: axis for key, axis in fig["layout"].items()
            if re.fullmatch(r"[xy]axis\d*", key) and axis.get("type") == "log"}


@pytest.mark.parametrize(("name", "lang"), cases())
def test_log_axes_tick_at_1_2_5_with_units(name, lang):
    for key, axis in log_axes(figure(name, lang)).items():
        values, labels = axis.get("tickvals"), axis.get("ticktext")
        assert values is not None and len(values) >= 2, f"{name} {key}: no tick values"
        assert len(labels) == len(values), f"{name} {key}: a tick without its label"
        lo, hi = (10.0 ** r for r in axis["range"])
        for value, label in zip(values, labels):
            assert lo * (1 - 1e-9) <= value <= hi * (1 + 1e-9), f"{name} {key}: {value}"
            mantissa = value / 10.0 ** math.floor(math.log10(value) + 1e-9)
            assert round(mantissa, 6) in (1, 2, 5), f"{name} {key}: tick at {value}"
            number, unit = read_tick(label)
            scale = _TIME.get(unit, 1.0)
            assert number * scale == pytest.approx(value), f"{name} {key}: {label!r}"
            assert unit or (name, key) in DIMENSIONLESS, f"{name} {key}: {label!r} no unit"


# ---- annotations: estimated boxes --------------------------------------------------------
#: Plotly's defaults where a figure does not say
MARGIN = {"l": 80, "r": 80, "t": 100, "b": 80}
HEIGHT, FONT = 450, 12
#: advance of a character in font sizes: generous, so that the estimate is conservative
LATIN_EM, WIDE_EM, LINE_EM = 0.62, 1.05, 1.3


def text_box(text: str, size: float) -> tuple[float, float]:
    """(width, height) px of an annotation's text: its longest line and its lines."""
    lines = re.split(r"<br\s*/?>", text)
    widths = []
    for line in lines:
        small = 0.7 if "<sup>" in line or "<sub>" in line else 1.0
        plain = re.sub(r"<[^>]+>", "", line)
        wide = sum(unicodedata.east_asian_width(c) in "WF" for c in plain)
        widths.append(size * small * (wide * WIDE_EM + (len(plain) - wide) * LATIN_EM))
    return max(widths), len(lines) * size * LINE_EM


def _axis(layout: dict, ref: str, letter: str) -> dict:
    """The layout axis an annotation reference ("x", "x2 domain", "paper") points at."""
    name = ref.split()[0]
    return layout.get(f"{letter}axis{name[1:]}", {}) if name.startswith(letter) else {}


def _data_range(fig: dict, ref: str, letter: str) -> tuple[float, float]:
    """The axis' range, or (autorange) the extent of its traces' values and shapes."""
    axis = _axis(fig["layout"], ref, letter)
    if axis.get("range"):
        return tuple(axis["range"])
    values = [0.0] if any(tr.get("type") == "bar" for tr in fig["data"]) else []
    for trace in fig["data"]:
        if trace.get(f"{letter}axis", letter) == ref and letter in trace:
            numbers = pd.to_numeric(pd.Series(np.ravel(array(trace[letter]))), errors="coerce")
            values += numbers.dropna().tolist()
    values += [s[f"{letter}{i}"] for s in fig["layout"].get("shapes", ())
               if s.get(f"{letter}ref") == ref for i in (0, 1)]
    return (min(values), max(values)) if values else (0.0, 1.0)


def fraction(fig: dict, ann: dict, letter: str) -> float:
    """Where the annotation sits along the figure's plot area, 0..1 (paper fraction)."""
    ref, value = ann.get(f"{letter}ref", letter), float(ann.get(letter, 0.5))
    if ref == "paper":
        return value
    domain = _axis(fig["layout"], ref, letter).get("domain", [0.0, 1.0])
    if not ref.endswith("domain"):
        lo, hi = _data_range(fig, ref, letter)
        value = (value - lo) / (hi - lo) if hi > lo else 0.5
    return domain[0] + value * (domain[1] - domain[0])


def inside(fig: dict, ann: dict, letter: str) -> bool:
    """Whether the annotation's position is inside its reference: [0, 1] of the paper or
    a domain, or the axis range of data."""
    ref, value = ann.get(f"{letter}ref", letter), float(ann.get(letter, 0.5))
    lo, hi = (0.0, 1.0) if ref == "paper" or ref.endswith("domain") else \
        sorted(_data_range(fig, ref, letter))
    return lo - 1e-9 <= value <= hi + 1e-9


def _anchor(ann: dict, letter: str, where: float) -> float:
    """How much of the box lies before the position: 0 (left/bottom) .. 1."""
    anchor = ann.get(f"{letter}anchor", "auto")
    if anchor == "auto":
        data = ann.get(f"{letter}ref", letter) != "paper" or ann.get("showarrow", True)
        anchor = "center" if data else ("left" if where <= 1 / 3 else
                                        "right" if where >= 2 / 3 else "center")
    return {"left": 0.0, "bottom": 0.0, "center": 0.5, "middle": 0.5, "right": 1.0,
            "top": 1.0}[anchor]


def annotation_box(fig: dict, ann: dict, width: float) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) px of the annotation's text in a figure ``width`` px
    wide (y grows downwards)."""
    layout = fig["layout"]
    margin = {**MARGIN, **layout.get("margin", {})}
    height = layout.get("height") or HEIGHT
    plot_w = width - margin["l"] - margin["r"]
    plot_h = height - margin["t"] - margin["b"]
    fx, fy = fraction(fig, ann, "x"), fraction(fig, ann, "y")
    x = margin["l"] + fx * plot_w + ann.get("xshift", 0)
    y = margin["t"] + (1 - fy) * plot_h - ann.get("yshift", 0)
    if ann.get("showarrow", True):  # the text sits at the arrow's tail, px from its head
        assert ann.get("axref", "pixel") == "pixel", "a labelled arrow with a data tail"
        x, y = x + ann.get("ax", -10), y + ann.get("ay", -30)
    w, h = text_box(ann["text"], ann.get("font", {}).get("size", FONT))
    left = x - w * _anchor(ann, "x", fx)
    bottom = y + h * _anchor(ann, "y", fy)
    return left, bottom - h, left + w, bottom


def texts(fig: dict) -> list[dict]:
    """The annotations that show a text (an arrow alone has none)."""
    return [a for a in fig["layout"].get("annotations", ())
            if a.get("text", "").strip() and a.get("visible", True)]


def overlapping(boxes: list[tuple[tuple, str]]) -> list[tuple[str, str]]:
    """Pairs of boxes that intersect by more than a pixel both ways."""
    return [(ta, tb) for i, (a, ta) in enumerate(boxes) for b, tb in boxes[i + 1:]
            if min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1]


@pytest.mark.parametrize(("name", "lang"), cases())
def test_annotations_stay_inside_and_never_overlap(name, lang):
    fig, width = figure(name, lang), FIGURES[name][1]
    shown = texts(fig)
    outside = [a["text"] for a in shown if not (inside(fig, a, "x") and inside(fig, a, "y"))]
    assert not outside, f"{name}: annotations placed outside the figure: {outside}"
    boxes = [(annotation_box(fig, a, width), a["text"]) for a in shown]
    assert not overlapping(boxes), f"{name}: overlapping annotations {overlapping(boxes)}"


# ---- the legend --------------------------------------------------------------------------
def subplot_titles(fig: dict) -> list[dict]:
    """Annotations standing on top of a subplot (what make_subplots and panels write)."""
    return [a for a in fig["layout"].get("annotations", ()) if a.get("yref") == "paper"
            and a.get("yanchor") == "bottom" and a.get("y", 0) >= 1.0 and a.get("text")]


def legend_box(fig: dict, width: float) -> tuple[float, float, float, float] | None:
    """(left, top, right, bottom) px of the legend: its entries in rows across the figure
    (horizontal) or stacked (vertical); None when the figure shows none."""
    layout = fig["layout"]
    legend = layout.get("legend", {})
    names = [tr.get("name", "") for tr in fig["data"] if tr.get("showlegend", True)
             and tr.get("name")] + [s["name"] for s in layout.get("shapes", ())
                                    if s.get("showlegend")]
    if not names or layout.get("showlegend") is False:
        return None
    entries = [text_box(n, FONT)[0] + 40 for n in names]
    rows = _rows(entries, width) if legend.get("orientation", "v") == "h" else len(entries)
    w = width if legend.get("orientation") == "h" else max(entries)
    h = rows * 20 + 10
    margin = {**MARGIN, **layout.get("margin", {})}
    height = layout.get("height") or HEIGHT
    fy = legend.get("y", 1.0)
    if legend.get("yref") == "container":
        y = (1 - fy) * height
    else:
        y = margin["t"] + (1 - fy) * (height - margin["t"] - margin["b"])
    anchor = {"top": 0.0, "middle": 0.5, "bottom": 1.0}.get(legend.get("yanchor", "top"), 0.0)
    fx = legend.get("x", 1.02)
    x = margin["l"] + fx * (width - margin["l"] - margin["r"])
    return x, y - anchor * h, x + w, y + (1 - anchor) * h


def _rows(entries: list[float], width: float) -> int:
    rows, used = 1, 0.0
    for entry in entries:
        if used and used + entry > width:
            rows, used = rows + 1, 0.0
        used += entry
    return rows


@pytest.mark.parametrize(("name", "lang"), cases())
def test_the_legend_is_never_over_a_subplot_title(name, lang):
    fig, width = figure(name, lang), FIGURES[name][1]
    legend = legend_box(fig, width)
    titles = subplot_titles(fig)
    if legend is None or not titles:
        return
    boxes = [(legend, "legend")] + [(annotation_box(fig, a, width), a["text"]) for a in titles]
    assert not [pair for pair in overlapping(boxes) if "legend" in pair], \
        f"{name}: the legend covers a subplot title"


# ---- item 11: HBM throughput and MTE2 ----------------------------------------------------
def busy(timeline: pd.DataFrame, pipe: str) -> np.ndarray:
    """(start, end) rows of the union of the pipe's busy intervals (issue to arrival)."""
    rows = timeline[timeline["pipe"] == pipe].sort_values("start_ns")
    spans = []
    for start, end in zip(rows["start_ns"], rows["end_ns"]):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return np.asarray(spans).reshape(-1, 2)




def zero_stretches(trace: dict) -> np.ndarray:
    """(start, end) in ns of the stretches a step line of throughput stays at 0."""
    x = array(trace["x"]).astype(float) * 1000.0
    y = array(trace["y"]).astype(float)
    at_zero = (y[:-1] == 0) & (y[1:] == 0) & (x[1:] > x[:-1])
    return np.column_stack([x[:-1][at_zero], x[1:][at_zero]])


def during(spans: np.ndarray, start: float, end: float) -> bool:
    """Whether any of the (start, end) ``spans`` overlaps start .. end."""
    return bool(((spans[:, 0] < end) & (spans[:, 1] > start)).any())


def drops_while_busy(name: str, lang: str) -> list[tuple[float, float]]:
    """Stretches of the bandwidth figure's HBM line at 0 while MTE2 is busy."""
    hbm = next(tr for tr in figure(f"{name}:bandwidth", lang)["data"]
               if tr["name"] == t("plots.bandwidth.hbm", lang))
    mte2 = busy(run(name).timeline, "MTE2")
    return [(a, b) for a, b in zero_stretches(hbm) if during(mte2, a, b)]


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", ("vector_add", "double_buffer_a"))
def test_hbm_drops_to_zero_while_mte2_is_busy_are_explained(name, lang):
    """The drops are real (every core waits for its copies' latency at once, or
    computes), not an artefact of the drawing: the figure says so in its caption."""
    assert drops_while_busy(name, lang), "the default runs drop to 0 with MTE2 busy"
    title = figure(f"{name}:bandwidth", lang)["layout"]["title"]["text"]
    assert t("plots.figures.bandwidth.idle", lang)[:16] in title


# ---- tables ------------------------------------------------------------------------------
#: a number as Python prints it: many decimals, or five digits and more without separators
_RAW_FLOAT = re.compile(r"<td>-?\d*\.\d{5,}</td>|<td>-?\d{5,}(?:\.\d+)?</td>")


@pytest.mark.parametrize("lang", LANGS)
def test_report_tables_show_formatted_numbers(lang):
    tables = report_figures.scenario_tables(run("vector_add"), lang)
    tables.append(report_figures.metrics_table(run("vector_add"), lang))
    cells = [str(v) for table in tables for v in table.to_numpy().ravel()]
    assert "4,194,304" in cells  # n, with its separators
    html = compare_report(_comparison(), lang)
    assert not _RAW_FLOAT.findall(html), _RAW_FLOAT.findall(html)[:5]

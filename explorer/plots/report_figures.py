"""What a scenario report says about one run, as report sections (see ``report.py``).

Everything here is a pure function of a ``Result`` and a language: the figures the pages
draw (timeline, pipe ratios, bandwidth, traffic, load balance, roofline, plus the GEMM
task grid and the decode step where the kernel has them), the scenario, the chip's key
figures, every metric with its one-line definition, the numerical check and the notes.
The pages draw their summary figures through :func:`summary_figure` too, so a report
shows exactly what the page showed. User-typed values (the scenario name, string
parameters such as decode's ``lengths``) only ever travel in tables, which both
renderers escape.
"""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import plotly.graph_objects as go

import kernels
from explorer.core import extensions
from explorer.core.chip_compare import peak_status
from explorer.core.i18n import has, t
from explorer.core.metrics import METRIC_DEF_IDS, METRIC_LABEL_IDS, METRICS
from explorer.core.quantization import input_quantization, quantization_table
from explorer.core.verdict import verdict
from explorer.plots import decode as decode_plots
from explorer.plots.cores import load_balance_figure, pipe_ratio_figure
from explorer.plots.gemm import task_grid_figure
from explorer.plots.memory import bandwidth_figure, traffic_figure
from explorer.plots.roofline import roofline_figure
from explorer.plots.text import format_number
from explorer.plots.timeline import timeline_figure
from explorer.plots.values import format_metric
from hardware_presets import FIELDS
from kernels.gemm import kernel as gemm

#: chip fields a report lists (labels from the chip_fields catalogue)
#: message ids: the tables' column headings, the scenario's fields, the provenance a chip
#: number states (published ones say nothing), each architecture
COLUMN_IDS = {"field": "report.col.field", "value": "report.col.value",
              "parameter": "report.col.parameter", "metric": "report.col.metric",
              "definition": "report.col.definition", "quantity": "report.col.quantity",
              "status": "report.col.status"}
FIELD_IDS = {"name": "report.field.name", "preset": "report.field.preset",
             "overrides": "report.field.overrides", "kernel": "report.field.kernel",
             "seed": "report.field.seed"}
STATUS_IDS = {"estimated": "report.status.estimated", "override": "report.status.override",
              "announced": "report.status.announced"}
ARCHITECTURE_IDS = {"split": "report.arch.split", "coupled": "report.arch.coupled"}
#: figure kind -> message id of its section title
FIGURE_IDS = {"task_grid": "report.figure.task_grid", "ops": "report.figure.ops",
              "latency": "report.figure.latency", "timeline": "report.figure.timeline",
              "pipe_ratio": "report.figure.pipe_ratio", "bandwidth": "report.figure.bandwidth",
              "traffic": "report.figure.traffic", "load_balance": "report.figure.load_balance",
              "roofline": "report.figure.roofline"}
CHIP_FIELDS = ("ai_cores", "vector_cores", "clock_MHz", "hbm_GiB", "hbm_bandwidth_GBps",
               "l2_MiB", "l2_bandwidth_GBps", "ub_KiB", "l1_KiB")
Section = tuple[str, object]  # (heading, str | Figure | DataFrame | list of them)


# ---- figures -----------------------------------------------------------------------------
def _roofline(result, lang: str) -> go.Figure:
    """The run as one point under the chip's roofs, labelled and roofed as its page does."""
    record, p, m = kernels.get(result.scenario.kernel), result.params, result.metrics
    msg_id, values = record.roofline_label(p)
    point = {"label": t(msg_id, lang, **values), "intensity": m["arithmetic_intensity"],
             "tflops": m["achieved_tflops"]}
    return roofline_figure(result.chip, [point], lang, precision=record.precision(p))


SUMMARY: dict[str, Callable[..., go.Figure]] = {
    "pipe_ratio": lambda r, lang: pipe_ratio_figure(r.per_core, lang),
    "traffic": lambda r, lang: traffic_figure(r.traffic, lang),
    "load_balance": lambda r, lang: load_balance_figure(r.per_core, lang),
    "bandwidth": lambda r, lang: bandwidth_figure(
        r.bandwidth, r.chip.hbm_bandwidth_GBps, r.chip.l2_bandwidth_GBps, lang),
    "roofline": _roofline,
}


def summary_figure(kind: str, result, lang: str = "en") -> go.Figure:
    """One summary figure of a run: pipe_ratio, traffic, load_balance, bandwidth, roofline."""
    return SUMMARY[kind](result, lang)


def _task_grid(result, lang: str) -> go.Figure:
    p = result.params
    plan = gemm.plan(gemm.GemmParams.of(p))
    return task_grid_figure(plan.grid, lang, "slot", panel=plan.single,
                            size=(p["M"], p["N"], p["K"]), k_per_z=plan.k_per_z)


def _decode_figures(step, lang: str) -> list[tuple[str, go.Figure]]:
    shown = [("ops", decode_plots.op_breakdown_figure(step.ops, step.layers, lang))]
    if len(step.seq_done_ns):
        shown.append(("latency", decode_plots.latency_figure(
            step.seq_done_ns, step.lengths, step.latency_p50_ns, step.latency_p99_ns, lang)))
    return shown


#: figures a kernel record may name in ``figures``: (result, lang) -> figure
KERNEL_FIGURES: dict[str, Callable[..., go.Figure]] = {"task_grid": _task_grid}
#: figures of a core extension (``explorer.core.extensions``): (value, lang) -> [(kind, fig)]
EXTENSION_FIGURES: dict[str, Callable[..., list]] = {"decode_step": _decode_figures}


def figures(result, lang: str = "en", computed: dict | None = None) -> list[tuple[str, go.Figure]]:
    """(kind, figure) of everything a report draws, in reading order (``computed``: the
    run's extensions, ``explorer.core.extensions.of``, when at hand)."""
    computed = extensions.of(result) if computed is None else computed
    shown = [(kind, KERNEL_FIGURES[kind](result, lang))
             for kind in kernels.get(result.scenario.kernel).figures]
    for name, value in computed.items():
        shown += EXTENSION_FIGURES.get(name, lambda *_: [])(value, lang)
    shown.append(("timeline", timeline_figure(result.timeline, result.makespan_ns, lang)))
    shown += [(kind, summary_figure(kind, result, lang)) for kind in
              ("pipe_ratio", "bandwidth", "traffic", "load_balance", "roofline")]
    return shown


# ---- metrics -----------------------------------------------------------------------------
def metric_label(name: str, lang: str = "en") -> str:
    msg_id = METRIC_LABEL_IDS.get(name, "")
    return t(msg_id, lang) if has(msg_id, lang) else name


def metrics_table(result, lang: str = "en") -> pd.DataFrame:
    """Every metric of the run: label, value and its one-line definition."""
    rows = [(metric_label(name, lang), format_metric(name, result.metrics[name], lang),
             t(METRIC_DEF_IDS[name], lang) if has(METRIC_DEF_IDS.get(name, ""), lang) else "")
            for name in METRICS if name in result.metrics]
    return pd.DataFrame(rows, columns=[t(COLUMN_IDS[c], lang)
                                       for c in ("metric", "value", "definition")])


# ---- scenario and chip -------------------------------------------------------------------
def _pairs(values: dict) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(values.items()))


def scenario_tables(result, lang: str = "en") -> list[pd.DataFrame]:
    """The scenario (name, preset, overrides, kernel, seed) and its parameters."""
    s = result.scenario
    none = t("report.field.none", lang)
    rows = [("name", s.name or none), ("preset", f"{s.preset} ({result.chip.display_name})"),
            ("overrides", _pairs(s.overrides_dict) or none), ("kernel", s.kernel),
            ("seed", str(s.seed))]
    head = [t("report.col.field", lang), t("report.col.value", lang)]
    fields = pd.DataFrame([(t(FIELD_IDS[k], lang), v) for k, v in rows], columns=head)
    params = pd.DataFrame([(k, format_number(v)) for k, v in sorted(s.params_dict.items())],
                          columns=[t("report.col.parameter", lang), head[1]])
    return [fields, params]


def _status(status: str, lang: str) -> str:
    """"estimate", "announced" or "your override" where a number is, or rests on, one
    (published and derived ones say nothing)."""
    msg_id = STATUS_IDS.get(status, "")
    return t(msg_id, lang) if has(msg_id, lang) else ""


def chip_table(chip, lang: str = "en") -> pd.DataFrame:
    """The chip's key figures: architecture, cores, clock, HBM, L2, UB, L1 and the peaks."""
    values = chip.values()
    rows = [(t("report.chip.architecture", lang),
             t(ARCHITECTURE_IDS[chip.architecture], lang), "")]
    rows += [(t(FIELDS[k].label_id, lang), f"{values[k]:,g}",
              _status(chip.provenance_of(k).status, lang)) for k in CHIP_FIELDS]
    rows += [(t("report.chip.peak", lang, precision=p), f"{v:,.1f}",
              _status(peak_status(chip, p), lang)) for p, v in chip.peak_tflops_table().items()]
    return pd.DataFrame(rows, columns=[t(COLUMN_IDS[c], lang)
                                       for c in ("quantity", "value", "status")])


# ---- check, notes, explanation -----------------------------------------------------------
def numerics_text(result, lang: str = "en") -> str:
    """The numerical check in the words of the CLI and the pages (`verdict`), one paragraph."""
    return " ".join(verdict(result.numerics, lang))


def _note_value(value: object) -> object:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value


def notes_text(notes, lang: str = "en") -> list[str]:
    """The run's notes (``note.*`` ids with their values), translated."""
    return [t(msg_id, lang, **{k: _note_value(v) for k, v in values.items()})
            for msg_id, values in notes if has(msg_id, lang)]


def default_explanation(kernel: str, lang: str = "en") -> str:
    """The kernel page's own explanation (its record's message ids)."""
    return "\n\n".join(t(msg_id, lang) for msg_id in kernels.get(kernel).explanation)


def result_sections(result, lang: str = "en", explanation: str = "") -> list[Section]:
    """The sections of a scenario report, in reading order."""
    computed = extensions.of(result)
    text = explanation or default_explanation(result.scenario.kernel, lang)
    notes = notes_text(extensions.notes(result, computed), lang)
    sections: list[Section] = [
        (t("report.h.scenario", lang), scenario_tables(result, lang)),
        (t("report.h.chip", lang), chip_table(result.chip, lang)),
        (t("report.h.metrics", lang), metrics_table(result, lang)),
        (t("report.h.numerics", lang), [numerics_text(result, lang), *notes]),
    ]
    lost = input_quantization(result.scenario)
    if lost:  # what quantised inputs lost to their format, as the pages show it
        sections.append((t("ui.quant.title", lang), [t("ui.quant.intro", lang),
                                                     quantization_table(lost, lang)]))
    if text:
        sections.insert(2, (t("report.h.explanation", lang), text))
    sections += [(t(FIGURE_IDS[kind], lang), fig)
                 for kind, fig in figures(result, lang, computed)]
    return sections

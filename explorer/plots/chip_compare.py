"""Today's chips side by side: cube peak per precision and HBM bandwidth, one colour per
chip, and a hatch on every bar whose number rests on an announced or an estimated figure
(the status comes from ``explorer.core.chip_compare``), so that no announced or assumed
number looks like a published one.
"""
from __future__ import annotations

import plotly.graph_objects as go

from explorer.core.chip_compare import peaks
from explorer.plots.style import base_layout, log_axis, log_span, msg, panels
from explorer.plots.text import format_number
from hardware_presets import Chip

#: one colour per compared chip, in order (Okabe-Ito; the reference 910B2 in grey)
CHIP_COLOURS = ("#7F7F7F", "#0072B2", "#E69F00", "#D55E00")
#: the hatch of a bar resting on an announced or an estimated figure, and its legend name
MARKS = {"announced": "x", "estimated": "/"}
MARK_IDS = {"announced": "chips.mark_announced", "estimated": "chips.mark_estimated"}
_SPACING = 0.12
#: each status's words on the hover
STATUS_IDS = {"published": "chips.status.published", "announced": "chips.status.announced",
              "derived": "chips.status.derived", "estimated": "chips.status.estimated",
              "override": "chips.status.override"}


def _pattern(statuses: list[str]) -> list[str]:
    return [MARKS.get(s, "") for s in statuses]


def _peak_trace(chip: Chip, colour: str, lang: str) -> go.Bar:
    rows = [(p, v, s) for p, v, s in peaks(chip) if v is not None]
    hover = msg("chips.hover_peak", lang, chip=chip.display_name, precision="%{x}",
                value="%{customdata[0]}", status="%{customdata[1]}")
    return go.Bar(x=[p for p, _, _ in rows], y=[v for _, v, _ in rows], name=chip.display_name,
                  meta=chip.name, legendgroup=chip.name, marker_color=colour,
                  marker_pattern_shape=_pattern([s for _, _, s in rows]),
                  customdata=[[format_number(v), msg(STATUS_IDS[s], lang)]
                              for _, v, s in rows],
                  hovertemplate=hover + "<extra></extra>")


def _bandwidth_trace(chips: tuple[Chip, ...], lang: str) -> go.Bar:
    statuses = [c.provenance_of("hbm_bandwidth_GBps").status for c in chips]
    hover = msg("chips.hover_bandwidth", lang, chip="%{x}", value="%{customdata[0]}",
                status="%{customdata[1]}")
    return go.Bar(x=[c.display_name for c in chips], y=[c.hbm_bandwidth_GBps for c in chips],
                  xaxis="x2", yaxis="y2", showlegend=False, meta="hbm",
                  marker_color=list(CHIP_COLOURS[:len(chips)]),
                  marker_pattern_shape=_pattern(statuses),
                  customdata=[[format_number(c.hbm_bandwidth_GBps),
                               msg(STATUS_IDS[s], lang)] for c, s in zip(chips, statuses)],
                  hovertemplate=hover + "<extra></extra>")


def _mark_legend(lang: str) -> list[go.Bar]:
    """Legend entries that say what the hatches mean (no data of their own)."""
    return [go.Bar(x=[None], y=[None], name=msg(MARK_IDS[status], lang), meta=f"mark_{status}",
                   marker=dict(color="white", line=dict(color="#444444", width=1),
                               pattern=dict(shape=shape, fgcolor="#444444")))
            for status, shape in MARKS.items()]


def comparison_figure(chips: tuple[Chip, ...], lang: str = "en") -> go.Figure:
    """Peak TFLOPS per cube precision (grouped bars, log axis) and HBM bandwidth per chip."""
    fig = panels([msg("chips.panel_peaks", lang), msg("chips.panel_hbm", lang)], _SPACING)
    fig.update_layout({"xaxis": dict(domain=[0.0, 0.64]), "xaxis2": dict(domain=[0.76, 1.0])})
    for chip, colour in zip(chips, CHIP_COLOURS):
        fig.add_trace(_peak_trace(chip, colour, lang))
    fig.add_trace(_bandwidth_trace(chips, lang))
    for trace in _mark_legend(lang):
        fig.add_trace(trace)
    values = [v for c in chips for _, v, _ in peaks(c) if v is not None]
    log_axis(fig, "yaxis", log_span(values), "TFLOPS")
    fig.update_layout(yaxis2=dict(title_text=msg("chips.y_hbm", lang), rangemode="tozero"),
                      xaxis=dict(title_text=msg("chips.x_precision", lang)))
    annotations = list(fig.layout.annotations)
    annotations[0].x, annotations[1].x = 0.32, 0.88  # over the resized panels
    fig.layout.annotations = annotations
    return base_layout(fig, msg("chips.title", lang), caption=msg("chips.caption", lang),
                       barmode="group", height=460)

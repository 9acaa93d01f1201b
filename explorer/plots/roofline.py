"""Roofline of one chip: compute ceilings (cube, vector) and memory slopes (HBM, L2).

Attainable TFLOPS = min(peak, bandwidth x arithmetic intensity). Bandwidth in bytes/ns is
GB/s, so GB/s x flop/byte = GFLOP/s; the ridge point (where a kernel stops being memory
bound) is peak / bandwidth in flop/byte. Kernels are drawn as points on top. Ridges and
kernels are named in the legend, not on the plot: a kernel near a ridge (a decode layer
at 7 flop/B) would sit on its label, and a ridge near the right edge would be cut.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go

from explorer.plots.style import (
    PIPE_COLOURS,
    SOURCE_COLOURS,
    base_layout,
    log_axis,
    msg,
)
from explorer.plots.text import format_number

#: one marker per kernel drawn (they cycle beyond)
POINT_SYMBOLS = ("circle", "square", "triangle-up", "diamond-wide", "x", "pentagon")


def ridge_intensity(peak_tflops: float, bandwidth_GBps: float) -> float:
    """Arithmetic intensity (flop/byte) where the memory slope meets a compute ceiling."""
    return peak_tflops * 1000.0 / bandwidth_GBps


def _positive(value: object) -> float | None:
    """The value as a float if it is a finite positive number (log axes need that)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


def _roofs(chip, precision: str, lang: str) -> list[tuple[str, float, str, str]]:
    """Compute ceilings as (meta id, TFLOPS, legend name, colour), highest first."""
    roofs = []
    if precision in tuple(chip.cube_precisions):
        peak = _positive(chip.peak_tflops(precision))
        if peak:
            name = msg("roofline.cube_roof", lang, precision=precision, value=f"{peak:.1f}")
            roofs.append(("roof:cube", peak, name, PIPE_COLOURS["CUBE"]))
    vector = _positive(chip.vector_peak_gops("fp16"))
    if vector:
        name = msg("roofline.vector_roof", lang, value=f"{vector / 1000.0:.1f}")
        roofs.append(("roof:vector", vector / 1000.0, name, PIPE_COLOURS["VECTOR"]))
    return sorted(roofs, key=lambda roof: -roof[1])


def _slopes(chip, lang: str) -> list[tuple[str, float, str, str]]:
    """Memory slopes as (meta id, GB/s, legend name, colour), slowest first."""
    slopes = []
    for key, attr, name_id, colour in (
            ("hbm", "hbm_bytes_per_ns", "roofline.hbm_slope", SOURCE_COLOURS["HBM"]),
            ("l2", "l2_bytes_per_ns", "roofline.l2_slope", SOURCE_COLOURS["L2"])):
        bw = _positive(getattr(chip, attr, None))
        if bw:
            name = msg(name_id, lang, value=f"{bw:.0f}")
            slopes.append((f"slope:{key}", bw, name, colour))
    return sorted(slopes, key=lambda slope: slope[1])


def _valid_points(points: Sequence[dict] | None) -> list[tuple[str, float, float]]:
    """(label, intensity, TFLOPS) of the points that can be drawn on log axes."""
    kept = []
    for point in points or ():
        intensity, tflops = _positive(point.get("intensity")), _positive(point.get("tflops"))
        if intensity and tflops:
            kept.append((str(point.get("label", "")), intensity, tflops))
    return kept


def _add_ceilings(fig: go.Figure, roofs, slopes, x_range: tuple[float, float]) -> None:
    """Horizontal ceilings from their first ridge rightwards; slopes up to the top roof."""
    top = roofs[0][1]
    for meta, peak, name, colour in roofs:
        start = ridge_intensity(peak, slopes[-1][1]) if slopes else x_range[0]
        dash = "solid" if peak == top else "dot"
        fig.add_trace(go.Scatter(x=[start, x_range[1]], y=[peak, peak], mode="lines", name=name,
                                 meta=meta, line=dict(color=colour, width=3, dash=dash),
                                 hoverinfo="name"))
    for meta, bw, name, colour in slopes:
        ridge = ridge_intensity(top, bw)
        fig.add_trace(go.Scatter(x=[x_range[0], ridge], y=[bw * x_range[0] / 1000.0, top],
                                 mode="lines", name=name, meta=meta, hoverinfo="name",
                                 line=dict(color=colour, width=2, dash="dash")))


def _add_ridges(fig: go.Figure, roofs, slopes, lang: str) -> None:
    """A marker at each ridge point (every slope with the top roof, HBM with the rest),
    each its own legend entry with its intensity: filled on the top roof, open below."""
    hover = msg("roofline.hover_ridge", lang, intensity="%{x:.1f}", tflops="%{y:.1f}")
    for index, (_, peak, _, _) in enumerate(roofs):
        for meta, bw, _, colour in slopes if index == 0 else slopes[:1]:
            x = ridge_intensity(peak, bw)
            memory = meta.split(":")[1].upper()
            fig.add_trace(go.Scatter(
                x=[x], y=[peak], mode="markers", meta="ridges", legendgroup="ridges",
                name=msg("roofline.ridge", lang, memory=memory, value=format_number(x, 2)),
                marker=dict(color=colour, size=10, line=dict(color="#333333", width=1.5),
                            symbol="diamond" if index == 0 else "diamond-open"),
                hovertemplate=hover + "<extra></extra>"))


def _add_points(fig: go.Figure, points: list[tuple[str, float, float]], lang: str) -> None:
    """The kernels measured or emulated, each named in the legend by its label."""
    hover = msg("roofline.hover_point", lang, label="%{text}", intensity="%{x:.2f}",
                tflops="%{y:.2f}")
    for index, (label, x, y) in enumerate(points):
        fig.add_trace(go.Scatter(
            x=[x], y=[y], text=[label], mode="markers", meta="points", name=label,
            legendgroup="points",
            marker=dict(color="#000000", size=11,
                        symbol=POINT_SYMBOLS[index % len(POINT_SYMBOLS)]),
            hovertemplate=hover + "<extra></extra>"))


def _y_span(roofs, slopes, points, x_min: float) -> tuple[float, float]:
    """TFLOPS shown: head-room above the top roof so it is not drawn on the frame."""
    ys = [r[1] for r in roofs] + [p[2] for p in points]
    ys += [bw * x_min / 1000.0 for _, bw, _, _ in slopes] if roofs else []
    if not ys:
        return 0.1, 1000.0
    return min(ys) / 2.0, max(ys) * 3.0


def roofline_figure(chip, points: Sequence[dict] | None, lang: str = "en", *,
                    precision: str = "fp16") -> go.Figure:
    """Log-log roofline (flop/byte vs TFLOPS) with ridges and kernels as points, named in
    the legend below the plot."""
    roofs, slopes = _roofs(chip, precision, lang), _slopes(chip, lang)
    kept = _valid_points(points)
    ridges = [ridge_intensity(r[1], s[1]) for r in roofs for s in slopes]
    spread = ridges + [p[1] for p in kept] or [1.0]
    x_range = (min(spread) / 30.0, max(spread) * 30.0)
    fig = go.Figure()
    if roofs:
        _add_ceilings(fig, roofs, slopes, x_range)
        _add_ridges(fig, roofs, slopes, lang)
    _add_points(fig, kept, lang)
    title = msg("roofline.title", lang, chip=chip.display_name)
    if not any(meta == "roof:cube" for meta, *_ in roofs):
        title += msg("roofline.no_cube", lang, precision=precision)
    base_layout(fig, title, height=560)
    log_axis(fig, "xaxis", x_range, "flop/B", title_text=msg("roofline.x_title", lang))
    log_axis(fig, "yaxis", _y_span(roofs, slopes, kept, x_range[0]), "TFLOPS",
             title_text=msg("roofline.y_title", lang))
    return fig

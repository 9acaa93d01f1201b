"""Shared look of every figure: lane order, pipe colours, byte units and message lookup.

Kept in one place so that the timeline, the ratio bars and the block diagram paint a pipe
the same colour and name it the same way (as Ascend's own tools do: CUBE, VECTOR, SCALAR,
MTE1, MTE2, MTE3, FIXP) in every language.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from explorer.core.i18n import t

# Every figure uses Plotly's "plotly_white", made the process's default template here, once:
# Plotly applies its default template to a new figure without validating it, while an
# explicit template="plotly_white" is validated and copied for every figure (about 15 ms
# each, ten figures on a kernel page).
TEMPLATE = "plotly_white"
pio.templates.default = TEMPLATE

# Lane order of Ascend's simulator trace; the timeline sorts lanes of a core this way.
PIPES: tuple[str, ...] = ("CUBE", "VECTOR", "SCALAR", "MTE1", "MTE2", "MTE3", "FIXP")
# Message ids (under ``plots.``, what ``msg`` takes) of each pipe's and each source's name.
PIPE_IDS: dict[str, str] = {
    "CUBE": "pipe.CUBE", "VECTOR": "pipe.VECTOR", "SCALAR": "pipe.SCALAR", "MTE1": "pipe.MTE1",
    "MTE2": "pipe.MTE2", "MTE3": "pipe.MTE3", "FIXP": "pipe.FIXP",
}
SOURCE_IDS: dict[str, str] = {"HBM": "source.HBM", "L2": "source.L2",
                              "multicast": "source.multicast", "onchip": "source.onchip"}

# One colour per pipe (colour-blind friendly Okabe-Ito palette plus grey for SCALAR).
PIPE_COLOURS: dict[str, str] = {
    "CUBE": "#D55E00",
    "VECTOR": "#0072B2",
    "SCALAR": "#7F7F7F",
    "MTE1": "#CC79A7",
    "MTE2": "#009E73",
    "MTE3": "#56B4E9",
    "FIXP": "#E69F00",
}

# Per-pipe busy ratio names as Ascend's profiler prints them.
RATIO_NAMES: dict[str, str] = {
    "CUBE": "aic_cube_ratio",
    "VECTOR": "aiv_vec_ratio",
    "SCALAR": "scalar_ratio",
    "MTE1": "mte1_ratio",
    "MTE2": "mte2_ratio",
    "MTE3": "mte3_ratio",
    "FIXP": "fixpipe_ratio",
}

# Where GM traffic was served from; "" means an on-chip move.
SOURCE_ORDER: tuple[str, ...] = ("HBM", "L2", "multicast", "")
SOURCE_COLOURS: dict[str, str] = {
    "HBM": "#D55E00",
    "L2": "#0072B2",
    "multicast": "#009E73",
    "": "#7F7F7F",
}

CORE_KIND_COLOURS: dict[str, str] = {
    "AIC": "#D55E00",
    "AIV": "#0072B2",
    "AICORE": "#009E73",
    "VECTOR": "#56B4E9",
}

_BYTE_UNITS: tuple[str, ...] = ("B", "KiB", "MiB", "GiB", "TiB")


def msg(msg_id: str, lang: str, **values: object) -> str:
    """A message of the plots catalogue (ids are given without the ``plots.`` prefix)."""
    return t(f"plots.{msg_id}", lang, **values)


def pipe_name(pipe: str, lang: str) -> str:
    """Legend name of a pipe: Ascend's lane name plus what it does, in the chosen language."""
    if pipe in PIPES:
        return msg(PIPE_IDS[pipe], lang)
    return pipe


def source_name(served_from: str, lang: str) -> str:
    """Legend name of where traffic was served from (HBM, L2, multicast or on-chip)."""
    key = served_from if served_from in ("HBM", "L2", "multicast") else "onchip"
    return msg(SOURCE_IDS[key], lang)


def byte_unit(max_bytes: float) -> tuple[float, str]:
    """The binary unit (divisor, name) that keeps ``max_bytes`` between 1 and 1024."""
    power = 0
    value = float(max_bytes)
    while value >= 1024.0 and power < len(_BYTE_UNITS) - 1:
        value /= 1024.0
        power += 1
    return 1024.0 ** power, _BYTE_UNITS[power]


def format_bytes(n: float) -> str:
    """Human-readable binary size: 512 B, 1.50 KiB, 3.00 MiB, 2.00 GiB."""
    if n is None or not np.isfinite(n):
        return "-"
    divisor, unit = byte_unit(abs(n))
    if unit == "B":
        return f"{int(round(n))} B"
    return f"{n / divisor:.2f} {unit}"


def pipe_codes(pipes: pd.Series) -> np.ndarray:
    """Index of each row's pipe in ``PIPES`` (-1 for an unknown lane), fast on 10^6 rows."""
    codes, uniques = pd.factorize(pipes)
    lookup = np.array([PIPES.index(p) if p in PIPES else -1 for p in uniques] + [-1])
    return lookup[codes]  # factorize gives -1 for missing values -> last entry, -1


def empty_figure(message: str, title: str = "") -> go.Figure:
    """A valid figure with no data and a centred message, for empty or unusable input."""
    fig = go.Figure()
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper",
                       showarrow=False, font=dict(size=14))
    fig.update_layout(title=dict(text=title), template="plotly_white",
                      xaxis=dict(visible=False), yaxis=dict(visible=False))
    return fig


def set_layout(fig: go.Figure, **props: object) -> go.Figure:
    """``fig.update_layout(**props)`` at a third of its cost: a property the figure has not
    set yet is assigned whole (``update_layout`` parses every nested key, ~0.7 ms each);
    one it has is merged as ``update_layout`` would."""
    present = fig.layout.to_plotly_json()
    merged = {k: v for k, v in props.items() if k in present}
    for key, value in props.items():
        if key not in present:
            fig.layout[key] = value
    if merged:
        fig.update_layout(**merged)
    return fig


def base_layout(fig: go.Figure, title: str, **layout: object) -> go.Figure:
    """Common layout: title, legend on top (the white template is the default, see
    TEMPLATE); extra keys passed through."""
    return set_layout(fig, title=dict(text=title),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
                      margin=dict(l=60, r=20, t=90, b=50), **layout)


#: where a reference line's label sits: (position along the line, anchors) per Plotly name
_LABEL_AT = {"top left": (0.0, "left", "bottom"), "top right": (1.0, "right", "bottom"),
             "bottom left": (0.0, "left", "top"), "bottom right": (1.0, "right", "top"),
             "top": (1.0, "center", "bottom")}


def reference_line(fig: go.Figure, axis: str, value: float, line: dict, text: str = "",
                   position: str = "top left", panel: int = 1) -> None:
    """A labelled line across the plot at ``value`` of ``axis`` ("y": horizontal, "x":
    vertical) in subplot ``panel`` (1 = the first axes): one shape and one annotation,
    what ``add_hline`` / ``add_vline`` draw, at a fraction of their cost (they resolve
    subplots for every call, ~4 ms each; ``add_shape`` still validates every keyword)."""
    along, xanchor, yanchor = _LABEL_AT[position]
    other = "x" if axis == "y" else "y"
    suffix = "" if panel == 1 else str(panel)
    ends = {f"{other}ref": f"{other}{suffix} domain", f"{other}0": 0.0, f"{other}1": 1.0,
            f"{axis}ref": f"{axis}{suffix}", f"{axis}0": value, f"{axis}1": value}
    fig.layout["shapes"] += (dict(type="line", line=line, **ends),)
    if text:
        fig.layout["annotations"] += (dict(
            text=text, showarrow=False, xanchor=xanchor, yanchor=yanchor,
            **{f"{other}ref": f"{other}{suffix} domain", other: along,
               f"{axis}ref": f"{axis}{suffix}", axis: value}),)


def panels(titles: list[str] | tuple[str, ...], spacing: float) -> go.Figure:
    """An empty figure of side-by-side panels, one per title (axes x/y, x2/y2, ...; put a
    trace in panel k with ``xaxis=f"x{k}"``): what ``make_subplots(rows=1, cols=n,
    subplot_titles=...)`` lays out, at a tenth of its cost (~15 ms)."""
    width = (1.0 - spacing * (len(titles) - 1)) / len(titles)
    layout: dict = {"annotations": []}
    for k, title in enumerate(titles):
        suffix, left = ("" if k == 0 else str(k + 1)), k * (width + spacing)
        layout[f"xaxis{suffix}"] = dict(domain=[left, left + width], anchor=f"y{suffix}")
        layout[f"yaxis{suffix}"] = dict(domain=[0.0, 1.0], anchor=f"x{suffix}")
        layout["annotations"].append(dict(
            text=title, x=left + width / 2, y=1.0, xref="paper", yref="paper",
            xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=16)))
    return go.Figure(layout=layout)

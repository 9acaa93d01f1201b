"""Shared look of every figure: lane order, pipe colours, byte units, message lookup, and
the conventions that keep every figure legible.

Kept in one place so that the timeline, the ratio bars and the block diagram paint a pipe
the same colour and name it the same way (as Ascend's own tools do: CUBE, VECTOR, SCALAR,
MTE1, MTE2, MTE3, FIXP) in every language.

Conventions (every figure follows them; tests/test_plot_conventions.py checks them on the
figures the pages draw, tests/browser/test_figures_browser.py in a real browser):

1. **Words and numbers.** Every string is a message id of the plots catalogues (``msg``);
   numbers in labels and tables are formatted (``text.format_number``,
   ``text.format_table``, ``format_bytes``), never a raw float.
2. **Labels never overlap.** A reference line is named in the legend, not written on the
   plot (``reference_line``), and so are the points of a crowded plot (the roofline's
   ridges and kernels, the Pareto chart's configurations). What stays on the plot is
   placed inside the plot area: paper coordinates in [0, 1], data inside the axis range.
3. **The legend has a place of its own**, at the bottom of the figure below the axis
   titles (``base_layout``): never over a title, a subplot title or the data. The top
   margin is sized to the title's lines plus the subplot titles (``base_layout``).
4. **Log axes read without guessing**: ticks only at 1, 2, 5 x 10^k, each labelled with
   its unit ("50 µs", "200 flop/B"), thinned to decades so that labels never touch
   (``log_axis``, the one helper every log axis uses; its ticks from ``text.log_ticks``).
5. **A figure explains its surprises** in a caption under its title (``base_layout``'s
   ``caption``, wrapped to the narrowest column a page draws it in): the thin in-flight
   bars of the timeline, the drops of HBM throughput to zero while MTE2 is busy.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from explorer.core.i18n import t
from explorer.plots.text import NARROW_PX, log_ticks, wrap

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
    fig.add_annotation(text=wrap(message), x=0.5, y=0.5, xref="paper", yref="paper",
                       showarrow=False, font=dict(size=14))
    return base_layout(fig, title, xaxis=dict(visible=False), yaxis=dict(visible=False))


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


# ---- layout: title, caption, legend ------------------------------------------------------
#: px of the top margin: padding, each line of the title (bold) and of a caption, the
#: subplot titles' row; and the padding a title of several lines needs more (Plotly lifts
#: such a title by about a line when it is anchored at its top)
_TITLE_PAD, _TITLE_LINE, _CAPTION_LINE, _SUBPLOT_TITLES = 14, 24, 17, 30
_LINES_LIFT = 12
#: px before the title's first character (Plotly places it 5% of the width in)
_TITLE_INDENT = 40


def _title_pad(text: str) -> int:
    return _TITLE_PAD + (_LINES_LIFT if "<br>" in text else 0)


def _has_subplot_titles(fig: go.Figure) -> bool:
    return any(a.yref == "paper" and a.yanchor == "bottom" and (a.y or 0) >= 1.0
               for a in fig.layout.annotations)


def _axis_keys(fig: go.Figure) -> list[str]:
    keys = [k for k in fig.layout.to_plotly_json() if re.fullmatch(r"[xy]axis\d*", k)]
    return sorted(set(keys) | {"xaxis", "yaxis"})


def titled(title: str, caption: str | Iterable[str] = "", width_px: float = NARROW_PX) -> str:
    """The title with each caption under it in small type, wrapped to ``width_px``."""
    captions = [caption] if isinstance(caption, str) else list(caption)
    lines = [line for text in captions if text  # the title starts ~5% in; sup is ~12 px
             for line in wrap(text, width_px - _TITLE_INDENT, size=12).split("<br>")]
    return title + "".join(f'<br><sup><span style="font-weight:normal">{line}</span></sup>'
                           for line in lines)


def _top_margin(fig: go.Figure, text: str) -> int:
    """Room above the plot for the title's lines, its caption lines and subplot titles."""
    captions = text.count("<sup>")
    lines = text.count("<br>") + 1 - captions if text else 0
    top = _title_pad(text) + _TITLE_LINE * lines + _CAPTION_LINE * captions
    return max(40, top + (_SUBPLOT_TITLES if _has_subplot_titles(fig) else 0))


def base_layout(fig: go.Figure, title: str, *, caption: str | Iterable[str] = "",
                caption_px: float = NARROW_PX, **layout: object) -> go.Figure:
    """Common layout: the title at the top with its caption (``titled``, wrapped to
    ``caption_px``: WIDE_PX for a figure pages draw full width); the legend at the
    bottom, below the axis titles; a top margin that holds the title and any subplot
    titles; axes that make room for their labels. Extra keys are passed through, a dict
    merged into the default (the white template is the default, see TEMPLATE)."""
    text = titled(title, caption, caption_px)
    props = dict(title=dict(text=text, yref="container", y=1.0, yanchor="top",
                            pad=dict(t=_title_pad(text))),
                 legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom",
                             x=0.0, xanchor="left"),
                 margin=dict(l=60, r=20, t=_top_margin(fig, text), b=30),
                 **{key: dict(automargin=True) for key in _axis_keys(fig)})
    for key, value in layout.items():
        if isinstance(value, dict) and isinstance(props.get(key), dict):
            value = {**props[key], **value}
        props[key] = value
    return set_layout(fig, **props)


def reference_line(fig: go.Figure, axis: str, value: float, line: dict, text: str = "",
                   panel: int = 1) -> None:
    """A line across the plot at ``value`` of ``axis`` ("y": horizontal, "x": vertical) in
    subplot ``panel`` (1 = the first axes), named ``text`` in the legend: labels written
    on the plot collide as soon as two lines come close (a mean next to its max). One
    shape, what ``add_hline`` / ``add_vline`` draw, at a fraction of their cost (they
    resolve subplots for every call, ~4 ms each)."""
    other = "x" if axis == "y" else "y"
    suffix = "" if panel == 1 else str(panel)
    ends = {f"{other}ref": f"{other}{suffix} domain", f"{other}0": 0.0, f"{other}1": 1.0,
            f"{axis}ref": f"{axis}{suffix}", f"{axis}0": value, f"{axis}1": value}
    named = dict(name=text, showlegend=True) if text else {}
    fig.layout["shapes"] += (dict(type="line", line=line, **ends, **named),)


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
            text=title, x=left + width / 2, y=1.0,
            xref="paper", yref="paper", xanchor="center", yanchor="bottom", showarrow=False,
            font=dict(size=14)))
    return go.Figure(layout=layout)


# ---- log axes ----------------------------------------------------------------------------
def log_span(values: Iterable[float], pad: float = 0.08) -> tuple[float, float]:
    """(low, high) of the positive finite ``values``, ``pad`` decades wider each side."""
    kept = [float(v) for v in values if v is not None and np.isfinite(v) and v > 0]
    if not kept:
        return 1.0, 10.0
    return min(kept) / 10 ** pad, max(kept) * 10 ** pad


def log_axis(fig: go.Figure, key: str, span: tuple[float, float], unit: str = "", *,
             length: float | None = None, **props: object) -> None:
    """Make the layout axis ``key`` ("xaxis", "yaxis2", ...) logarithmic over ``span``
    (data units) with ticks from :func:`log_ticks` (``length``: the axis' px when it is
    shorter than usual): the one way every figure draws a log axis, so that none labels
    only decades with bare minor digits."""
    values, labels, (lo, hi) = log_ticks(*span, unit=unit, axis=key[0], length=length)
    fig.update_layout({key: dict(type="log", range=[math.log10(lo), math.log10(hi)],
                                 tickmode="array", tickvals=values, ticktext=labels,
                                 **props)})

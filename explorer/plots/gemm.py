"""GEMM figures: which core runs which task of the 3-D task grid, and the waves they form.

The picture is C itself: an M x N matrix cut into the grid's task panels (X over M, Y over
N), each panel coloured by the core slot (``GetBlockIdx()``) that computes it, or by its
wave; one small panel per split-K layer (z) when Z > 1. It is one heat map per layer, so
thousands of tasks draw in a blink; beyond ``MAX_CELLS`` per layer only the top-left
corner is drawn (the policy's pattern repeats) and the title says so. Tasks of the last,
partly filled wave are marked, because that tail is where cores sit idle.

Pure functions of a ``kernels.gemm.grid.TaskGrid`` (and the panel size); no streamlit.
"""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from explorer.plots.style import base_layout, msg
from explorer.plots.text import WIDE_PX

#: most cells drawn per layer (a 128 x 128 corner): more would only slow the browser
MAX_CELLS = 16_384
#: split-K layers drawn as panels (all layers of one task are adjacent, so alike)
MAX_LAYERS = 8
LAYER_COLUMNS = 4
#: cells get their wave number written in them when a layer has at most this many
TEXT_CELLS = 600
#: qualitative palette for core slots (light enough for the black tail marks on top)
SLOT_COLOURS = qualitative.Light24 + qualitative.Pastel
COLOUR_BY = ("slot", "wave")
#: what the cells are coloured by -> the title's message id (of the plots catalogue)
_TITLE_IDS = {"slot": "gemm.title_slot", "wave": "gemm.title_wave"}


def wave_summary(grid) -> dict[str, int]:
    """Tasks, cores (block_dim), waves, full waves, tail tasks and idle cores in the
    last wave; ``efficiency`` is the share of wave slots that hold a task (in %, rounded
    down so that a tail never reads as 100%)."""
    tasks, cores = len(grid.x), int(grid.block_dim)
    tail = tasks % cores
    waves = -(-tasks // cores)
    return {"tasks": tasks, "cores": cores, "waves": waves, "full": tasks // cores,
            "tail": tail, "idle": cores - tail if tail else 0,
            "busy_cores": min(tasks, cores),
            "efficiency": 100 * tasks // (waves * cores) if waves else 100}


def wave_text(grid, lang: str = "en") -> str:
    """The waves in words, e.g. "520 tasks on 24 cores = 21 full waves + a tail of 16:
    the last wave leaves 8 cores idle." """
    s = wave_summary(grid)
    values = {k: f"{v:,}" for k, v in s.items()}
    if s["tasks"] < s["cores"]:
        return msg("gemm.waves_few", lang, **values)
    if s["tail"] == 0:
        return msg("gemm.waves_even", lang, **values)
    return msg("gemm.waves_tail", lang, **values)


def layer_arrays(grid, z: int, colour_by: str = "slot") -> tuple[np.ndarray, np.ndarray]:
    """(values, custom) of split-K layer ``z``: values[x, y] is the task's slot (or wave),
    custom[x, y] = (slot, wave, z); cells without a task are NaN / -1."""
    X, Y, _ = grid.shape
    sel = np.flatnonzero(grid.z == z)
    values = np.full((X, Y), np.nan)
    custom = np.full((X, Y, 3), -1, dtype=np.int64)
    shown = grid.slot if colour_by == "slot" else grid.wave
    values[grid.x[sel], grid.y[sel]] = shown[sel]
    custom[grid.x[sel], grid.y[sel]] = np.column_stack(
        [grid.slot[sel], grid.wave[sel], grid.z[sel]])
    return values, custom


def _corner(shape: tuple[int, int]) -> tuple[int, int]:
    """Rows and columns of tasks drawn per layer: all, or a corner of about MAX_CELLS."""
    X, Y = shape
    if X * Y <= MAX_CELLS:
        return X, Y
    side = int(math.isqrt(MAX_CELLS))
    if X < side:
        return X, min(Y, MAX_CELLS // X)
    if Y < side:
        return min(X, MAX_CELLS // Y), Y
    return side, side


def edges(count: int, size: int, limit: int) -> np.ndarray:
    """Cell edges (in elements of C) of ``count`` panels of ``size``, the last clipped to
    the matrix (``limit``); a heat map takes count + 1 edges as x or y."""
    return np.minimum(np.arange(count + 1) * size, limit)


def centres(count: int, size: int, limit: int) -> np.ndarray:
    e = edges(count, size, limit)
    return (e[:-1] + e[1:]) / 2.0


def _slot_scale(cores: int) -> list[list]:
    """A stepped colour scale: slot i gets SLOT_COLOURS[i % len] on [i, i + 1) / cores."""
    scale = []
    for i in range(cores):
        colour = SLOT_COLOURS[i % len(SLOT_COLOURS)]
        scale += [[i / cores, colour], [(i + 1) / cores, colour]]
    return scale


def _colour_args(grid, colour_by: str, lang: str) -> dict:
    """Heat-map colour arguments: discrete per slot, or a sequential scale for waves."""
    if colour_by == "slot":
        top = grid.block_dim
        return dict(colorscale=_slot_scale(top), zmin=-0.5, zmax=top - 0.5,
                    colorbar=dict(title=dict(text=msg("gemm.colorbar_slot", lang))))
    top = max(grid.waves, 1)
    return dict(colorscale="Viridis", zmin=-0.5, zmax=top - 0.5,
                colorbar=dict(title=dict(text=msg("gemm.colorbar_wave", lang))))


def _layer_trace(grid, z: int, shown: tuple[int, int], geometry: dict, colour_by: str,
                 lang: str, first: bool) -> go.Heatmap:
    """One split-K layer as a heat map over C (axes in elements of C)."""
    rows, cols = shown
    values, custom = layer_arrays(grid, z, colour_by)
    values, custom = values[:rows, :cols], custom[:rows, :cols]
    (sm, sn), (M, N) = geometry["panel"], geometry["size"]
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    extra = np.stack([r, c, r * sm, np.minimum((r + 1) * sm, M) - 1,
                      c * sn, np.minimum((c + 1) * sn, N) - 1], axis=2)
    hover = msg("gemm.hover", lang, x="%{customdata[3]}", y="%{customdata[4]}",
                z="%{customdata[2]}", slot="%{customdata[0]}", wave="%{customdata[1]}",
                r0="%{customdata[5]}", r1="%{customdata[6]}", c0="%{customdata[7]}",
                c1="%{customdata[8]}")
    text = None
    if rows * cols <= TEXT_CELLS:
        text = np.where(custom[..., 1] >= 0, custom[..., 1].astype(str), "")
    return go.Heatmap(z=values, x=edges(cols, sn, N), y=edges(rows, sm, M),
                      customdata=np.concatenate([custom, extra], axis=2), text=text,
                      texttemplate="%{text}" if text is not None else None,
                      hovertemplate=hover + "<extra></extra>", xgap=1, ygap=1,
                      showscale=first, meta=f"layer:{z}", **_colour_args(grid, colour_by, lang))


def _tail_trace(grid, z: int, shown: tuple[int, int], geometry: dict, lang: str,
                first: bool) -> go.Scatter | None:
    """Marks on the tasks of the last wave when it is only partly filled (else None)."""
    if grid.tail_tasks == 0 or len(grid.x) < grid.block_dim:
        return None
    rows, cols = shown
    last = (grid.wave == grid.waves - 1) & (grid.z == z) & (grid.x < rows) & (grid.y < cols)
    if not last.any():
        return None
    (sm, sn), (M, N) = geometry["panel"], geometry["size"]
    x_mid, y_mid = centres(cols, sn, N), centres(rows, sm, M)
    return go.Scatter(x=x_mid[grid.y[last]], y=y_mid[grid.x[last]], mode="markers",
                      marker=dict(symbol="x-thin-open", size=10, color="#000000",
                                  line=dict(width=2)),
                      name=msg("gemm.tail_marker", lang, tail=grid.tail_tasks),
                      legendgroup="tail", showlegend=first, hoverinfo="skip", meta=f"tail:{z}")


def task_grid_figure(grid, lang: str = "en", colour_by: str = "slot", *,
                     panel: tuple[int, int] = (1, 1), size: tuple[int, int, int] | None = None,
                     k_per_z: int = 0) -> go.Figure:
    """C as the grid's task panels coloured by core slot (or by wave), one small panel per
    split-K layer. ``panel`` is (rows, columns) of C per task (``Plan.single``), ``size``
    (M, N, K) clips the last panels and ``k_per_z`` names each layer's K range; without
    them the axes count tasks."""
    X, Y, Z = grid.shape
    M, N, K = size or (X * panel[0], Y * panel[1], 0)
    geometry = {"panel": panel, "size": (M, N)}
    layers = min(Z, MAX_LAYERS)
    ncols = min(layers, LAYER_COLUMNS)
    nrows = -(-layers // ncols)
    shown = _corner((X, Y))
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=_layer_titles(
        Z, layers, k_per_z, K, lang), horizontal_spacing=0.05, vertical_spacing=0.14)
    for z in range(layers):
        where = dict(row=z // ncols + 1, col=z % ncols + 1)
        fig.add_trace(_layer_trace(grid, z, shown, geometry, colour_by, lang, z == 0), **where)
        tail = _tail_trace(grid, z, shown, geometry, lang, z == 0)
        if tail is not None:
            fig.add_trace(tail, **where)
    _layout(fig, grid, panel, (*shown, layers, nrows), colour_by, lang)
    return fig


def _layer_titles(Z: int, layers: int, k_per_z: int, K: int, lang: str) -> list[str] | None:
    """ "z = 1 · K 2048–4095" above each split-K panel (none when Z = 1)."""
    if Z == 1:
        return None
    if not k_per_z:
        return [msg("gemm.layer", lang, z=z) for z in range(layers)]
    return [msg("gemm.layer_k", lang, z=z, k0=z * k_per_z, k1=min(K, (z + 1) * k_per_z) - 1)
            for z in range(layers)]


def _title(grid, panel, shown: tuple[int, int, int], colour_by: str,
           lang: str) -> tuple[str, list[str]]:
    """Title, and as caption lines the waves in words and what is left out (corner,
    layers)."""
    X, Y, Z = grid.shape
    rows, cols, layers = shown
    title = msg(_TITLE_IDS[colour_by], lang, X=X, Y=Y, Z=Z, tasks=f"{len(grid.x):,}",
                rows=panel[0], cols=panel[1], cores=grid.block_dim)
    notes = [wave_text(grid, lang)]
    if (rows, cols) != (X, Y):
        notes.append(msg("gemm.corner", lang, rows=rows, cols=cols, X=X, Y=Y))
    if layers < Z:
        notes.append(msg("gemm.layers_shown", lang, layers=layers, Z=Z))
    return title, notes


def _layout(fig: go.Figure, grid, panel, shown: tuple[int, int, int, int], colour_by: str,
            lang: str) -> None:
    """Matrix orientation (row 0 on top), true aspect ratio, axis titles, height."""
    rows, cols, layers, nrows = shown
    title, notes = _title(grid, panel, (rows, cols, layers), colour_by, lang)
    base_layout(fig, title, caption=notes, caption_px=WIDE_PX,
                height=260 + (560 if nrows == 1 and layers == 1 else 280 * nrows))
    for i in range(layers):
        where = dict(row=i // LAYER_COLUMNS + 1, col=i % LAYER_COLUMNS + 1)
        anchor = "x" if i == 0 else f"x{i + 1}"
        fig.update_yaxes(autorange="reversed", scaleanchor=anchor, constrain="domain", **where)
        fig.update_xaxes(constrain="domain", **where)
    fig.update_xaxes(title_text=msg("gemm.x_title", lang), row=nrows, col=1)
    fig.update_yaxes(title_text=msg("gemm.y_title", lang), row=1, col=1)

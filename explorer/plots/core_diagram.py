"""Block diagram of one DaVinci AI core (coupled) or one AIC + 2 AIV group (split).

Drawn with plotly shapes and annotations so it lives next to the other figures, follows the
language switch and updates with the chip's numbers (buffer sizes in KiB, path bandwidths
in bytes per cycle). Boxes are buffers or units; arrows are data paths labelled with the
pipe that moves the data, as Ascend C names it. Canvas coordinates run 0..100 both ways.
"""
from __future__ import annotations

import plotly.graph_objects as go

from explorer.plots.style import PIPE_COLOURS, msg

Box = tuple[float, float, float, float]  # x0, y0, x1, y1
_BUFFER_FILL = "#F2F2F2"
_GM_FILL = "#FFF4D6"


def _num(value: float) -> str:
    """A bandwidth or size without a useless ``.0``."""
    value = float(value)
    return f"{value:.0f}" if value == round(value) else f"{value:.1f}"


def _bpc(value: float, lang: str) -> str:
    """``n B/cycle`` in the chosen language."""
    return msg("diagram.bytes_per_cycle", lang, value=_num(value))


def _box(fig: go.Figure, box: Box, text: str, fill: str, *, dash: str = "solid",
         anchor: str = "middle", size: int = 12) -> None:
    """A rectangle with its label (centred, or at the top-left corner for a frame)."""
    x0, y0, x1, y1 = box
    fig.add_shape(type="rect", x0=x0, y0=y0, x1=x1, y1=y1, fillcolor=fill, layer="below",
                  line=dict(color="#404040", width=1.2, dash=dash))
    if anchor == "middle":
        fig.add_annotation(x=(x0 + x1) / 2, y=(y0 + y1) / 2, text=text, showarrow=False,
                           font=dict(size=size))
    else:  # frames: label at the bottom-left, clear of the arrows coming down from GM
        fig.add_annotation(x=x0 + 0.8, y=y0 + 0.6, text=text, showarrow=False, xanchor="left",
                           yanchor="bottom", font=dict(size=min(size, 11)))


def _arrow(fig: go.Figure, tail: tuple[float, float], head: tuple[float, float], label: str,
           colour: str, at: float = 0.5, shift: int = 0) -> None:
    """A data path from tail to head, its label a fraction ``at`` along it (``shift`` px up)."""
    fig.add_annotation(x=head[0], y=head[1], ax=tail[0], ay=tail[1], axref="x", ayref="y",
                       xref="x", yref="y", text="", showarrow=True, arrowhead=2,
                       arrowsize=1.2, arrowwidth=2, arrowcolor=colour)
    if label:
        x = tail[0] + (head[0] - tail[0]) * at
        y = tail[1] + (head[1] - tail[1]) * at
        fig.add_annotation(x=x, y=y, yshift=shift, text=label, showarrow=False,
                           bgcolor="rgba(255,255,255,0.85)", font=dict(size=10, color=colour))


#: compute unit -> message id (under ``plots.``) of its short role
ROLE_IDS = {"CUBE": "diagram.role_CUBE", "VECTOR": "diagram.role_VECTOR",
            "SCALAR": "diagram.role_SCALAR", "FIXPIPE": "diagram.role_FIXPIPE"}


def _unit(name: str, lang: str) -> str:
    """Label of a compute unit: its Ascend name and a short translated role."""
    return f"<b>{name}</b><br>{msg(ROLE_IDS[name], lang)}"


def _buffer(name: str, kib: float) -> str:
    """Label of a buffer: its Ascend name and its size in KiB."""
    return f"<b>{name}</b><br>{_num(kib)} KiB"


def _gm_box(fig: go.Figure, chip, lang: str) -> Box:
    """The shared GM / L2 box across the top of the canvas."""
    box = (3.0, 86.0, 97.0, 98.0)
    text = msg("diagram.gm", lang, hbm_GiB=_num(chip.hbm_GiB),
               hbm_GBps=_num(chip.hbm_bandwidth_GBps), l2_MiB=_num(chip.l2_MiB),
               l2_GBps=_num(chip.l2_bandwidth_GBps))
    _box(fig, box, text, _GM_FILL)
    return box


def _mte2_label(chip, lang: str) -> str:
    """MTE2's GM read rate, from HBM and on an L2 hit."""
    return msg("diagram.mte2_read", lang, hbm=_num(chip.gm_read_hbm_bytes_per_cycle),
               l2=_num(chip.gm_read_l2_bytes_per_cycle))


def _cube_side(fig: go.Figure, chip, lang: str, x: float) -> None:
    """L1 -> L0A/L0B -> CUBE -> L0C, fed by MTE2 from GM; ``x`` is the left edge."""
    l1, l0a, l0b = (x + 2, 36, x + 12, 70), (x + 20, 56, x + 29, 68), (x + 20, 34, x + 29, 46)
    cube, l0c = (x + 34, 44, x + 44, 56), (x + 34, 22, x + 44, 34)
    _box(fig, l1, _buffer("L1", chip.l1_KiB), _BUFFER_FILL)
    _box(fig, l0a, _buffer("L0A", chip.l0a_KiB), _BUFFER_FILL)
    _box(fig, l0b, _buffer("L0B", chip.l0b_KiB), _BUFFER_FILL)
    _box(fig, cube, _unit("CUBE", lang), "#FBE3D6")
    _box(fig, l0c, _buffer("L0C", chip.l0c_KiB), _BUFFER_FILL)
    _arrow(fig, (x + 7, 86), (x + 7, 70), f"MTE2<br>{_mte2_label(chip, lang)}",
           PIPE_COLOURS["MTE2"], at=0.5)
    mte1 = PIPE_COLOURS["MTE1"]
    _arrow(fig, (x + 12, 62), (x + 20, 62), f"MTE1<br>{_bpc(chip.mte1_l0a_bytes_per_cycle, lang)}",
           mte1, shift=32)  # above L0A's own label, which the gap is too narrow to clear
    _arrow(fig, (x + 12, 40), (x + 20, 40), f"MTE1<br>{_bpc(chip.mte1_l0b_bytes_per_cycle, lang)}",
           mte1, shift=-32)
    cube_colour = PIPE_COLOURS["CUBE"]
    _arrow(fig, (x + 29, 62), (x + 34, 53), "", cube_colour)
    _arrow(fig, (x + 29, 40), (x + 34, 47), "", cube_colour)
    _arrow(fig, (x + 39, 44), (x + 39, 34), "CUBE", cube_colour)


def _fixpipe(fig: go.Figure, chip, lang: str, x: float) -> None:
    """Split AIC: L0C -> FIXPIPE -> GM (and back to L1), with their rates."""
    fix, colour = (x + 34, 6, x + 46, 16), PIPE_COLOURS["FIXP"]
    _box(fig, fix, _unit("FIXPIPE", lang), "#FCEBC8", size=11)
    _arrow(fig, (x + 39, 22), (x + 39, 16), "", colour)
    _arrow(fig, (x + 45.5, 16), (x + 45.5, 86),
           f"FIXP<br>{_bpc(chip.fixpipe_gm_bytes_per_cycle, lang)}", colour, at=0.72)
    _arrow(fig, (x + 34, 11), (x + 7, 36), f"FIXP<br>{_bpc(chip.fixpipe_l1_bytes_per_cycle, lang)}",
           colour, at=0.45)


def _vector_unit(fig: go.Figure, chip, lang: str, x: float, top: float) -> tuple[Box, Box]:
    """UB <-> VECTOR with GM -> UB (MTE2) and UB -> GM (MTE3); returns (UB, VECTOR) boxes."""
    ub, vec = (x + 3, top - 30, x + 19, top - 16), (x + 3, top - 52, x + 19, top - 40)
    _box(fig, ub, _buffer("UB", chip.ub_KiB), _BUFFER_FILL)
    _box(fig, vec, _unit("VECTOR", lang), "#D6E6F5")
    _arrow(fig, (x + 7, 86), (x + 7, top - 16), f"MTE2<br>{_mte2_label(chip, lang)}",
           PIPE_COLOURS["MTE2"], at=0.25)
    _arrow(fig, (x + 15, top - 16), (x + 15, 86),
           f"MTE3<br>{_bpc(chip.gm_write_bytes_per_cycle, lang)}", PIPE_COLOURS["MTE3"], at=0.45)
    colour = PIPE_COLOURS["VECTOR"]
    _arrow(fig, (x + 8, top - 30), (x + 8, top - 40), "", colour)
    _arrow(fig, (x + 14, top - 40), (x + 14, top - 30),
           f"VECTOR<br>{_bpc(chip.vector_bytes_per_cycle, lang)}", colour, at=0.5)
    return ub, vec


def _split(fig: go.Figure, chip, lang: str) -> str:
    """One AIC (cube side + FIXPIPE) and two AIVs, sharing only GM/L2."""
    _box(fig, (1, 2, 51, 80), msg("diagram.aic_frame", lang, count=chip.ai_cores), "white",
         dash="dash", anchor="corner")
    _cube_side(fig, chip, lang, 2.0)
    _fixpipe(fig, chip, lang, 2.0)
    _box(fig, (4, 8, 16, 18), _unit("SCALAR", lang), "#E6E6E6", size=10)
    for index, x in enumerate((53.0, 76.0)):
        _box(fig, (x, 2, x + 22, 80), msg("diagram.aiv_frame", lang, index=index,
                                              count=chip.vector_cores),
             "white", dash="dash", anchor="corner")
        _vector_unit(fig, chip, lang, x, 78.0)
        _box(fig, (x + 3, 8, x + 19, 18), _unit("SCALAR", lang), "#E6E6E6", size=10)
    fig.add_annotation(x=50, y=-3, text=msg("diagram.split_note", lang), showarrow=False,
                       font=dict(size=12, color="#B00020"))
    return msg("diagram.title_split", lang, chip=chip.display_name)


def _coupled(fig: go.Figure, chip, lang: str) -> str:
    """One AI core: cube side, vector side and scalar in one core, L0C -> UB via VECTOR."""
    _box(fig, (1, 2, 99, 80), msg("diagram.core_frame", lang, count=chip.ai_cores,
                                      mhz=_num(chip.clock_MHz)),
         "white", dash="dash", anchor="corner")
    _cube_side(fig, chip, lang, 4.0)
    ub, vec = _vector_unit(fig, chip, lang, 70.0, 78.0)
    _arrow(fig, (48, 28), (vec[0], (vec[1] + vec[3]) / 2), msg("diagram.l0c_to_ub", lang),
           PIPE_COLOURS["VECTOR"], at=0.5)
    _box(fig, (6, 8, 20, 18), _unit("SCALAR", lang), "#E6E6E6", size=10)
    if getattr(chip, "has_fixpipe", False):
        _arrow(fig, (50, 34), (50, 86), f"FIXP<br>{_bpc(chip.fixpipe_gm_bytes_per_cycle, lang)}",
               PIPE_COLOURS["FIXP"], at=0.7)
    if getattr(chip, "vector_cores", 0):
        fig.add_annotation(x=50, y=-3, text=msg("diagram.extra_vector", lang,
                                                count=chip.vector_cores),
                           showarrow=False, font=dict(size=12))
    return msg("diagram.title_coupled", lang, chip=chip.display_name)


def core_diagram_figure(chip, lang: str = "en") -> go.Figure:
    """Block diagram of one core (coupled) or one AIC + 2 AIV group (split) of ``chip``."""
    fig = go.Figure()
    _gm_box(fig, chip, lang)
    title = _split(fig, chip, lang) if chip.architecture == "split" else _coupled(fig, chip, lang)
    fig.update_layout(title=dict(text=title), height=640,
                      margin=dict(l=10, r=10, t=60, b=10), showlegend=False,
                      plot_bgcolor="white")
    fig.update_xaxes(visible=False, range=[0, 100], fixedrange=True)
    fig.update_yaxes(visible=False, range=[-6, 100], fixedrange=True)
    return fig

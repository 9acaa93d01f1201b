"""Controls of the GEMM page, generated from ``kernels.gemm.params.PARAMS``.

Three groups, as an Ascend C author meets them: the problem (shape, precisions, bias,
sparsity), the tiling (``TCubeTiling``: base tile, K depth in L1, buffer counts) with the
live L1/L0/UB occupancy it implies, and the grid (task grid X x Y x Z, policy, blockDim).

The chip decides what is valid: block_dim runs over its cube cores (and follows a preset
change when it was "all cores"), base tiles are offered in multiples of the cube fractal,
grid sizes stop at one task per base tile, and base_k follows the input precision's
default when the user had not changed it. Anything else the kernel refuses (bf16 on the
first 910, 4:2 sparsity on 310P, a tile too large for L0B) is shown as a translated error
by the page; the controls stay as they were so the user can fix it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import streamlit as st

from explorer.core.i18n import t
from explorer.ui import state, widgets
from explorer.ui.page_params import PageParams
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.common.sizes import ceil_div
from kernels.gemm import params as gp

SPECS = {spec.name: spec for spec in (*gp.PARAMS, widgets.SEED_SPEC)}
PREFIX = "gm."  # session keys of this page's values: gm.M, gm.base_k, ...
#: the page refuses bigger programs: the emulator and the tables would take seconds
UI_MAX_INSTRUCTIONS = 1_000_000
#: base tile sizes offered (those that are whole cube fractals for the precision)
TILE_SIZES = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
_CORES_SEEN, _DTYPE_SEEN = "gm._cores", "gm._dtype_in"

#: one-click scenarios: the default large GEMM, a small one, the small one with split-K
EXAMPLES = {
    "large": {},
    "small": {"M": 256, "N": 256, "K": 8192},
    "small_split": {"M": 256, "N": 256, "K": 8192, "grid_z": 8},
    "tail": {"M": 3328, "N": 5120, "K": 4096},  # 26 x 20 = 520 tasks on 24 cores
}


PAGE = PageParams(PREFIX, SPECS)
key, value, take_url = PAGE.key, PAGE.value, PAGE.take_url


# ---- examples ----------------------------------------------------------------------------

def apply_example(name: str) -> None:
    """Reset every parameter to its default (chip-dependent ones follow the chip), then
    apply the example's values."""
    for spec in gp.PARAMS:
        st.session_state.pop(key(spec.name), None)
    st.session_state.pop(_CORES_SEEN, None)
    for param, val in EXAMPLES[name].items():
        st.session_state[key(param)] = val


def examples() -> None:
    """A row of buttons, each one a ready scenario."""
    widgets.example_buttons(tuple(EXAMPLES), "ui.gemm.example", "gm_example", apply_example)


# ---- keeping values valid for the chip ---------------------------------------------------
def _follow_chip(chip: Chip) -> int:
    """block_dim within the chip's cube cores; "all cores" stays all on a new chip."""
    cores = len(chip.cube_core_ids())
    seen = st.session_state.get(_CORES_SEEN)
    current = st.session_state.get(key("block_dim"))
    if current is None or current == seen or current > cores:
        st.session_state[key("block_dim")] = cores
    st.session_state[_CORES_SEEN] = cores
    return cores


def _follow_dtype(dtype: str) -> None:
    """base_k follows the input precision's default unless the user chose another one."""
    seen = st.session_state.get(_DTYPE_SEEN)
    if key("base_k") not in st.session_state or (
            seen is not None and seen != dtype and value("base_k") == gp.default_base_k(seen)):
        st.session_state[key("base_k")] = gp.default_base_k(dtype)
    st.session_state[_DTYPE_SEEN] = dtype


def _clamp(name: str, hi: int) -> int:
    """Keep an integer parameter within [its minimum, hi]; returns hi."""
    lo = int(SPECS[name].min)
    st.session_state[key(name)] = min(max(int(value(name)), lo), max(hi, lo))
    return hi


def tile_options(step: int, keep: object) -> list[int]:
    """Base tile sizes that are whole fractals of ``step``, plus ``keep`` (from a link)."""
    options = [v for v in TILE_SIZES if v % step == 0]
    if isinstance(keep, int) and 16 <= keep <= 1024 and keep not in options:
        options = sorted([*options, keep])
    return options



# ---- the three groups of widgets ---------------------------------------------------------
def _widget(name: str, where, **kwargs):
    return widgets.param_widget(SPECS[name], key(name), where=where, **kwargs)


#: the message ids naming the choices of a widget (":" of a choice becomes "_" in its id)
SPARSITY_IDS = {"dense": "ui.gemm.sparsity.dense", "4:2": "ui.gemm.sparsity.4_2",
                "2:4": "ui.gemm.sparsity.2_4"}
SPLIT_K_MODE_IDS = {"workspace": "ui.gemm.split_k_mode.workspace",
                    "atomic": "ui.gemm.split_k_mode.atomic"}
POLICY_IDS = {"row_major": "ui.gemm.policy.row_major", "col_major": "ui.gemm.policy.col_major",
              "swizzle": "ui.gemm.policy.swizzle", "cluster": "ui.gemm.policy.cluster"}
BALANCE_IDS = {"round_robin": "ui.gemm.balance.round_robin",
               "static": "ui.gemm.balance.static", "lpt": "ui.gemm.balance.lpt"}
COLOUR_BY_IDS = {"slot": "ui.gemm.grid.colour.slot", "wave": "ui.gemm.grid.colour.wave"}


def labels(ids: Mapping[str, str]) -> Callable[[str], str]:
    """format_func naming a choice by its message id in ``ids``. The language is bound
    now: a format_func may also be called outside the script run (AppTest)."""
    lang = state.language()
    return lambda choice: t(ids[choice], lang)


def _dtype_label(chip: Chip) -> Callable[[str], str]:
    """Input precisions as offered: those the chip's cube lacks are marked (and refused)."""
    lang, have, name = state.language(), tuple(chip.cube_precisions), chip.display_name
    return lambda dtype: dtype if dtype in have else t("ui.gemm.not_on_chip", lang,
                                                        dtype=dtype, chip=name)


def _problem(chip: Chip, where) -> dict:
    """Shape, precisions, int8 output scale, bias and sparsity."""
    where.markdown(f"**{state.tr('ui.gemm.group.problem')}**")
    p = {name: _widget(name, where) for name in ("M", "N", "K")}
    p["dtype_in"] = _widget("dtype_in", where, format_func=_dtype_label(chip))
    p["dtype_out"] = _widget("dtype_out", where)
    p["quant_scale"] = float(value("quant_scale"))
    if p["dtype_out"] == "int8":
        spec = SPECS["quant_scale"]
        p["quant_scale"] = where.number_input(
            widgets.param_label(spec), min_value=spec.min, max_value=spec.max, format="%g",
            help=widgets.param_help(spec), **state.bound(key("quant_scale"), spec.default))
    p["bias"] = _widget("bias", where)
    p["sparsity"] = _widget("sparsity", where, options=SPECS["sparsity"].choices,
                            format_func=labels(SPARSITY_IDS))
    return p


def _tiling(chip: Chip, p: dict, where) -> dict:
    """Base tile (multiples of the cube fractal), depth_k and the three buffer counts."""
    where.markdown(f"**{state.tr('ui.gemm.group.tiling')}**")
    k0 = chip.cube_k0(p["dtype_in"]) if p["dtype_in"] in chip.cube_precisions else 16
    steps = {"base_m": chip.cube_m0, "base_n": chip.cube_n0,
             "base_k": k0 * (2 if p["sparsity"] != "dense" else 1)}
    for name, step in steps.items():
        options = tile_options(step, value(name))
        if value(name) not in options:
            below = [v for v in options if v <= value(name)]
            st.session_state[key(name)] = below[-1] if below else options[0]
        p[name] = _widget(name, where, options=options, extra_help=state.tr(
            "ui.gemm.tile_step", step=step, dtype=p["dtype_in"]))
    p["depth_k"] = _widget("depth_k", where)
    for name in ("db_l1", "db_l0", "db_l0c"):
        p[name] = _widget(name, where)
    return p


def _grid(chip: Chip, p: dict, where) -> dict:
    """blockDim, the task grid X x Y x Z (0 = one task per base tile), split-K mode and
    the task order (policy, group)."""
    where.markdown(f"**{state.tr('ui.gemm.group.grid')}**")
    cores = len(chip.cube_core_ids())
    p["block_dim"] = _widget("block_dim", where, max_value=cores, prefix="ui.gemm.param",
                             extra_help=state.tr("ui.gemm.block_dim_max", cores=cores,
                                                 chip=chip.display_name))
    most = {"grid_x": ceil_div(p["M"], p["base_m"]), "grid_y": ceil_div(p["N"], p["base_n"]),
            "grid_z": min(int(SPECS["grid_z"].max), ceil_div(p["K"], p["base_k"]))}
    for name, hi in most.items():
        p[name] = _widget(name, where, max_value=_clamp(name, hi))
    p["split_k_mode"] = _widget("split_k_mode", where,
                                format_func=labels(SPLIT_K_MODE_IDS))
    p["policy"] = _widget("policy", where, format_func=labels(POLICY_IDS))
    p["group"] = _widget("group", where)
    p["balance"] = _widget("balance", where, format_func=labels(BALANCE_IDS))
    return p


def controls(chip: Chip) -> dict:
    """Draw every parameter widget in three bordered columns; returns the parameters and
    the scenario's seed (key "seed": it draws the matrices of the numerical check)."""
    _follow_chip(chip)
    _follow_dtype(str(value("dtype_in")))
    left, middle, right = (column.container(border=True) for column in st.columns(3))
    p = _problem(chip, left)
    p = _tiling(chip, p, middle)
    p = _grid(chip, p, right)
    with middle:  # drawn under the tiling, from all parameters (the grid's too)
        occupancy(chip, p)
    p["seed"] = _widget("seed", right)
    return p


# ---- what the tiling occupies ------------------------------------------------------------
def kib(n: float) -> str:
    return f"{n / 1024:,.1f}".rstrip("0").rstrip(".")


def occupancy(chip: Chip, p: dict) -> None:
    """One bar per buffer: "L0B: 64 of 64 KiB (100%), 2 buffers"; over-full bars say so."""
    st.caption(state.tr("ui.gemm.occupancy"))
    for buffer, (used, limit, _, count) in gp.buffer_use(chip, gp.GemmParams.of(p)).items():
        msg_id = "ui.gemm.buffer_over" if used > limit else "ui.gemm.buffer"
        st.progress(min(1.0, used / limit), text=state.tr(
            msg_id, buffer=buffer, used=kib(used), total=kib(limit),
            share=f"{used / limit:.0%}", count=count))


# ---- how big the program would be --------------------------------------------------------
def check_size(p: dict) -> None:
    """Refuse programs too big to emulate interactively, saying what to change."""
    count = gp.instruction_count(gp.GemmParams.of(p))
    if count > UI_MAX_INSTRUCTIONS:
        raise InputError("params.M, N, K", f"{p['M']} x {p['N']} x {p['K']}", state.tr(
            "ui.gemm.too_many", count=f"{count:,}", limit=f"{UI_MAX_INSTRUCTIONS:,}"),
            hint=state.tr("ui.gemm.too_many_hint"))

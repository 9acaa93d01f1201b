"""Controls of the GEMM page, generated from ``kernels.gemm.params.PARAMS``.

Three groups, as an Ascend C author meets them: the problem (shape, precisions, bias,
sparsity), the tiling (``TCubeTiling``: base tile, K depth in L1, buffer counts) with the
live L1/L0/UB occupancy it implies, and the grid (task grid X x Y x Z, policy, blockDim).

The page offers what it runs, and the kernel decides what that is: every numeric widget's
range comes from ``gp.check`` and the page's instruction budget for the current chip and
the other settings (``rules``, settled by ``page_params``). So block_dim runs over the
chip's cube cores (and follows a preset change when it was "all cores"), base tiles are
multiples of the cube fractal that fit L0A, L0B, L0C and L1, grid sizes stop at one task
per base tile, M, N and K stop at the budget, and base_k follows the input precision's
default when the user had not changed it. A value from a link, an upload, an example or
from before a setting changed that the page would refuse is shown as a refusal (the
field's label, the value, the chip's range) and moved to the nearest value it accepts. A
choice the chip lacks (bf16 on the first 910, 4:2 sparsity on 310P), picked in its widget,
is shown as the kernel's translated refusal; the controls stay as they were to fix it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import streamlit as st

from explorer.core.i18n import t
from explorer.ui import apply, errors, state, widgets
from explorer.ui.page_params import PageParams, Rules, Taken
from explorer.ui.widgets import Span
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.common.budget import default_instruction_cap
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
key, value = PAGE.key, PAGE.value
#: the numeric parameters whose range the kernel's check and the budget decide
NUMERIC = ("base_m", "base_n", "base_k", "depth_k", "M", "N", "K", "grid_x", "grid_y",
           "grid_z", "group", "block_dim")
#: block_dim counts cube cores here (vector cores on the vector pages): its own label
LABEL_PREFIXES = {"block_dim": "ui.gemm.param"}
#: the page's labels of its parameters, leading its refusals ("M (rows) (params.M)")
label_id = errors.param_labels(SPECS, lambda name: LABEL_PREFIXES.get(name, "ui.param"))


def take() -> Taken:
    """Copy this page's URL parameters into session state (``controls`` shows the refused)."""
    return PAGE.take()


# ---- examples ----------------------------------------------------------------------------

def apply_example(name: str) -> None:
    """Reset every parameter to its default (chip-dependent ones follow the chip), then
    set the example's values; the page runs them at once (a ready scenario is one click)."""
    for spec in gp.PARAMS:
        st.session_state.pop(key(spec.name), None)
    st.session_state.pop(_CORES_SEEN, None)
    for param, val in EXAMPLES[name].items():
        st.session_state[key(param)] = val
    apply.request(PREFIX)


def examples() -> None:
    """A row of buttons, each one a ready scenario."""
    widgets.example_buttons(tuple(EXAMPLES), "ui.gemm.example", "gm_example", apply_example)


# ---- keeping values valid for the chip ---------------------------------------------------
def _follow_chip(chip: Chip) -> int:
    """"All cores" stays all cores on a new chip (any other block_dim the chip lacks is
    refused and moved, visibly, when the page settles)."""
    cores = len(chip.cube_core_ids())
    seen = st.session_state.get(_CORES_SEEN)
    current = st.session_state.get(key("block_dim"))
    if current is None or current == seen:
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


def check(chip: Chip, p: dict) -> None:
    """What the page runs: the kernel's check, then the page's instruction budget."""
    check_size(gp.check(chip, {name: p[name] for name in p if name != "seed"}))


def rules(chip: Chip) -> Rules:
    """What the page accepts on ``chip``: all cube cores and base_k for the precision by
    default, base tiles in whole cube fractals."""
    def default(name: str, p: dict) -> object:
        if name == "block_dim":
            return len(chip.cube_core_ids())
        return gp.default_base_k(p["dtype_in"]) if name == "base_k" else SPECS[name].default

    def step(name: str, p: dict) -> int:
        k0 = chip.cube_k0(p["dtype_in"]) if p["dtype_in"] in chip.cube_precisions else 16
        sparse = 2 if p["sparsity"] != "dense" else 1
        return {"base_m": chip.cube_m0, "base_n": chip.cube_n0,
                "base_k": k0 * sparse}.get(name, 1)

    return Rules(lambda p: check(chip, p), SPECS, NUMERIC, default, step, label_id)


def tile_options(span: Span, keep: object) -> list[int]:
    """Base tile sizes within the span (whole fractals that fit), its largest, and ``keep``
    (from a link, which the page accepted)."""
    return sorted({*(v for v in TILE_SIZES if v in span), span.hi,
                   *([keep] if keep in span else [])})


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


def _more(where):
    """The rarely changed widgets of a group, folded under "More options"."""
    return where.expander(state.tr("apply.more"))


def _problem(chip: Chip, spans: dict, where) -> dict:
    """Shape and precisions; the int8 output scale, bias and sparsity folded."""
    where.markdown(f"**{state.tr('ui.gemm.group.problem')}**")
    p = {name: _widget(name, where, span=spans[name]) for name in ("M", "N", "K")}
    p["dtype_in"] = _widget("dtype_in", where, format_func=_dtype_label(chip))
    p["dtype_out"] = _widget("dtype_out", where)
    p["quant_scale"] = float(value("quant_scale"))
    with _more(where):
        if p["dtype_out"] == "int8":
            p["quant_scale"] = _widget("quant_scale", st)
        p["bias"] = _widget("bias", st)
        p["sparsity"] = _widget("sparsity", st, options=SPECS["sparsity"].choices,
                                format_func=labels(SPARSITY_IDS))
    return p


def _tiling(rule: Rules, spans: dict, p: dict, where) -> dict:
    """Base tile (multiples of the cube fractal that fit) and depth_k; the buffer counts
    folded."""
    where.markdown(f"**{state.tr('ui.gemm.group.tiling')}**")
    for name in ("base_m", "base_n", "base_k"):
        p[name] = _widget(name, where, options=tile_options(spans[name], value(name)),
                          extra_help=state.tr("ui.gemm.tile_step", step=rule.step(name, p),
                                              dtype=p["dtype_in"]))
    p["depth_k"] = _widget("depth_k", where, span=spans["depth_k"])
    with _more(where):
        for name in ("db_l1", "db_l0", "db_l0c"):
            p[name] = _widget(name, st)
    return p


def _grid(chip: Chip, spans: dict, p: dict, where) -> dict:
    """blockDim, the task grid X x Y x Z (0 = one task per base tile), split-K mode and
    the task order (policy, group)."""
    where.markdown(f"**{state.tr('ui.gemm.group.grid')}**")
    cores = len(chip.cube_core_ids())
    p["block_dim"] = _widget("block_dim", where, span=spans["block_dim"],
                             prefix=LABEL_PREFIXES["block_dim"], extra_help=state.tr(
                                 "ui.gemm.block_dim_max", cores=cores, chip=chip.display_name))
    for name in ("grid_x", "grid_y", "grid_z"):
        p[name] = _widget(name, where, span=spans[name])
    p["policy"] = _widget("policy", where, format_func=labels(POLICY_IDS))
    with _more(where):
        p["split_k_mode"] = _widget("split_k_mode", st, format_func=labels(SPLIT_K_MODE_IDS))
        p["group"] = _widget("group", st, span=spans["group"])
        p["balance"] = _widget("balance", st, format_func=labels(BALANCE_IDS))
        p["seed"] = _widget("seed", st)
    return p


def controls(chip: Chip, taken: Taken | None = None) -> dict:
    """Show what the page refused, draw every parameter widget within what it accepts, in
    three bordered columns (the rarely changed ones of each folded under "More options");
    returns the parameters and the scenario's seed (key "seed": it draws the matrices of
    the numerical check)."""
    _follow_chip(chip)
    _follow_dtype(str(value("dtype_in")))
    rule = rules(chip)
    current, spans, refused = PAGE.settle(rule, taken)
    for exc in refused:
        errors.show(exc, state.language(), label_id)
    spans = rule.ranges(current, spans)
    left, middle, right = (column.container(border=True) for column in st.columns(3))
    p = _problem(chip, spans, left)
    p = _tiling(rule, spans, p, middle)
    p = _grid(chip, spans, p, right)
    with middle:  # drawn under the tiling, from all parameters (the grid's too)
        occupancy(chip, p)
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
    """Refuse programs too big to emulate interactively (or over the emulator's own cap),
    saying what to change."""
    count, limit = gp.instruction_count(gp.GemmParams.of(p)), \
        min(UI_MAX_INSTRUCTIONS, default_instruction_cap())
    if count > limit:
        raise InputError("params.M, N, K", f"{p['M']} x {p['N']} x {p['K']}", state.tr(
            "ui.gemm.too_many", count=f"{count:,}", limit=f"{limit:,}"),
            hint=state.tr("ui.gemm.too_many_hint"))

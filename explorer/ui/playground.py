"""Controls of the vector-add playground, generated from ``kernels.vector_add.kernel.PARAMS``.

The page offers what it runs, and the kernel decides what that is: every widget's range
comes from ``vector_add.check`` and the page's instruction budget for the current chip and
the other settings (``rules``, settled by ``page_params``). So block_dim runs over the
chip's vector cores, the tile list stops at the largest tile whose 3 queues x BUFFER_NUM
slots fit the chip's UB (a UB override on the chip page changes what is offered here), and
n stops where the program would exceed the budget with this tile. A value from a link, an
upload or from before a setting changed that the page would refuse is shown as a refusal
(the field's label, the value, the chip's range) and moved to the nearest value it accepts.

A scenario file or report loads back through the page's downloads
(``run_view.show_upload``, as on every kernel page): it becomes the page's URL, which
``take`` reads into the widgets.
"""
from __future__ import annotations

import streamlit as st

from explorer.core.i18n import param_label_id
from explorer.ui import errors, state, widgets
from explorer.ui.page_params import PageParams, Rules, Taken
from explorer.ui.widgets import Span
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.common.budget import default_instruction_cap
from kernels.vector_add import kernel as vector_add

SPECS = {spec.name: spec for spec in vector_add.PARAMS}
PREFIX = "va."  # session keys of this page's values: va.n, va.tile, ...
PAGE = PageParams(PREFIX, {**SPECS, "seed": widgets.SEED_SPEC})
#: the numeric parameters whose range the kernel's check and the budget decide
NUMERIC = ("block_dim", "tile", "n")
#: the playground refuses bigger programs: the emulator would take seconds, not a blink
UI_MAX_INSTRUCTIONS = 300_000
SEED_LABEL = "ui.va.seed"


def label_id(name: str) -> str:
    """The page's label of a parameter (``errors.show``: "tile (elements) (params.tile)")."""
    return SEED_LABEL if name == "seed" else param_label_id(name)


def take() -> Taken:
    """Copy this page's URL parameters into session state (``controls`` shows the refused)."""
    return PAGE.take()


def tile_step(chip: Chip, dtype: str) -> int:
    """Elements per UB alignment block: tiles are whole 32-byte blocks (DataCopy rule)."""
    return max(1, chip.ub_align_bytes // vector_add.elem_bytes(dtype))


def tile_options(span: Span, keep: int) -> list[int]:
    """Powers of two within the tile's span, its largest tile, and ``keep`` (a tile from a
    file or link, which the page accepted)."""
    options = [v for v in widgets.powers_of_two(span.lo, span.hi) if v in span]
    return sorted({*options, span.hi, *([keep] if keep in span else [])})


def check(chip: Chip, p: dict) -> None:
    """What the page runs: the kernel's check, then the page's instruction budget."""
    check_size(chip, vector_add.check(chip, {name: p[name] for name in SPECS}))


def rules(chip: Chip) -> Rules:
    """What the page accepts on ``chip``: the kernel's defaults, tiles in whole blocks."""
    def default(name: str, _p: dict) -> object:
        return vector_add.default_block_dim(chip) if name == "block_dim" \
            else PAGE.specs[name].default

    def step(name: str, p: dict) -> int:
        return tile_step(chip, p["dtype"]) if name == "tile" else 1

    return Rules(lambda p: check(chip, p), PAGE.specs, NUMERIC, default, step, label_id)


def _ub_use(chip: Chip, params: dict) -> None:
    """A bar of the UB the queues take: "x of y KiB"."""
    used = vector_add.ub_bytes_needed(chip, params)
    st.progress(min(1.0, used / chip.ub_bytes), text=state.tr(
        "ui.va.ub_use", used=f"{used / 1024:.1f}", total=f"{chip.ub_bytes / 1024:.1f}",
        share=f"{used / chip.ub_bytes:.0%}", buffers=params["buffer_num"]))


def controls(chip: Chip, taken: Taken | None = None) -> dict | None:
    """Show what the page refused, draw the parameter widgets within what it accepts (the
    seed folded under "More options"); returns the parameters and the seed (key "seed"),
    None when no tile fits UB."""
    rule = rules(chip)
    p, spans, refused = PAGE.settle(rule, taken)
    for exc in refused:
        errors.show(exc, state.language(), label_id)
    span = rule.ranges(p, spans)
    cores = len(chip.vector_core_ids())
    top, bottom = st.columns(3), st.columns(3)
    n = _widget("n", top[0], span=span["n"])
    block_dim = _widget("block_dim", top[1], span=span["block_dim"],
                        extra_help=state.tr("ui.va.block_dim_max", cores=cores))
    buffer_num = _widget("buffer_num", bottom[0])
    dtype = _widget("dtype", bottom[1])
    fit, step = vector_add.largest_tile(chip, dtype, buffer_num), tile_step(chip, dtype)
    if fit < step:
        top[2].error(state.tr("ui.va.no_tile", ub=chip.ub_bytes))
        return None
    tile = _widget("tile", top[2], options=tile_options(span["tile"], p["tile"]),
                   format_func=widgets.pow2_label, extra_help=state.tr(
                       "ui.va.tile_max", fit=fit, buffers=buffer_num, step=step))
    with bottom[2].expander(state.tr("apply.more")):  # rarely changed
        widgets.number_field(PAGE.specs["seed"], PAGE.key("seed"), Span(
            0, int(widgets.SEED_SPEC.max)), SEED_LABEL, state.tr("ui.va.seed_help"))
    params = {"n": n, "block_dim": block_dim, "tile": tile, "buffer_num": buffer_num,
              "dtype": dtype}
    with top[2]:
        _ub_use(chip, params)
    return {**params, "seed": seed()}


def _widget(name: str, where, **kwargs):
    return widgets.param_widget(SPECS[name], PAGE.key(name), where=where, **kwargs)


def seed() -> int:
    return int(st.session_state.get(PAGE.key("seed"), 0))


def check_size(chip: Chip, params: dict) -> None:
    """Refuse programs too big to emulate interactively (or over the emulator's own cap),
    saying what to change."""
    limit = min(UI_MAX_INSTRUCTIONS, default_instruction_cap())
    count = vector_add.instruction_count(chip, params)
    if count > limit:
        raise InputError("params.n", params["n"], state.tr(
            "ui.va.too_many", count=f"{count:,}", limit=f"{limit:,}"),
            hint=state.tr("ui.va.too_many_hint"))

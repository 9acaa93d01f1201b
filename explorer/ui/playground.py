"""Controls of the vector-add playground, generated from ``kernels.vector_add.kernel.PARAMS``.

The chip decides what is valid: block_dim runs over the chip's vector cores, and the tile
list stops at the largest tile whose 3 queues x BUFFER_NUM slots fit the chip's UB (so a
UB override on the chip page changes what is offered here). Values are clamped into the
valid set before the widgets are drawn, so the page never starts from an invalid state;
values from the URL are checked by the parameter specs and refused with a message.

A scenario file or report loads back through the page's downloads
(``run_view.show_upload``, as on every kernel page): it becomes the page's URL, which
``take_url`` reads into the widgets.
"""
from __future__ import annotations

import streamlit as st

from explorer.core.scenario import SEED_MAX
from explorer.ui import errors, state, widgets
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.vector_add import kernel as vector_add

SPECS = {spec.name: spec for spec in vector_add.PARAMS}
PREFIX = "va."  # session keys of this page's values: va.n, va.tile, ...
URL_NAMES = (*SPECS, "seed")
#: the playground refuses bigger programs: the emulator would take seconds, not a blink
UI_MAX_INSTRUCTIONS = 300_000


def _key(name: str) -> str:
    return PREFIX + name


def take_url(lang: str) -> None:
    """Copy this page's URL parameters into session state, showing the refused ones."""
    for name, text in state.take_url_params().items():
        try:
            if name not in URL_NAMES:
                raise InputError(name, text, ", ".join(URL_NAMES))
            if name == "seed":
                if not (text.isdigit() and int(text) <= SEED_MAX):
                    raise InputError("seed", text, f"0 .. {SEED_MAX}")
                value = int(text)
            else:
                value = SPECS[name].check(text)
            st.session_state[_key(name)] = value
        except InputError as exc:
            errors.show(exc, lang)


def tile_step(chip: Chip, dtype: str) -> int:
    """Elements per UB alignment block: tiles are whole 32-byte blocks (DataCopy rule)."""
    return max(1, chip.ub_align_bytes // vector_add.elem_bytes(dtype))


def largest_tile(chip: Chip, dtype: str, buffer_num: int) -> int:
    """The largest aligned tile whose queues (and fp32 scratch, if any) fit the UB."""
    per_elem = 3 * buffer_num * vector_add.elem_bytes(dtype)
    per_elem += 8 if vector_add.needs_fp32_compute(chip, dtype) else 0
    step = tile_step(chip, dtype)
    return chip.ub_bytes // per_elem // step * step


def tile_options(chip: Chip, dtype: str, buffer_num: int, keep: int | None = None) -> list[int]:
    """Powers of two that are whole blocks and fit, the largest fitting tile, and ``keep``
    (a tile from a file or link) when it is valid too."""
    spec, step = SPECS["tile"], tile_step(chip, dtype)
    fit = min(largest_tile(chip, dtype, buffer_num), int(spec.max))
    lo = max(int(spec.min), step)
    options = [v for v in widgets.powers_of_two(lo, fit) if v % step == 0]
    extra = {fit} | ({keep} if keep is not None and keep % step == 0 else set())
    return sorted(set(options) | {v for v in extra if lo <= v <= fit})


def _clamp(name: str, lo: int, hi: int) -> None:
    key = _key(name)
    value = st.session_state.get(key, SPECS[name].default)
    st.session_state[key] = min(max(int(value), lo), hi)


def _fit_tile(options: list[int]) -> None:
    """Keep the chosen tile if it is offered, else the largest offered tile below it."""
    key = _key("tile")
    value = st.session_state.get(key, SPECS["tile"].default)
    if options and value not in options:
        below = [v for v in options if v <= value]
        st.session_state[key] = below[-1] if below else options[0]


def _ub_use(chip: Chip, params: dict) -> None:
    """A bar of the UB the queues take: "x of y KiB"."""
    used = vector_add.ub_bytes_needed(chip, params)
    st.progress(min(1.0, used / chip.ub_bytes), text=state.tr(
        "ui.va.ub_use", used=f"{used / 1024:.1f}", total=f"{chip.ub_bytes / 1024:.1f}",
        share=f"{used / chip.ub_bytes:.0%}", buffers=params["buffer_num"]))


def controls(chip: Chip) -> dict | None:
    """Draw the parameter widgets; returns the parameters (None when no tile fits UB)."""
    cores = len(chip.vector_core_ids())
    _clamp("block_dim", 1, cores)
    top, bottom = st.columns(3), st.columns(3)
    n = widgets.param_widget(SPECS["n"], _key("n"), where=top[0])
    block_dim = widgets.param_widget(SPECS["block_dim"], _key("block_dim"), max_value=cores,
                                     where=top[1], extra_help=state.tr(
                                         "ui.va.block_dim_max", cores=cores))
    buffer_num = widgets.param_widget(SPECS["buffer_num"], _key("buffer_num"), where=bottom[0])
    dtype = widgets.param_widget(SPECS["dtype"], _key("dtype"), where=bottom[1])
    options = tile_options(chip, dtype, buffer_num, keep=st.session_state.get(_key("tile")))
    if not options:
        top[2].error(state.tr("ui.va.no_tile", ub=chip.ub_bytes))
        return None
    _fit_tile(options)
    tile = widgets.param_widget(
        SPECS["tile"], _key("tile"), options=options, where=top[2],
        format_func=widgets.pow2_label, extra_help=state.tr(
            "ui.va.tile_max", fit=options[-1], buffers=buffer_num, step=tile_step(chip, dtype)))
    bottom[2].number_input(state.tr("ui.va.seed"), 0, SEED_MAX, step=1,
                           help=state.tr("ui.va.seed_help"), **state.bound(_key("seed"), 0))
    params = {"n": n, "block_dim": block_dim, "tile": tile, "buffer_num": buffer_num,
              "dtype": dtype}
    with top[2]:
        _ub_use(chip, params)
    return params


def seed() -> int:
    return int(st.session_state.get(_key("seed"), 0))


def check_size(chip: Chip, params: dict) -> None:
    """Refuse programs too big to emulate interactively, saying what to change."""
    ops = 4 if vector_add.needs_fp32_compute(chip, params["dtype"]) else 1
    count = -(-params["n"] // params["tile"]) * (3 + ops)
    if count > UI_MAX_INSTRUCTIONS:
        raise InputError("params.n", params["n"], state.tr(
            "ui.va.too_many", count=f"{count:,}", limit=f"{UI_MAX_INSTRUCTIONS:,}"),
            hint=state.tr("ui.va.too_many_hint"))


"""Widgets shared by the pages: the sidebar (language switch, chip preset picker), one
number input per chip field and one widget per kernel parameter. Labels, help, units and
ranges come from the specs and the catalogue, so a new field or parameter gets a correct,
translated widget without page code.

A numeric widget's range may be its page's (``Span``: what the page accepts now, for this
chip and the other settings); a number typed beyond it is refused visibly above the input
(the field's label, the value, the range, why) and the value stays, never left red and
unapplied by the input's own limits.

Values live in session state (see ``state.bound``); a widget only mirrors them. The
sidebar's language and preset keep their value across page switches and the URL carries
them (``?lang=zh&preset=910B4``); problems met while reading the URL (an unknown preset, a
bad override) are shown in the sidebar once, translated.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import streamlit as st

import hardware_presets as hp
from explorer.core.i18n import LANGUAGES, has, param_help_id, param_label_id, t
from explorer.ui import errors, state
from hardware_presets import FieldSpec
from hardware_presets.errors import InputError
from kernels.common.params import ParamSpec


def upload_limit_mb(limit_bytes: int) -> int:
    """A page's own byte cap as a file uploader's ``max_upload_size`` (whole MiB, at least
    1): Streamlit then refuses a larger file before it is sent, instead of the page after
    the whole file has arrived (the page still checks its exact cap)."""
    return max(1, -(-limit_bytes // (1 << 20)))


#: a unit (FieldSpec.unit, ParamSpec.unit) -> the message id of its words; KiB, GB/s and
#: MHz are international and stay as they are (tests/test_zh_pages.py checks every unit)
_UNIT_IDS = {
    "cores": "ui.unit.cores",
    "elements": "ui.unit.elements",
    "bytes": "ui.unit.bytes",
    "rows": "ui.unit.rows",
    "columns": "ui.unit.columns",
    "cycles": "ui.unit.cycles",
    "B/cycle": "ui.unit.B/cycle",
    "elements/cycle": "ui.unit.elements/cycle",
    "copies": "ui.unit.copies",
    "cycles/burst": "ui.unit.cycles/burst",
    "cycles/repeat": "ui.unit.cycles/repeat",
    "K elements per scale (0 = per channel)": "ui.unit.k_per_scale",
    "K steps per L1 load": "ui.unit.k_steps_per_l1",
    "KV heads (0 = auto)": "ui.unit.kv_heads_auto",
    "billion parameters": "ui.unit.billion_params",
    "cards": "ui.unit.cards",
    "cores (0 = all)": "ui.unit.cores_all",
    "cube cores": "ui.unit.cube_cores",
    "cube cores (0 = all)": "ui.unit.cube_cores_all",
    "cycles per task off core 0": "ui.unit.cycles_off_core0",
    "decode steps": "ui.unit.decode_steps",
    "elements (0 = auto)": "ui.unit.elements_auto",
    "heads": "ui.unit.heads",
    "heads (0 = auto)": "ui.unit.heads_auto",
    "layers": "ui.unit.layers",
    "panels": "ui.unit.panels",
    "rows (0 = 1)": "ui.unit.rows_one",
    "rows (tokens)": "ui.unit.rows_tokens",
    "sequences": "ui.unit.sequences",
    "split-K factor": "ui.unit.split_k",
    "tasks (0 = one per base tile)": "ui.unit.tasks_per_tile",
    "tokens": "ui.unit.tokens",
    "tokens (0 = auto)": "ui.unit.tokens_auto",
    "tokens (Quest)": "ui.unit.tokens_quest",
    "tokens, comma-separated (distribution 'list')": "ui.unit.tokens_list",
    "vector cores (0 = all)": "ui.unit.vector_cores_all",
    "dies": "ui.unit.dies",
    "devices": "ui.unit.devices",
    "flag": "ui.unit.flag",
}
_LANGUAGE_IDS = {"en": "ui.lang.en", "zh": "ui.lang.zh"}
# What 0 stands for in FieldSpec.zero_means -> message id of its translation.
_ZERO_MEANS = {
    "no fixpipe (coupled cores)": "ui.zero.no_fixpipe",
    "the cube lacks this precision": "ui.zero.no_precision",
    "no standalone vector cores": "ui.zero.no_vector_cores",
}


def unit(name: str) -> str:
    """A unit in the session's language (technical units such as KiB stay as they are)."""
    msg_id = _UNIT_IDS.get(name, "")
    return state.tr(msg_id) if has(msg_id) else name


def number(value: float) -> str:
    """A number without a useless ``.0`` and with thousands separators for big ints."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.4g}"


def field_help(spec: FieldSpec) -> str:
    """The field's one-line help, then its unit and allowed range, then what 0 means."""
    text = state.tr(spec.help_id) + "\n\n" + state.tr(
        "ui.chip.range", min=number(spec.min), max=number(spec.max), unit=unit(spec.unit))
    if spec.zero_means:
        meaning = _ZERO_MEANS.get(spec.zero_means)
        text += " " + state.tr("ui.chip.zero", meaning=state.tr(meaning) if meaning
                               else spec.zero_means)
    return text


def field_input(spec: FieldSpec, value: int | float, on_change: Callable, where=st):
    """A number input for one chip field, showing ``value`` (the chip's effective value).

    ``on_change(key)`` receives the field key; it validates and stores the override.
    """
    kind = spec.kind
    key = f"w.field.{spec.key}"
    st.session_state[key] = kind(value)
    return where.number_input(
        state.tr(spec.label_id), min_value=kind(spec.min), max_value=kind(spec.max),
        step=kind(spec.step), format=None if kind is int else "%g", key=key,
        help=field_help(spec), on_change=on_change, args=(spec.key,))


# ---- the sidebar -------------------------------------------------------------------------
def _preset_name(name: str) -> str:
    """A preset as the picker lists it: its display name, with the file name for clarity."""
    return f"{hp.load(name).display_name} ({name})"


def preset_picker(where=st, widget: str = "preset") -> str:
    """The chip preset selectbox; the sidebar's and the chip page's share one value."""
    return where.selectbox(state.tr("sidebar.chip"), hp.list_presets(),
                           format_func=_preset_name, help=state.tr("ui.sidebar.chip_help"),
                           **state.bound(state.PRESET, state.preset(), widget=widget))


def sidebar() -> None:
    """Draw the sidebar: title, language, preset, overrides in use, URL problems."""
    lang = state.language()
    side = st.sidebar
    side.markdown(f"**{state.tr('app.title')}**")
    side.radio(state.tr("sidebar.language"), LANGUAGES, horizontal=True,
               format_func=lambda code, lang=lang: t(_LANGUAGE_IDS[code], lang),
               **state.bound(state.LANG, lang))
    preset_picker(side)
    changed = state.overrides()
    if changed:
        names = ", ".join(f"{k} = {v:g}" for k, v in sorted(changed.items()))
        side.caption(state.tr("ui.sidebar.overrides", fields=errors.escape(names)))
    for exc in state.url_errors():
        with side:
            errors.show(exc, state.language())


# ---- kernel parameters -------------------------------------------------------------------
def param_label(spec: ParamSpec, prefix: str = "ui.param") -> str:
    return state.tr(param_label_id(spec.name, prefix))


def param_help(spec: ParamSpec, extra: str = "", prefix: str = "ui.param") -> str:
    """The parameter's help, its unit and what is allowed, then any page-specific note.

    ``prefix`` picks the catalogue entry (``<prefix>.<name>.help``), for a parameter whose
    name two kernels share with different meanings (block_dim: vector or cube cores)."""
    text = state.tr(param_help_id(spec.name, prefix))
    return f"{text}\n\n{extra}" if extra else text


def powers_of_two(lo: float, hi: float, keep: int | None = None) -> list[int]:
    """2^k within [lo, hi], plus ``keep`` (a value from a URL or file that is no power)."""
    values = [1 << k for k in range(0, 63) if lo <= (1 << k) <= hi]
    if keep is not None and keep not in values and lo <= keep <= hi:
        values = sorted([*values, keep])
    return values


def pow2_label(value: int) -> str:
    """``4,194,304 (2^22)`` for a power of two, the plain number otherwise."""
    if value > 0 and value & (value - 1) == 0:
        return f"{value:,} (2^{value.bit_length() - 1})"
    return f"{value:,}"


# ---- what a numeric widget accepts, and the refusal of a value beyond it ----------------
@dataclass(frozen=True)
class Span:
    """The values a numeric widget offers, which are the ones its page accepts now (for this
    chip and the other settings): ``lo`` to ``hi`` in steps of ``step`` (0: any number in
    between). ``why(value)`` says in words why the page refuses a value beyond them ("" when
    it cannot tell)."""

    lo: int | float
    hi: int | float
    step: int = 1
    why: Callable[[object], str] = field(default=lambda _value: "", compare=False)

    def __contains__(self, value: object) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and \
            self.lo <= value <= self.hi and (not self.step or value % self.step == 0)


def shown(value: object) -> str:
    """A value as a sentence shows it (numbers with separators)."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return number(value) if is_number else str(value)


def span_text(span: Span, spec: ParamSpec) -> str:
    """"16 to 16,352 elements, in steps of 16 on the Ascend 910B2 with the other settings as
    shown": a widget's range now, in the session's language (a unit without a translation
    is left out rather than shown in English)."""
    unit_id = _UNIT_IDS.get(spec.unit, "")
    values = {"lo": number(span.lo), "hi": number(span.hi), "step": number(span.step),
              "unit": " " + state.tr(unit_id) if unit_id else ""}
    text = state.tr("inputs.range_step" if span.step > 1 else "inputs.range", **values)
    return state.tr("inputs.on_chip", range=text, chip=state.chip().display_name)


def refusal(spec: ParamSpec, value: object, allowed: str, reason: str, hint: str) -> InputError:
    """A value the page refuses, worded in the session's language: what is allowed now,
    the check's own reason when there is one, and what the page does instead (``hint``)."""
    if reason:
        allowed = state.tr("inputs.because", allowed=allowed, reason=reason)
    return InputError(f"params.{spec.name}", value, allowed, hint)


#: session key: widget session name -> a value typed beyond its span, refused on the next draw
_TYPED = "w._refused"


def _within(name: str, span: Span) -> Callable[[object], object]:
    """A ``state.bound`` conversion that stores a typed value only when ``span`` holds it;
    otherwise the value stays as it was and the typed one waits to be refused visibly (a
    number input's own min and max would leave it red, unapplied and unexplained)."""
    def convert(value: object) -> object:
        if value in span:
            return value
        st.session_state.setdefault(_TYPED, {})[name] = value
        return st.session_state[name]
    return convert


def number_field(spec: ParamSpec, name: str, span: Span, label_id: str, help_text: str,
                 where=st, fmt: str | None = None):
    """A number input bound to ``name`` whose typed value the page checks against ``span``:
    a value beyond it is refused above the input (field, value, the range now, why) and the
    value stays. The help ends with the range now."""
    typed = st.session_state.get(_TYPED, {}).pop(name, None)
    if typed is not None:
        exc = refusal(spec, typed, span_text(span, spec), span.why(typed), state.tr(
            "inputs.kept", label=state.tr(label_id), value=shown(st.session_state[name])))
        where.error(errors.message(exc, state.language(), label_id=lambda n: label_id
                                   if n == spec.name else ""), icon=":material/error:")
    help_text += "\n\n" + state.tr("inputs.now", range=span_text(span, spec))
    return where.number_input(state.tr(label_id), step=span.step or None, format=fmt,
                              help=help_text, **state.bound(name, spec.default,
                                                            convert=_within(name, span)))


def param_widget(spec: ParamSpec, name: str, *, options: Sequence | None = None,
                 max_value: int | None = None, span: Span | None = None, extra_help: str = "",
                 where=st, format_func: Callable = str, prefix: str = "ui.param"):
    """One widget for one kernel parameter, chosen from its spec.

    ``name`` is the session value it is bound to (kept valid by the caller: inside
    ``options`` or the range). A flag becomes a toggle, choices of two or three a radio,
    longer lists and ``options`` a selectbox, a log-scale integer a slider over powers of
    two (and ``span``'s top), a range a slider (a number input that refuses typed values
    beyond the range when the range is long). The range is ``span`` (what the page accepts
    now), else the spec's up to ``max_value``. Label and help come from
    ``<prefix>.<name>.label`` / ``.help``.
    """
    label = param_label(spec, prefix)
    help_text = param_help(spec, extra_help, prefix)
    bind = state.bound(name, spec.default)
    if spec.kind is bool:
        return where.toggle(label, help=help_text, **bind)
    if options is not None or (spec.choices and len(spec.choices) > 3):
        return where.selectbox(label, list(options or spec.choices), help=help_text,
                               format_func=format_func, **bind)
    if spec.choices:
        return where.radio(label, list(spec.choices), horizontal=True, help=help_text,
                           format_func=format_func, **bind)
    if spec.kind is float:
        return number_field(spec, name, span or Span(spec.min, spec.max, 0),
                            param_label_id(spec.name, prefix), help_text, where, "%g")
    top = span is not None
    span = span or Span(int(spec.min), int(max_value if max_value is not None else spec.max))
    if spec.log_scale:
        values = powers_of_two(span.lo, span.hi, keep=st.session_state.get(name))
        values = sorted({*values, span.hi}) if top else values
        return where.select_slider(label, values, help=help_text, format_func=pow2_label,
                                   **bind)
    if span.hi <= span.lo:  # one possible value: a slider cannot have min == max
        return where.number_input(label, min_value=span.hi, max_value=span.hi, step=1,
                                  disabled=True, help=help_text, **bind)
    if span.hi - span.lo <= 1024:
        return where.slider(label, span.lo, span.hi, step=span.step, help=help_text, **bind)
    return number_field(spec, name, span, param_label_id(spec.name, prefix), help_text, where)


# ---- URL parameters and example buttons shared by the kernel pages -----------------------
#: the scenario's seed as a page parameter (random inputs, context lengths, block tables)
SEED_SPEC = ParamSpec("seed", int, 0, 0, 2**32 - 1)
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def url_value(spec: ParamSpec, text: str) -> object:
    """A URL value for one parameter (flags accept true/false, 1/0, yes/no, on/off)."""
    if spec.kind is bool:
        low = text.strip().lower()
        if low not in _TRUE + _FALSE:
            raise InputError(f"params.{spec.name}", text, "true or false")
        return low in _TRUE
    return spec.check(text)


def take_url_into(specs: dict[str, ParamSpec], key: Callable[[str], str]) -> list[InputError]:
    """Copy a page's URL parameters into session state under ``key(name)``; returns the
    refused ones (unknown names, values out of range) for the page to show."""
    return take_url_values(specs, key)[1]


def take_url_values(specs: dict[str, ParamSpec],
                    key: Callable[[str], str]) -> tuple[list[str], list[InputError]]:
    """``take_url_into``, also returning the names whose values were taken (a page that
    checks them against the chip refuses them there, and only those)."""
    taken, refused = [], []
    for name, text in state.take_url_params().items():
        try:
            if name not in specs:
                raise InputError(name, text, ", ".join(specs))
            st.session_state[key(name)] = url_value(specs[name], text)
            taken.append(name)
        except InputError as exc:
            refused.append(exc)
    return taken, refused


def example_buttons(names: Sequence[str], msg_prefix: str, key_prefix: str,
                    on_click: Callable[[str], None]) -> None:
    """A row of buttons, each one a ready scenario (label and help from
    ``<msg_prefix>.<name>`` and ``<msg_prefix>.<name>_help``)."""
    for column, name in zip(st.columns(len(names)), names):
        column.button(state.tr(f"{msg_prefix}.{name}"), key=f"{key_prefix}_{name}",
                      help=state.tr(f"{msg_prefix}.{name}_help"), on_click=on_click,
                      args=(name,), width="stretch")

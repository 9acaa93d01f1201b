"""The parameters of a page in session state: keys, values with the page's defaults, the
URL taken into them, and one-click examples. Every kernel page keeps its widgets' values
this way, so links, uploads and examples behave the same on all of them.

A page that knows what it accepts (``Rules``: the kernel's own check and the page's budget
for the current chip) also settles its values before drawing its widgets. A value the page
would refuse, from a link, an upload, an example or after another setting or the chip
changed, is never changed silently: it moves to the nearest value the page accepts (a
choice to its default) and the page shows the refusal, naming the field by its label, the
value, the chip's range and the value the page runs with instead. The same rules give each
numeric widget its range (``Rules.spans``), so a widget offers only what the page runs.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import streamlit as st

from explorer.core.i18n import has
from explorer.ui import apply, errors, state, widgets
from explorer.ui.widgets import Span
from hardware_presets.errors import InputError
from kernels.common.params import ParamSpec

_WORD = re.compile(r"[A-Za-z_]\w*")
#: a value the page moved: (name, the value refused, the refusal, moved to the nearest)
Moved = tuple[str, object, InputError, bool]


@dataclass(frozen=True)
class Taken:
    """What the URL gave a page on this run: the names taken, and the values refused by
    their specs (unknown names, wrong types, outside the schema)."""

    names: tuple[str, ...] = ()
    refused: tuple[InputError, ...] = ()


@dataclass(frozen=True)
class Rules:
    """What a page accepts on the current chip. ``check(p)`` raises the kernel's or the
    page's InputError for parameters it would not run; ``numeric`` are the integer
    parameters whose range follows from it; ``default`` and ``step`` give a parameter's
    default and step for the chip and the other values; ``label_id`` is the page's labels."""

    check: Callable[[dict], None]
    specs: Mapping[str, ParamSpec]
    numeric: tuple[str, ...]
    default: Callable[[str, dict], object]
    step: Callable[[str, dict], int] = lambda _name, _p: 1
    label_id: errors.LabelId | None = None

    def refusal(self, p: dict) -> InputError | None:
        """The page's refusal of ``p``, or None when it would run them."""
        try:
            self.check(p)
        except InputError as exc:
            return exc
        return None

    def _accepts(self, p: dict, name: str, value: object) -> bool:
        return self.refusal({**p, name: value}) is None

    def _edge(self, p: dict, name: str, good: int, bad: int, step: int) -> int:
        """The accepted value nearest ``bad`` between ``good`` (accepted) and ``bad``
        (refused, or past the schema's range), by bisection in steps of ``step``: the page
        refuses from one edge on (a budget, a buffer's capacity, the chip's cores)."""
        g, b = good // step, -(-bad // step) if bad > good else bad // step
        while abs(b - g) > 1:
            mid = (g + b) // 2
            g, b = (mid, b) if self._accepts(p, name, mid * step) else (g, mid)
        return g * step

    def _bounds(self, p: dict, name: str, anchor: int) -> tuple[int, int, int]:
        """(lowest, highest, step) of the accepted values around ``anchor`` (accepted)."""
        spec, step = self.specs[name], self.step(name, p)
        return (self._edge(p, name, anchor, int(spec.min) - step, step),
                self._edge(p, name, anchor, int(spec.max) + step, step), step)

    def spans(self, p: dict) -> dict[str, Span]:
        """Each numeric parameter's span with the others as they are; {} when the page
        refuses ``p`` itself (a choice the chip lacks: the page shows that refusal)."""
        if self.refusal(p) is not None:
            return {}
        spans = {}
        for name in self.numeric:
            lo, hi, step = self._bounds(p, name, int(p[name]))
            spans[name] = Span(lo, hi, step, why=lambda value, n=name: self.reason(p, n, value))
        return spans

    def ranges(self, p: dict, spans: Mapping[str, Span]) -> dict[str, Span]:
        """The widgets' ranges: the spans, else (the page refuses ``p`` for a reason no
        value of a number lifts, and shows that refusal) the schema's, holding the value."""
        schema = {name: Span(min(int(spec.min), p[name]), max(int(spec.max), p[name]))
                  for name, spec in self.specs.items() if name in self.numeric}
        return {**schema, **spans}

    def reason(self, p: dict, name: str, value: object) -> str:
        """Why the page refuses ``name = value``: what its check allows, and its hint; led by
        the field it names when that is not ``name`` ("" when it accepts it)."""
        exc = self.refusal({**p, name: value})
        if exc is None:
            return ""
        text = errors.reason(exc, state.language())
        if name in _WORD.findall(exc.field.removeprefix("params.")):
            return text
        lead = errors.field_label(exc.field, state.language(), self.label_id)
        return f"{lead} = {widgets.shown(exc.value)}: {text}"

    def nearest(self, p: dict, name: str) -> object | None:
        """The accepted value nearest ``p[name]`` with the others as they are, None when
        none is: a number rounds to a step within the accepted range (found from a power of
        two the page accepts), a choice or a flag takes its default or the first accepted."""
        spec = self.specs[name]
        if name not in self.numeric:
            options = [self.default(name, p), *(spec.choices or ())]
            return next((v for v in options if self._accepts(p, name, v)), None)
        value, step = int(p[name]), self.step(name, p)
        ladder = {int(spec.min), int(spec.max), *widgets.powers_of_two(spec.min, spec.max)}
        anchor = next((v for v in sorted(ladder, key=lambda v: abs(v - value))
                       if v % step == 0 and self._accepts(p, name, v)), None)
        if anchor is None:
            return None
        lo, hi, step = self._bounds(p, name, anchor)
        return min(max((value + (step - 1) // 2) // step * step, lo), hi)

    def settle(self, p: dict, fresh: Sequence[str]) -> list[Moved]:
        """Make ``p`` a set the page runs, one value at a time: the refusal's own field
        first when it was just taken from the URL, then another value just taken, then a
        number the refusal names. A refusal nothing here lifts (a precision the chip lacks,
        chosen in its widget) stays for the page to show. Returns what moved."""
        moved: list[Moved] = []
        for _ in range(len(p)):
            exc = self.refusal(p)
            if exc is None:
                break
            named = [n for n in _WORD.findall(exc.field.removeprefix("params.")) if n in p]
            move = self._move(p, [*(n for n in named if n in fresh),
                                  *(n for n in fresh if n not in named),
                                  *(n for n in named if n in self.numeric)], fresh)
            if move is None:
                break
            name, value, near = move
            moved.append((name, p[name], exc, near))
            p[name] = value
        return moved

    def _move(self, p: dict, candidates: list[str],
              fresh: Sequence[str]) -> tuple[str, object, bool] | None:
        """The first candidate whose nearest value lifts the refusal, else the first that can
        move at all (a value just taken falls back to its default when nothing is near)."""
        moves = []
        for name in dict.fromkeys(candidates):
            near = self.nearest(p, name)
            value = near if near is not None else \
                (self.default(name, p) if name in fresh else None)
            if value is not None and value != p[name]:
                moves.append((name, value, near is not None and name in self.numeric))
        lifting = (m for m in moves if self.refusal({**p, m[0]: m[1]}) is None)
        return next(lifting, moves[0] if moves else None)

    def allowed(self, p: dict, spans: Mapping[str, Span], name: str) -> str:
        """What ``name`` may be now, in words: its span, the choices the page accepts, or
        the schema's range (the page's own words, never the English of the spec)."""
        spec = self.specs[name]
        if name in spans:
            return widgets.span_text(spans[name], spec)
        if spec.choices is not None:
            ok = [c for c in spec.choices if self._accepts(p, name, c)] or spec.choices
            return state.tr("ui.kernels.allowed_choices", choices=", ".join(map(str, ok)))
        if spec.kind is bool:
            return state.tr("ui.kernels.allowed_flag")
        return state.tr("ui.kernels.allowed_integer" if spec.kind is int else
                        "ui.kernels.allowed_number", min=widgets.number(spec.min),
                        max=widgets.number(spec.max))

    def label(self, name: str) -> str:
        msg_id = self.label_id(name) if self.label_id else ""
        return state.tr(msg_id) if msg_id and has(msg_id, state.language()) else name


@dataclass(frozen=True)
class PageParams:
    """A page's parameters in session state under ``prefix``: their values (session, else
    the page's default, else the spec's), the URL taken into them, and example scenarios
    that reset every parameter before applying their own values."""

    prefix: str
    specs: Mapping[str, ParamSpec]
    defaults: Mapping[str, object] = field(default_factory=dict)
    examples: Mapping[str, Mapping[str, object]] = field(default_factory=dict)

    def key(self, name: str) -> str:
        return self.prefix + name

    def value(self, name: str) -> object:
        return st.session_state.get(self.key(name),
                                    self.defaults.get(name, self.specs[name].default))

    def take_url(self) -> list[InputError]:
        """Copy the page's URL parameters into session state; returns the refused ones."""
        return widgets.take_url_into(self.specs, self.key)

    def take(self) -> Taken:
        """Copy the page's URL parameters into session state; what was taken and refused
        (``settle`` words the refusals with the chip's ranges)."""
        names, refused = widgets.take_url_values(self.specs, self.key)
        return Taken(tuple(names), tuple(refused))

    def settle(self, rules: Rules, taken: Taken | None = None) -> tuple[dict, dict, list]:
        """The page's values for this run, the numeric widgets' spans, and the refusals to
        show: the URL's refused values, and every value moved so that the page runs."""
        taken = taken or Taken()
        p: dict = {}
        for name in self.specs:
            p[name] = st.session_state.get(self.key(name), rules.default(name, p))
        moved = rules.settle(p, taken.names)
        st.session_state.update({self.key(name): v for name, v in p.items()})
        spans = rules.spans(p)
        shown = [self._refused(rules, p, spans, exc) for exc in taken.refused]
        for name, value, exc, near in moved:
            hint = state.tr("inputs.moved" if near else "inputs.default_used",
                            label=rules.label(name), value=widgets.shown(p[name]))
            reason = rules.reason(p, name, value) or errors.reason(exc, state.language())
            shown.append(widgets.refusal(self.specs[name], value,
                                         rules.allowed(p, spans, name), reason, hint))
        return p, spans, shown

    def _refused(self, rules: Rules, p: dict, spans: dict, exc: InputError) -> InputError:
        """A URL value its spec refused, worded with the range the page accepts now."""
        name = exc.field.removeprefix("params.")
        if name not in self.specs:
            return exc  # an unknown name: the refusal lists the names the page takes
        hint = state.tr("inputs.kept", label=rules.label(name), value=widgets.shown(p[name]))
        return widgets.refusal(self.specs[name], exc.value, rules.allowed(p, spans, name),
                               "", hint)

    def apply_example(self, name: str) -> None:
        """Reset every parameter, set the example's values and apply them at once (a
        ready scenario is one click, not a change waiting for "Apply")."""
        for spec_name in self.specs:
            st.session_state.pop(self.key(spec_name), None)
        st.session_state.update({self.key(k): v for k, v in self.examples[name].items()})
        apply.request(self.prefix)

    def example_row(self, msg_prefix: str, key_prefix: str) -> None:
        """A row of buttons, each one a ready scenario."""
        widgets.example_buttons(tuple(self.examples), msg_prefix, key_prefix,
                                self.apply_example)

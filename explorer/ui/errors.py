"""Bad input, shown to the user in their language instead of a traceback.

Every layer raises ``InputError(field, value, allowed, hint)``; here the sentence around
those parts comes from the catalogue (``error.invalid_input``, ``error.hint``) and the
field is led by its translated label when it names a chip field or a parameter, so a
Chinese reader sees "统一缓冲区 UB (KiB) (910B2 override: ub_KiB)". Every page shows its
refusals with ``show``; a page that labels its parameters under its own catalogue prefix
passes its ``label_id`` (``param_labels``), so "params.batch" reads "Batch (params.batch)"
on the decode page as "n (elements) (params.n)" does on the vector add page. The parts
are escaped because they may hold text a user typed into a URL or a file.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

import streamlit as st

from explorer.core.i18n import has, param_label_id, render, t
from hardware_presets import FIELDS
from hardware_presets.errors import InputError, Phrase

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: a page's labels: a parameter's name -> its label's message id ("" for a word naming none)
LabelId = Callable[[str], str]


def escape(text: object) -> str:
    """Text that Streamlit's markdown shows literally (no links, emphasis, maths or HTML)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text))


def param_labels(names: Iterable[str], prefix: str | Callable[[str], str]) -> LabelId:
    """The ``label_id`` of a page whose parameters ``names`` are labelled under ``prefix``
    (a catalogue prefix, or a function of the name): ``<prefix>.<name>.label``."""
    known = frozenset(names)
    prefix_of = prefix if callable(prefix) else lambda _name: prefix
    return lambda name: param_label_id(name, prefix_of(name)) if name in known else ""


def _names(field: str) -> Iterator[str]:
    """The parameter names a field may mean, the most specific first: from the last word
    back, each word joined to the one before it ("params.custom: q_heads" means
    custom_q_heads) before the word alone ("params.lengths[0]" means lengths)."""
    words = _WORD.findall(field)
    for i in reversed(range(len(words))):
        if i:
            yield f"{words[i - 1]}_{words[i]}"
        yield words[i]


def field_label(field: str, lang: str, label_id: LabelId | None = None) -> str:
    """The error's field, led by its translated label: a chip field's when its last word
    names one (and it is not a parameter, "params.<name>"), else the label of the
    parameter it names, the page's (``label_id``) or, for "params.<name>", the kernel
    parameters' (``ui.param.<name>.label``), each one's for "params.M, N, K"; the field
    alone when nothing names it (the field stays after the label: it is what a scenario
    file or a link calls the parameter)."""
    is_param = field.startswith("params.")
    key = re.split(r"[\s:.]+", field.strip())[-1]
    if key in FIELDS and not is_param:
        return f"{t(FIELDS[key].label_id, lang)} ({field})"
    if label_id is None and not is_param:
        return field
    several = field.removeprefix("params.").split(", ") if is_param else []
    if len(several) > 1:  # "params.M, N, K": each one's label, not the last one's alone
        labels = [_label(name, lang, label_id) for name in several]
        return f"{', '.join(labels)} ({field})" if all(labels) else field
    return next((f"{label} ({field})" for name in _names(field)
                 if (label := _label(name, lang, label_id))), field)


def _label(name: str, lang: str, label_id: LabelId | None) -> str:
    """The translated label of parameter ``name`` ("" when there is none)."""
    msg_id = label_id(name) if label_id is not None else param_label_id(name)
    return t(msg_id, lang) if msg_id and has(msg_id, lang) else ""


def _value(value: object, lang: str) -> str:
    """The refused value as shown: a description of it (a `Phrase`) in ``lang``, a text
    quoted, anything else as it is."""
    if isinstance(value, Phrase):
        return render(value, lang)
    return repr(value) if isinstance(value, str) else str(value)


def reason(exc: InputError, lang: str) -> str:
    """What ``exc`` allows, then its hint, in ``lang`` ("16 个元素的整数倍 ...; ..."): the
    refusal's own words for a page that puts them inside its own sentence. Never
    ``f"{exc.allowed}"``: that is the English."""
    allowed = render(exc.allowed, lang)
    return t("error.reason_hint", lang, allowed=allowed, hint=render(exc.hint, lang)) \
        if exc.hint else allowed


def message(exc: InputError, lang: str, *, markdown: bool = True,
            label_id: LabelId | None = None) -> str:
    """The translated sentence for one InputError (markdown-escaped unless told not to):
    the sentence from the catalogue, the allowed part, the hint and a described value
    rendered in ``lang`` (``explorer.core.i18n.render``); ``label_id``: the page's labels
    of its parameters (``field_label``)."""
    quote = escape if markdown else str
    text = t("error.invalid_input", lang, field=quote(field_label(exc.field, lang, label_id)),
             value=quote(_value(exc.value, lang)), allowed=quote(render(exc.allowed, lang)))
    if exc.hint:
        text += "\n\n" + t("error.hint", lang, hint=quote(render(exc.hint, lang)))
    return text


def show(exc: InputError, lang: str, label_id: LabelId | None = None) -> None:
    """Show one InputError as an error box, its field led by its translated label (the
    page's ``label_id`` for the page's own parameters); the page goes on drawing."""
    st.error(message(exc, lang, label_id=label_id), icon=":material/error:")

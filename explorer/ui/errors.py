"""Bad input, shown to the user in their language instead of a traceback.

Every layer raises ``InputError(field, value, allowed, hint)``; here the sentence around
those parts comes from the catalogue (``error.invalid_input``, ``error.hint``) and the
field is prefixed with its translated label when it names a chip field or a kernel
parameter, so a Chinese reader sees "统一缓冲区 UB (KiB) (910B2 override: ub_KiB)". The
parts are escaped because they may hold text a user typed into a URL or a file.
"""
from __future__ import annotations

import re

import streamlit as st

from explorer.core.i18n import has, param_label_id, t
from hardware_presets import FIELDS
from hardware_presets.errors import InputError

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def escape(text: object) -> str:
    """Text that Streamlit's markdown shows literally (no links, emphasis, maths or HTML)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text))


def field_label(field: str, lang: str) -> str:
    """The error's field, led by its translated label when the last word names one."""
    key = re.split(r"[\s:.]+", field.strip())[-1]
    if key in FIELDS:
        return f"{t(FIELDS[key].label_id, lang)} ({field})"
    if field.startswith("params.") and has(param_label_id(key), lang):
        return f"{t(param_label_id(key), lang)} ({field})"
    return field


def _value(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def message(exc: InputError, lang: str, *, markdown: bool = True) -> str:
    """The translated sentence for one InputError (markdown-escaped unless told not to)."""
    quote = escape if markdown else str
    text = t("error.invalid_input", lang, field=quote(field_label(exc.field, lang)),
             value=quote(_value(exc.value)), allowed=quote(exc.allowed))
    if exc.hint:
        text += "\n\n" + t("error.hint", lang, hint=quote(exc.hint))
    return text


def show(exc: InputError, lang: str) -> None:
    """Show one InputError as an error box; the page goes on drawing what it can."""
    st.error(message(exc, lang), icon=":material/error:")

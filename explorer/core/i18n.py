"""The translation layer: every user-facing string is looked up here by message id.

Catalogues are TOML files under ``locales/<lang>/``; every file of a language is merged into
one flat table (nested TOML tables become dotted ids). Pages, plots and reports call ``t``;
nothing user-facing is hard-coded elsewhere. Technical names (MTE2, UB, DataCopy) stay as
Ascend writes them in both languages.
"""
from __future__ import annotations

import functools
import tomllib
from pathlib import Path

import kernels
from hardware_presets.errors import LOCALES as REFUSAL_LOCALES
from hardware_presets.errors import Phrase

LANGUAGES = ("en", "zh")
DEFAULT_LANGUAGE = "en"
_LOCALES = Path(__file__).with_name("locales")


def flatten_table(table: dict, prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in table.items():
        msg_id = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_table(value, msg_id + "."))
        else:
            flat[msg_id] = str(value)
    return flat


def _catalogue_files(lang: str) -> list[Path]:
    """The project's catalogues of ``lang``, the words of refusals (hardware_presets'
    ``locales``), then those of kernels that ship their own (a record's ``locales``)."""
    folders = [_LOCALES, REFUSAL_LOCALES] + [r.locales for r in kernels.KERNELS.values()
                                             if r.locales]
    return [p for folder in folders for p in sorted((folder / lang).glob("*.toml"))]


@functools.cache
def catalogue(lang: str) -> dict[str, str]:
    """All messages of one language, merged from its TOML files (ids must not repeat)."""
    if lang not in LANGUAGES:
        raise ValueError(f"language = {lang!r} is not allowed: one of {LANGUAGES}")
    merged: dict[str, str] = {}
    for path in _catalogue_files(lang):
        table = flatten_table(tomllib.loads(path.read_text(encoding="utf-8")))
        clash = merged.keys() & table.keys()
        if clash:
            raise ValueError(f"{path.name}: message ids defined twice: {sorted(clash)[:5]}")
        merged.update(table)
    return merged


def has(msg_id: str, lang: str = DEFAULT_LANGUAGE) -> bool:
    """Whether a message id exists (for optional texts such as per-field help)."""
    return msg_id in catalogue(lang)


def t(msg_id: str, lang: str = DEFAULT_LANGUAGE, **values: object) -> str:
    """The message in ``lang`` with ``{placeholders}`` filled; a missing id raises KeyError."""
    text = catalogue(lang)[msg_id]
    return text.format(**values) if values else text


def render(text: object, lang: str = DEFAULT_LANGUAGE) -> str:
    """A part of a refusal in ``lang``: a `Phrase` (``hardware_presets.errors``) from its
    message id, its values rendered too; any other text as it is (already translated, or a
    name)."""
    if isinstance(text, Phrase):
        return t(text.msg_id, lang, **{k: render(v, lang) for k, v in text.values.items()})
    return str(text)


def param_label_id(name: str, prefix: str = "ui.param") -> str:
    """Message id of a kernel parameter's label, ``<prefix>.<name>.label``: the one id the
    UI makes from data, a parameter's name (a page may label its parameters under its own
    prefix). tests/test_message_ids.py resolves it over every page's parameter specs."""
    return f"{prefix}.{name}.label"


def param_help_id(name: str, prefix: str = "ui.param") -> str:
    """Message id of a kernel parameter's one-line help, ``<prefix>.<name>.help``."""
    return f"{prefix}.{name}.help"

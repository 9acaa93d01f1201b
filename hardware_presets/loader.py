"""Reading chips: shipped presets by name, a user's TOML file or text; writing one back.

TOML is parsed with the standard library as data only. Presets are read once per process
(`functools.cache`); overridden variants are cached by their (hashable) override values.
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

from . import documents
from .errors import InputError, Phrase
from .fields import FIELDS, SECTIONS, section_keys
from .schema import Chip, Provenance
from .validate import parse_document

PRESETS: tuple[str, ...] = ("910B1", "910B2", "910B3", "910B4", "910", "310P3", "910C", "950PR",
                            "950DT")
PRESET_DIR = Path(__file__).resolve().parent
MAX_FILE_BYTES = 256 * 1024


def list_presets() -> tuple[str, ...]:
    """Names of the shipped presets: 910B1..910B4, 910 and 310P3, then today's chips (910C,
    one die of the Atlas A3 package, and the announced 950PR and 950DT)."""
    return PRESETS


def load(name: str, /, **overrides: int | float) -> Chip:
    """A shipped preset by name ("910B2"), optionally with numeric fields overridden."""
    if not isinstance(name, str) or name not in PRESETS:
        raise InputError("preset", name, Phrase("refusal.one_of", options=", ".join(PRESETS)),
                         hint=Phrase("refusal.hint.load_file"))
    if not overrides:
        return _preset(name)
    try:
        items = tuple(sorted(overrides.items()))
        hash(items)
    except TypeError:  # an unhashable value: let validation name it
        return _preset(name).with_overrides(**overrides)
    return _preset_with(name, items)


@functools.cache
def _preset(name: str) -> Chip:
    path = PRESET_DIR / f"{name}.toml"
    return load_text(path.read_bytes(), origin=path.name)


@functools.lru_cache(maxsize=512)
def _preset_with(name: str, items: tuple) -> Chip:
    return _preset(name).with_overrides(**dict(items))


def load_file(path: str | os.PathLike, /, **overrides: int | float) -> Chip:
    """A chip from a user's TOML file in the preset schema, optionally with overrides."""
    name = Path(path).name
    text = documents.read_file(path, name, Phrase("refusal.doc.toml_preset"), MAX_FILE_BYTES)
    return load_text(text, origin=name, **overrides)


def load_text(text: str | bytes, /, origin: str = "<chip text>", **overrides: int | float) -> Chip:
    """A chip from TOML text (say, an uploaded file); ``origin`` names it in messages."""
    if isinstance(text, bytes):
        if len(text) > MAX_FILE_BYTES:
            raise InputError(f"{origin}: size", len(text),
                             Phrase("refusal.at_most_bytes", limit=MAX_FILE_BYTES))
        text = documents.decode(text, origin)
    doc = documents.load_toml(text, origin, MAX_FILE_BYTES, syntax_field=f"{origin}: TOML")
    chip = parse_document(doc, origin)
    return chip.with_overrides(**overrides) if overrides else chip


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # JSON string escapes are valid TOML


def _num(value: int | float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _entry(value: int | float, p: Provenance) -> str:
    """One field's inline table; ``note_zh`` only when there is one (it is optional)."""
    zh = f", note_zh = {_q(p.note_zh)}" if p.note_zh else ""
    return (f"{{ value = {_num(value)}, source = {_q(p.source)}, status = {_q(p.status)}"
            f", confidence = {_q(p.confidence)}, note = {_q(p.note)}{zh} }}")


def dump_toml(chip: Chip) -> str:
    """The chip as TOML in the preset schema; `load_text` reads it back to an equal chip."""
    lines = [f"name = {_q(chip.name)}", f"display_name = {_q(chip.display_name)}",
             f"architecture = {_q(chip.architecture)}",
             "vector_dtypes = [" + ", ".join(_q(d) for d in chip.vector_dtypes) + "]",
             f"description = {_q(chip.description)}"]
    if chip.description_zh:
        lines.append(f"description_zh = {_q(chip.description_zh)}")
    prov = dict(chip.provenance)
    for section in SECTIONS:
        lines += ["", f"[{section}]"]
        lines += [f"{key} = {_entry(getattr(chip, key), prov[key])}"
                  for key in section_keys(section)]
    assert len(prov) == len(FIELDS)
    return "\n".join(lines) + "\n"

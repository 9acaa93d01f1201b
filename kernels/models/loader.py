"""Reading model shapes: shipped presets by name, a user's TOML text or a plain dict.

Same conventions as `hardware_presets`: TOML parsed with the standard library as data
only, one file per model, every number an inline table with its provenance, and every
refusal an `InputError` naming "file: shape.key", the value and what is allowed.
"""
from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from pathlib import Path

from hardware_presets import documents
from hardware_presets.errors import InputError, Phrase
from hardware_presets.schema import Provenance
from hardware_presets.validate import check_value

from .schema import (
    CONFIDENCES,
    META_KEYS,
    MODEL_FIELDS,
    OPTIONAL_FIELDS,
    OPTIONAL_META_KEYS,
    REQUIRED_FIELDS,
    SECTION,
    STATUSES,
    ModelShape,
)

MODEL_DIR = Path(__file__).resolve().parent
#: Shipped presets: name -> file in this folder.
MODELS: dict[str, str] = {
    "llama3-8b": "llama3_8b.toml", "llama3-70b": "llama3_70b.toml",
    "llama2-7b": "llama2_7b.toml", "llama2-70b": "llama2_70b.toml",
    "qwen2.5-7b": "qwen2_5_7b.toml", "qwen2.5-72b": "qwen2_5_72b.toml",
}
MAX_TEXT = 64 * 1024
_PARTS = ("value", "source", "status", "confidence", "note", "note_zh")
_TOP_KEYS = META_KEYS + OPTIONAL_META_KEYS
_ENTRY_HELP = Phrase("refusal.doc.entry", table='{ value = ..., source = "...", status = '
                     '"published|derived|estimated", confidence = "H|M|L", note = "..." }')
_USER = Provenance("user input", "override", "L", "a shape given by the user")


def _hint(word: object, choices) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return Phrase("refusal.hint.did_you_mean", name=repr(close[0])) if close else ""


def list_models() -> tuple[str, ...]:
    """Names of the shipped model presets (Llama 3, Llama 2, Qwen2.5)."""
    return tuple(MODELS)


def load_model(name: str) -> ModelShape:
    """A shipped model preset by name ("llama3-70b"); see `list_models`."""
    if not isinstance(name, str) or name not in MODELS:
        raise InputError("model", name, Phrase("refusal.one_of", options=", ".join(MODELS)),
                         hint=_hint(name, MODELS) or Phrase("refusal.hint.model_from_dict"))
    return _preset(name)


@functools.cache
def _preset(name: str) -> ModelShape:
    path = MODEL_DIR / MODELS[name]
    return load_model_text(path.read_text("utf-8"), origin=path.name)


def load_model_text(text: str, origin: str = "<model text>") -> ModelShape:
    """A model from TOML text in the preset schema; ``origin`` names it in messages."""
    doc = documents.load_toml(text, origin, MAX_TEXT, syntax_field=f"{origin}: TOML")
    return parse_model_document(doc, origin)


def parse_model_document(doc: Mapping, origin: str) -> ModelShape:
    """Validate a parsed model document ([shape] entries with provenance) -> ModelShape."""
    for key, raw in doc.items():
        if key not in _TOP_KEYS + (SECTION,):
            raise InputError(f"{origin}: {key}", raw, Phrase(
                "refusal.model.top_key", keys=", ".join(_TOP_KEYS), section=SECTION),
                             hint=_hint(key, _TOP_KEYS + (SECTION,) + tuple(MODEL_FIELDS)))
    meta = _meta(doc, {}, origin)
    table = doc.get(SECTION)
    if not isinstance(table, Mapping):
        raise InputError(f"{origin}: [{SECTION}]", table, Phrase(
            "refusal.doc.section_table", section=SECTION, keys=", ".join(MODEL_FIELDS)))
    values, provs = {}, {}
    for key, raw in table.items():
        if key not in MODEL_FIELDS:
            raise InputError(f"{origin}: {SECTION}.{key}", raw, Phrase(
                "refusal.doc.section_key", section=SECTION, keys=", ".join(MODEL_FIELDS)),
                hint=_hint(key, MODEL_FIELDS))
        values[key], provs[key] = _entry(key, raw, f"{origin}: {SECTION}.{key}")
    return build_model(meta, values, provs, origin, lambda k: f"{origin}: {SECTION}.{k}")


def model_from_dict(d: Mapping, origin: str = "user shape") -> ModelShape:
    """A user's own shape from plain numbers: {"layers": 32, "q_heads": 32, "kv_heads": 8,
    "head_dim": 128, "hidden": 4096, "params_B": 8.0} plus optional "intermediate_size",
    "name", "display_name", "description", "description_zh". Provenance of every number:
    user input."""
    if not isinstance(d, Mapping):
        raise InputError(f"{origin}", type(d).__name__, Phrase("refusal.model.mapping"))
    allowed = _TOP_KEYS + tuple(MODEL_FIELDS)
    for key, raw in d.items():
        if key not in allowed:
            raise InputError(f"{origin}: {key}", raw, Phrase("refusal.one_of",
                                                             options=", ".join(allowed)),
                             hint=_hint(key, allowed))
    meta = _meta(d, {"name": "custom", "display_name": "Custom model",
                     "description": "A shape given by the user"}, origin)
    values = {k: check_value(MODEL_FIELDS[k], d[k], f"{origin}: {k}")
              for k in MODEL_FIELDS if k in d}
    provs = {k: _USER for k in values}
    return build_model(meta, values, provs, origin, lambda k: f"{origin}: {k}")


def build_model(meta: Mapping, values: Mapping, provs: Mapping, origin: str, where) -> ModelShape:
    """Check required fields and the rules that tie fields together; build the shape."""
    for key in REQUIRED_FIELDS:
        if key not in values:
            raise InputError(where(key), Phrase("refusal.value.missing_field"),
                             MODEL_FIELDS[key].allowed())
    values = {**{k: 0 for k in OPTIONAL_FIELDS}, **values}
    q, kv = values["q_heads"], values["kv_heads"]
    if q % kv:
        divisors = [d for d in range(1, q + 1) if q % d == 0]
        raise InputError(where("kv_heads"), kv, Phrase(
            "refusal.model.kv_heads", q=q, divisors=", ".join(map(str, divisors))))
    width = values["head_dim"] * q
    if width != values["hidden"]:
        raise InputError(where("hidden"), values["hidden"],
                         Phrase("refusal.model.hidden", head_dim=values["head_dim"], q=q,
                                width=width),
                         hint=Phrase("refusal.hint.head_dim"))
    prov = dict(provs)
    prov.update({k: Provenance("not given", "override", "L", "optional field left out")
                 for k in OPTIONAL_FIELDS if k not in provs})
    return ModelShape(**meta, **values, provenance=tuple((k, prov[k]) for k in MODEL_FIELDS),
                      origin=origin)


def _meta(d: Mapping, defaults: Mapping[str, str], origin: str) -> dict[str, str]:
    """The checked texts of a file or dict: META_KEYS (required unless ``defaults`` has
    them) and OPTIONAL_META_KEYS ("" when absent: the English stands in for them)."""
    meta = {k: _text(d.get(k, defaults.get(k)), f"{origin}: {k}",
                     300 if k == "description" else 64) for k in META_KEYS}
    meta.update({k: _text(d.get(k, ""), f"{origin}: {k}", 300, empty_ok=True)
                 for k in OPTIONAL_META_KEYS})
    return meta


def _text(value: object, label: str, limit: int, empty_ok: bool = False) -> str:
    if not isinstance(value, str) or not (empty_ok or value.strip()) or len(value) > limit \
            or not value.isprintable():
        lowest = 0 if empty_ok else 1
        raise InputError(label, value, Phrase("refusal.printable_text", low=lowest, high=limit))
    return value


def _entry(key: str, raw: object, where: str) -> tuple[int | float, Provenance]:
    if not isinstance(raw, Mapping):
        raise InputError(where, raw, _ENTRY_HELP)
    for part in raw:
        if part not in _PARTS:
            raise InputError(f"{where}.{part}", raw[part], Phrase("refusal.doc.one_of_parts",
                                                                  parts=", ".join(_PARTS)))
    for part in ("value", "source", "status", "confidence"):
        if part not in raw:
            raise InputError(f"{where}.{part}", Phrase("refusal.value.missing_field"), _ENTRY_HELP)
    value = check_value(MODEL_FIELDS[key], raw["value"], f"{where}.value")
    source = _text(raw["source"], f"{where}.source", 300)
    if raw["status"] not in STATUSES:
        raise InputError(f"{where}.status", raw["status"], Phrase("refusal.one_of",
                                                                  options=", ".join(STATUSES)))
    if raw["confidence"] not in CONFIDENCES:
        raise InputError(f"{where}.confidence", raw["confidence"],
                         Phrase("refusal.doc.confidence"))
    note = raw.get("note", "")
    if raw["status"] != "published" and not (isinstance(note, str) and note.strip()):
        raise InputError(f"{where}.note", note, Phrase("refusal.model.note",
                                                       status=raw["status"]))
    note = _text(note, f"{where}.note", 1000, empty_ok=True)
    note_zh = _text(raw.get("note_zh", ""), f"{where}.note_zh", 1000, empty_ok=True)
    return value, Provenance(source, raw["status"], raw["confidence"], note, note_zh)

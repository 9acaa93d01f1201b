"""Validation of chip data: one parsed TOML document or a set of overrides -> a `Chip`.

Every rule raises `InputError` naming where the bad value lives ("my_chip.toml:
memory.ub_KiB", or "910B2 override: ai_cores"), the value and what is allowed. Files are
data only: nothing here evaluates or imports anything a file names.
"""
from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Callable, Mapping

from .errors import InputError
from .fields import (
    ALIGN_KEYS,
    ARCHITECTURES,
    CONFIDENCES,
    CUBE_PRECISIONS,
    FIELDS,
    FILE_STATUSES,
    FIXPIPE_COST_KEYS,
    FIXPIPE_KEYS,
    FOLLOWS,
    META_KEYS,
    OPTIONAL_META_KEYS,
    PROVENANCE_PARTS,
    SECTIONS,
    VECTOR_DTYPES,
    FieldSpec,
    section_keys,
)
from .schema import Chip, Provenance

Where = Callable[[str], str]  # field key -> "file: section.key" label for messages


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"

    __str__ = __repr__


MISSING = _Missing()
_META_LIMITS = {"name": 64, "display_name": 100, "description": 500}
_ENTRY_HELP = ('an inline table { value = ..., source = "...", status = "published|derived|'
               'estimated", confidence = "H|M|L", note = "..." }')


def _hint(word: str, choices) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f"Did you mean {close[0]!r}?" if close else ""


# ---- one value ---------------------------------------------------------------------------
def check_value(spec: FieldSpec, value: object, label: str) -> int | float:
    """Type- and range-check one numeric value; returns it as int or float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(label, value, spec.allowed())
    if spec.kind is int:
        if not isinstance(value, numbers.Integral):
            raise InputError(label, value, spec.allowed(), hint="Write it without a decimal point")
        value = int(value)
    else:
        try:
            value = float(value)
        except OverflowError:  # an integer beyond float range (10 ** 400)
            raise InputError(label, value, spec.allowed()) from None
        if not math.isfinite(value):
            raise InputError(label, value, spec.allowed())
    if not spec.min <= value <= spec.max or 0 < value < spec.min_present:
        raise InputError(label, value, spec.allowed())
    return value


def _text(value: object, label: str, limit: int, empty_ok: bool = False) -> str:
    allowed = f"a text of {'0' if empty_ok else '1'} to {limit} printable characters"
    ok = isinstance(value, str) and len(value) <= limit and (empty_ok or value.strip())
    if not ok or not value.isprintable():
        raise InputError(label, value, allowed)
    return value


# ---- one file ----------------------------------------------------------------------------
def parse_document(doc: Mapping, origin: str) -> Chip:
    """Validate a parsed TOML document in the preset schema and build the `Chip`."""
    for key, raw in doc.items():
        if key not in META_KEYS + SECTIONS:
            raise InputError(f"{origin}: {key}", raw, "a top-level key (" + ", ".join(META_KEYS)
                             + ") or a section [" + "], [".join(SECTIONS) + "]",
                             hint=_hint(key, META_KEYS + SECTIONS + tuple(FIELDS)))
    meta = _check_meta(doc, origin)
    values: dict[str, int | float] = {}
    provs: dict[str, Provenance] = {}
    for section in SECTIONS:
        table = doc.get(section, MISSING)
        keys = section_keys(section)
        if not isinstance(table, Mapping):
            raise InputError(f"{origin}: [{section}]", table,
                             f"a [{section}] table with the keys " + ", ".join(keys))
        _check_section_keys(table, section, origin)
        for key in keys:
            where = f"{origin}: {section}.{key}"
            values[key], provs[key] = _entry(FIELDS[key], table.get(key, MISSING), where)
    return build_chip(meta, values, provs, origin, lambda k: f"{origin}: {FIELDS[k].section}.{k}")


def _check_meta(doc: Mapping, origin: str) -> dict:
    meta = {}
    for key, limit in _META_LIMITS.items():
        meta[key] = _text(doc.get(key, MISSING), f"{origin}: {key}", limit)
    for key in OPTIONAL_META_KEYS:  # a translation: "" (absent) means "show the English"
        limit = _META_LIMITS[key.removesuffix("_zh")]
        meta[key] = _text(doc.get(key, ""), f"{origin}: {key}", limit, empty_ok=True)
    arch = doc.get("architecture", MISSING)
    if arch not in ARCHITECTURES:
        raise InputError(f"{origin}: architecture", arch, "'split' (AIC + AIV cores, 910B) or "
                         "'coupled' (AI cores with cube and vector, 910 / 310P)")
    meta["architecture"] = arch
    dtypes = doc.get("vector_dtypes", MISSING)
    allowed = "a non-empty list of distinct names from " + ", ".join(VECTOR_DTYPES)
    if (not isinstance(dtypes, list) or not dtypes or len(set(map(str, dtypes))) != len(dtypes)
            or any(d not in VECTOR_DTYPES for d in dtypes)):
        raise InputError(f"{origin}: vector_dtypes", dtypes, allowed)
    meta["vector_dtypes"] = tuple(dtypes)
    return meta


def _check_section_keys(table: Mapping, section: str, origin: str) -> None:
    for key, raw in table.items():
        spec = FIELDS.get(key)
        if spec is None:
            raise InputError(f"{origin}: {section}.{key}", raw,
                             f"a key of [{section}]: " + ", ".join(section_keys(section)),
                             hint=_hint(key, FIELDS))
        if spec.section != section:
            raise InputError(f"{origin}: {section}.{key}", raw,
                             f"{key} belongs in [{spec.section}], not [{section}]")


def _entry(spec: FieldSpec, raw: object, where: str) -> tuple[int | float, Provenance]:
    if not isinstance(raw, Mapping):
        raise InputError(where, raw, _ENTRY_HELP)
    for part in raw:
        if part not in PROVENANCE_PARTS:
            raise InputError(f"{where}.{part}", raw[part],
                             "one of the parts " + ", ".join(PROVENANCE_PARTS))
    for part in ("value", "source", "status", "confidence"):
        if part not in raw:
            raise InputError(f"{where}.{part}", MISSING, _ENTRY_HELP)
    value = check_value(spec, raw["value"], f"{where}.value")
    source = _text(raw["source"], f"{where}.source", 300)
    status = raw["status"]
    if status not in FILE_STATUSES:
        raise InputError(f"{where}.status", status, "one of " + ", ".join(FILE_STATUSES))
    confidence = raw["confidence"]
    if confidence not in CONFIDENCES:
        raise InputError(f"{where}.confidence", confidence,
                         "one of H (vendor), M (mirror or derived), L (press or interpretation)")
    note = raw.get("note", "")
    if status != "published" and isinstance(note, str) and not note.strip():
        article = "an" if status[0] in "aeiou" else "a"
        raise InputError(f"{where}.note", note, f"a note saying what {article} {status} value "
                         "rests on (1 to 1000 printable characters)")
    note = _text(note, f"{where}.note", 1000, empty_ok=True)
    note_zh = _text(raw.get("note_zh", ""), f"{where}.note_zh", 1000, empty_ok=True)
    return value, Provenance(source, status, confidence, note, note_zh)


# ---- rules across fields -----------------------------------------------------------------
def build_chip(meta: Mapping, values: Mapping[str, int | float],
               provs: Mapping[str, Provenance], origin: str, where: Where) -> Chip:
    """Check the rules that tie fields together, then construct the `Chip`."""
    _check_cube(values, where)
    _check_memory(values, where)
    _check_cores(meta["architecture"], values, where)
    return Chip(**meta, **values, provenance=tuple((k, provs[k]) for k in FIELDS), origin=origin)


def _check_cube(v: Mapping, where: Where) -> None:
    for key in ("cube_m0", "cube_n0"):
        if v[key] != 16:
            raise InputError(where(key), v[key], "16 (the DaVinci cube fractal is 16 x 16)")
    for p in CUBE_PRECISIONS:
        key = f"cube_k0_{p}"
        if v[key] % 4:
            raise InputError(where(key), v[key], "0 (the cube lacks it) or a multiple of 4 "
                             f"from 4 to {FIELDS[key].max:g}")
    if not any(v[f"cube_k0_{p}"] for p in CUBE_PRECISIONS):
        raise InputError(where("cube_k0_fp16"), v["cube_k0_fp16"],
                         "a multiple of 4 from 4 to 256: the cube needs at least one precision")


def _check_memory(v: Mapping, where: Where) -> None:
    for key in ALIGN_KEYS:
        if v[key] & (v[key] - 1):
            raise InputError(where(key), v[key], "a power of two from 1 to 4096 bytes")
    if v["ub_reserved_bytes"] % v["ub_align_bytes"]:
        raise InputError(where("ub_reserved_bytes"), v["ub_reserved_bytes"],
                         f"a multiple of ub_align_bytes = {v['ub_align_bytes']} "
                         f"from 0 to {FIELDS['ub_reserved_bytes'].max:g} bytes")
    for key, align in (("l1_KiB", "l1_align_bytes"), ("l0a_KiB", "l0ab_align_bytes"),
                       ("l0b_KiB", "l0ab_align_bytes"), ("l0c_KiB", "l0c_align_bytes"),
                       ("ub_KiB", "ub_align_bytes")):
        if v[key] * 1024 % v[align]:
            raise InputError(where(key), v[key], f"a size whose bytes are a multiple of "
                             f"{align} = {v[align]} (KiB x 1024 divisible by {v[align]})")
    block = max(32, v["ub_align_bytes"])
    need = v["ub_reserved_bytes"] + block
    if v["ub_KiB"] * 1024 < need:
        raise InputError(where("ub_KiB"), v["ub_KiB"],
                         f"at least {-(-need // 1024)} KiB: UB must hold one {block}-byte "
                         f"block after the {v['ub_reserved_bytes']}-byte reserve")


def _check_cores(arch: str, v: Mapping, where: Where) -> None:
    ai = v["ai_cores"]
    if arch == "split":
        if v["vector_cores"] != 2 * ai:
            raise InputError(where("vector_cores"), v["vector_cores"],
                             f"exactly 2 x ai_cores = {2 * ai} on a split chip (AIC:AIV = 1:2)")
        if v["vector_clock_MHz"] != v["clock_MHz"]:
            raise InputError(where("vector_clock_MHz"), v["vector_clock_MHz"],
                             f"equal to clock_MHz = {v['clock_MHz']} on a split chip")
        for key in FIXPIPE_KEYS:
            if v[key] <= 0:
                spec = FIELDS[key]
                raise InputError(where(key), v[key], f"greater than 0 and at most {spec.max:g} "
                                 f"{spec.unit}: split cube cores have a fixpipe")
    else:
        for key in FIXPIPE_KEYS + FIXPIPE_COST_KEYS:
            if v[key] != 0:
                raise InputError(where(key), v[key], "0: coupled chips have no fixpipe "
                                 "(L0C -> UB goes through the vector unit)")
    if v["cluster_size"] > ai:
        raise InputError(where("cluster_size"), v["cluster_size"],
                         f"from 1 to ai_cores = {ai}: a cluster groups cores of one kind")


# ---- overrides ---------------------------------------------------------------------------
def apply_overrides(chip: Chip, overrides: Mapping[str, object]) -> Chip:
    """A new chip with some numeric fields changed; see `Chip.with_overrides`."""
    label = f"{chip.name} override"
    old = chip.values()
    new = dict(old)
    for key, raw in overrides.items():
        if key not in FIELDS:
            raise InputError(f"{label}: {key}", raw, "a numeric chip field: " + ", ".join(FIELDS),
                             hint=_hint(key, FIELDS))
        new[key] = check_value(FIELDS[key], raw, f"{label}: {key}")
    if chip.architecture == "split" and "vector_cores" not in overrides:
        new["vector_cores"] = 2 * new["ai_cores"]
    if "vector_clock_MHz" not in overrides and old["vector_clock_MHz"] == old["clock_MHz"]:
        new["vector_clock_MHz"] = new["clock_MHz"]
    provs = dict(chip.provenance)
    for key, value in new.items():
        if value != old[key]:
            provs[key] = _override_provenance(key, old[key], provs[key], overrides)
    if provs == dict(chip.provenance) and new == old:
        return chip
    meta = {k: getattr(chip, k) for k in META_KEYS}
    origin = chip.origin or chip.name

    def where(key: str) -> str:
        if provs[key].status == "override":
            return f"{label}: {key}"
        return f"{origin}: {FIELDS[key].section}.{key}"

    return build_chip(meta, new, provs, chip.origin, where)


def _override_provenance(key: str, was: object, prev: Provenance, given: Mapping) -> Provenance:
    if prev.status == "override":  # keep the note that names the preset's own value
        note = prev.note
    else:
        note = f"what-if; the preset says {was} ({prev.status}, {prev.source})"
    if key not in given:
        note = f"follows {FOLLOWS[key]}; {note}"
    return Provenance("user override", "override", "L", note)

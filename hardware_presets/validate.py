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

from .errors import InputError, Phrase
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
    OPTIONAL_FIELDS,
    OPTIONAL_META_KEYS,
    PROVENANCE_PARTS,
    SECTIONS,
    VECTOR_DTYPES,
    FieldSpec,
    section_keys,
    unit_words,
)
from .schema import Chip, Provenance

Where = Callable[[str], str]  # field key -> "file: section.key" label for messages


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"

    __str__ = __repr__


MISSING = _Missing()
_META_LIMITS = {"name": 64, "display_name": 100, "description": 500}
_ENTRY_HELP = Phrase("refusal.doc.entry", table='{ value = ..., source = "...", status = '
                     '"published|announced|derived|estimated", confidence = "H|M|L", '
                     'note = "..." }')


#: the provenance of an optional field a file leaves out (see fields.OPTIONAL_FIELDS)
_LEFT_OUT = Provenance(
    "not in the file", "estimated", "L",
    "the file gives no value (it predates this field): the default of a chip without it "
    "(0 = the cube lacks it; a package of one die seen as one device)",
    "文件未给出该值（文件早于该字段）：取不具备该项的芯片的默认值"
    "（0 = Cube 不具备；封装为一个 die、作为一个设备）")


def _hint(word: str, choices) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return Phrase("refusal.hint.did_you_mean", name=repr(close[0])) if close else ""


# ---- one value ---------------------------------------------------------------------------
def check_value(spec: FieldSpec, value: object, label: str) -> int | float:
    """Type- and range-check one numeric value; returns it as int or float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(label, value, spec.allowed())
    if spec.kind is int:
        if not isinstance(value, numbers.Integral):
            raise InputError(label, value, spec.allowed(),
                             hint=Phrase("refusal.hint.no_decimal_point"))
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
    allowed = Phrase("refusal.printable_text", low=0 if empty_ok else 1, high=limit)
    ok = isinstance(value, str) and len(value) <= limit and (empty_ok or value.strip())
    if not ok or not value.isprintable():
        raise InputError(label, value, allowed)
    return value


# ---- one file ----------------------------------------------------------------------------
def parse_document(doc: Mapping, origin: str) -> Chip:
    """Validate a parsed TOML document in the preset schema and build the `Chip`."""
    for key, raw in doc.items():
        if key not in META_KEYS + SECTIONS:
            raise InputError(f"{origin}: {key}", raw, Phrase(
                "refusal.doc.top_key", keys=", ".join(META_KEYS),
                sections="[" + "], [".join(SECTIONS) + "]"),
                             hint=_hint(key, META_KEYS + SECTIONS + tuple(FIELDS)))
    meta = _check_meta(doc, origin)
    values: dict[str, int | float] = {}
    provs: dict[str, Provenance] = {}
    for section in SECTIONS:
        keys = section_keys(section)
        table = doc.get(section, {} if set(keys) <= set(OPTIONAL_FIELDS) else MISSING)
        if not isinstance(table, Mapping):
            raise InputError(f"{origin}: [{section}]", table, Phrase(
                "refusal.doc.section_table", section=section, keys=", ".join(keys)))
        _check_section_keys(table, section, origin)
        for key in keys:
            where = f"{origin}: {section}.{key}"
            if key in OPTIONAL_FIELDS and key not in table:
                values[key], provs[key] = OPTIONAL_FIELDS[key], _LEFT_OUT
                continue
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
        raise InputError(f"{origin}: architecture", arch, Phrase("refusal.chip.architecture"))
    meta["architecture"] = arch
    dtypes = doc.get("vector_dtypes", MISSING)
    allowed = Phrase("refusal.chip.vector_dtypes", names=", ".join(VECTOR_DTYPES))
    if (not isinstance(dtypes, list) or not dtypes or len(set(map(str, dtypes))) != len(dtypes)
            or any(d not in VECTOR_DTYPES for d in dtypes)):
        raise InputError(f"{origin}: vector_dtypes", dtypes, allowed)
    meta["vector_dtypes"] = tuple(dtypes)
    return meta


def _check_section_keys(table: Mapping, section: str, origin: str) -> None:
    for key, raw in table.items():
        spec = FIELDS.get(key)
        if spec is None:
            raise InputError(f"{origin}: {section}.{key}", raw, Phrase(
                "refusal.doc.section_key", section=section, keys=", ".join(section_keys(section))),
                             hint=_hint(key, FIELDS))
        if spec.section != section:
            raise InputError(f"{origin}: {section}.{key}", raw, Phrase(
                "refusal.doc.wrong_section", key=key, right=spec.section, wrong=section))


def _entry(spec: FieldSpec, raw: object, where: str) -> tuple[int | float, Provenance]:
    if not isinstance(raw, Mapping):
        raise InputError(where, raw, _ENTRY_HELP)
    for part in raw:
        if part not in PROVENANCE_PARTS:
            raise InputError(f"{where}.{part}", raw[part], Phrase(
                "refusal.doc.one_of_parts", parts=", ".join(PROVENANCE_PARTS)))
    for part in ("value", "source", "status", "confidence"):
        if part not in raw:
            raise InputError(f"{where}.{part}", MISSING, _ENTRY_HELP)
    value = check_value(spec, raw["value"], f"{where}.value")
    source = _text(raw["source"], f"{where}.source", 300)
    status = raw["status"]
    if status not in FILE_STATUSES:
        raise InputError(f"{where}.status", status, Phrase(
            "refusal.one_of", options=", ".join(FILE_STATUSES)))
    confidence = raw["confidence"]
    if confidence not in CONFIDENCES:
        raise InputError(f"{where}.confidence", confidence, Phrase("refusal.doc.confidence"))
    note = raw.get("note", "")
    if status != "published" and isinstance(note, str) and not note.strip():
        raise InputError(f"{where}.note", note, Phrase(
            "refusal.doc.note_an" if status[0] in "aeiou" else "refusal.doc.note_a",
            status=status))
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
    _check_package(values, where)
    return Chip(**meta, **values, provenance=tuple((k, provs[k]) for k in FIELDS), origin=origin)


def _check_cube(v: Mapping, where: Where) -> None:
    for key in ("cube_m0", "cube_n0"):
        if v[key] != 16:
            raise InputError(where(key), v[key], Phrase("refusal.chip.fractal"))
    for p in CUBE_PRECISIONS:
        key = f"cube_k0_{p}"
        if v[key] % 4:
            raise InputError(where(key), v[key], Phrase("refusal.chip.k0",
                                                        high=f"{FIELDS[key].max:g}"))
    if not any(v[f"cube_k0_{p}"] for p in CUBE_PRECISIONS):
        raise InputError(where("cube_k0_fp16"), v["cube_k0_fp16"], Phrase("refusal.chip.k0_none"))
    if v["cube_sparse_42"] and not v["cube_k0_int8"]:  # MmadWithSparse multiplies int8
        raise InputError(where("cube_sparse_42"), v["cube_sparse_42"],
                         Phrase("refusal.chip.sparse_int8"))


def _check_memory(v: Mapping, where: Where) -> None:
    for key in ALIGN_KEYS:
        if v[key] & (v[key] - 1):
            raise InputError(where(key), v[key], Phrase("refusal.chip.align"))
    if v["ub_reserved_bytes"] % v["ub_align_bytes"]:
        raise InputError(where("ub_reserved_bytes"), v["ub_reserved_bytes"], Phrase(
            "refusal.chip.ub_reserved", align=v["ub_align_bytes"],
            high=f"{FIELDS['ub_reserved_bytes'].max:g}"))
    for key, align in (("l1_KiB", "l1_align_bytes"), ("l0a_KiB", "l0ab_align_bytes"),
                       ("l0b_KiB", "l0ab_align_bytes"), ("l0c_KiB", "l0c_align_bytes"),
                       ("ub_KiB", "ub_align_bytes")):
        if v[key] * 1024 % v[align]:
            raise InputError(where(key), v[key], Phrase("refusal.chip.size_align", key=align,
                                                        align=v[align]))
    block = max(32, v["ub_align_bytes"])
    need = v["ub_reserved_bytes"] + block
    if v["ub_KiB"] * 1024 < need:
        raise InputError(where("ub_KiB"), v["ub_KiB"], Phrase(
            "refusal.chip.ub_min", kib=-(-need // 1024), block=block,
            reserved=v["ub_reserved_bytes"]))


def _check_cores(arch: str, v: Mapping, where: Where) -> None:
    ai = v["ai_cores"]
    if arch == "split":
        if v["vector_cores"] != 2 * ai:
            raise InputError(where("vector_cores"), v["vector_cores"],
                             Phrase("refusal.chip.split_vector_cores", n=2 * ai))
        if v["vector_clock_MHz"] != v["clock_MHz"]:
            raise InputError(where("vector_clock_MHz"), v["vector_clock_MHz"],
                             Phrase("refusal.chip.split_clock", clock=v["clock_MHz"]))
        for key in FIXPIPE_KEYS:
            if v[key] <= 0:
                spec = FIELDS[key]
                raise InputError(where(key), v[key], Phrase(
                    "refusal.chip.fixpipe_split", high=f"{spec.max:g}",
                    unit=unit_words(spec.unit)))
    else:
        for key in FIXPIPE_KEYS + FIXPIPE_COST_KEYS:
            if v[key] != 0:
                raise InputError(where(key), v[key], Phrase("refusal.chip.fixpipe_coupled"))
    if v["cluster_size"] > ai:
        raise InputError(where("cluster_size"), v["cluster_size"],
                         Phrase("refusal.chip.cluster", ai=ai))


def _check_package(v: Mapping, where: Where) -> None:
    """A device spans whole dies; a die-to-die link needs two dies."""
    if v["package_dies"] % v["package_devices"]:
        raise InputError(where("package_devices"), v["package_devices"], Phrase(
            "refusal.chip.package_devices", dies=v["package_dies"]))
    if v["die_to_die_GBps"] and v["package_dies"] < 2:
        raise InputError(where("die_to_die_GBps"), v["die_to_die_GBps"],
                         Phrase("refusal.chip.die_link"))


# ---- overrides ---------------------------------------------------------------------------
def apply_overrides(chip: Chip, overrides: Mapping[str, object]) -> Chip:
    """A new chip with some numeric fields changed; see `Chip.with_overrides`."""
    label = f"{chip.name} override"
    old = chip.values()
    new = dict(old)
    for key, raw in overrides.items():
        if key not in FIELDS:
            raise InputError(f"{label}: {key}", raw, Phrase(
                "refusal.chip.field", names=", ".join(FIELDS)), hint=_hint(key, FIELDS))
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

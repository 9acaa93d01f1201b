"""Hypothesis strategies for hostile scenario documents, built from the project's own
tables (every kernel's ``PARAMS``, every chip field of ``hardware_presets.FIELDS``, the
files in ``explorer/scenarios/``), so that a new parameter or field is fuzzed without editing this.

A document starts from a real scenario (a file of ``explorer/scenarios/`` or a small one per
kernel: most cases stay fast) and gets a few edits: a parameter or chip override set to a
well-formed, extreme (0, -1, 10**400, inf, nan, the range's ends and just outside) or
wrong-typed value (bool, list, table, text with control characters or lone surrogates),
unknown keys, whole sections replaced by junk. It is then serialized as a dict, JSON text
or TOML text, sometimes with the text itself damaged (truncated, duplicated lines, a BOM,
deep nesting), for ``Scenario.from_dict`` / ``from_json`` / ``from_toml``.
"""
from __future__ import annotations

import copy
import functools
import json
import math
import tomllib
from pathlib import Path

import tomli_w
from hypothesis import strategies as st

import hardware_presets as hp
import kernels

ROOT = Path(__file__).resolve().parents[2]
HUGE = 10**400
EXTREME_NUMBERS = (0, -1, 1, -0.0, 0.5, 2**31, 2**63, 2**64 + 1, 10**20, HUGE, -HUGE,
                   math.inf, -math.inf, math.nan, 5e-324, 1e-300, 1e308)
HOSTILE_TEXT = ("", " ", "\x00", "\x1b[2J", "\ud800", "a\udfffb", "\u202eevil", "\n\r\t",
                "名前", "😀" * 3, "a" * 70_000, "9" * 5000, "1e999", "nan", "-inf", "0x10",
                "1_000", " 12 ", "1,2,3", "true", "[1]", "{}", "<script>x</script>",
                "../../etc/passwd", "%s%n{0}", "\\", '"')
FORMATS = ("dict", "json", "toml")
SCENARIO_KEYS = ("name", "preset", "overrides", "kernel", "params", "seed")
#: a fast, valid parameter set per kernel: most generated documents start from one
SMALL = {"vector_add": {"n": 4096, "block_dim": 2, "tile": 1024},
         "gemm": {"M": 128, "N": 128, "K": 128, "block_dim": 4},
         "decode": {"batch": 2, "mean_len": 64, "max_len": 128, "model": "llama2-7b"}}


def weighted(*pairs: tuple[int, st.SearchStrategy]) -> st.SearchStrategy:
    """One of the strategies, chosen with the given integer weights."""
    return st.sampled_from([s for w, s in pairs for _ in range(w)]).flatmap(lambda s: s)


@functools.cache
def texts() -> st.SearchStrategy[str]:
    """Short random unicode (lone surrogates included) or a known-hostile text."""
    return st.one_of(st.sampled_from(HOSTILE_TEXT),
                     st.text(st.characters(exclude_categories=()), max_size=12))


@functools.cache
def scalars() -> st.SearchStrategy:
    return st.one_of(st.none(), st.booleans(), st.sampled_from(EXTREME_NUMBERS),
                     st.integers(), st.floats(), texts())


@functools.cache
def junk() -> st.SearchStrategy:
    """Any plain value: scalars, and lists and tables of them, a few levels deep."""
    return st.recursive(scalars(), lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(texts(), inner, max_size=3), max_leaves=6)


@functools.cache
def _range_values(kind: type, lo: float, hi: float, default: object) -> st.SearchStrategy:
    """Well-formed numbers of a range: mostly small (fast runs), sometimes anywhere, and
    the ends and just outside them."""
    if kind is int:
        lo, hi = int(lo), int(hi)
        small = st.integers(lo, min(hi, max(lo, 1) * 64))
        edges = st.sampled_from((lo, hi, lo - 1, hi + 1, default, str(default), float(lo)))
        return weighted((6, small), (1, st.integers(lo, hi)), (2, edges))
    small = st.floats(lo, min(hi, max(lo, 1.0) * 64), allow_nan=False)
    edges = st.sampled_from((lo, hi, lo / 2 if lo else -1e-9, hi * 2, default, str(default)))
    return weighted((6, small), (1, st.floats(lo, hi)), (2, edges))


@functools.cache
def param_values(spec: kernels.common.params.ParamSpec) -> st.SearchStrategy:
    """A value for one kernel parameter: mostly well-formed, else extreme or wrong-typed."""
    if spec.choices is not None:
        good = st.sampled_from(spec.choices)
    elif spec.kind is bool:
        good = st.booleans()
    elif spec.kind is str:
        good = st.one_of(st.just(spec.default), texts(),
                         st.lists(st.integers(-1, 5000), max_size=6).map(
                             lambda xs: ",".join(map(str, xs))))
    else:
        good = _range_values(spec.kind, spec.min, spec.max, spec.default)
    return weighted((8, good), (2, st.sampled_from(EXTREME_NUMBERS)), (1, junk()))


@functools.cache
def override_values(field: hp.FieldSpec) -> st.SearchStrategy:
    good = _range_values(field.kind, field.min, field.max, field.min)
    return weighted((6, good), (3, st.sampled_from(EXTREME_NUMBERS + (True, False))),
                    (1, junk()))


@functools.cache
def _param_edit(kernel_name: str) -> st.SearchStrategy:
    specs = getattr(kernels.KERNELS.get(kernel_name), "params", ())
    unknown = st.tuples(texts().map(lambda k: ("params", k)), junk())
    if not specs:  # an unknown kernel: any parameter name is as good as another
        return unknown
    known = st.sampled_from(specs).flatmap(
        lambda s: st.tuples(st.just(("params", s.name)), param_values(s)))
    return weighted((10, known), (1, unknown))


@functools.cache
def _override_edit() -> st.SearchStrategy:
    known = st.sampled_from(list(hp.FIELDS.values())).flatmap(
        lambda f: st.tuples(st.just(("overrides", f.key)), override_values(f)))
    unknown = st.tuples(texts().map(lambda k: ("overrides", k)), junk())
    return weighted((8, known), (1, unknown))


@functools.cache
def _top_edit() -> st.SearchStrategy:
    by_key = {
        "preset": st.one_of(st.sampled_from(hp.list_presets()), texts(), junk()),
        "kernel": st.one_of(st.sampled_from(tuple(kernels.KERNELS)), texts(), junk()),
        "seed": st.one_of(st.integers(0, 2**32 - 1), st.sampled_from(EXTREME_NUMBERS), junk()),
        "name": st.one_of(texts(), junk()),
        "params": junk(), "overrides": junk(),
    }
    known = st.sampled_from(sorted(by_key)).flatmap(
        lambda k: st.tuples(st.just((k,)), by_key[k]))
    return weighted((6, known), (1, st.tuples(texts().map(lambda k: (k,)), junk())))


def _apply(doc: dict, path: tuple, value: object) -> None:
    target = doc
    for key in path[:-1]:
        if not isinstance(target.get(key), dict):
            target[key] = {}
        target = target[key]
    target[path[-1]] = value


def _bases() -> list[dict]:
    files = sorted((ROOT / "explorer" / "scenarios").glob("*.toml"))
    found = [tomllib.loads(f.read_text(encoding="utf-8")) for f in files]
    return found + [{"kernel": k, "params": dict(p)} for k, p in SMALL.items()] * 3


BASES = _bases()


@st.composite
def scenario_docs(draw) -> object:
    """A scenario as plain data: a real one with 0 to 4 hostile edits (or, rarely, junk)."""
    if draw(st.integers(0, 30)) == 0:
        return draw(junk())
    doc = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.sampled_from((0, 1, 1, 2, 2, 3, 4)))):
        kind = draw(st.sampled_from(("param",) * 6 + ("override",) * 3 + ("top",) * 2
                                    + ("delete",)))
        if kind == "delete":
            if doc:
                doc.pop(draw(st.sampled_from(sorted(doc))))
            continue
        edit = {"param": lambda: _param_edit(str(doc.get("kernel", "vector_add"))),
                "override": _override_edit, "top": _top_edit}[kind]()
        path, value = draw(edit)
        _apply(doc, path, value)
    return doc


# ---- serialization ------------------------------------------------------------------------
def to_text(doc: object, fmt: str) -> str | None:
    """The document as JSON or TOML text, or None when that format cannot hold it."""
    try:
        if fmt == "json":
            return json.dumps(doc)
        return tomli_w.dumps(doc) if isinstance(doc, dict) else None
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None


def deep_text(fmt: str, depth: int) -> str:
    """A document nested ``depth`` levels (arrays, tables or dotted keys): parsers recurse."""
    if fmt == "json":
        return '{"params": {"n": ' + "[" * depth + "]" * depth + "}}"
    if depth % 2:
        return "a" + ".a" * depth + " = 1\n"
    return "x = " + "[" * depth + "]" * depth + "\n"


@st.composite
def damaged(draw, text: str) -> str:
    """The text with one kind of damage a hand-edited or hostile file shows."""
    kind = draw(st.sampled_from(("truncate", "insert", "duplicate", "bom", "none")))
    cut = draw(st.integers(0, len(text)))
    if kind == "truncate":
        return text[:cut]
    if kind == "insert":
        return text[:cut] + draw(texts()) + text[cut:]
    if kind == "duplicate":
        lines = text.splitlines(keepends=True) or [text]
        line = draw(st.sampled_from(lines))
        return text + ("\n" if not text.endswith("\n") else "") + line
    return "\ufeff" + text if kind == "bom" else text


@st.composite
def documents(draw) -> tuple[str, object]:
    """(format, payload) for one loader: ("dict", data), ("json", text) or ("toml", text)."""
    fmt = draw(st.sampled_from(FORMATS))
    if fmt != "dict" and draw(st.integers(0, 40)) == 0:
        return fmt, deep_text(fmt, draw(st.sampled_from((50, 5000, 200_000))))
    doc = draw(scenario_docs())
    text = None if fmt == "dict" else to_text(doc, fmt)
    if text is None:
        return "dict", doc
    if draw(st.integers(0, 4)) == 0:
        text = draw(damaged(text))
    return fmt, text

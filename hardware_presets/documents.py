"""One safe way to read a user's TOML or JSON document, for every loader.

A document from a file, an upload or a test is untrusted: it may be huge, not UTF-8,
nested ten thousand levels deep, or hold keys and text that JSON allows but no reader
expects (repeated keys, lone surrogates, control characters). Each of those is refused
here with a :class:`DocumentError` naming the document, **before** the bytes are read or
the parser runs, so that no loader meets ``RecursionError``, ``MemoryError`` or
``UnicodeDecodeError``. What the values mean is the loaders' business, not this module's.
"""
from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

from .document_depth import json_deeper_than, toml_deeper_than
from .errors import InputError, Phrase

#: levels of tables, arrays and dotted-key parts: the documents we read need at most 3
MAX_DEPTH = 16
#: characters of a control code (C0, DEL, C1); tab, line feed and carriage return are
#: allowed in text values, never in keys
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_KEY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class DocumentError(InputError):
    """A document that cannot be read as data: too large, not UTF-8, not valid TOML/JSON,
    too deep, or with keys or text no loader should see."""


def read_file(path: str | os.PathLike, field: str, expected: str, max_bytes: int) -> str:
    """The text of a UTF-8 file of at most ``max_bytes``, its size checked before reading.
    ``field`` names the file in refusals (a command-line argument, the file's name) and
    ``expected`` says what it should be ("TOML file in the preset schema")."""
    file = Path(path)
    if not file.is_file():
        raise DocumentError(field, str(path), Phrase("refusal.doc.existing", what=expected))
    try:
        with file.open("rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            data = b"" if size > max_bytes else stream.read(max_bytes + 1)  # it may grow
    except OSError as err:  # no permission, a file gone since the check
        raise DocumentError(field, str(path), Phrase("refusal.doc.readable", what=expected),
                            err.strerror or "") from None
    if size > max_bytes or len(data) > max_bytes:
        raise DocumentError(f"{field}: size", Phrase("refusal.value.file_size", path=path,
                                                     size=f"{max(size, len(data)):,}"),
                            Phrase("refusal.doc.max_bytes", what=expected, limit=f"{max_bytes:,}"))
    return decode(data, file.name)


def decode(data: bytes, origin: str) -> str:
    """UTF-8 bytes as text; anything else (UTF-16, Latin-1, binary) is refused."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DocumentError(f"{origin}: encoding", Phrase(
            "refusal.value.byte_at", byte=f"{data[err.start]:02x}", offset=err.start),
            Phrase("refusal.doc.utf8"), Phrase("refusal.hint.save_utf8", origin=origin)) from None


def load_toml(text: str, origin: str, max_chars: int, syntax_field: str = "") -> dict:
    """A TOML text of at most ``max_chars`` as plain data (see :func:`check_text`); a
    syntax error names ``syntax_field`` (default: ``origin``)."""
    check_text(text, origin, max_chars, "TOML", toml_deeper_than)
    return _parsed(lambda: tomllib.loads(text), origin, "TOML", syntax_field)


def load_json(text: str, origin: str, max_chars: int, syntax_field: str = "") -> object:
    """A JSON text of at most ``max_chars`` as plain data: standard JSON only (no NaN or
    Infinity) and every key once per object."""
    check_text(text, origin, max_chars, "JSON", json_deeper_than)

    def pairs(items: list[tuple[str, object]]) -> dict:
        found = dict(items)
        if len(found) < len(items):
            seen = set()
            twice = next(k for k, _ in items if k in seen or seen.add(k))
            raise DocumentError(f"{origin}: {twice!r}", Phrase("refusal.value.repeated"),
                                Phrase("refusal.doc.key_once"))
        return found

    def constant(name: str) -> float:
        raise DocumentError(origin, name, Phrase("refusal.doc.standard_json"))

    return _parsed(lambda: json.loads(text, object_pairs_hook=pairs, parse_constant=constant),
                   origin, "JSON", syntax_field)


def check_text(text: object, origin: str, max_chars: int, fmt: str,
               too_deep: Callable[[str, int], bool]) -> None:
    """Refuse what no parser should be given: not text, too long, or nested too deep."""
    if not isinstance(text, str):
        raise DocumentError(origin, type(text).__name__, Phrase("refusal.doc.fmt_text", fmt=fmt))
    if len(text) > max_chars:
        raise DocumentError(f"{origin}: size", Phrase("refusal.value.characters",
                                                      n=f"{len(text):,}"),
                            Phrase("refusal.doc.max_chars", fmt=fmt, limit=f"{max_chars:,}"))
    if too_deep(text, MAX_DEPTH):
        raise DocumentError(origin, Phrase("refusal.value.nesting"),
                            Phrase("refusal.doc.depth", depth=MAX_DEPTH))


def _parsed(parse: Callable[[], object], origin: str, fmt: str, syntax_field: str) -> object:
    """Run the parser; a syntax error, or an integer longer than Python reads, becomes one
    DocumentError; the strings are then checked."""
    try:
        data = parse()
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as err:
        raise DocumentError(syntax_field or origin, Phrase("refusal.value.file"),
                            Phrase("refusal.doc.valid", fmt=fmt), str(err)) from None
    except InputError:
        raise
    except ValueError:  # int() of a literal above sys.get_int_max_str_digits()
        raise DocumentError(origin, Phrase("refusal.value.number"), Phrase(
            "refusal.doc.digits", digits=f"{sys.get_int_max_str_digits():,}")) from None
    check_strings(data, origin)
    return data


def check_strings(data: object, origin: str, path: str = "") -> None:
    """Every key and text in parsed data is real Unicode without control codes (a lone
    surrogate cannot be written back as UTF-8; a control code garbles a terminal)."""
    if isinstance(data, dict):
        for key, value in data.items():
            _check_text(key, origin, path, _KEY_CONTROL, "refusal.doc.key_text")
            check_strings(value, origin, f"{path}.{key}" if path else key)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            check_strings(value, origin, f"{path}[{index}]")
    elif isinstance(data, str):
        _check_text(data, origin, path, _CONTROL, "refusal.doc.text")


def _check_text(text: str, origin: str, path: str, control: re.Pattern, allowed_id: str,
                ) -> None:
    """Refuse a key or text with a control code or a lone surrogate; ``allowed_id``: the
    message id saying what a key (or text) may hold."""
    bad = _SURROGATE.search(text) or control.search(text)
    if bad:
        raise DocumentError(f"{origin}: {path}" if path else origin, text[:80], Phrase(
            allowed_id, found=repr(bad.group()), at=bad.start()))

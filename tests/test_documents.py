"""The one safe document reader (hardware_presets/documents.py, document_depth.py): the
nesting scan agrees with the parsers on every document they write, and each hostile
document of issue 16 is a DocumentError naming the document, never a parser's crash."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

import hardware_presets as hp
from explorer.core import Scenario
from hardware_presets import documents
from hardware_presets.document_depth import json_deeper_than, toml_deeper_than
from hardware_presets.documents import MAX_DEPTH, DocumentError
from kernels.models import load_model_text

REPO = Path(__file__).resolve().parent.parent
LIMIT = 1 << 20


def depth(data: object) -> int:
    """Levels of tables and arrays below the document's root table."""
    children = data.values() if isinstance(data, dict) else data if isinstance(data, list) \
        else ()
    return max((1 + depth(c) for c in children if isinstance(c, (dict, list))), default=0)


def assert_depth(deeper_than, text: str, expected: int) -> None:
    assert deeper_than(text, expected - 1) or expected == 0, text
    assert not deeper_than(text, expected), text


# ---- the nesting scan ----------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("x = 1", 0), ("a.b.c = 1", 2), ("x = [[1]]", 2), ("x = [{}, [[1]]]", 3),
    ("x = {a = {b = [1]}}", 3), ('["a.b"]\nq = {r = 1}', 2), ("x = 1.5\ny.z = 2", 1),
    # a header's leading parts count twice: each may be an array of tables ([[a]], [a.b])
    ("[a.b]\nx = 1", 3), ("[a.b]\nx.y = [1]", 5), ("[[a.b]]\nc = [1]", 5),
    # brackets, dots and quotes inside strings and comments are no levels
    ('x = "[[[[a.b.c"', 0), ("x = '''[[\n[['''", 0), ("# [[[[\nx = 1", 0),
    ('x = """a""""\ny = [[[1]]]', 3), ('x = "a\\"[[["\ny = [1]', 1),
    ("x = '\\'\ny = [[1]]", 2),
])
def test_toml_depth_of_hand_written_documents(text, expected):
    assert_depth(toml_deeper_than, text, expected)
    assert depth(documents.load_toml(text, "t.toml", LIMIT)) <= expected


KEYS = st.text(st.sampled_from('ab.[]{}"\'#= \\\n'), min_size=1, max_size=4)
SCALARS = st.one_of(st.integers(), st.floats(allow_nan=False), st.booleans(),
                    st.text(st.sampled_from('ab.[]{}"\'#=,\\\n'), max_size=6))
TREES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, TREES, max_size=4))
def test_depth_scan_agrees_with_what_the_writers_write(data):
    """Tables, arrays of tables, inline tables, quoted keys with dots and brackets: the
    scan of json's output finds the depth of the data written (the root object is a
    level of its own), the scan of tomli_w's never less, and at most twice as much."""
    assert_depth(json_deeper_than, json.dumps(data), depth(data) + 1)
    text = tomli_w.dumps(data)
    real = depth(tomllib.loads(text))
    assert toml_deeper_than(text, real - 1) or real == 0, text
    assert not toml_deeper_than(text, 2 * real), text


def test_shipped_documents_are_far_from_the_limit():
    files = [*REPO.joinpath("hardware_presets").glob("*.toml"),
             *REPO.joinpath("kernels", "models").glob("*.toml"),
             *REPO.joinpath("explorer", "scenarios").glob("*.toml")]
    assert len(files) > 12
    for file in files:
        assert not toml_deeper_than(file.read_text(encoding="utf-8"), 3), file.name


# ---- refusals --------------------------------------------------------------------------------
DEEP = MAX_DEPTH + 1


@pytest.mark.parametrize("text, load", [
    ("[" * 100_000 + "]" * 100_000, documents.load_json),
    ('{"a": ' * DEEP + "1" + "}" * DEEP, documents.load_json),
    ("x = " + "[" * 100_000 + "]" * 100_000, documents.load_toml),
    ("x = " + "{a = " * DEEP + "1" + "}" * DEEP, documents.load_toml),
    ("a" + ".a" * 200_000 + " = 1", documents.load_toml),  # MemoryError after 32 s before
    ("[" + ".".join("a" * DEEP) + "]\nx = 1", documents.load_toml),
])
def test_deep_documents_are_refused_before_parsing(text, load):
    with pytest.raises(DocumentError, match=f"at most {MAX_DEPTH} levels") as info:
        load(text, "deep.doc", LIMIT)
    assert info.value.field == "deep.doc"


def test_depth_at_the_limit_parses():
    text = "x = " + "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert depth(documents.load_toml(text, "t.toml", LIMIT)) == MAX_DEPTH


@pytest.mark.parametrize("text, field, says", [
    ('{"seed": 1, "seed": 2}', "s.json: 'seed'", "each key once"),
    ('{"params": {"n": 1, "n": 2}}', "s.json: 'n'", "each key once"),
    ('{"name": "a\\ud800b"}', "s.json: name", "lone surrogates"),
    ('{"name": "bell\\u0007"}', "s.json: name", "control codes"),
    ('{"params": {"dtype": ["fp16", "\\u001b[31m"]}}', "s.json: params.dtype[1]",
     "control codes"),
    ('{"na\\nme": 1}', "s.json", "a key without control codes"),
    ('{"seed": NaN}', "s.json", "standard JSON"),
    ('{"seed": ' + "9" * 5000 + "}", "s.json", "numbers of at most"),
    ('{"seed": 1,}', "s.json", "a valid JSON document"),
    ("x" * (LIMIT + 1), "s.json: size", "at most 1,048,576 characters"),
])
def test_json_refusals_name_the_place(text, field, says):
    with pytest.raises(DocumentError, match=says) as info:
        documents.load_json(text, "s.json", LIMIT)
    assert info.value.field == field


def test_toml_refusals_name_the_place():
    with pytest.raises(DocumentError, match="control codes") as info:
        documents.load_toml('name = "a\\u0000"', "s.toml", LIMIT)
    assert info.value.field == "s.toml: name"
    with pytest.raises(DocumentError, match="numbers of at most"):
        documents.load_toml("n = " + "9" * 5000, "s.toml", LIMIT)
    with pytest.raises(DocumentError, match="TOML text"):
        documents.load_toml(b"n = 1", "s.toml", LIMIT)
    assert documents.load_toml('x = "tab\\tline\\nbreak"', "s.toml", LIMIT)["x"] == \
        "tab\tline\nbreak"


@pytest.mark.parametrize("data, offset", [
    (bytes(range(256)), 128), ('kernel = "gemm"'.encode("utf-16"), 0),
    ('name = "café"'.encode("latin-1"), 11), ('name = "\ud800"'.encode("utf-8", "surrogatepass"),
                                              8)])
def test_text_that_is_not_utf8_is_refused_naming_the_file(tmp_path, data, offset):
    path = tmp_path / "odd.toml"
    path.write_bytes(data)
    with pytest.raises(DocumentError, match="odd.toml is not UTF-8 text") as info:
        documents.read_file(path, "FILE", "TOML file", LIMIT)
    assert info.value.field == "odd.toml: encoding"
    assert f"at offset {offset}" in str(info.value)


def test_size_is_checked_before_reading(tmp_path):
    """A sparse file of 4 GiB is refused from its size: nothing is read."""
    path = tmp_path / "huge.toml"
    with path.open("wb") as f:
        f.truncate(4 << 30)
    with pytest.raises(DocumentError, match="at most 1,048,576 bytes") as info:
        documents.read_file(path, "SCENARIO", "scenario file", LIMIT)
    assert info.value.field == "SCENARIO: size" and "4,294,967,296 bytes" in str(info.value)
    with pytest.raises(DocumentError, match="an existing scenario file"):
        documents.read_file(tmp_path / "none.toml", "SCENARIO", "scenario file", LIMIT)
    with pytest.raises(DocumentError, match="an existing scenario file"):
        documents.read_file(tmp_path, "SCENARIO", "scenario file", LIMIT)


# ---- every loader reads through it ---------------------------------------------------------
DEEP_TOML = "x = " + "[" * 5000 + "]" * 5000 + "\n"


def test_chip_and_model_loaders_refuse_hostile_documents(tmp_path):
    path = tmp_path / "chip.toml"
    path.write_text('architecture = "c220"\n' + DEEP_TOML, encoding="utf-8")
    with pytest.raises(DocumentError, match="levels deep"):
        hp.load_file(path)
    with pytest.raises(DocumentError, match="chip.toml is not UTF-8"):
        hp.load_text(b"name = \"\xff\"", origin="chip.toml")
    path.write_bytes(b"#" * (hp.loader.MAX_FILE_BYTES + 1))
    with pytest.raises(DocumentError, match="chip.toml: size"):
        hp.load_file(path)
    with pytest.raises(DocumentError, match="levels deep"):
        load_model_text("[shape]\n" + DEEP_TOML, origin="m.toml")
    with pytest.raises(DocumentError, match="control codes"):
        load_model_text('name = "a\\u0085"\n', origin="m.toml")


@pytest.mark.parametrize("parse, text", [
    (Scenario.from_toml, DEEP_TOML), (Scenario.from_json, "[" * 5000 + "]" * 5000),
    (Scenario.from_json, '{"kernel": "gemm", "kernel": "vector_add"}'),
    (Scenario.from_json, '{"name": "\\udfff"}')])
def test_scenario_documents_read_through_it(parse, text):
    with pytest.raises(DocumentError):
        parse(text)

"""Hypothesis strategies for the other ways hostile input arrives: CLI calls on malformed
files, uploaded ``.npz`` dumps for the sparse-attention page, and URL query parameters.

Every strategy returns plain, picklable data (texts, bytes, tuples) that ``targets`` turns
into a call; nothing here runs project code.
"""
from __future__ import annotations

import io
import re
import struct
import zipfile

import numpy as np
from hypothesis import strategies as st

import hardware_presets as hp
import kernels
from explorer.core.metrics import METRICS

from .strategies import EXTREME_NUMBERS, ROOT, deep_text, documents, junk, texts, to_text, weighted

COMMANDS = ("run", "validate", "sweep", "compare", "report")
#: literals a hand-edited chip or model file may hold in place of a number
BAD_LITERALS = ("0", "-1", "1e999", "nan", "inf", "true", "[1, 2]", "'12'", "{ a = 1 }",
                "9" * 500, "0.5", "1_000_000", "99999999999999999999")
MISSING_DIR = "no/such/dir/"


# ---- files ----------------------------------------------------------------------------------
@st.composite
def _mutated_data_file(draw, folder: str) -> str:
    """A preset or model TOML of the project with one ``value = ...`` replaced."""
    path = draw(st.sampled_from(sorted((ROOT / folder).glob("*.toml"))))
    lines = path.read_text(encoding="utf-8").splitlines()
    spots = [i for i, line in enumerate(lines) if "{ value = " in line]
    i = draw(st.sampled_from(spots))
    lines[i] = re.sub(r"value = [^,]*", "value = " + draw(st.sampled_from(BAD_LITERALS)),
                      lines[i], count=1)
    return "\n".join(lines) + "\n"


def _report_html(size: int) -> str:
    """A report-like page whose embedded-scenario tag never closes (a regex that
    backtracks scans the rest of the text from every tag)."""
    tag = '<script type="text/plain" id="scenario.toml">x'
    return "<html>" + tag * (size // len(tag)) + "</html>"


@st.composite
def _scenario_text(draw) -> tuple[str, str]:
    """(suffix, text) of a scenario file: a generated document as JSON or TOML text."""
    fmt, payload = draw(documents())
    text = payload if fmt != "dict" else (to_text(payload, "json") or "{}")
    return (".toml" if fmt == "toml" else ".json"), text


def _encode(text: str, how: str) -> bytes:
    if how == "utf-16":
        return text.encode("utf-16", "surrogatepass")
    if how == "latin-1":
        return text.encode("latin-1", "replace") + b"\xe9\xff"
    return text.encode("utf-8", "surrogatepass")


@st.composite
def file_contents(draw) -> tuple[str, bytes]:
    """(file name, bytes) of one input file: a scenario, chip or model file, a report page
    or garbage, in the encoding a student's editor may have used."""
    kind = draw(st.sampled_from(("scenario",) * 6 + ("chip", "model", "html", "garbage",
                                                    "deep")))
    if kind == "scenario":
        suffix, text = draw(_scenario_text())
    elif kind in ("chip", "model"):
        suffix, text = ".toml", draw(_mutated_data_file(
            "hardware_presets" if kind == "chip" else "kernels/models"))
    elif kind == "html":
        suffix, text = ".html", _report_html(draw(st.sampled_from((2_000, 100_000, 1_000_000))))
    elif kind == "deep":
        suffix = draw(st.sampled_from((".json", ".toml")))
        text = deep_text(suffix[1:], draw(st.sampled_from((1000, 100_001, 200_000))))
    else:
        return draw(st.sampled_from((".toml", ".json"))), draw(st.binary(max_size=200))
    how = draw(st.sampled_from(("utf-8",) * 6 + ("utf-16", "latin-1")))
    return suffix, _encode(text, how)


# ---- commands -------------------------------------------------------------------------------
@st.composite
def _sweep_param(draw) -> str:
    knob = draw(st.one_of(st.sampled_from(sorted({s.name for k in kernels.KERNELS.values()
                                                   for s in k.params})),
                          st.sampled_from(["chip." + f for f in hp.FIELDS]), texts()))
    number = st.sampled_from(EXTREME_NUMBERS + (1, 2, 16, 1e-300, 5e-324)).map(repr)
    values = draw(st.one_of(
        st.tuples(number, number, number).map(":".join),
        st.tuples(number, number, number).map(lambda t: f"{t[0]}:{t[1]}:*{t[2]}"),
        st.lists(st.one_of(number, texts()), min_size=1, max_size=4).map(",".join),
        texts()))
    return f"--param={knob}={values}"


def _output(missing: bool, name: str) -> str:
    return (MISSING_DIR if missing else "") + name


@st.composite
def cli_calls(draw) -> tuple[tuple[str, ...], dict[str, bytes]]:
    """(argv, {file name: bytes}): one ``python -m explorer`` command on generated files,
    output paths sometimes in a folder that does not exist."""
    command = draw(st.sampled_from(COMMANDS))
    suffix, data = draw(file_contents())
    files = {"a" + suffix: data}
    missing = draw(st.integers(0, 5)) == 0
    argv = [command, "a" + suffix]
    if command == "run":
        argv += draw(st.sampled_from(([], ["--json"], ["--trace", _output(missing, "t.json")])))
    elif command == "sweep":
        argv += [draw(_sweep_param()) for _ in range(draw(st.integers(1, 2)))]
        argv += ["--workers=1", "-o", _output(missing, "out.csv")]
        if draw(st.booleans()):
            argv.append("--metric=" + draw(st.one_of(st.sampled_from(tuple(METRICS)),
                                                     texts().filter(lambda s: s[:1] != "-"))))
    elif command == "compare":
        other_suffix, other = draw(file_contents())
        files["b" + other_suffix] = other
        argv.append("b" + other_suffix)
    elif command == "report":
        argv += ["-o", _output(missing, "r.html")]
    return tuple(argv), files


# ---- uploads --------------------------------------------------------------------------------
def _npy(shape_text: str, descr: str = "<f8", payload: bytes = b"\0" * 64) -> bytes:
    """A .npy member with a hand-written header (shapes numpy itself would never write)."""
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}"
    header += " " * (-(len(header) + 11) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload


def _zip(members: dict[str, bytes], compressed: bool) -> bytes:
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buf.getvalue()


@st.composite
def _arrays(draw) -> dict[str, np.ndarray]:
    kv, group = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    n, d = draw(st.integers(1, 6)), draw(st.integers(1, 8))
    dtype = draw(st.sampled_from(("float64", "float32", "float16", "int8", "complex64",
                                  "bool")))
    fill = draw(st.sampled_from((0.5, np.nan, np.inf, 1e30)))
    shapes = {"q": (kv * group, d), "k": (kv, n, d), "v": (kv, n, d)}
    if draw(st.booleans()):
        shapes["q_past"] = (draw(st.integers(0, n + 1)), kv * group, d)
    if draw(st.integers(0, 4)) == 0:  # a wrong shape on one array
        shapes[draw(st.sampled_from(sorted(shapes)))] = tuple(
            draw(st.lists(st.integers(0, 4), max_size=4)))
    arrays = {k: np.full(s, 0.5, dtype=dtype) for k, s in shapes.items()}
    if fill != 0.5 and dtype.startswith("float"):
        with np.errstate(over="ignore"):  # 1e30 is inf in float16: hostile either way
            arrays["k"].flat[:1] = fill
    return arrays


def _patch(data: bytes, signature: bytes, offset: int, value: bytes) -> bytes:
    """Every zip header with ``signature`` gets ``value`` written at ``offset``."""
    out = bytearray(data)
    for found in re.finditer(re.escape(signature), data):
        out[found.start() + offset:found.start() + offset + len(value)] = value
    return bytes(out)


LOCAL, CENTRAL = b"PK\x03\x04", b"PK\x01\x02"


def _damage(data: bytes, kind: str, where: int) -> bytes:
    """One kind of damage an uploaded zip may carry."""
    if kind == "truncate":
        return data[:where % max(len(data), 1)]
    if kind == "flip":
        i = where % max(len(data), 1)
        return data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:] if data else data
    if kind.startswith("method"):  # deflate64 (9), bzip2 (12), lzma (14), AES (99)
        value = struct.pack("<H", int(kind[6:]))
        return _patch(_patch(data, LOCAL, 8, value), CENTRAL, 10, value)
    if kind == "encrypted":
        return _patch(_patch(data, LOCAL, 6, b"\x01\x00"), CENTRAL, 8, b"\x01\x00")
    return data


@st.composite
def npz_uploads(draw) -> bytes:
    """The bytes of an uploaded dump: a real small one, one with hand-written headers
    (huge, negative or non-literal shapes, pickled dtypes), damaged zips, or no zip at all."""
    kind = draw(st.sampled_from(("savez",) * 4 + ("header", "bytes")))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    compressed = draw(st.booleans())
    if kind == "header":
        shape = draw(st.sampled_from(("(10**12,)", "(4, 1 << 40, 8)", "(-1, 2, 2)",
                                      "(1, 2, 2)", "()", "(" + "9" * 500 + ",)",
                                      "__import__('os').getpid()", "[1, 2, 2]")))
        descr = draw(st.sampled_from(("<f8", "|O", "<f2", ">f4", "<c16", "V8")))
        members = {"q.npy": _npy("(2, 2)"), "k.npy": _npy(shape, descr),
                   "v.npy": _npy("(1, 2, 2)")}
        data = _zip(members, compressed)
    else:
        buf = io.BytesIO()
        (np.savez_compressed if compressed else np.savez)(buf, **draw(_arrays()))
        data = buf.getvalue()
    damage = draw(st.sampled_from(("none",) * 3 + ("truncate", "flip", "method9",
                                                   "method12", "method14", "method99",
                                                   "encrypted")))
    return _damage(data, damage, draw(st.integers(0, 1 << 16)))


# ---- URLs -----------------------------------------------------------------------------------
URL_PAGES = ("vector_add", "gemm", "decode")


@st.composite
def url_queries(draw) -> tuple[str, dict[str, str]]:
    """(page, query): the query string of a shared link, every value a text as Streamlit
    gives it, with page parameters, chip overrides (``chip.<field>``), preset and language."""
    page = draw(st.sampled_from(URL_PAGES))
    specs = kernels.KERNELS[page].params
    value = st.one_of(texts(), st.sampled_from(EXTREME_NUMBERS).map(str),
                      junk().map(str), st.integers(-5, 70_000).map(str))
    key = weighted((5, st.sampled_from([s.name for s in specs])),
                   (3, st.sampled_from(["chip." + f for f in hp.FIELDS])),
                   (1, st.sampled_from(("preset", "lang", "seed"))), (1, texts()))
    return page, draw(st.dictionaries(key, value, max_size=5))

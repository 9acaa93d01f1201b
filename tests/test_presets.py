"""Chip presets: loading, derived figures, provenance, overrides, validation, i18n ids."""
from __future__ import annotations

import ast
import re
import shutil
import string
import tomllib
from pathlib import Path

import pytest

import hardware_presets as hp
from explorer.core.i18n import flatten_table
from hardware_presets import FIELDS, Chip, InputError, Provenance, load, load_file, load_text
from hardware_presets.schema import NUMERIC_ATTRS

PRESET_DIR = Path(hp.__file__).parent
LOCALES = Path(__file__).resolve().parents[1] / "explorer" / "core" / "locales"
ALL = ("910B1", "910B2", "910B3", "910B4", "910", "310P3", "910C", "950PR", "950DT")
DISPLAY = {"910C": "Atlas A3 · Ascend 910C die"}  # else "Ascend <name>"

# (ai cores, clock MHz, {precision: k0}) from hardware_facts.md, independent of the presets
FACTS = {
    "910B1": (24, 1850, {"fp16": 16, "bf16": 16, "int8": 32, "int4": 64, "fp32": 4, "hf32": 8}),
    "910B2": (24, 1800, {"fp16": 16, "bf16": 16, "int8": 32, "int4": 64, "fp32": 4, "hf32": 8}),
    "910B3": (20, 1800, {"fp16": 16, "bf16": 16, "int8": 32, "int4": 64, "fp32": 4, "hf32": 8}),
    "910B4": (20, 1500, {"fp16": 16, "bf16": 16, "int8": 32, "int4": 64, "fp32": 4, "hf32": 8}),
    "910": (32, 1000, {"fp16": 16, "int8": 32}),
    "310P3": (8, 1060, {"fp16": 16, "int8": 32}),
    # one die of the 910C (CloudMatrix384 paper), 910B2's clock assumed; arch 3510 docs and
    # the 950 whitepaper's Table 3-1 (FP8 family 2x, MXFP4 4x the FP16 rate)
    "910C": (24, 1800, {"fp16": 16, "bf16": 16, "int8": 32, "int4": 64, "fp32": 4, "hf32": 8}),
    "950PR": (32, 1650, {"fp16": 16, "bf16": 16, "int8": 32, "fp32": 4, "hf32": 8,
                         "fp8_e4m3": 32, "fp8_e5m2": 32, "hif8": 32, "mxfp8": 32, "mxfp4": 64}),
    "950DT": (36, 1650, {"fp16": 16, "bf16": 16, "int8": 32, "fp32": 4, "hf32": 8,
                         "fp8_e4m3": 32, "fp8_e5m2": 32, "hif8": 32, "mxfp8": 32, "mxfp4": 64}),
}
FP16_TF = {"910B1": 363.7, "910B2": 353.9, "910B3": 294.9, "910B4": 245.8, "910": 262.1,
           "310P3": 69.5, "910C": 353.9, "950PR": 432.5, "950DT": 486.6}


# ---- presets load and give the published figures ------------------------------------------
def test_list_presets_matches_files():
    assert hp.list_presets() == ALL
    assert sorted(p.stem for p in PRESET_DIR.glob("*.toml")) == sorted(ALL)


@pytest.mark.parametrize("name", ALL)
def test_preset_loads_with_full_provenance(name):
    chip = load(name)
    assert isinstance(chip, Chip) and chip.name == name and hash(chip)
    assert chip.display_name == DISPLAY.get(name, f"Ascend {name}")
    assert [k for k, _ in chip.provenance] == list(FIELDS)
    for key, prov in chip.provenance:
        assert isinstance(prov, Provenance)
        assert prov.status in ("published", "announced", "derived", "estimated"), key
        assert prov.confidence in ("H", "M", "L"), key
        assert prov.source.strip(), key
        assert "seed" not in prov.source.lower(), key
        if prov.status != "published":
            assert prov.note.strip(), key
    assert load(name) is chip  # cached


@pytest.mark.parametrize("name", ALL)
def test_peaks_match_formula(name):
    ai, mhz, k0s = FACTS[name]
    chip = load(name)
    assert chip.cube_precisions == tuple(k0s)
    for precision, k0 in k0s.items():
        expected = ai * 16 * 16 * k0 * 2 * mhz * 1e6 / 1e12
        assert chip.peak_tflops(precision) == pytest.approx(expected, rel=1e-12)
    assert chip.peak_tflops("fp16") == pytest.approx(FP16_TF[name], abs=0.06)
    assert chip.peak_tflops_table() == {p: chip.peak_tflops(p) for p in k0s}


def test_910b2_figures():
    chip = load("910B2")
    assert chip.peak_tflops("fp16") == pytest.approx(24 * 4096 * 2 * 1.8e9 / 1e12)
    assert chip.vector_peak_gops("fp16") == pytest.approx(48 * 128 * 1.8)
    assert chip.vector_peak_gops("fp32") == pytest.approx(48 * 64 * 1.8)
    assert chip.hbm_bytes_per_ns == 1600 and chip.l2_bytes_per_ns == 5000
    assert chip.ridge_point("fp16") == pytest.approx(353.8944e12 / 1600e9)
    assert chip.ridge_point("fp16", level="l2") == pytest.approx(353.8944e12 / 5000e9)
    assert chip.ub_bytes == 192 * 1024 - 256 and chip.l1_bytes == 512 * 1024
    assert (chip.l0a_bytes, chip.l0b_bytes, chip.l0c_bytes) == (65536, 65536, 131072)
    assert chip.l2_bytes == 192 * 2**20 and chip.hbm_bytes == 64 * 2**30
    assert chip.has_fixpipe and chip.num_cores == 72


def test_310p3_vector_peak_counts_both_core_kinds():
    chip = load("310P3")
    assert chip.vector_peak_gops("fp16") == pytest.approx((8 * 128 * 1060 + 7 * 128 * 1000) / 1e3)
    assert not chip.has_fixpipe


def test_missing_precision_is_refused_with_allowed_list():
    with pytest.raises(InputError) as err:
        load("910").peak_tflops("bf16")
    msg = str(err.value)
    assert "Ascend 910" in msg and "'bf16'" in msg and "fp16, int8" in msg
    with pytest.raises(InputError, match="fp16, fp32, int16, int32"):
        load("910B2").vector_peak_gops("int4")
    with pytest.raises(InputError, match="'hbm' or 'l2'"):
        load("910B2").ridge_point("fp16", level="ddr")


def test_core_layout():
    b2 = load("910B2")
    assert b2.core_kinds() == ("AIC",) * 24 + ("AIV",) * 48
    names = b2.core_names()
    assert (names[0], names[23], names[24], names[71]) == ("AIC0", "AIC23", "AIV0", "AIV47")
    assert b2.cube_core_ids() == tuple(range(24))
    assert b2.vector_core_ids() == tuple(range(24, 72))
    assert b2.core_clocks_MHz() == (1800,) * 72
    p = load("310P3")
    assert p.core_kinds() == ("AICORE",) * 8 + ("VECTOR",) * 7
    assert p.core_names()[2] == "AICore2" and p.core_names()[8] == "VecCore0"
    assert p.vector_core_ids() == p.cube_core_ids() == tuple(range(8))
    assert p.core_clocks_MHz() == (1060,) * 8 + (1000,) * 7
    a = load("910")
    assert a.core_kinds() == ("AICORE",) * 32 and a.vector_cores == 0


def test_chip_attributes_follow_fields_table():
    assert NUMERIC_ATTRS == tuple(FIELDS)
    notes = Chip.__annotations__
    for key, spec in FIELDS.items():
        assert notes[key] == spec.kind.__name__, key
        assert spec.min <= spec.max and spec.step > 0
        assert spec.section in hp.SECTIONS
    for name in ALL:
        for key, value in load(name).values().items():
            assert type(value) is FIELDS[key].kind, (name, key)


# ---- overrides ---------------------------------------------------------------------------
def test_override_ai_cores_on_split_sets_vector_cores():
    chip = load("910B2", ai_cores=8)
    assert (chip.ai_cores, chip.vector_cores) == (8, 16)
    assert chip.peak_tflops("fp16") == pytest.approx(8 * 4096 * 2 * 1.8e9 / 1e12)
    assert chip.provenance_of("ai_cores").status == "override"
    assert chip.provenance_of("vector_cores").status == "override"
    assert "24" in chip.provenance_of("ai_cores").note
    assert chip.overridden == {"ai_cores": 8, "vector_cores": 16}
    assert chip.provenance_of("ub_KiB").status == "published"
    assert hash(chip) != hash(load("910B2")) and chip != load("910B2")


def test_override_clock_follows_only_where_equal():
    assert load("910B2", clock_MHz=1000).vector_clock_MHz == 1000
    p = load("310P3", clock_MHz=900)
    assert (p.clock_MHz, p.vector_clock_MHz) == (900, 1000)


def test_override_same_value_changes_nothing():
    base = load("910B2")
    same = base.with_overrides(ub_KiB=192, hbm_bandwidth_GBps=1600)
    assert same == base and same.overridden == {}


def test_chained_overrides_keep_the_preset_value_in_the_note():
    chip = load("910B2").with_overrides(ub_KiB=256).with_overrides(ub_KiB=128)
    assert chip.ub_KiB == 128 and "192" in chip.provenance_of("ub_KiB").note


def test_override_float_field_accepts_int():
    chip = load("910B2", hbm_bandwidth_GBps=3200)
    assert chip.hbm_bandwidth_GBps == 3200.0 and isinstance(chip.hbm_bandwidth_GBps, float)


@pytest.mark.parametrize("name, overrides, parts", [
    ("910B2", {"ub_kib": 128}, ["910B2 override: ub_kib", "128", "a numeric chip field", "ub_KiB"]),
    ("910B2", {"ai_cores": 0}, ["910B2 override: ai_cores", "0", "from 1 to 64"]),
    ("910B2", {"ai_cores": True}, ["910B2 override: ai_cores", "True", "an integer"]),
    ("910B2", {"ub_KiB": 96.5}, ["910B2 override: ub_KiB", "96.5", "an integer from 1 to 4096"]),
    ("910B2", {"ub_KiB": "big"}, ["910B2 override: ub_KiB", "'big'", "from 1 to 4096"]),
    ("910B2", {"hbm_bandwidth_GBps": float("nan")}, ["hbm_bandwidth_GBps", "nan", "finite"]),
    ("910B2", {"vector_cores": 40}, ["910B2 override: vector_cores", "40", "2 x ai_cores = 48"]),
    ("910B2", {"cluster_size": 30}, ["910B2 override: cluster_size", "30", "1 to ai_cores = 24"]),
    ("910B2", {"cluster_size": 8, "ai_cores": 4}, ["override: cluster_size", "8", "ai_cores = 4"]),
    ("910B2", {"vector_clock_MHz": 1000}, ["override: vector_clock_MHz", "1000", "1800"]),
    ("910", {"fixpipe_fixed_cycles": 86}, ["910 override: fixpipe_fixed_cycles", "86", "0:"]),
    ("910B2", {"ub_reserved_bytes": 100}, ["override: ub_reserved_bytes", "100", "multiple of"]),
    ("910B2", {"name": "x"}, ["910B2 override: name", "'x'", "a numeric chip field"]),
])
def test_bad_override(name, overrides, parts):
    with pytest.raises(InputError) as err:
        load(name, **overrides)
    for part in parts:
        assert part in str(err.value), (part, str(err.value))


def test_bad_preset_name():
    with pytest.raises(InputError) as err:
        load("910D")
    assert "preset" in str(err.value) and "'910D'" in str(err.value) and "910B1, 910B2" in str(
        err.value)


# ---- user files ----------------------------------------------------------------------------
def test_user_file_round_trip(tmp_path):
    path = tmp_path / "my_chip.toml"
    shutil.copy(PRESET_DIR / "910B2.toml", path)
    chip = load_file(path)
    assert chip == load("910B2") and chip.origin == "my_chip.toml"
    assert load_file(str(path), ub_KiB=256).ub_KiB == 256


@pytest.mark.parametrize("name", ALL)
def test_to_toml_round_trip_keeps_overrides(name):
    chip = load(name, ai_cores=4, l2_bandwidth_GBps=1234.5)
    back = load_text(chip.to_toml(), origin="saved.toml")
    assert back == chip and back.overridden == chip.overridden
    assert load_text(load(name).to_toml().encode()) == load(name)


def test_missing_and_oversized_files(tmp_path):
    with pytest.raises(InputError, match="an existing TOML file"):
        load_file(tmp_path / "nope.toml")
    big = tmp_path / "big.toml"
    big.write_text("#" * 300_000)
    with pytest.raises(InputError, match="big.toml: size"):
        load_file(big)
    bad = tmp_path / "latin.toml"
    bad.write_bytes(b"name = \"\xff\"")
    with pytest.raises(InputError, match="UTF-8"):
        load_file(bad)


# ---- one test per validation rule, on a written bad file -------------------------------------
def _set(key, literal):
    def edit(text):
        new, n = re.subn(rf"^({key} = \{{ value = )[^,]+", lambda m: m.group(1) + literal, text,
                         flags=re.M)
        assert n == 1, key
        return new
    return edit


def _part(key, part, literal):
    def edit(text):
        new, n = re.subn(rf'^({key} = \{{.*?{part} = )"[^"]*"', lambda m: m.group(1) + literal,
                         text, flags=re.M)
        assert n == 1, key
        return new
    return edit


def _sub(pattern, repl, flags=re.M):
    def edit(text):
        new, n = re.subn(pattern, repl, text, flags=flags)
        assert n >= 1, pattern
        return new
    return edit


def _after(section, line):
    return _sub(rf"^\[{section}\]$", f"[{section}]\n{line}")


def _chain(*edits):
    def edit(text):
        for e in edits:
            text = e(text)
        return text
    return edit


ENTRY = 'value = 1, source = "s", status = "published", confidence = "H", note = ""'
BAD_FILES = [  # (id, preset, edit, substrings the message must contain: where, value, allowed)
    ("unknown key", "910B2", _after("memory", f"ub_kib = {{ {ENTRY} }}"),
     ["bad.toml: memory.ub_kib", "a key of [memory]", "Did you mean 'ub_KiB'"]),
    ("unknown top-level", "910B2", _sub(r"^name = ", 'colour = "red"\nname = '),
     ["bad.toml: colour", "'red'", "a top-level key"]),
    ("wrong section", "910B2", _after("cores", f"ub_KiB = {{ {ENTRY} }}"),
     ["bad.toml: cores.ub_KiB", "belongs in [memory]"]),
    ("missing key", "910B2", _sub(r"^ub_KiB = .*\n", ""),
     ["bad.toml: memory.ub_KiB", "<missing>", "inline table"]),
    ("missing section", "910B2", _sub(r"^\[vector\]\n(?:[^\[].*\n)*", "", re.M),
     ["bad.toml: [vector]", "<missing>", "a [vector] table"]),
    ("string value", "910B2", _set("ub_KiB", '"192"'),
     ["bad.toml: memory.ub_KiB.value", "'192'", "an integer from 1 to 4096 KiB"]),
    ("bool is not int", "910B2", _set("ai_cores", "true"),
     ["bad.toml: cores.ai_cores.value", "True", "an integer from 1 to 64"]),
    ("float for int", "910B2", _set("ai_cores", "24.5"),
     ["cores.ai_cores.value", "24.5", "an integer from 1 to 64"]),
    ("above range", "910B2", _set("clock_MHz", "5000"),
     ["cores.clock_MHz.value", "5000", "from 100 to 3000 MHz"]),
    ("below range", "910B2", _set("hbm_bandwidth_GBps", "-1"),
     ["memory.hbm_bandwidth_GBps.value", "-1.0", "from 1 to 100000 GB/s"]),
    ("zero where 0 is not absent", "910B2", _set("ub_KiB", "0"),
     ["memory.ub_KiB.value", "0", "from 1 to 4096 KiB"]),
    ("negative k0", "910B2", _set("cube_k0_int4", "-4"),
     ["cube.cube_k0_int4.value", "-4", "from 0 to 256"]),
    ("bare number", "910B2", _sub(r"^ub_KiB = .*$", "ub_KiB = 192"),
     ["bad.toml: memory.ub_KiB", "192", "inline table"]),
    ("missing source", "910B2", _sub(r'^(ub_KiB = \{ value = 192), source = "[^"]*"', r"\1"),
     ["bad.toml: memory.ub_KiB.source", "<missing>", "inline table"]),
    ("unknown part", "910B2", _sub(r"^(ub_KiB = \{ value = 192),", r'\1, colour = "x",'),
     ["memory.ub_KiB.colour", "'x'", "value, source, status, confidence, note"]),
    ("bad status", "910B2", _part("ub_KiB", "status", '"guess"'),
     ["memory.ub_KiB.status", "'guess'", "published, announced, derived, estimated"]),
    ("bad confidence", "910B2", _part("ub_KiB", "confidence", '"X"'),
     ["memory.ub_KiB.confidence", "'X'", "one of H"]),
    ("estimate without note", "910B2", _part("sync_all_cycles", "note", '""'),
     ["transfer.sync_all_cycles.note", "''", "what an estimated value rests on"]),
    ("bad source", "910B2", _part("ub_KiB", "source", '""'),
     ["memory.ub_KiB.source", "''", "1 to 300 printable"]),
    ("architecture", "910B2", _sub(r'^architecture = .*$', 'architecture = "hybrid"'),
     ["bad.toml: architecture", "'hybrid'", "'split'", "'coupled'"]),
    ("vector dtype", "910B2", _sub(r"^vector_dtypes = .*$", 'vector_dtypes = ["fp16", "fp8"]'),
     ["bad.toml: vector_dtypes", "'fp8'", "distinct names from fp16"]),
    ("empty name", "910B2", _sub(r'^name = .*$', 'name = ""'),
     ["bad.toml: name", "''", "1 to 64 printable"]),
    ("missing description", "910B2", _sub(r"^description = .*\n", ""),
     ["bad.toml: description", "<missing>", "1 to 500"]),
    ("split AIV != 2 AIC", "910B2", _set("vector_cores", "40"),
     ["bad.toml: cores.vector_cores", "40", "exactly 2 x ai_cores = 48"]),
    ("split vector clock", "910B2", _set("vector_clock_MHz", "1000"),
     ["bad.toml: cores.vector_clock_MHz", "1000", "equal to clock_MHz = 1800"]),
    ("split without fixpipe", "910B2", _set("fixpipe_gm_bytes_per_cycle", "0"),
     ["transfer.fixpipe_gm_bytes_per_cycle", "0.0", "greater than 0"]),
    ("coupled with fixpipe", "910", _set("fixpipe_fixed_cycles", "86"),
     ["bad.toml: transfer.fixpipe_fixed_cycles", "86", "0: coupled chips have no fixpipe"]),
    ("cube m0", "910B2", _set("cube_m0", "32"), ["bad.toml: cube.cube_m0", "32", "16"]),
    ("cube n0", "310P3", _set("cube_n0", "8"), ["bad.toml: cube.cube_n0", "8", "16"]),
    ("k0 multiple of 4", "910B2", _set("cube_k0_int8", "30"),
     ["bad.toml: cube.cube_k0_int8", "30", "a multiple of 4"]),
    ("no cube precision", "910", _chain(_set("cube_k0_fp16", "0"), _set("cube_k0_int8", "0")),
     ["bad.toml: cube.cube_k0_fp16", "0", "at least one precision"]),
    ("UB holds no block", "910B2", _chain(_set("ub_KiB", "1"), _set("ub_reserved_bytes", "1024")),
     ["bad.toml: memory.ub_KiB", "1", "at least 2 KiB", "32-byte block"]),
    ("alignment power of two", "910B2", _set("l1_align_bytes", "48"),
     ["bad.toml: memory.l1_align_bytes", "48", "a power of two"]),
    ("size vs alignment", "910B2", _chain(_set("l0ab_align_bytes", "4096"), _set("l0a_KiB", "2")),
     ["bad.toml: memory.l0a_KiB", "2", "multiple of l0ab_align_bytes = 4096"]),
    ("reserve vs alignment", "910B2", _set("ub_reserved_bytes", "100"),
     ["bad.toml: memory.ub_reserved_bytes", "100", "multiple of ub_align_bytes = 32"]),
    ("cluster larger than cores", "910B3", _set("cluster_size", "32"),
     ["bad.toml: cores.cluster_size", "32", "from 1 to ai_cores = 20"]),
    ("cluster above range", "910B2", _set("cluster_size", "65"),
     ["cores.cluster_size.value", "65", "from 1 to 64"]),
    ("TOML syntax", "910B2", lambda t: t + "\nbroken = {\n",
     ["bad.toml: TOML", "valid TOML document"]),
]


@pytest.mark.parametrize("name, edit, parts", [c[1:] for c in BAD_FILES],
                         ids=[c[0] for c in BAD_FILES])
def test_bad_file(tmp_path, name, edit, parts):
    path = tmp_path / "bad.toml"
    path.write_text(edit((PRESET_DIR / f"{name}.toml").read_text(encoding="utf-8")),
                    encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_file(path)
    for part in parts:
        assert part in str(err.value), (part, str(err.value))
    assert err.value.field and err.value.allowed


# ---- translations and layering ---------------------------------------------------------------
def _catalogue(lang):
    text = (LOCALES / lang / "chip_fields.toml").read_text(encoding="utf-8")
    return flatten_table(tomllib.loads(text))


def test_chip_field_catalogues():
    en, zh = _catalogue("en"), _catalogue("zh")
    assert en.keys() == zh.keys()
    fmt = string.Formatter()
    for msg_id in en:
        holes = [{n for _, n, _, _ in fmt.parse(c[msg_id]) if n} for c in (en, zh)]
        assert holes[0] == holes[1], msg_id
        assert en[msg_id].strip() and zh[msg_id].strip(), msg_id
    for spec in FIELDS.values():
        assert spec.label_id in en and spec.help_id in en
    for status in hp.STATUSES:
        assert f"provenance.status.{status}" in en
    for arch in hp.ARCHITECTURES:
        assert f"architecture.{arch}" in en
    assert {k.split(".")[0] for k in en} <= {"field", "provenance", "architecture", "chip_section"}


def test_presets_import_no_upper_layer():
    banned = {"kernels", "explorer", "streamlit", "plotly", "numba", "pandas"}
    for path in PRESET_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            assert not {n.split(".")[0] for n in names} & banned, (path.name, names)

"""Today's chips (issue 21): the 910C (one die of the Atlas A3 package), 950PR and 950DT.

Their derived peaks reproduce the figures of the Ascend 950 whitepaper's Table 3-1 and the
launch announcement; announced numbers say "announced"; the 910C's package totals are twice
one die; a chip file written before the package section or the 8-bit precisions still
loads; the 4:2 sparse MMAD is refused where the chip's data says it is absent, naming the
field, the value and the presets that have it; the chip page and the presets command show
them side by side.
"""
from __future__ import annotations

import re

import pytest

import hardware_presets as hp
from explorer import cli
from explorer.core import chip_compare as cc
from explorer.core.i18n import render
from hardware_presets import FIELDS, InputError, load, load_text
from hardware_presets.fields import OPTIONAL_FIELDS
from kernels.gemm import params as gemm_params
from tests.apptest_helpers import open_page

NEW = ("910C", "950PR", "950DT")
#: Table 3-1 of the Ascend 950 whitepaper (TFLOPS, cube only) for the cube counts of the
#: presets: 32 (950PR's larger part) and 36 (950DT's largest, the full die)
TABLE_3_1 = {"950PR": {"bf16": 432, "hf32": 216, "fp8_e4m3": 865, "hif8": 865,
                       "mxfp8": 865, "mxfp4": 1730},
             "950DT": {"bf16": 486, "hf32": 243, "fp8_e4m3": 973, "hif8": 973,
                       "mxfp8": 973, "mxfp4": 1946}}
#: announced at Huawei Connect 2025: HBM (GB, GB/s) and the series' peaks (TFLOPS)
ANNOUNCED_HBM = {"950PR": (128, 1600), "950DT": (144, 4000)}
ANNOUNCED_PEAKS = {"fp8_e4m3": 1000, "mxfp4": 2000}


# ---- the presets and their numbers ----------------------------------------------------------
@pytest.mark.parametrize("name", ("950PR", "950DT"))
def test_950_peaks_reproduce_the_whitepaper_table(name):
    chip = load(name)
    for precision, tflops in TABLE_3_1[name].items():
        assert chip.peak_tflops(precision) == pytest.approx(tflops, abs=0.7), precision
    assert "int4" not in chip.cube_precisions  # the arch-3510 cube type list has no S4


def test_950dt_peaks_are_the_announced_pflops_within_rounding():
    chip = load("950DT")  # the 36-core die: what "1 PFLOPS FP8, 2 PFLOPS MXFP4" rounds
    for precision, tflops in ANNOUNCED_PEAKS.items():
        assert chip.peak_tflops(precision) == pytest.approx(tflops, rel=0.03), precision


@pytest.mark.parametrize("name", ("950PR", "950DT"))
def test_announced_numbers_read_announced(name):
    chip = load(name)
    assert (chip.hbm_GiB, chip.hbm_bandwidth_GBps) == ANNOUNCED_HBM[name]
    for key in ("hbm_GiB", "hbm_bandwidth_GBps"):
        prov = chip.provenance_of(key)
        assert prov.status == "announced" and "Huawei Connect 2025" in prov.source, key
        assert prov.note.strip() and prov.note_zh.strip(), key
    assert chip.status_counts()["announced"] == 2


@pytest.mark.parametrize("name", ("950PR", "950DT"))
def test_950_cost_model_figures_are_labelled_carried_over_estimates(name):
    chip = load(name)
    carried = [k for k, spec in FIELDS.items() if spec.section == "transfer"
               and chip.provenance_of(k).status == "estimated"]
    assert len(carried) >= 20  # the queue and rate figures no one has calibrated
    for key in carried:
        note = chip.provenance_of(key).note
        assert "910B2" in note and ("950" in note or "128 B" in note), key


@pytest.mark.parametrize("name", NEW)
def test_every_number_has_a_source_a_status_and_both_notes(name):
    chip = load(name)
    assert sum(chip.status_counts().values()) == len(FIELDS)
    for key, prov in chip.provenance:
        assert prov.source.strip() and prov.status in hp.STATUSES[:-1], key
        assert prov.note.strip() and prov.note_zh.strip(), key


def test_910c_is_one_die_and_its_package_twice_it():
    die = load("910C")
    assert (die.ai_cores, die.vector_cores, die.hbm_GiB, die.hbm_bandwidth_GBps) == \
        (24, 48, 64, 1600)
    assert (die.package_devices, die.package_dies) == (2, 2)
    assert (die.package_total("ai_cores"), die.package_total("vector_cores")) == (48, 96)
    assert (die.package_total("hbm_GiB"), die.package_total("hbm_bandwidth_GBps")) == \
        (128, 3200)  # the 910C's announced 128 GB at 3.2 TB/s
    assert die.package_peak_tflops("fp16") == pytest.approx(2 * 24 * 4096 * 2 * 1.8e9 / 1e12)
    assert die.provenance_of("clock_MHz").status == "estimated"  # assumed as 910B2's
    with pytest.raises(InputError, match="one of ai_cores, vector_cores"):
        die.package_total("l2_MiB")


def test_single_die_chips_are_one_device():
    for name in ("910B2", "950PR"):
        chip = load(name)
        assert chip.package_devices == 1
        assert chip.package_total("hbm_GiB") == chip.hbm_GiB
        assert chip.package_peak_tflops("fp16") == chip.peak_tflops("fp16")
    assert load("950PR").package_dies == 2  # two AI dies seen as one device


# ---- old files and validation -----------------------------------------------------------------
def _old_style(name: str) -> str:
    """A preset's text as a file written before the package section and the 8-bit cube
    precisions: those keys and the section removed."""
    text = (hp.loader.PRESET_DIR / f"{name}.toml").read_text(encoding="utf-8")
    text = text.split("\n[package]\n")[0] + "\n"
    keys = "|".join(k for k in OPTIONAL_FIELDS if FIELDS[k].section != "package")
    return re.sub(rf"^({keys}) = .*\n", "", text, flags=re.M)


def test_an_old_chip_file_loads_as_one_die_without_the_new_modes():
    chip = load_text(_old_style("910B2"), origin="old.toml")
    assert (chip.package_devices, chip.package_dies, chip.die_to_die_GBps) == (1, 1, 0.0)
    assert chip.cube_precisions == load("910B2").cube_precisions and not chip.cube_sparse_42
    prov = chip.provenance_of("package_devices")
    assert (prov.source, prov.status) == ("not in the file", "estimated")
    assert load_text(chip.to_toml()) == chip  # saved again, it carries the defaults


@pytest.mark.parametrize("edit, parts", [
    (lambda t: re.sub(r"^(package_devices = \{ value = )2", r"\g<1>3", t, flags=re.M),
     ["910C.toml: package.package_devices", "3", "a divisor of package_dies = 2"]),
    (lambda t: re.sub(r"^(package_dies = \{ value = )2", r"\g<1>1", t, flags=re.M),
     ["910C.toml: package.package_devices", "2", "a divisor of package_dies = 1"]),
    (lambda t: re.sub(r"^(die_to_die_GBps = \{ value = )0.0", r"\g<1>400.0", t, flags=re.M)
     .replace("value = 2, source = \"Huawei CloudMatrix384", "value = 1, source = \"H")
     .replace("package_devices = { value = 2", "package_devices = { value = 1"),
     ["910C.toml: package.die_to_die_GBps", "400.0", "needs two dies"]),
    (lambda t: re.sub(r"^(cube_k0_int8 = \{ value = )32", r"\g<1>0", t, flags=re.M),
     ["910C.toml: cube.cube_sparse_42", "1", "MmadWithSparse multiplies int8"]),
])
def test_package_and_feature_rules(edit, parts):
    text = edit((hp.loader.PRESET_DIR / "910C.toml").read_text(encoding="utf-8"))
    with pytest.raises(InputError) as err:
        load_text(text, origin="910C.toml")
    for part in parts:
        assert part in str(err.value), (part, str(err.value))


# ---- the feature refusal --------------------------------------------------------------------
SPARSE = {"M": 64, "N": 64, "K": 256, "dtype_in": "int8", "dtype_out": "int32",
          "sparsity": "4:2", "base_k": 64, "block_dim": 1}


@pytest.mark.parametrize("name", ("950PR", "950DT", "910", "310P3"))
def test_sparse_mmad_is_refused_where_the_chip_lacks_it(name):
    with pytest.raises(InputError) as err:
        gemm_params.check(load(name), SPARSE)
    exc = err.value
    assert (exc.field, exc.value) == ("params.sparsity", "4:2")
    assert "cube_sparse_42 = 0" in exc.allowed and load(name).display_name in exc.allowed
    assert "910B1, 910B2, 910B3, 910B4, 910C" in exc.allowed  # the presets that have it
    zh = render(exc.allowed, "zh")
    assert "cube_sparse_42 = 0" in zh and "稀疏" in zh


def test_sparse_mmad_runs_where_the_chip_has_it():
    for name in ("910B2", "910C"):
        assert gemm_params.check(load(name), SPARSE)["sparsity"] == "4:2"


# ---- the comparison, the chip page and the presets command -----------------------------------
def test_a_figure_is_as_firm_as_its_weakest_input():
    b2, c, pr = (load(n) for n in ("910B2", "910C", "950PR"))
    peak = ("ai_cores", "clock_MHz", "cube_k0_fp16")
    assert cc.status_of(b2, peak) == "derived"  # computed from published numbers
    assert cc.status_of(c, peak) == "estimated"  # the 910C's clock is assumed
    assert cc.status_of(pr, ("hbm_bandwidth_GBps",)) == "announced"
    assert cc.status_of(pr, ("package_devices", "hbm_GiB")) == "announced"
    rows = dict(cc.comparison(cc.compared_chips()))
    assert rows["ui.chip.compare.row.peak_fp8_e4m3"][0] == (None, "derived")  # 910B2 lacks it
    assert rows["ui.chip.compare.row.package_hbm_GiB"][1] == (128, "derived")


@pytest.mark.parametrize("lang, title", [("en", "Today's chips next to 910B2"),
                                         ("zh", "今日芯片与 910B2 对比")])
def test_chip_page_compares_todays_chips(lang, title):
    at = open_page("explorer/ui/pages/chip.py", {"lang": lang})
    assert title in [s.value for s in at.subheader]
    names = [load(n).display_name for n in cc.COMPARED]
    table = next(d.value for d in at.dataframe if list(d.value.columns) == names)
    assert table.loc[:, "Ascend 950DT"].str.startswith("◆").sum() >= 4  # HBM rows
    assert table.loc[:, "Atlas A3 · Ascend 910C die"].str.startswith("⚠").any()
    assert any(c.key == "chip_compare" for c in at.get("plotly_chart"))


def test_presets_command_lists_todays_chips_with_their_provenance(capsys):
    assert cli.main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for name in NEW:
        line = next(x for x in lines if x.startswith(name + " "))
        counts = ", ".join(f"{n} {s}" for s, n in load(name).status_counts().items())
        assert line.endswith(f"provenance: {counts}")
    assert "2 announced" in next(x for x in lines if x.startswith("950DT "))
    package = lines[lines.index(next(x for x in lines if x.startswith("910C "))) + 1]
    assert package.split() [:6] == ["package:", "2", "devices", "on", "2", "dies,"]
    assert "48 AI cores + 96 vector, HBM 128 GiB at 3200 GB/s, fp16 707.8 TF" in package

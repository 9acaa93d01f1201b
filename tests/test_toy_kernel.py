"""Adding a kernel is one folder: tests/toy_kernel/ holds a record (parameters, program,
numerics, advisor hints, explanation), its messages and a gallery example, and once
registered it is in the CLI, sweeps, compare, reports, the advisor and the gallery with
no other file changed."""
from __future__ import annotations

import json

import pytest

import kernels
from explorer import cli
from explorer.core import Scenario, gallery, i18n, simulate
from explorer.core.advisor import advise
from explorer.core.sweep import knobs
from explorer.plots.report_figures import default_explanation, figures
from tests.toy_kernel import RECORD


@pytest.fixture()
def toy():
    with kernels.registered(RECORD):
        i18n.catalogue.cache_clear()
        yield RECORD
    i18n.catalogue.cache_clear()


@pytest.fixture()
def scenario_file(tmp_path):
    def write(name: str = "toy.json", **params) -> str:
        path = tmp_path / name
        path.write_text(json.dumps({"kernel": "toy_scale", "params": params}))
        return str(path)
    return write


def test_unknown_until_registered():
    with pytest.raises(Exception, match="toy_scale"):
        Scenario.make(kernel="toy_scale")


def test_runs_in_time_and_value(toy):
    result = simulate(Scenario.make(kernel="toy_scale", params={"n": 10000, "tile": 1024}))
    assert result.numerics.passed and result.numerics.verified == 10000
    assert result.metrics["instructions"] == 3 * 10  # CopyIn, Muls, CopyOut per tile
    assert set(result.timeline["op"]) == {"CopyIn x", "Muls", "CopyOut y"}


def test_cli_run_and_refusal(toy, scenario_file, capsys):
    assert cli.main(["run", scenario_file(n=4096), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scenario"]["kernel"] == "toy_scale" and out["numerics"]["passed"]
    assert cli.main(["run", scenario_file("bad.json", tile=1001)]) == 2
    assert "tile" in capsys.readouterr().err


def test_sweep(toy, scenario_file, tmp_path, capsys):
    assert "tile" in knobs("toy_scale") and "a" in knobs("toy_scale")
    out = tmp_path / "sweep.csv"
    assert cli.main(["sweep", scenario_file(), "--param", "tile=1024,4096", "-o", str(out)]) == 0
    assert len(out.read_text().strip().splitlines()) == 3  # header + 2 points


def test_compare(toy, scenario_file, capsys):
    a, b = scenario_file("a.json", buffer_num=1), scenario_file("b.json", buffer_num=2)
    assert cli.main(["compare", a, b, "--json"]) == 0
    assert "buffer_num" in capsys.readouterr().out


def test_report(toy, scenario_file, tmp_path):
    out = tmp_path / "toy.html"
    assert cli.main(["report", scenario_file(), "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "The toy kernel multiplies every element" in page
    assert "toy scale, a = 3.0" in page  # the record's roofline label
    result = simulate(Scenario.make(kernel="toy_scale"))
    assert [k for k, _ in figures(result)][0] == "timeline"  # no extra figures named
    assert "乘以 a" in default_explanation("toy_scale", "zh")


def test_advisor(toy):
    result = simulate(Scenario.make(kernel="toy_scale", params={"buffer_num": 1}))
    advice = advise(result)
    tips = {tip.msg_id: tip for tip in advice.tips}
    assert tips["advisor.tip.buffer_num"].changes == {"buffer_num": 2}
    assert tips["advisor.tip.block_dim"].changes["block_dim"] > 8  # 8 of the vector cores
    occupancy = [c for c in advice.checks if c.key == "buffer_occupancy"][0]
    assert occupancy.value is None  # the toy states no buffer plan


def test_gallery(toy):
    assert "toy_single" in gallery.ids()
    loaded = gallery.load("toy_single")
    assert loaded.kernel == "toy_scale" and loaded.params_dict["buffer_num"] == 1
    assert i18n.t("gallery.toy_single", "zh") == "玩具算子, 单缓冲"

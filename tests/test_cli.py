"""The command line: ``run`` (text, --json, --trace, --engine), ``presets`` and exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hardware_presets as hp
from explorer import cli
from explorer.core import Scenario, gallery
from explorer.core.emulator.engine import DeadlockError
from explorer.core.i18n import t
from explorer.core.metrics import METRICS
from kernels import models
from kernels.vector_add import kernel as va
from tests.waiting import DEADLINE_S

REPO_ROOT = Path(__file__).resolve().parent.parent
SMALL = {"n": 5000, "block_dim": 3, "tile": 1024}


def write(tmp_path: Path, text: str, name: str = "scenario.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture
def scenario_file(tmp_path) -> str:
    return write(tmp_path, Scenario.make(params=SMALL, name="cli test").to_toml())


def test_run_prints_every_metric(scenario_file, capsys):
    assert cli.main(["run", scenario_file]) == cli.EXIT_OK
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == "Ascend 910B2 · vector_add"
    for name in METRICS:
        label = t(f"metric.{name}.label")
        assert any(line.strip().startswith(label) for line in lines), label
    instructions = next(line for line in lines if line.strip().startswith("Instructions"))
    assert instructions.split()[-1] == "20"  # 5 tiles x 4 instructions
    assert "numerics: Passed: every verified element" in out  # tests/test_verdict.py
    assert "5,000 of 5,000 output elements verified" in out


def test_run_json(scenario_file, capsys):
    assert cli.main(["run", scenario_file, "--json"]) == cli.EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"scenario", "metrics", "numerics"}
    assert set(doc["metrics"]) == set(METRICS)
    assert doc["metrics"]["instructions"] == 20
    # 4 tiles of 2048 B and a last one of 904 fp16 = 1808 B padded to 1824 B, three streams
    assert doc["metrics"]["hbm_bytes"] == 3 * (4 * 2048 + 1824)
    assert doc["numerics"]["passed"] is True
    assert doc["numerics"]["verified"] == doc["numerics"]["total"] == 5000
    assert doc["numerics"]["max_rel_error"] <= doc["numerics"]["bound"] == 2.0 ** -11
    assert doc["numerics"]["norm_rel_error"] <= doc["numerics"]["norm_bound"] == \
        pytest.approx(2.0 ** -11)  # allowed = u |reference|: the norm-wise bound is u
    assert doc["numerics"]["verdict"][0].startswith("Passed: every verified element")
    assert Scenario.from_dict(doc["scenario"]) == Scenario.from_toml(
        Path(scenario_file).read_text(encoding="utf-8"))


def test_run_json_scenario_file_and_reference_engine_agree(tmp_path, capsys):
    path = write(tmp_path, Scenario.make(params=SMALL).to_json(), "s.json")
    assert cli.main(["run", path, "--json"]) == 0
    jit = json.loads(capsys.readouterr().out)["metrics"]
    assert cli.main(["run", path, "--json", "--engine", "reference"]) == 0
    ref = json.loads(capsys.readouterr().out)["metrics"]
    assert ref.keys() == jit.keys()
    for key, value in jit.items():
        if isinstance(value, str):
            assert ref[key] == value
        else:
            assert ref[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key


def test_run_trace(scenario_file, tmp_path, capsys):
    out = tmp_path / "trace.json"
    assert cli.main(["run", scenario_file, "--trace", str(out)]) == 0
    assert "numerics: Passed:" in capsys.readouterr().out
    doc = json.loads(out.read_text(encoding="utf-8"))
    events = doc["traceEvents"]
    # one X event per instruction on its pipe's thread (tids 0..6), the copies' flights on
    # "<pipe> in flight k" threads
    assert sum(e["ph"] == "X" and e["tid"] < 7 for e in events) == 20
    assert any(e["ph"] == "X" and e["tid"] >= 7 for e in events)
    # processes named as msprof names them, labelled as the chip does (test_trace_format.py)
    assert {e["args"]["name"] for e in events if e["name"] == "process_name"} == \
        {"core0.veccore0", "core0.veccore1", "core1.veccore0", "HBM / L2"}
    assert {e["args"]["labels"] for e in events if e["name"] == "process_labels"} == \
        {"AIV0", "AIV1", "AIV2"}


@pytest.mark.parametrize("text,field", [
    ("[params]\ntile = 24\n", "params.tile"),
    ("[params]\nn = 0\n", "params.n"),
    ("[params]\nblock_dim = 49\n", "params.block_dim"),
    ('preset = "910D"\n', "preset"),
    ("seed = -1\n", "seed"),
    ("colour = 1\n", "colour"),
    ("[params\n", "scenario.toml"),
    ('[overrides]\nub_KiB = 0\n', "ub_KiB"),
])
def test_bad_scenario_file_exits_2_naming_the_field(tmp_path, capsys, text, field):
    assert cli.main(["run", write(tmp_path, text)]) == cli.EXIT_INPUT == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: ")
    assert field in err


def test_missing_file_exits_2(tmp_path, capsys):
    missing = str(tmp_path / "nope.toml")
    assert cli.main(["run", missing]) == 2
    err = capsys.readouterr().err
    assert "SCENARIO" in err and "nope.toml" in err
    assert cli.main(["run", str(tmp_path)]) == 2  # a directory is not a scenario file


def test_run_says_what_quantised_inputs_lost(capsys):
    """The MXFP4 weights of the gallery's linear layer: one line per quantised operand
    (the pages' table), and the same figures under "quantization" in --json."""
    assert cli.main(["run", "linear_mxfp4_down", "--json"]) == 0
    lost = json.loads(capsys.readouterr().out)["quantization"]
    assert list(lost) == ["W"] and lost["W"]["fmt"] == "mxfp4"
    assert 0 < lost["W"]["flushed"] < lost["W"]["nonzero"]  # small neighbours of outliers
    assert cli.main(["run", "linear_mxfp4_down"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "inputs:" in line]
    assert lines == [
        f"  inputs: W stored as mxfp4: norm-wise error {lost['W']['norm_rel']:.3%} (bf16: "
        f"{lost['W']['bf16_norm_rel']:.3%}); worst element {lost['W']['bound_ratio']:.3f} "
        f"of its bound; {lost['W']['flushed']:,} of {lost['W']['nonzero']:,} nonzero values "
        "stored as 0."]
    assert cli.main(["run", "double_buffer_b", "--json"]) == 0  # nothing stored quantised
    assert "quantization" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_gallery_lists_the_ids_a_scenario_argument_takes(capsys, lang):
    assert cli.main(["gallery", "--lang", lang]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == gallery.ids()
    for line, entry in zip(lines, gallery.entries()):
        scenario = gallery.load(entry.id)
        assert line.split()[1:3] == [scenario.kernel, scenario.preset]
        assert line.endswith(t(entry.title_id, lang))


def test_a_reader_that_leaves_early_gets_no_traceback():
    """`ascend-explorer presets | head -1`: the pipe closes before the output is written."""
    proc = subprocess.Popen([sys.executable, "-m", "explorer", "presets"], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the command prints
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=DEADLINE_S) == 0 and err == ""


def test_a_gallery_id_runs_from_any_folder(tmp_path, monkeypatch, capsys):
    """An installed package's users name a gallery scenario instead of a path into
    site-packages; a file of that name in the folder still wins, and an unknown name is
    refused with the gallery's ids."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "double_buffer_b", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["scenario"]
    assert shown == gallery.load("double_buffer_b").to_dict()
    (tmp_path / "double_buffer_b").write_text('preset = "910B4"\nkernel = "vector_add"\n')
    assert cli.main(["run", "double_buffer_b", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scenario"]["preset"] == "910B4"
    assert cli.main(["run", "no_such_lesson"]) == 2
    err = capsys.readouterr().err
    assert "no_such_lesson" in err and "gallery id" in err and "double_buffer_a" in err


def test_oversized_file_exits_2(tmp_path, capsys):
    path = write(tmp_path, "# " + "x" * cli.MAX_SCENARIO_BYTES + "\n")
    assert cli.main(["run", path]) == 2
    assert "SCENARIO" in capsys.readouterr().err


def test_huge_integer_in_file_exits_2(tmp_path, capsys):
    assert cli.main(["run", write(tmp_path, "[params]\nn = 1" + "0" * 400 + "\n")]) == 2
    assert "params.n" in capsys.readouterr().err


def test_failed_numerics_exit_3(scenario_file, capsys, monkeypatch, fresh_numerics):
    monkeypatch.setattr(va, "unit_roundoff", lambda params: 0.0)  # fp16 rounding now "fails"
    assert cli.main(["run", scenario_file]) == cli.EXIT_NUMERICS == 3
    assert "numerics: Failed:" in capsys.readouterr().out


def test_deadlock_exits_4(scenario_file, capsys, monkeypatch):
    simulate_module = sys.modules["explorer.core.simulate"]

    def deadlocked(program, chip, engine="jit"):
        raise DeadlockError(np.arange(len(program)), program)

    monkeypatch.setattr(simulate_module, "run", deadlocked)
    assert cli.main(["run", scenario_file]) == cli.EXIT_DEADLOCK == 4
    assert "deadlock" in capsys.readouterr().err


def test_usage_errors_are_argparse_exits(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main([])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        cli.main(["run", "x.toml", "--engine", "warp"])
    assert info.value.code == 2


def _check_presets_listing(out: str):
    lines = [line for line in out.strip().splitlines() if not line[0].isspace()]
    assert len(lines) == len(hp.list_presets())  # a package's totals are indented lines
    for line, name in zip(lines, hp.list_presets()):
        chip = hp.load(name)
        assert line.split()[0] == name
        assert chip.display_name in line
        for precision in chip.cube_precisions:
            k0 = getattr(chip, f"cube_k0_{precision}")
            peak = chip.ai_cores * chip.cube_m0 * chip.cube_n0 * k0 * 2 * chip.clock_MHz / 1e6
            assert f"{precision} {peak:.1f} TF" in line
    assert "fp16 353.9 TF" in lines[1]  # 910B2: 24 x 16^3 x 2 x 1.8 GHz


def test_presets_in_process(capsys):
    assert cli.main(["presets"]) == 0
    _check_presets_listing(capsys.readouterr().out)


def test_presets_subprocess():
    proc = subprocess.run([sys.executable, "-m", "explorer", "presets"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=DEADLINE_S)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    _check_presets_listing(proc.stdout)


def test_run_decode_prints_the_step(tmp_path, capsys):
    params = {"model": "llama3-8b", "batch": 2, "mean_len": 256, "max_len": 512}
    path = write(tmp_path, Scenario.make(kernel="decode", params=params).to_toml())
    assert cli.main(["run", path, "--json"]) == 0
    step = json.loads(capsys.readouterr().out)["decode_step"]
    assert step["layers"] == 32 and step["fits_hbm"]
    assert step["step_ms"] * 1e3 == pytest.approx(32 * step["layer_us"] + step["lm_head_us"])
    per_op = {k: v for k, v in step.items() if k.endswith("_ms_per_step")}
    assert len(per_op) >= 10 and sum(per_op.values()) == pytest.approx(step["step_ms"])
    assert step["linear_us_per_layer"] * 32 / 1e3 == pytest.approx(
        sum(per_op[f"{op}_ms_per_step"] for op in ("qkv", "o_proj", "gate_up", "down")))
    assert step["tokens_per_s"] == pytest.approx(2 / (step["step_ms"] / 1e3))
    assert cli.main(["run", path]) == 0
    assert "lm_head_ms_per_step" in capsys.readouterr().out


@pytest.mark.parametrize("kind, text, says", [
    ("scenario", Scenario.make(params=SMALL, name="v").to_toml(), "ok: scenario v"),
    ("chip", (Path(hp.__file__).parent / "910B4.toml").read_text(), "ok: chip"),
    ("model", (Path(models.__file__).parent / "llama3_8b.toml").read_text(),
     "ok: model Llama 3 8B")])
def test_validate_recognises_each_kind(tmp_path, capsys, kind, text, says):
    assert cli.main(["validate", write(tmp_path, text, f"{kind}.toml")]) == 0
    assert capsys.readouterr().out.startswith(says)


@pytest.mark.parametrize("text, field", [
    ('kernel = "nope"\n', "kernel"),
    ('name = "x"\narchitecture = "split"\n', "x"),
    ('name = "m"\n[shape]\nlayers = 3\n', "display_name")])
def test_validate_names_what_is_wrong(tmp_path, capsys, text, field):
    assert cli.main(["validate", write(tmp_path, text)]) == 2
    assert field in capsys.readouterr().err


def test_warmup_compiles_the_emulator(capsys):
    """``make venv`` runs it: the engine compiles into numba's cache and says where."""
    assert cli.main(["warmup"]) == 0
    out = capsys.readouterr().out
    assert "emulator compiled in" in out and os.environ["NUMBA_CACHE_DIR"] in out

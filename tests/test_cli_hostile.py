"""Malformed files given to every command (issue 16, point 4): each answer is exit code 2
and one line on stderr naming the file or field, never a traceback, and never a hang
(pytest-timeout of pytest.ini is the backstop; no test measures time)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from explorer import cli
from explorer.core import Scenario
from explorer.core.metrics import METRICS
from hardware_presets.documents import MAX_DEPTH
from tests.waiting import DEADLINE_S

REPO_ROOT = Path(__file__).resolve().parent.parent
SMALL = Scenario.make(params={"n": 5000, "block_dim": 3, "tile": 1024}).to_toml()
DEEP_JSON = "[" * 100_000 + "]" * 100_000
DEEP_TOML = "x = " + "[" * 100_000 + "]" * 100_000 + "\n"
DOTTED_TOML = "a" + ".a" * 200_000 + " = 1\n"
NOT_UTF8 = {"garbage": bytes(range(256)) * 4, "utf16": SMALL.encode("utf-16"),
            "latin1": 'name = "café"\n'.encode("latin-1")}


def write(tmp_path: Path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return str(path)


def refused(capsys, argv: list[str], *words: str) -> str:
    """Run the CLI in-process and check its refusal; the stderr line is returned."""
    assert cli.main(argv) == cli.EXIT_INPUT
    out, err = capsys.readouterr()
    assert "Traceback" not in err and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    for word in words:
        assert word in err, (word, err)
    return err


# ---- documents -------------------------------------------------------------------------------
@pytest.mark.parametrize("name, text", [("deep.json", DEEP_JSON), ("deep.toml", DEEP_TOML),
                                        ("dotted.toml", DOTTED_TOML)])
@pytest.mark.parametrize("command", ["run", "validate"])
def test_deep_documents(tmp_path, capsys, command, name, text):
    refused(capsys, [command, write(tmp_path, name, text)], name, f"at most {MAX_DEPTH} levels")


@pytest.mark.parametrize("head", ['architecture = "c220"\n', "[shape]\n"], ids=["chip", "model"])
def test_deep_chip_and_model_files(tmp_path, capsys, head):
    refused(capsys, ["validate", write(tmp_path, "f.toml", head + DEEP_TOML.replace("x", "y"))],
            "f.toml", "levels deep")


@pytest.mark.parametrize("kind", NOT_UTF8)
@pytest.mark.parametrize("command", ["run", "validate", "sweep", "compare", "report"])
def test_files_that_are_not_utf8(tmp_path, capsys, command, kind):
    path = write(tmp_path, f"{kind}.toml", NOT_UTF8[kind])
    argv = {"run": ["run", path], "validate": ["validate", path],
            "sweep": ["sweep", path, "--param", "n=1,2"],
            "compare": ["compare", write(tmp_path, "ok.toml", SMALL), path],
            "report": ["report", path, "-o", str(tmp_path / "r.html")]}[command]
    refused(capsys, argv, f"{kind}.toml is not UTF-8 text")


@pytest.mark.parametrize("name, text, words", [
    ("dup.json", '{"seed": 1, "seed": 2}', ["dup.json: 'seed'", "each key once"]),
    ("surrogate.json", '{"name": "a\\ud800b"}', ["surrogate.json: name", "lone surrogates"]),
    ("bell.json", '{"name": "ring\\u0007"}', ["bell.json: name", "control codes"]),
    ("escape.toml", 'name = "\\u001b[2J"\n', ["escape.toml: name", "control codes"]),
    ("digits.json", '{"seed": ' + "9" * 5000 + "}", ["digits.json", "numbers of at most"]),
])
def test_keys_and_text_no_reader_expects(tmp_path, capsys, name, text, words):
    refused(capsys, ["run", write(tmp_path, name, text)], *words)


@pytest.mark.parametrize("text, field", [
    ("[overrides]\nl2_bandwidth_GBps = 1" + "0" * 400 + "\n", "l2_bandwidth_GBps"),
    ("[overrides]\nvector_bytes_per_cycle = 1e400\n", "vector_bytes_per_cycle"),
    ('[params]\ndtype = ["fp16"]\n', "params.dtype"),
    ("[params]\nn = { a = 1 }\n", "params.n"),
])
def test_values_of_the_wrong_size_or_shape(tmp_path, capsys, text, field):
    refused(capsys, ["run", write(tmp_path, "s.toml", text)], field)


def test_oversized_files_are_refused_from_their_size(tmp_path, capsys):
    path = tmp_path / "huge.toml"
    with path.open("wb") as f:
        f.truncate(4 << 30)  # sparse: refused from its size, never read
    for argv in (["run", str(path)], ["validate", str(path)]):
        refused(capsys, argv, "huge.toml", "4,294,967,296 bytes")


# ---- reports -----------------------------------------------------------------------------------
CRAFTED = '<script type="a" id="scenario.toml">' * 30_000  # about 1 MB, no closing tag


@pytest.mark.parametrize("command", ["run", "report"])
def test_crafted_report_is_answered(tmp_path, capsys, command):
    """A lazy regex once took minutes on this page; now it is a refusal like any other."""
    path = write(tmp_path, "crafted.html", CRAFTED)
    argv = [command, path] + (["-o", str(tmp_path / "r.html")] if command == "report" else [])
    refused(capsys, argv, "crafted.html", "embedded scenario.toml")


# ---- sweeps ------------------------------------------------------------------------------------
@pytest.mark.parametrize("param", ["chip.hbm_bandwidth_GBps=1000:1001:1e-320",
                                   "chip.hbm_bandwidth_GBps=1000:1001:5e-324",
                                   "n=1:17179869184:*1.0000000001"])
def test_sweep_steps_too_fine_are_refused_before_expanding(tmp_path, capsys, param):
    refused(capsys, ["sweep", write(tmp_path, "s.toml", SMALL), "--param", param],
            param.partition("=")[0], "at most 2,000 values")


def test_unknown_report_metric_names_the_metrics(tmp_path, capsys):
    err = refused(capsys, ["sweep", write(tmp_path, "s.toml", SMALL), "--param", "n=1,2",
                           "--metric", "bogus", "--report", str(tmp_path / "r.html")],
                  "--metric", "'bogus'")
    assert all(name in err for name in METRICS)


# ---- outputs -----------------------------------------------------------------------------------
@pytest.mark.parametrize("option, argv", [
    ("--trace", ["run", "{s}", "--trace", "{out}"]),
    ("--report", ["compare", "{s}", "{s}", "--report", "{out}"]),
    ("--output", ["sweep", "{s}", "--param", "n=1,2", "-o", "{out}"]),
    ("--report", ["sweep", "{s}", "--param", "n=1,2", "--report", "{out}"]),
    ("--output", ["report", "{s}", "-o", "{out}"]),
])
def test_outputs_in_a_missing_folder_are_refused_before_running(tmp_path, capsys, option, argv):
    out = tmp_path / "no_such_dir" / "out.file"
    source = write(tmp_path, "s.toml", SMALL)
    refused(capsys, [a.format(s=source, out=out) for a in argv], option, str(out))
    assert not out.parent.exists()


# ---- the real process --------------------------------------------------------------------------
@pytest.mark.parametrize("name, content", [("deep.json", DEEP_JSON),
                                           ("garbage.toml", NOT_UTF8["garbage"])])
def test_python_m_explorer_answers_in_one_line(tmp_path, name, content):
    proc = subprocess.run([sys.executable, "-m", "explorer", "run", write(tmp_path, name, content)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=DEADLINE_S)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and name in proc.stderr, proc.stderr


def test_hostile_path_names_stay_on_one_line(tmp_path, capsys):
    source = write(tmp_path, "s.toml", SMALL)
    refused(capsys, ["run", source, "--trace", "out\0.json"], "--trace", "a file in an existing")
    refused(capsys, ["run", "a\0b.toml"], "SCENARIO")
    err = refused(capsys, ["run", str(tmp_path / "line\nbreak\x1b[2J.toml")], "SCENARIO")
    assert "\x1b" not in err

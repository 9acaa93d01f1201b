"""The Python API for notebooks (explorer/__init__.py, explorer/notebook.py, docs/notebook.md).

Each method is held against what it reuses: the tables are the Result's, the figures the
report's and explorer.plots', the report the CLI's, the trace explorer.core.trace's. The
example notebook docs/examples/quickstart.ipynb runs on the plain Jupyter kernel
(ipykernel's own python3 spec, no Jupyter configuration, no network) and its outputs are
read back.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import nbclient
import nbformat
import pandas as pd
import plotly.graph_objects as go
import pytest

import explorer
import hardware_presets as hp
import kernels
from explorer import Run, Scenario, notebook, simulate
from explorer import core as explorer_core
from explorer.core import extensions
from explorer.core.metrics import KEY_METRICS, METRICS
from explorer.core.quantization import input_quantization
from explorer.core.trace import chrome_trace
from explorer.plots import (
    bandwidth_figure,
    load_balance_figure,
    pipe_ratio_figure,
    report,
    report_figures,
    timeline_figure,
    traffic_figure,
)
from explorer.plots.values import format_metric
from hardware_presets.errors import InputError

REPO_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO_ROOT / "docs" / "examples" / "quickstart.ipynb"
HOSTILE = "<img src=x onerror=alert(1)> & \"q\""
GEMM = {"M": 256, "N": 256, "K": 256}
VECTOR_ADD = {"n": 65536, "block_dim": 4, "tile": 4096}


@pytest.fixture(scope="module")
def gemm() -> Run:
    return simulate(Scenario.make(kernel="gemm", params=GEMM, name=HOSTILE))


@pytest.fixture(scope="module")
def vector_add() -> Run:
    return simulate(Scenario.make(kernel="vector_add", params=VECTOR_ADD))


@pytest.fixture
def quick_reports(monkeypatch):
    """Reports without the time model's validation line (it runs every published case
    once per process): the line is the report's own business, tested in test_report."""
    monkeypatch.setattr(report, "time_model_line", lambda lang="en": "time model line")


# ---- the public names --------------------------------------------------------------------
def test_import_explorer_is_cheap_and_core_stays_ui_free():
    """``import explorer`` loads the version only; ``import explorer.core`` (which runs
    explorer/__init__.py first) loads neither plotly, streamlit nor the notebook module."""
    code = ("import sys, explorer\n"
            "heavy = ('numba', 'pandas', 'plotly', 'streamlit', 'explorer.core')\n"
            "print([m for m in heavy if m in sys.modules])\n"
            "import explorer.core\n"
            "print([m for m in ('plotly', 'streamlit', 'explorer.notebook') "
            "if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert out.stdout.splitlines() == ["[]", "[]"], out.stdout + out.stderr


def test_public_names():
    from explorer import version

    assert explorer.__version__ == version.__version__
    assert explorer.Scenario is explorer_core.Scenario
    assert explorer.simulate is notebook.simulate
    assert set(explorer.__all__) <= set(dir(explorer))
    for name in explorer.__all__:
        assert getattr(explorer, name) is not None
    with pytest.raises(AttributeError, match="no_such_name"):
        explorer.no_such_name  # noqa: B018


def test_presets_kernels_and_parameters():
    assert explorer.presets() == tuple(hp.list_presets())
    assert explorer.kernels() == tuple(kernels.KERNELS)
    table = explorer.parameters("vector_add")
    record = kernels.get("vector_add")
    assert list(table["name"]) == [s.name for s in record.params]
    assert list(table["default"]) == [s.default for s in record.params]
    assert list(table["unit"]) == [s.unit for s in record.params]
    assert table.set_index("name").loc["buffer_num", "allowed"] == "one of 1, 2"
    assert explorer.parameters("vector_add", "zh").set_index("name").loc[
        "buffer_num", "allowed"] != "one of 1, 2"
    with pytest.raises(InputError) as err:
        explorer.parameters("no_such_kernel")
    assert err.value.field == "kernel" and "vector_add" in str(err.value)


def test_simulate_is_the_core_simulation(gemm):
    core = explorer_core.simulate(gemm.scenario)
    assert isinstance(gemm, explorer_core.Result) and gemm.lang == "en"
    assert gemm.metrics == core.metrics and gemm.numerics == core.numerics
    pd.testing.assert_frame_equal(gemm.timeline, core.timeline)


def test_simulate_reads_scenario_files_and_reports(gemm, tmp_path, quick_reports):
    scenario = Scenario.make(kernel="vector_add", params=VECTOR_ADD, name="from a file")
    (tmp_path / "s.toml").write_text(scenario.to_toml(), encoding="utf-8")
    (tmp_path / "s.json").write_text(scenario.to_json(), encoding="utf-8")
    assert simulate(tmp_path / "s.toml").scenario == scenario
    assert simulate(str(tmp_path / "s.json")).scenario == scenario
    saved = gemm.save_report(tmp_path / "r.html")
    assert simulate(saved).scenario == gemm.scenario


@pytest.mark.parametrize("call, field", [
    (lambda: simulate(42), "scenario"),
    (lambda: simulate({"kernel": "gemm"}), "scenario"),
    (lambda: simulate(Scenario(), lang="fr"), "lang"),
    (lambda: simulate("/no/such/file.toml"), "SCENARIO"),
])
def test_simulate_refuses_bad_input(call, field):
    with pytest.raises(InputError) as err:
        call()
    assert err.value.field == field


# ---- tables ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["timeline", "per_core", "traffic", "bandwidth"])
def test_tables_are_copies_of_the_results(gemm, name):
    table = gemm.to_frame(name)
    pd.testing.assert_frame_equal(table, getattr(gemm, name))
    table.iloc[0, 0] = table.iloc[1, 0]
    table["extra"] = 1
    assert "extra" not in getattr(gemm, name)


def test_metrics_table(gemm):
    table = gemm.to_frame()
    assert list(table["metric"]) == [m for m in METRICS if m in gemm.metrics]
    assert dict(zip(table["metric"], table["value"])) == gemm.metrics
    assert dict(zip(table["metric"], table["unit"])) == {m: METRICS[m] for m in table["metric"]}
    assert table["definition"].str.len().min() > 10
    # the instruction count is the timeline's length, the makespan its last end
    values = table.set_index("metric")["value"]
    assert values["instructions"] == len(gemm.to_frame("timeline"))
    assert values["makespan_us"] == pytest.approx(gemm.timeline["end_ns"].max() / 1e3)
    assert gemm.to_frame("metrics", lang="zh")["definition"].iloc[0] != table["definition"][0]


def test_numerics_table(gemm):
    table = gemm.to_frame("numerics")
    assert len(table) == 1
    assert table.iloc[0].to_dict() == dataclasses.asdict(gemm.numerics)


def test_quantized_inputs_have_their_loss_table(gemm):
    """A GEMM of FP8 inputs (950PR) tells what each operand lost to its format, as numbers,
    from the same summary the pages show; a run that stores nothing quantised has none."""
    fp8 = simulate(Scenario.make("950PR", "gemm", {**GEMM, "dtype_in": "fp8_e4m3",
                                                   "dtype_out": "bf16"}))
    assert "quantization" in fp8.tables()
    table = fp8.to_frame("quantization")
    lost = input_quantization(fp8.scenario)
    assert list(table["operand"]) == list(lost)
    for _, row in table.iterrows():
        e = lost[row["operand"]]
        assert (row["fmt"], row["norm_rel"], row["flushed"]) == ("fp8_e4m3", e["norm_rel"],
                                                                 e["flushed"])
        # E4M3 keeps 3 mantissa bits against bf16's 7: it loses more, within its bound
        assert row["bf16_norm_rel"] < row["norm_rel"] <= 2.0 ** -4
        assert 0 < row["bound_ratio"] <= 1 and 0 <= row["flushed"] <= row["nonzero"]
    assert "quantization" not in gemm.tables()
    with pytest.raises(InputError, match="quantization"):
        gemm.to_frame("quantization")


#: a decode step small enough to emulate in a fraction of a second
TINY_DECODE = {"model": "custom", "custom_layers": 1, "custom_q_heads": 2, "custom_kv_heads": 1,
               "custom_head_dim": 64, "custom_hidden": 128, "custom_intermediate_size": 256,
               "custom_vocab_size": 128, "custom_params_B": 0.001, "batch": 2, "mean_len": 32,
               "max_len": 64}


def test_a_kernels_extensions_add_their_tables_and_figures(gemm, vector_add):
    """Decode's record asks for the whole-model step: its summary becomes a table and its
    figures join the report's; kernels without extensions have the common tables only."""
    assert gemm.tables() == vector_add.tables() == notebook.TABLES
    run = simulate(Scenario.make(kernel="decode", params=TINY_DECODE))
    record = kernels.get("decode")
    assert record.extensions and run.tables() == notebook.TABLES + record.extensions
    for name in record.extensions:
        expected = extensions.summaries({name: extensions.of(run)[name]})[name]
        table = run.to_frame(name)
        assert list(table.columns) == ["quantity", "value"]
        assert dict(zip(table["quantity"], table["value"])) == pytest.approx(expected)
    assert run.figures() == tuple(kind for kind, _ in report_figures.figures(run))
    assert {"ops", "latency"} <= set(run.figures())


@pytest.mark.parametrize("method", ["to_frame", "figure"])
def test_unknown_names_are_refused_with_the_allowed_ones(gemm, method):
    with pytest.raises(InputError) as err:
        getattr(gemm, method)("no_such_name")
    assert err.value.field == ("table" if method == "to_frame" else "figure")
    assert err.value.value == "no_such_name"
    allowed = gemm.tables() if method == "to_frame" else gemm.figures()
    assert all(name in str(err.value) for name in allowed)
    with pytest.raises(InputError, match="lang"):
        getattr(gemm, method)("timeline", lang="fr")


# ---- figures -----------------------------------------------------------------------------
def drawn(figure: go.Figure) -> dict:
    """What a figure draws: its JSON without the template (a copy spells out the default
    template, plotly_white, that the original leaves implicit)."""
    data = json.loads(figure.to_json())
    data["layout"].pop("template", None)
    return data


def test_figures_are_the_reports_in_its_order(gemm, vector_add):
    for run in (gemm, vector_add):
        assert run.figures() == tuple(kind for kind, _ in report_figures.figures(run))
    # the GEMM's record asks for its task grid; the vector add's does not
    assert gemm.figures()[0] == "task_grid" and "task_grid" not in vector_add.figures()


def test_figures_are_what_explorer_plots_draws(gemm):
    chip = gemm.chip
    expected = {
        "timeline": timeline_figure(gemm.timeline, gemm.makespan_ns),
        "pipe_ratio": pipe_ratio_figure(gemm.per_core),
        "traffic": traffic_figure(gemm.traffic),
        "load_balance": load_balance_figure(gemm.per_core),
        "bandwidth": bandwidth_figure(gemm.bandwidth, chip.hbm_bandwidth_GBps,
                                      chip.l2_bandwidth_GBps),
        "roofline": report_figures.summary_figure("roofline", gemm),
        "task_grid": report_figures.KERNEL_FIGURES["task_grid"](gemm, "en"),
    }
    assert set(expected) == set(gemm.figures())
    for name, figure in expected.items():
        got = gemm.figure(name)
        assert type(got) is go.Figure and len(got.data) == len(figure.data) > 0, name
        assert drawn(got) == drawn(figure), name


def test_a_figure_is_a_fresh_copy_in_the_asked_language(gemm):
    first = gemm.figure("traffic")
    first.update_layout(title_text="changed")
    assert gemm.figure("traffic").layout.title.text != "changed"
    zh = gemm.figure("traffic", lang="zh")
    assert drawn(zh) == drawn(traffic_figure(gemm.traffic, "zh"))
    assert drawn(zh) != drawn(gemm.figure("traffic"))


# ---- summary -----------------------------------------------------------------------------
def test_html_summary_shows_chip_kernel_metrics_and_check(gemm):
    page = gemm._repr_html_()
    assert "gemm on Ascend 910B2" in page
    for name in KEY_METRICS:
        assert f"<td>{format_metric(name, gemm.metrics[name])}</td>" in page, name
        assert report_figures.metric_label(name) in page
    assert report.prose_html(report_figures.numerics_text(gemm)) in page
    assert all(name in page for name in gemm.tables())


def test_html_summary_escapes_the_scenario_name(gemm):
    page = gemm._repr_html_()
    assert HOSTILE not in page and "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;q&quot;" in page


def test_summary_says_when_the_check_failed(gemm):
    failed = dataclasses.replace(gemm, numerics=dataclasses.replace(gemm.numerics,
                                                                    passed=False))
    page = failed._repr_html_()
    assert report.prose_html(report_figures.numerics_text(failed)) in page
    assert report.prose_html(report_figures.numerics_text(gemm)) not in page
    assert repr(failed).endswith("numerical check FAILED>")
    assert repr(gemm).endswith("numerical check passed>")


def test_summary_in_chinese(vector_add):
    zh = dataclasses.replace(vector_add, lang="zh")
    page = zh._repr_html_()
    assert report_figures.metric_label("makespan_us", "zh") in page
    assert report_figures.metric_label("makespan_us") not in page
    assert "数值校验通过" in repr(zh)


def test_plain_repr_is_one_line_with_the_key_metrics(vector_add):
    text = repr(vector_add)
    assert "\n" not in text and text.startswith("<Run vector_add on Ascend 910B2: ")
    assert format_metric("makespan_us", vector_add.metrics["makespan_us"]) in text


# ---- files -------------------------------------------------------------------------------
def test_save_report_writes_the_clis_html_report(gemm, tmp_path, quick_reports):
    path = gemm.save_report(tmp_path / "run.html")
    assert path == tmp_path / "run.html"
    text = path.read_text(encoding="utf-8")
    assert text == report.html_report(gemm)
    assert report.scenario_from_report(text) == gemm.scenario
    assert HOSTILE not in text


def test_save_report_markdown(vector_add, tmp_path, quick_reports, monkeypatch):
    import kaleido

    def no_browser(*args, **kwargs):
        raise RuntimeError("no browser here")

    monkeypatch.setattr(kaleido, "write_fig_from_object_sync", no_browser)
    path = vector_add.save_report(tmp_path / "va.md", lang="zh")
    assert path == tmp_path / "va.md" and not (tmp_path / "report.md").exists()
    names = {p.name for p in tmp_path.iterdir()}
    assert {"va.md", "report.html", "metrics.csv", "trace.json", "scenario.toml"} <= names
    title = report.md_escape(report.report_title(vector_add, "zh"))
    assert title in path.read_text(encoding="utf-8")
    trace = json.loads((tmp_path / "trace.json").read_text(encoding="utf-8"))
    assert trace == json.loads(json.dumps(chrome_trace(vector_add)))


@pytest.mark.parametrize("where, allowed", [
    ("run.txt", ".html"), ("missing/run.html", "existing folder"), (42, "existing folder")])
def test_save_refuses_bad_paths(vector_add, tmp_path, where, allowed):
    path = tmp_path / where if isinstance(where, str) else where
    with pytest.raises(InputError, match=allowed) as err:
        vector_add.save_report(path)
    assert err.value.field == "path"
    if where != "run.txt":
        with pytest.raises(InputError, match=allowed):
            vector_add.save_trace(path)
    assert list(tmp_path.iterdir()) == []


def test_save_trace_is_the_chrome_trace(gemm, tmp_path):
    path = gemm.save_trace(tmp_path / "trace.json")
    trace = json.loads(path.read_text(encoding="utf-8"))
    assert trace == json.loads(json.dumps(chrome_trace(gemm)))
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) >= len(gemm.timeline)
    assert {e["pid"] for e in spans} == set(gemm.timeline["core"])
    assert trace["otherData"]["scenario"] == gemm.scenario.to_dict()


# ---- the example notebook ----------------------------------------------------------------
def _outputs(cell) -> str:
    """Every text a code cell printed or returned (plain text and HTML)."""
    parts = []
    for out in cell.outputs:
        assert out.output_type != "error", out
        parts.append(out.get("text", ""))
        parts += [str(v) for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


@pytest.fixture
def jupyter_env(tmp_path, monkeypatch):
    """A kernel with no Jupyter or IPython configuration of the machine's, the checkout
    on its path, figures as Plotly's JSON (no 4 MB of JavaScript in every output) and
    temporary files under tmp_path."""
    for name, folder in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                         ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython"),
                         ("TMPDIR", "tmp")):
        (tmp_path / folder).mkdir()
        monkeypatch.setenv(name, str(tmp_path / folder))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.setenv("PLOTLY_RENDERER", "plotly_mimetype")
    return tmp_path


def test_quickstart_notebook_runs(jupyter_env):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(jupyter_env)}}).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    texts = [_outputs(cell) for cell in code]
    assert texts[0].split()[0] == explorer.__version__
    run = simulate(Scenario.make(preset="910B2", kernel="gemm",
                                 params={"M": 256, "N": 256, "K": 512}, name="Small GEMM"))
    summary = next(text for text in texts if "Small GEMM · gemm on Ascend 910B2" in text)
    assert format_metric("makespan_us", run.metrics["makespan_us"]) in summary
    figures = [out for cell in code for out in cell.outputs
               if "application/vnd.plotly.v1+json" in out.get("data", {})]
    assert [len(f.data["application/vnd.plotly.v1+json"]["data"]) for f in figures] == [
        len(run.figure("timeline").data), len(run.figure("roofline").data)]
    sweep = next(text for text in texts if "numerics_passed" in text)
    assert all(str(tile) in sweep for tile in (1024, 2048, 4096, 8192))
    folder = Path(texts[-1].split()[0])
    assert folder.parent == jupyter_env / "tmp"
    assert report.scenario_from_report(
        (folder / "report.html").read_text(encoding="utf-8")) == run.scenario
    trace = json.loads((folder / "trace.json").read_text(encoding="utf-8"))
    assert trace["otherData"]["scenario"] == run.scenario.to_dict()

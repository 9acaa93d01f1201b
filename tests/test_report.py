"""Scenario reports (explorer/plots/report.py): the HTML holds every figure and Plotly's
JavaScript once, fetches nothing, escapes what users typed and gives its scenario back;
the Markdown folder has PNGs (or says plainly why not), the CSV, the trace and the
scenario; every report names the time model's version and its validation errors;
``explorer report`` exits 0 / 2; the pages' upload reads scenarios and reports.
"""
from __future__ import annotations

import argparse
import html
import io
import json
import zipfile
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import plotly.offline
import pytest

from explorer import cli_report
from explorer.core import Scenario, gallery, simulate
from explorer.core.i18n import t
from explorer.core.metrics import METRICS
from explorer.core.quantization import input_quantization, quantization_table
from explorer.core.validation import model_card
from explorer.core.validation.cases import MODEL_VERSION, cases
from explorer.core.verdict import verdict
from explorer.plots import report
from explorer.plots.report_figures import figures, format_metric
from explorer.ui import run_view
from hardware_presets.errors import InputError
from tests.apptest_helpers import open_page, run, texts

EVIL = "<script>alert(1)</script>"
SMALL = {
    "vector_add": {"n": 5000, "block_dim": 3, "tile": 1024},
    "gemm": {"M": 256, "N": 256, "K": 512},
    "decode": {"batch": 2, "mean_len": 256, "max_len": 512},
}
CHROMIUM = Path("/usr/bin/chromium")
PLAYGROUND = "explorer/ui/pages/vector_add.py"


@pytest.fixture(scope="module")
def results() -> dict:
    return {kernel: simulate(Scenario.make(kernel=kernel, params=params, name=EVIL,
                                           overrides={"ub_KiB": 128}))
            for kernel, params in SMALL.items()}


@pytest.fixture(scope="module")
def pages(results) -> dict[str, str]:
    return {kernel: report.html_report(result) for kernel, result in results.items()}


def without_plotly_js(text: str) -> str:
    js = plotly.offline.get_plotlyjs()
    assert text.count(js) == 1
    return text.replace(js, "")


# ---- HTML --------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", SMALL)
def test_html_has_every_figure_and_plotly_once(results, pages, kernel):
    result, page = results[kernel], pages[kernel]
    built = figures(result, "en")
    assert page.count('class="plotly-graph-div"') == len(built) >= 6
    assert page.count("Plotly.newPlot(") == len(built)
    # one script per figure, the scenario's and Plotly's own (emptied here)
    assert without_plotly_js(page).count("<script") == len(built) + 2
    kinds = [kind for kind, _ in built]
    assert {"timeline", "pipe_ratio", "traffic", "load_balance", "bandwidth",
            "roofline"} <= set(kinds)
    assert ("task_grid" in kinds) == (kernel == "gemm")
    assert ("ops" in kinds) == (kernel == "decode")
    for kind in kinds:
        assert t(f"report.figure.{kind}") in page


@pytest.mark.parametrize("kernel", SMALL)
def test_scenario_round_trips_through_the_report(results, pages, kernel):
    assert report.scenario_from_report(pages[kernel]) == results[kernel].scenario


def test_html_lists_scenario_chip_metrics_and_check(results, pages):
    page, result = pages["vector_add"], results["vector_add"]
    for name in METRICS:
        assert t(f"metric.{name}.label") in page or name in page
    assert "Time from the first instruction" in page  # a definition
    assert "Ascend 910B2" in page and "your override" in page  # ub_KiB = 128
    assert "Passed:" in page and f"{result.numerics.verified:,}" in page
    # the check in the words of the CLI and the pages (tests/test_verdict.py)
    assert all(html.escape(line) in page for line in verdict(result.numerics, "en"))
    assert "CopyIn → Compute → CopyOut." in page  # the page's explanation, by default
    assert "<strong>" in page and "<code>" in page  # its Markdown, rendered


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_report_says_what_quantised_inputs_lost(lang):
    """MXFP4 weights: the report carries the pages' table of what each quantised operand
    lost to its format (a run storing nothing quantised has no such section)."""
    result = simulate(gallery.load("linear_mxfp4_down"))
    page = report.html_report(result, lang)
    assert html.escape(t("ui.quant.title", lang)) in page
    table = quantization_table(input_quantization(result.scenario), lang)
    assert table.to_html(index=False, escape=True, border=0) in page
    plain = report.html_report(simulate(gallery.load("double_buffer_b")), lang)
    assert html.escape(t("ui.quant.title", lang)) not in plain


def test_user_text_is_escaped_everywhere(pages):
    for page in pages.values():
        assert EVIL not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "<title>&lt;script&gt;" in page


def test_html_fetches_nothing(pages):
    for page in pages.values():
        rest = without_plotly_js(page)
        for needle in ("cdn.plot.ly", "http://", "https://", "<link", " src="):
            assert needle not in rest, needle


def test_explanation_argument_replaces_the_default(results):
    page = report.html_report(results["vector_add"], explanation="Look at **MTE2** <now>.")
    assert "Look at <strong>MTE2</strong> &lt;now&gt;." in page
    assert "CopyIn → Compute → CopyOut." not in page


def test_chinese_report(results):
    page = report.html_report(results["gemm"], "zh")
    assert '<html lang="zh">' in page and "任务网格" in page and "数值核对" in page


def test_html_document_is_generic():
    table = pd.DataFrame({"a": ['<img src=x onerror="alert(1)">'], "b": [1]})
    page = report.html_document("A & B", [("Table", table), ("Text", "- one\n- `two`")],
                                {"notes.csv": "x,y\n</script><b>1</b>,2"})
    assert "<script type=\"text/javascript\">" not in page  # no figure, no Plotly
    assert "<img" not in page and "&lt;img" in page
    assert "<ul><li>one</li><li><code>two</code></li></ul>" in page
    assert report.embedded_text(page, "notes.csv") == "x,y\n</script><b>1</b>,2"
    assert report.embedded_text(page, "other.toml") is None
    fig_page = report.html_document("F", [("Fig", [go.Figure(go.Bar(y=[1])), "caption"])])
    assert fig_page.count('class="plotly-graph-div"') == 1


def test_a_page_without_a_scenario_is_refused():
    with pytest.raises(InputError, match="embedded scenario.toml"):
        report.scenario_from_report("<html><body>hello</body></html>")


def test_format_metric():
    assert format_metric("makespan_us", 1234.5) == "1.23 ms"
    assert format_metric("makespan_us", 105.5) == "105.5 µs"
    assert format_metric("hbm_utilization", 0.5) == "50.0%"
    assert format_metric("instructions", 20) == "20"
    assert format_metric("hbm_bytes", 3 * 2**20) == "3.00 MiB"
    assert format_metric("arithmetic_intensity", 0.0833) == "0.0833 flop/B"
    assert format_metric("hbm_GBps", 1234.4) == "1,234 GB/s"
    assert format_metric("bound", "memory", "zh") == t("metric.bound_value.memory", "zh")


# ---- Markdown ----------------------------------------------------------------------------
@pytest.mark.skipif(not CHROMIUM.exists(), reason="kaleido needs Chrome/Chromium for PNGs")
def test_markdown_folder_with_pngs(results, tmp_path):
    result = results["vector_add"]
    path = report.markdown_report(result, tmp_path / "out")
    text = path.read_text(encoding="utf-8")
    pngs = sorted((tmp_path / "out" / "figures").glob("*.png"))
    assert len(pngs) == len(figures(result)) and all(p.stat().st_size > 1000 for p in pngs)
    for png in pngs:
        assert f"](figures/{png.name})" in text
    assert EVIL not in text and "&lt;script&gt;" in text
    assert not (tmp_path / "out" / "report.html").exists()
    _check_folder(tmp_path / "out", result)


def _check_folder(folder: Path, result) -> None:
    metrics = pd.read_csv(folder / "metrics.csv")
    assert list(metrics["metric"]) == [m for m in METRICS if m in result.metrics]
    trace = json.loads((folder / "trace.json").read_text(encoding="utf-8"))
    assert trace["otherData"]["scenario"] == result.scenario.to_dict()
    scenario = Scenario.from_toml((folder / "scenario.toml").read_text(encoding="utf-8"))
    assert scenario == result.scenario


@pytest.fixture
def no_browser(monkeypatch):
    import kaleido

    def fail(*args, **kwargs):
        raise RuntimeError("no Chrome found\nsecond line")

    monkeypatch.setattr(kaleido, "write_fig_from_object_sync", fail)


def test_markdown_without_a_browser_says_so_and_links_the_html(results, tmp_path, no_browser):
    result = results["decode"]
    text = report.markdown_report(result, tmp_path, "zh").read_text(encoding="utf-8")
    assert "RuntimeError: no Chrome found" in text and "second line" not in text
    assert "report.html" in text and "](figures/" not in text
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert report.scenario_from_report(page) == result.scenario
    _check_folder(tmp_path, result)


def test_markdown_zip(results, no_browser):
    names = zipfile.ZipFile(io.BytesIO(report.markdown_zip(results["vector_add"]))).namelist()
    assert {"report/report.md", "report/metrics.csv", "report/trace.json",
            "report/scenario.toml", "report/report.html"} <= set(names)


# ---- the time model line -----------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reports_name_the_time_model_and_its_errors(results, tmp_path, no_browser, lang):
    card = model_card.validation_summary()
    assert card["version"] == MODEL_VERSION and card["cases"] == len(cases())
    gemm, datacopy = (f"{100 * card['groups'][g]['mean_error']:.1f}%"
                      for g in ("gemm", "datacopy"))
    line = report.time_model_line(lang)
    assert line == t("report.time_model", lang, version=MODEL_VERSION, cases=len(cases()),
                     gemm=gemm, datacopy=datacopy)
    assert report.time_model_line(lang) is line  # computed once (lru_cache)
    _, head, rest = line.split("**", 2)  # "**Time model:** version ..."
    page = report.html_report(results["vector_add"], lang)
    assert f"<strong>{head}</strong>{html.escape(rest)}" in page
    md = report.markdown_report(results["gemm"], tmp_path, lang).read_text(encoding="utf-8")
    assert line in md


# ---- CLI ---------------------------------------------------------------------------------
def run_cli(*argv: str) -> int:
    ap = argparse.ArgumentParser()
    cli_report.add_parser(ap.add_subparsers(dest="command", required=True))
    args = ap.parse_args(list(argv))
    return args.func(args)


def test_cli_report(tmp_path, capsys):
    source = tmp_path / "s.toml"
    source.write_text(Scenario.make(params=SMALL["vector_add"]).to_toml(), encoding="utf-8")
    out = tmp_path / "out.html"
    assert run_cli("report", str(source), "-o", str(out), "--lang", "zh") == 0
    page = out.read_text(encoding="utf-8")
    assert report.scenario_from_report(page) == Scenario.from_toml(source.read_text())
    assert "已写入" in capsys.readouterr().out
    again = tmp_path / "again.html"  # a report is a valid input too
    assert run_cli("report", str(out), "-o", str(again)) == 0
    assert report.scenario_from_report(again.read_text(encoding="utf-8")) == \
        report.scenario_from_report(page)


@pytest.mark.parametrize("case", ["missing", "bad_toml", "bad_param", "no_scenario_html",
                                  "bad_output"])
def test_cli_report_bad_input_exits_2(tmp_path, capsys, case):
    files = {"bad_toml": ("s.toml", "preset = "), "bad_param": ("s.toml", 'kernel = "nope"'),
             "no_scenario_html": ("r.html", "<html></html>"),
             "bad_output": ("s.toml", Scenario.make(params=SMALL["vector_add"]).to_toml())}
    source = tmp_path / "missing.toml"
    if case in files:
        source = tmp_path / files[case][0]
        source.write_text(files[case][1], encoding="utf-8")
    out = tmp_path / ("no_such_dir" if case == "bad_output" else "") / "out.html"
    assert run_cli("report", str(source), "-o", str(out)) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert not out.exists()


# ---- the pages' upload -------------------------------------------------------------------
def test_upload_reads_scenarios_and_reports(results, pages):
    scenario = results["gemm"].scenario
    assert run_view.read_upload("a.toml", scenario.to_toml().encode(), "gemm") == scenario
    assert run_view.read_upload("a.JSON", scenario.to_json().encode(), "gemm") == scenario
    page = pages["gemm"].encode()
    assert len(page) > run_view.SCENARIO_MAX_BYTES  # Plotly's JavaScript; the head suffices
    assert run_view.read_upload("r.html", page, "gemm") == scenario


def test_upload_refusals(pages):
    with pytest.raises(InputError, match="vector_add scenario on this page"):
        run_view.read_upload("r.html", pages["gemm"].encode(), "vector_add")
    with pytest.raises(InputError, match="1 MiB"):
        run_view.read_upload("big.toml", b"#" * (run_view.SCENARIO_MAX_BYTES + 1), "gemm")
    with pytest.raises(InputError, match="UTF-8"):
        run_view.read_upload("bin.toml", b"\xff\xfe\x00", "gemm", "en")
    with pytest.raises(InputError, match="不超过"):
        run_view.read_upload("x.json", b" " * (2 << 20), "gemm", "zh")


def test_upload_goes_through_the_url(results):
    scenario = results["vector_add"].scenario.replace(seed=7)
    url = run_view.scenario_url(scenario, {"lang": "zh", "n": "1"}, "zh")
    assert url["lang"] == "zh" and url["preset"] == "910B2" and url["chip.ub_KiB"] == "128"
    assert url["n"] == "5000" and url["seed"] == "7"
    assert "buffer_num" not in url  # default and not in the page's URL: nothing to set
    gemm = run_view.scenario_url(results["gemm"].scenario.replace(params={"bias": True}), {},
                                 "en")
    assert gemm["bias"] == "true" and gemm["M"] == "256"  # flags as the URL reads them
    assert "seed" not in gemm and "db_l0" not in gemm


def test_upload_on_the_page_loads_the_scenario_or_says_why_not(results):
    at = open_page(PLAYGROUND, {"n": "65536"})
    mine = Scenario.make(preset="910B4", params={"n": 16384, "block_dim": 4, "tile": 2048,
                                                 "buffer_num": 1},
                         overrides={"ub_KiB": 128}, seed=3, name="workshop")
    at.file_uploader(key=run_view.UPLOAD_KEY).set_value(
        ("w.toml", mine.to_toml().encode(), "application/toml"))
    run(at)
    assert "Loaded workshop." in texts(at.success)
    url = {k: at.query_params[k] for k in ("preset", "chip.ub_KiB", "n", "block_dim",
                                           "tile", "buffer_num", "seed")}
    assert url == {"preset": "910B4", "chip.ub_KiB": "128", "n": "16384", "block_dim": "4",
                   "tile": "2048", "buffer_num": "1", "seed": "3"}
    assert at.session_state["preset"] == "910B4" and at.session_state["va.tile"] == 2048
    assert not at.error
    gemm = report.html_report(results["gemm"]).encode()
    at.file_uploader(key=run_view.UPLOAD_KEY).set_value(("g.html", gemm, "text/html"))
    run(at)
    assert "vector_add scenario on this page" in texts(at.error)
    assert at.query_params["n"] == "16384"  # nothing changed


def test_compare_and_sweep_reports_embed_their_inputs(tmp_path):
    from explorer import cli
    from explorer.core import gallery
    from explorer.plots.report import embedded_text
    a, b = (str(gallery.entry(i).path) for i in ("double_buffer_a", "double_buffer_b"))
    out = tmp_path / "cmp.html"
    assert cli.main(["compare", a, b, "--report", str(out)]) == 0
    page = out.read_text()
    assert page.count("plotly-graph-div") >= 3 and MODEL_VERSION in page
    embedded = Scenario.from_toml(embedded_text(page, "scenario_b.toml"))
    assert embedded == gallery.load("double_buffer_b")
    out = tmp_path / "sweep.html"
    assert cli.main(["sweep", a, "--param", "buffer_num=1,2", "-o", str(tmp_path / "s.csv"),
                     "--report", str(out), "--workers", "1"]) == 0
    page = out.read_text()
    assert "results.csv" in page and page.count("plotly-graph-div") == 1
    assert html.escape(report.time_model_line().split("**")[2]) in page

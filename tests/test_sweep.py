"""Parameter sweeps (explorer/core/sweep.py, sweep_exec.py), their figures
(explorer/plots/sweep.py) and the ``sweep`` command (explorer/cli_sweep.py).

The grammar and its refusals name the field, the value and the range; a sweep gives the
same metrics as ``simulate`` run point by point, on local worker processes and on a Dask
cluster alike; cancelling keeps the finished part; identical scenarios run once; refused
points are rows with their reason; the CLI writes the CSV with the documented exit codes.
"""
from __future__ import annotations

import io
import math
import os

import numpy as np
import pandas as pd
import pytest

from explorer import cli_sweep
from explorer.core import Scenario, simulate
from explorer.core.metrics import METRICS
from explorer.core.sweep import (
    MAX_SCENARIOS,
    BackgroundSweep,
    ResultCache,
    Sweep,
    parse_axes,
    parse_axis,
    run_sweep,
)
from explorer.core.sweep_exec import DaskExecutor, LocalExecutor, run_point
from explorer.plots.sweep import heatmap_figure, line_figure, log_axis, sweep_figure
from hardware_presets.errors import InputError
from tests.sweep_helpers import InlineExecutor
from tests.waiting import DEADLINE_S

SMALL = Scenario.make("910B2", "vector_add", {"n": 1 << 14, "tile": 1024})


class NoExecutor:
    def map(self, fn, items, progress=None, cancelled=None):
        raise AssertionError(f"asked to run {len(items)} points; all were cached")


@pytest.fixture(scope="module")
def local():
    with LocalExecutor(2) as executor:
        yield executor


def refusal(callable_, *args) -> InputError:
    with pytest.raises(InputError) as info:
        callable_(*args)
    return info.value


# ---- the grammar -------------------------------------------------------------------------
def test_ranges_lists_prefixes_and_geometric_steps():
    assert parse_axis("n=1024:4096:1024", "vector_add").values == (1024, 2048, 3072, 4096)
    assert parse_axis("params.tile=1024:16384:*2", "vector_add").values == \
        (1024, 2048, 4096, 8192, 16384)
    assert parse_axis("n=1000:3500:1000", "vector_add").values == (1000, 2000, 3000)
    ub = parse_axis("chip.ub_KiB=96, 192", "vector_add")
    assert ub.values == (96, 192) and ub.knob.target == "overrides" and ub.name == "chip.ub_KiB"
    bw = parse_axis("chip.hbm_bandwidth_GBps=800:1600:400", "gemm")
    assert bw.values == (800.0, 1200.0, 1600.0)
    assert parse_axis("n=1024:6000:*1.5", "vector_add").values == (1024, 1536, 2304, 3456, 5184)
    assert parse_axis("bias=true,false", "gemm").values == (True, False)
    assert parse_axis("dtype_in=fp16,bf16", "gemm").values == ("fp16", "bf16")


@pytest.mark.parametrize(("text", "field", "says"), [
    ("n=0:4:1", "params.n", "an integer from 1 to 17179869184"),
    ("chip.ub_KiB=96,5000", "chip.ub_KiB", "an integer from 1 to 4096 KiB"),
    ("chip.vector_cores=1.5", "chip.vector_cores", "an integer from 0 to 128"),
    ("n=4096:1024:1024", "params.n", "START <= STOP"),
    ("n=1024:4096:0", "params.n", "a step > 0"),
    ("n=1:2", "params.n", "NAME=START:STOP:STEP"),
    ("n=1:5000:1", "params.n", "at most 2,000 values"),
    ("dtype=fp16:fp32:1", "params.dtype", "a list a,b,c"),
    ("n=abc", "params.n", "an integer from 1"),
    ("n=1.5:4:1", "params.n", "an integer from 1"),
    ("chip.hbm_bandwidth_GBps=nan,800", "chip.hbm_bandwidth_GBps", "a finite number"),
    ("n", "sweep", "NAME=START:STOP:STEP"),
    ("chip.cube_m0=16,32", "sweep", "chip.FIELD"),
])
def test_bad_values_name_the_field_the_value_and_the_range(text, field, says):
    exc = refusal(parse_axis, text, "vector_add")
    assert exc.field == field and says in str(exc), str(exc)


def test_unknown_names_are_refused_with_what_can_be_swept():
    exc = refusal(parse_axis, "ub_KiB=96,192", "vector_add")
    assert "a parameter of vector_add (n, block_dim, tile" in str(exc)
    assert "did you mean chip.ub_KiB?" in str(exc)
    assert "chip.vector_cores" in refusal(parse_axis, "bogus=1", "gemm").hint


def test_at_most_two_parameters_once_each_and_a_capped_grid():
    assert "1 to 2 parameters" in str(refusal(parse_axes, ["n=1,2", "tile=1024",
                                                           "block_dim=1"], "vector_add"))
    assert "each parameter at most once" in str(refusal(parse_axes, ["n=1,2", "params.n=3"],
                                                        "vector_add"))
    exc = refusal(parse_axes, ["n=1:50:1", "block_dim=1:48:1"], "vector_add")
    assert exc.value == "2,400 scenarios" and f"at most {MAX_SCENARIOS:,}" in str(exc)


# ---- running -----------------------------------------------------------------------------
def test_sweep_matches_simulate_point_by_point(local):
    sweep = Sweep.parse(SMALL, ["tile=512:2048:*2", "chip.ub_KiB=96,192"])
    result = run_sweep(sweep, local, cache=ResultCache())
    assert len(result.table) == sweep.size == 6 and not result.cancelled
    for (combo, scenario), (_, row) in zip(sweep.points(), result.table.iterrows()):
        assert (row["tile"], row["chip.ub_KiB"]) == combo
        alone = simulate(scenario)
        assert {m: row[m] for m in METRICS} == alone.metrics
        assert row["numerics_passed"] == alone.numerics.passed and row["error"] == ""


def test_local_and_dask_executors_give_the_same_table(local):
    distributed = pytest.importorskip("distributed")
    sweep = Sweep.parse(SMALL, ["n=4096,16384", "block_dim=4,8"])
    here = run_sweep(sweep, local, cache=ResultCache()).table
    with distributed.LocalCluster(n_workers=1, processes=False, protocol="tcp://",
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            DaskExecutor(cluster.scheduler_address) as dask:
        there = run_sweep(sweep, dask, cache=ResultCache()).table
        spread = dask.throughput
    pd.testing.assert_frame_equal(here, there)
    assert sum(spread.points.values()) == sweep.size  # every point, by the worker that ran it
    assert spread.wall_s > 0 and all(s > 0 for s in spread.busy_s.values())


def test_local_throughput_counts_every_point_on_its_worker(local):
    sweep = Sweep.parse(SMALL, ["n=4096,8192,16384", "block_dim=2,4"])
    run_sweep(sweep, local, cache=ResultCache())
    spread = local.throughput
    assert sum(spread.points.values()) == sweep.size
    assert 1 <= len(spread.points) <= local.workers  # host:pid of the worker processes
    assert all(str(os.getpid()) != w.split(":")[-1] for w in spread.points)
    rows = spread.rows()
    assert [n for _, n, _, _ in rows] == [spread.points[w] for w, *_ in rows]
    assert all(0 < busy <= 1.0 + 1e-9 for *_, busy in rows)  # a worker runs one at a time
    assert spread.lines()[-1].startswith(f"{len(spread.points)} workers: {sweep.size} points")


def test_dask_refusals_are_input_errors(monkeypatch):
    exc = refusal(DaskExecutor, "tcp://127.0.0.1:9", 0.5)
    assert exc.field == "dask" and "cannot connect" in exc.hint
    assert "missing port" in refusal(DaskExecutor, "nonsense", 0.5).hint
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)
    assert "requirements-dask.txt" in refusal(DaskExecutor, "tcp://127.0.0.1:8786").hint


def test_cancelling_stops_early_and_keeps_the_finished_part(local):
    sweep = Sweep.parse(SMALL, ["n=4096:204800:4096"])
    seen = []
    result = run_sweep(sweep, local, progress=lambda done, total: seen.append(done),
                       cancelled=lambda: bool(seen) and seen[-1] >= 2, cache=ResultCache())
    assert result.cancelled and 2 <= len(result.table) < sweep.size == 50
    assert result.table["makespan_us"].notna().all()
    assert set(result.table["n"]) <= set(sweep.axes[0].values)


def test_identical_scenarios_run_once_and_cached_ones_not_at_all():
    cache, inline = ResultCache(), InlineExecutor()
    sweep = Sweep.parse(SMALL, ["n=4096,8192,4096"])
    first = run_sweep(sweep, inline, cache=cache)
    assert len(inline.calls[0]) == 2 and len(first.table) == 3 and len(cache) == 2
    again = run_sweep(sweep, NoExecutor(), cache=cache)
    pd.testing.assert_frame_equal(first.table, again.table)
    assert cache.hits == 2  # one look-up per distinct scenario


def test_refused_points_are_rows_with_their_reason():
    sweep = Sweep.parse(SMALL, ["tile=1024:4096:*2", "chip.ub_KiB=16,192"])
    progress = []
    result = run_sweep(sweep, InlineExecutor(), progress=lambda *p: progress.append(p),
                       cache=ResultCache())
    table = result.table
    bad = table[table["error"] != ""]
    assert list(bad["tile"]) == [2048, 4096] and set(bad["chip.ub_KiB"]) == {16}
    assert bad["makespan_us"].isna().all() and bad["numerics_passed"].isna().all()
    assert "at most 1344 elements" in bad["error"].iloc[0]
    assert [result.refusals[i].field for i in bad.index] == ["params.tile"] * 2
    assert progress[0] == (2, 6) and progress[-1] == (6, 6)


def test_a_point_refused_in_the_worker_is_a_row_too():
    with LocalExecutor(1, instruction_cap=100) as capped:
        result = run_sweep(Sweep.parse(SMALL, ["n=4096,1048576"]), capped,
                           cache=ResultCache())
    ok, big = result.table.to_dict("records")
    assert ok["error"] == "" and "at most 100 per program" in big["error"]
    assert result.refusals[1].field == "instructions" and math.isnan(big["hbm_GBps"])


def test_run_point_and_csv_are_plain_data():
    assert "error" in run_point({"kernel": "gemm", "params": {"M": 0}})
    outcome = run_point(SMALL.to_dict())
    assert outcome["numerics_passed"] is True and set(outcome["metrics"]) == set(METRICS)
    result = run_sweep(Sweep.parse(SMALL, ["block_dim=4,8"]), InlineExecutor(),
                       cache=ResultCache())
    back = pd.read_csv(io.StringIO(result.to_csv()))
    assert list(back.columns[:5]) == ["block_dim", "error", "numerics_passed", "bound_ratio",
                                      "norm_rel_error"]
    assert np.allclose(back["makespan_us"], result.table["makespan_us"])


def test_background_sweep_reports_progress_and_cancels():
    job = BackgroundSweep(Sweep.parse(SMALL, ["n=4096,8192"]), InlineExecutor(),
                          cache=ResultCache()).start()
    assert job.wait(DEADLINE_S) and job.error is None and job.done == job.total == 2
    assert len(job.result.table) == 2
    stopped = BackgroundSweep(Sweep.parse(SMALL, ["n=4096:40960:4096"]), InlineExecutor(),
                              cache=ResultCache())
    stopped.cancel()
    assert stopped.start().wait(DEADLINE_S) and stopped.result.cancelled
    assert len(stopped.result.table) == 0


# ---- figures -----------------------------------------------------------------------------
def _table() -> pd.DataFrame:
    sweep = Sweep.parse(SMALL, ["tile=512:4096:*2", "chip.ub_KiB=16,192"])
    return run_sweep(sweep, InlineExecutor(), cache=ResultCache()).table


def test_line_chart_breaks_at_refused_points_and_says_why():
    table = _table()
    fig = line_figure(table, "tile", "makespan_us", color="chip.ub_KiB",
                      labels={"tile": "Tile"}, reasons=pd.Series({6: "UB too small"}))
    lines = [t for t in fig.data if t.meta == "line"]
    assert [t.name for t in lines] == ["chip.ub_KiB = 16", "chip.ub_KiB = 192"]
    assert np.isnan(lines[0].y).sum() == 2 and not np.isnan(lines[1].y).any()
    refused = next(t for t in fig.data if t.meta == "refused")
    assert list(refused.x) == [2048, 4096] and "UB too small" in refused.text[1]
    assert "at most" in refused.text[0] and fig.layout.xaxis.title.text == "Tile"


def test_heat_map_leaves_refused_cells_empty_and_other_shapes():
    table = _table()
    fig = sweep_figure(table, ["tile", "chip.ub_KiB"], "makespan_us", "zh", kind="heatmap")
    z, text = np.array(fig.data[0].z, dtype=float), np.array(fig.data[0].text)
    assert z.shape == (2, 4) and np.isnan(z).sum() == 2 and "已拒绝" in text[0][2]
    assert "kernel_duration" not in fig.layout.title.text
    assert sweep_figure(table, ["tile"], "makespan_us").data[0].meta == "line"
    empty = heatmap_figure(table.iloc[0:0], "tile", "chip.ub_KiB", "makespan_us")
    assert not empty.data
    assert log_axis([1024, 4096, 16384]) and not log_axis([1, 2, 3])


# ---- the command line --------------------------------------------------------------------
@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "va.toml"
    path.write_text(SMALL.to_toml(), encoding="utf-8")
    return path


def test_cli_writes_the_csv(scenario_file, tmp_path, capsys):
    out = tmp_path / "out.csv"
    code = cli_sweep.main([str(scenario_file), "--param", "n=4096:8192:4096", "--param",
                           "chip.ub_KiB=16,192", "-o", str(out), "--workers", "1"])
    assert code == 0
    table = pd.read_csv(out)
    assert len(table) == 4 and list(table.columns[:2]) == ["n", "chip.ub_KiB"]
    assert "4 of 4 scenarios: 0 refused" in capsys.readouterr().err


def test_cli_exit_codes_and_messages(scenario_file, tmp_path, capsys):
    base = [str(scenario_file), "-o", str(tmp_path / "x.csv")]
    assert cli_sweep.main([*base, "--param", "n=0:4:1"]) == 2
    assert "params.n = 0 is not allowed" in capsys.readouterr().err
    assert cli_sweep.main([str(tmp_path / "none.toml"), "--param", "n=1,2"]) == 2
    assert cli_sweep.main([*base, "--param", "n=1,2", "--dask", "nonsense"]) == 2
    assert "dask = 'nonsense' is not allowed" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_progress_line_only_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    quiet, loud = cli_sweep.ProgressLine(io.StringIO()), cli_sweep.ProgressLine(Tty())
    for bar in (quiet, loud):
        bar(3, 4)
        bar.end()
    assert quiet.stream.getvalue() == ""
    assert loud.stream.getvalue() == "\r[" + "#" * 22 + "." * 8 + "] 3/4 scenarios\n"

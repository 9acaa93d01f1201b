"""explorer/core/compare.py, explorer/plots/compare.py and the ``compare`` command line:
the table's arithmetic, the scenario diff, every sentence rule (it fires on a pair crafted
for it and stays silent on an identical pair), the rendering in both languages, the
figures (one shared time axis, A next to B) and the CLI's exit codes."""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from explorer import cli
from explorer.core import Scenario, gallery, simulate
from explorer.core import compare as cmp
from explorer.core.i18n import catalogue, t
from explorer.core.metrics import METRICS
from explorer.plots import compare as plots


@pytest.fixture(scope="module")
def base():
    """A small run (vector add, BUFFER_NUM = 2) that the crafted pairs start from."""
    return simulate(gallery.load("double_buffer_b"))


def crafted(result, scenario=None, per_core=None, **metrics):
    """``result`` with some metrics (and optionally its scenario or per-core table) changed."""
    return dataclasses.replace(result, metrics={**result.metrics, **metrics},
                               scenario=scenario or result.scenario,
                               per_core=result.per_core if per_core is None else per_core)


def ids(sentences):
    return [msg_id for msg_id, _ in sentences]


# ---- the table and the diff --------------------------------------------------------------
def test_table_arithmetic(base):
    b = crafted(base, makespan_us=base.metrics["makespan_us"] / 2, l2_bytes=1024.0)
    table = cmp.compare(base, b).table.set_index("metric")
    assert list(table.index) == [*METRICS, "cores_used"]
    row = table.loc["makespan_us"]
    assert row["b"] - row["a"] == pytest.approx(row["delta"])
    assert row["ratio"] == pytest.approx(0.5) and row["unit"] == "µs"
    assert math.isnan(table.loc["l2_bytes", "ratio"])  # A = 0: no ratio
    assert table.loc["l2_bytes", "delta"] == 1024.0
    assert math.isnan(table.loc["bound", "delta"]) and table.loc["bound", "a"] == "latency"
    assert table.loc["cores_used", "a"] == 4
    for definition in table["definition"]:
        assert definition in catalogue("en") and definition in catalogue("zh")


def test_diff_names_fields_and_leaves_the_name_out():
    a = Scenario.make("910B2", "vector_add", {"n": 4096, "buffer_num": 1}, name="one")
    b = Scenario.make("910B4", "vector_add", {"n": 4096, "buffer_num": 2},
                      {"ub_KiB": 128}, seed=3, name="two")
    assert cmp.scenario_diff(a, b) == (
        ("preset", "910B2", "910B4"), ("seed", 0, 3), ("params.block_dim", 48, 40),
        ("params.buffer_num", 1, 2), ("overrides.ub_KiB", None, 128))
    assert cmp.scenario_diff(a, a) == ()
    kernels = {f for f, _, _ in cmp.scenario_diff(a, gallery.load("split_k_a"))}
    assert {"kernel", "params.grid_z", "params.tile"} <= kernels  # fields of either kernel


# ---- the rules ---------------------------------------------------------------------------
def test_an_identical_pair_says_nothing(base):
    assert cmp.sentences(cmp.compare(base, base)) == []
    for rule in cmp.RULES:
        assert rule(cmp.compare(base, base)) == []


@pytest.mark.parametrize("changes, expected", [
    ({"makespan_us": 0.5}, ["compare.say.faster"]),
    ({"makespan_us": 1.5}, ["compare.say.slower"]),
    ({"makespan_us": 1.01}, []),  # within SPEED_MIN
    ({"hbm_bytes": 0.5}, ["compare.say.hbm_halved"]),
    ({"hbm_bytes": 0.7}, ["compare.say.hbm_down"]),
    ({"hbm_bytes": 1.3}, ["compare.say.hbm_up"]),
    ({"hbm_bytes": 1.05}, []),
])
def test_ratio_rules(base, changes, expected):
    b = crafted(base, **{k: base.metrics[k] * f for k, f in changes.items()})
    assert ids(cmp.sentences(cmp.compare(base, b))) == expected


@pytest.mark.parametrize("metric, delta, expected", [
    ("load_balance_mean_max", -0.2, "compare.say.balance_down"),
    ("l2_hit_rate", 0.3, "compare.say.l2_up"),
    ("mte3_ratio", 0.2, "compare.say.pipe_busier"),
    ("mte2_ratio", -0.3, "compare.say.pipe_idler"),
])
def test_step_rules(base, metric, delta, expected):
    fires = crafted(base, **{metric: base.metrics[metric] + delta})
    assert ids(cmp.sentences(cmp.compare(base, fires))) == [expected]
    silent = crafted(base, **{metric: base.metrics[metric] + delta / 4})
    assert cmp.sentences(cmp.compare(base, silent)) == []


def test_balance_up_and_l2_down(base):
    a = crafted(base, load_balance_mean_max=0.5, l2_hit_rate=0.5)
    assert ids(cmp.sentences(cmp.compare(a, base))) == ["compare.say.balance_up",
                                                         "compare.say.l2_down"]


def test_bound_rule(base):
    b = crafted(base, bound="memory")
    assert cmp.sentences(cmp.compare(base, b)) == [
        ("compare.say.bound", {"a_bound": "latency", "b_bound": "memory"})]


def test_cores_rule(base):
    one_core = crafted(base, per_core=base.per_core.iloc[:1])
    assert cmp.sentences(cmp.compare(one_core, base)) == [
        ("compare.say.cores_more", {"a_n": 1, "b_n": 4})]
    assert ids(cmp.sentences(cmp.compare(base, one_core))) == ["compare.say.cores_fewer"]
    three = crafted(base, per_core=base.per_core.iloc[:3])  # 4 / 3 < CORES_MIN? no: 1.33
    assert ids(cmp.rule_cores(cmp.compare(three, base))) == ["compare.say.cores_more"]
    assert cmp.rule_cores(cmp.compare(base, crafted(base))) == []


def test_double_buffering_needs_a_buffer_change_and_a_moving_overlap(base):
    single = base.scenario.replace(params={"buffer_num": 1})
    a = crafted(base, scenario=single, overlap_ratio=0.0)
    found = cmp.rule_double_buffer(cmp.compare(a, base))
    assert found == [("compare.say.double_buffer_on", {
        "change": "buffer_num 1 → 2", "pipe": "VECTOR", "a_pct": 0.0,
        "b_pct": base.metrics["overlap_ratio"]})]
    assert ids(cmp.rule_double_buffer(cmp.compare(base, a))) == ["compare.say.double_buffer_off"]
    same_buffers = crafted(base, overlap_ratio=0.0)  # the overlap moves, buffering does not
    assert cmp.rule_double_buffer(cmp.compare(same_buffers, base)) == []
    still = crafted(base, scenario=single)  # buffering differs, the overlap does not move
    assert cmp.rule_double_buffer(cmp.compare(still, base)) == []


def test_the_gallery_pairs_say_their_lesson():
    said = {}
    for lesson, a, b in gallery.pairs():
        if lesson in ("double_buffer", "split_k"):
            found = cmp.sentences(cmp.compare(simulate(gallery.load(a)),
                                              simulate(gallery.load(b))))
            said[lesson] = ids(found)
    assert said["double_buffer"][:2] == ["compare.say.faster", "compare.say.double_buffer_on"]
    # split-K's SyncAll and workspace hand-offs also move its bound (latency -> sync)
    assert said["split_k"][0] == "compare.say.faster"
    assert "compare.say.cores_more" in said["split_k"]


# ---- rendering ---------------------------------------------------------------------------
def test_sentences_render_in_both_languages(base):
    sentence = ("compare.say.faster", {"times_x": 1.8366, "a_us": 104.06, "b_us": 56.56})
    assert cmp.say(sentence) == "**B is 1.84× faster** than A (104.06 µs → 56.56 µs)."
    assert cmp.say(sentence, "zh") == "**B 比 A 快 1.84×**（104.06 µs → 56.56 µs）。"
    bound = ("compare.say.bound", {"a_bound": "latency", "b_bound": "memory"})
    assert t("metric.bound_value.latency") in cmp.say(bound)
    halved = ("compare.say.hbm_halved", {"a_mib": 2**21, "b_mib": 2**20, "ratio_x": 0.5})
    assert cmp.say(halved) == "HBM traffic **halves**: 2.00 MiB → 1.00 MiB (0.50×)."
    for msg_id in (k for k in catalogue("en") if k.startswith("compare.say.")):
        assert msg_id in catalogue("zh")


# ---- figures -----------------------------------------------------------------------------
def test_exact_timelines_share_one_time_axis(base):
    a = simulate(gallery.load("double_buffer_a"))
    fig = plots.timelines_figure(a, base)
    end = max(a.makespan_ns, base.makespan_ns) / 1e3
    assert list(fig.layout.xaxis.range) == list(fig.layout.xaxis2.range) == [0.0, end]
    assert fig.layout.xaxis.matches == "x2" or fig.layout.xaxis2.matches == "x"
    assert {tr.meta for tr in fig.data} == {"A", "B"}
    assert all(tr.type == "bar" for tr in fig.data)
    assert not any(tr.showlegend for tr in fig.data if tr.meta == "B")
    named = dataclasses.replace(a, scenario=a.scenario.replace(name="<a href='x'>me</a>"))
    titles = [ann.text for ann in plots.timelines_figure(named, base).layout.annotations]
    assert "&lt;a href=&#x27;x&#x27;&gt;me&lt;/a&gt;" in titles[0]  # a typed name is text


def test_large_runs_become_per_core_heat_maps():
    a, b = (simulate(gallery.load(i)) for i in ("lpt_a", "lpt_b"))
    fig = plots.timelines_figure(a, b)
    assert [tr.type for tr in fig.data] == ["heatmap", "heatmap"]
    util, names = plots.core_utilisation(a.timeline, 0.0, a.makespan_ns)
    assert util.shape == (len(names), plots.HEATMAP_BINS) and len(names) > 40
    assert 0.99 < util.max() <= 1.0 and list(fig.data[0].y) == names
    assert fig.data[1].z[:, -20:].max() == 0.0  # B ends early: its row is empty at the end


def test_traffic_is_grouped_a_next_to_b(base):
    b = simulate(gallery.load("split_k_b"))
    fig = plots.traffic_figure(base, b)
    assert fig.layout.barmode == "group" and [tr.meta for tr in fig.data] == ["A", "B"]
    assert set(fig.data[0].x) == set(base.traffic["path"]) | set(b.traffic["path"])
    assert fig.data[0].y[list(fig.data[0].x).index("L1→L0A")] == 0.0  # vector add: no L1


def test_ratio_bars_skip_text_and_undefined_ratios(base):
    b = crafted(base, makespan_us=base.metrics["makespan_us"] * 2)
    c = cmp.compare(base, b)
    fig = plots.ratio_figure(c, "zh")
    assert fig.layout.xaxis.type == "log" and len(fig.data[0].x) == len(plots.ratio_table(c))
    assert "bound" not in set(plots.ratio_table(c)["metric"])
    assert 2.0 in np.round(fig.data[0].customdata, 6) and fig.data[0].base == 1.0


# ---- the command line --------------------------------------------------------------------
def test_cli_prints_diff_table_and_sentences(capsys):
    paths = [str(gallery.entry(i).path) for i in ("double_buffer_a", "double_buffer_b")]
    assert cli.main(["compare", *paths]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "params.buffer_num" in out and "1 → 2" in out
    assert "Kernel duration" in out and "B is 1.54× faster than A" in out
    assert cli.main(["compare", paths[0], paths[0], "--json"]) == cli.EXIT_OK
    data = json.loads(capsys.readouterr().out)
    assert data["diff"] == [] and data["sentences"] == []
    assert data["metrics"][0]["ratio"] == 1.0 and data["metrics"][0]["definition"].startswith(
        "Time from")


def test_cli_refuses_bad_input(tmp_path, capsys):
    good = str(gallery.entry("double_buffer_a").path)
    bad = tmp_path / "bad.toml"
    bad.write_text("kernel = 'vector_add'\nbogus = 1\n", encoding="utf-8")
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (cli.MAX_SCENARIO_BYTES + 1))
    for other in (str(tmp_path / "missing.toml"), str(bad), str(big)):
        assert cli.main(["compare", good, other]) == cli.EXIT_INPUT
    assert "bogus" in capsys.readouterr().err

"""The gallery (explorer/scenarios/*.toml, explorer/core/gallery.py): every file is a plain scenario
that loads and simulates, pairs are complete and differ only in what their lesson is
about, every lesson is explained in English and Chinese, and each lesson holds: the
numbers the explanation promises are the numbers the emulator gives."""
from __future__ import annotations

import pytest

import kernels
from explorer.core import Scenario, gallery, simulate
from explorer.core.compare import compare
from explorer.core.i18n import has
from hardware_presets.errors import InputError

#: what each pair is allowed to change (validated params may follow, e.g. auto tile sizes)
PAIR_FIELDS = {
    "double_buffer": {"params.buffer_num"},
    "gemm_double_buffer": {"params.db_l1", "params.db_l0"},
    "split_k": {"params.grid_z"},
    "lpt": {"params.policy"},
    "int8_kv": {"params.kv_dtype", "params.heads_per_pass"},
}


@pytest.fixture(scope="module")
def runs():
    """Every gallery scenario simulated once."""
    return {scenario_id: simulate(gallery.load(scenario_id)) for scenario_id in gallery.ids()}


def pair(runs, lesson):
    return runs[f"{lesson}_a"], runs[f"{lesson}_b"]


def test_every_file_is_listed_with_its_kernel_and_partner():
    found = {e.id: e for e in gallery.entries()}
    folders = [gallery.GALLERY_DIR] + [r.examples for r in kernels.KERNELS.values()
                                       if r.examples]
    assert set(found) == {p.stem for folder in folders for p in folder.glob("*.toml")}
    assert len(found) >= 12
    assert found["double_buffer_a"] == ("double_buffer_a", found["double_buffer_a"].path,
                                        "vector_add", "double_buffer_b")
    assert found["double_buffer_b"].pair == "double_buffer_a"
    assert found["tail_wave"].pair is None and found["tail_wave"].lesson == "tail_wave"
    assert {lesson for lesson, _, _ in gallery.pairs()} == set(PAIR_FIELDS)
    own = {p.stem for r in kernels.KERNELS.values() if r.examples
           for p in r.examples.glob("*.toml")}  # the kernels' own examples
    assert set(gallery.lessons()) == set(PAIR_FIELDS) | {"tail_wave", "decode_memory_bound"} | own


def test_a_lone_half_is_a_single_scenario():
    assert gallery._pair_of("foo_a", {"foo_a", "foo_b"}) == "foo_b"
    assert gallery._pair_of("foo_a", {"foo_a"}) is None
    assert gallery._pair_of("tail_wave", {"tail_wave"}) is None


def test_unknown_id_is_refused_with_the_known_ones():
    with pytest.raises(InputError) as info:
        gallery.load("no_such_lesson")
    assert "double_buffer_a" in info.value.allowed


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_lesson_and_side_is_explained(lang):
    for e in gallery.entries():
        assert has(f"gallery.{e.lesson}", lang) and has(f"gallery.{e.lesson}_help", lang)
        if e.pair:
            assert has(f"gallery.{e.id}", lang)


def test_files_are_plain_scenarios_that_round_trip():
    for scenario_id in gallery.ids():
        scenario = gallery.load(scenario_id)
        assert scenario.name
        assert Scenario.from_toml(scenario.to_toml()) == scenario


def test_every_gallery_run_passes_its_numerical_check(runs):
    failed = [i for i, r in runs.items() if not r.numerics.passed]
    assert not failed


@pytest.mark.parametrize("lesson", sorted(PAIR_FIELDS))
def test_a_pair_changes_only_what_it_teaches(runs, lesson):
    fields = {field for field, _, _ in compare(*pair(runs, lesson)).diff}
    assert fields and fields <= PAIR_FIELDS[lesson]


def test_double_buffering_overlaps_copy_and_compute(runs):
    a, b = (r.metrics for r in pair(runs, "double_buffer"))
    assert b["makespan_us"] < a["makespan_us"]
    assert a["overlap_ratio"] < 0.05 and b["overlap_ratio"] > 0.8
    # two copies in flight hide the DataCopy latency too: about 1.5x faster
    assert b["makespan_us"] < 0.75 * a["makespan_us"]


def test_gemm_double_buffering_pays_when_copy_and_cube_are_comparable(runs):
    a, b = (r.metrics for r in pair(runs, "gemm_double_buffer"))
    assert b["makespan_us"] < 0.75 * a["makespan_us"]
    assert b["aic_cube_ratio"] > a["aic_cube_ratio"] + 0.15


def test_the_tail_wave_exists(runs):
    run = runs["tail_wave"]
    cores = run.params["block_dim"]
    tasks = run.timeline.loc[run.timeline["core_kind"] == "AIC", "task"].nunique()
    assert cores == 20 and tasks == 45 and tasks % cores != 0
    assert run.metrics["load_balance_min_max"] < 0.9


def test_decode_is_memory_bound(runs):
    run = runs["decode_memory_bound"]
    assert run.metrics["bound"] == "memory"
    assert run.metrics["arithmetic_intensity"] < run.chip.ridge_point() / 10


def test_split_k_puts_more_cores_on_a_skinny_gemm(runs):
    a, b = pair(runs, "split_k")
    assert b.metrics["makespan_us"] < a.metrics["makespan_us"] / 3
    assert (b.per_core["active_ns"] > 0).sum() > (a.per_core["active_ns"] > 0).sum()


def test_lpt_beats_static_blocks_at_batch_64(runs):
    a, b = (r.metrics for r in pair(runs, "lpt"))
    assert b["makespan_us"] < a["makespan_us"]
    assert b["load_balance_mean_max"] > a["load_balance_mean_max"] + 0.3


def test_int8_kv_halves_the_hbm_traffic(runs):
    a, b = (r.metrics for r in pair(runs, "int8_kv"))
    assert 0.45 <= b["hbm_bytes"] / a["hbm_bytes"] <= 0.55
    assert b["makespan_us"] < a["makespan_us"]
    assert (a["bound"], b["bound"]) == ("memory", "compute")

"""Scenario: validation, plain-data round trips (TOML, JSON), hashing, replace, determinism."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hardware_presets as hp
import kernels
from explorer.core import Scenario, simulate
from explorer.core.scenario import NAME_MAX, SEED_MAX
from explorer.core.simulate import remembered_check
from hardware_presets.errors import InputError
from kernels.vector_add import kernel as va

BYTES = {"fp16": 2, "fp32": 4, "bf16": 2, "int16": 2, "int32": 4}
OVERRIDES = [{}, {"ub_KiB": 64}, {"ub_KiB": 256, "hbm_bandwidth_GBps": 1234.5},
             {"clock_MHz": 1000}]
TRICKY_NAMES = ['say "hi"', "it's", "'''", '"""', "back\\slash", "名前 ✓ 🚀",
                "line\nbreak\ttab", "# not a comment", "[params]\nn = 1", "", "x" * NAME_MAX]
#: names a scenario file may hold: no control codes but tab and line breaks, no surrogates
NAME_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc"),
                                  whitelist_characters="\t\n\r"),
                    max_size=NAME_MAX)


@st.composite
def scenarios(draw):
    """Plain data of a valid scenario: every parameter within what the chip accepts."""
    preset = draw(st.sampled_from(hp.list_presets()))
    overrides = draw(st.sampled_from(OVERRIDES))
    chip = hp.load(preset, **overrides)
    dtype = draw(st.sampled_from(va.DTYPES))
    buffer_num = draw(st.sampled_from((1, 2)))
    step = chip.ub_align_bytes // BYTES[dtype]
    per_elem = 3 * buffer_num * BYTES[dtype] + (0 if dtype in chip.vector_dtypes else 8)
    top = chip.ub_bytes // per_elem // step
    k = draw(st.integers(max(1, -(-16 // step)), top))
    params = {"n": draw(st.integers(1, 1 << 34)),
              "block_dim": draw(st.integers(1, len(chip.vector_core_ids()))),
              "tile": k * step, "buffer_num": buffer_num, "dtype": dtype}
    if draw(st.booleans()):  # sometimes leave n out: validated() fills the default
        del params["n"]
    name = draw(st.one_of(st.sampled_from(TRICKY_NAMES), NAME_TEXT))
    return {"name": name, "preset": preset, "overrides": overrides, "kernel": "vector_add",
            "params": params, "seed": draw(st.integers(0, SEED_MAX))}


@given(data=scenarios())
def test_toml_and_json_round_trips_equal_the_original(data):
    s = Scenario.from_dict(data)
    assert s.name == data["name"] and s.seed == data["seed"] and s.preset == data["preset"]
    assert s.overrides_dict == data["overrides"]
    assert {k: s.params_dict[k] for k in data["params"]} == data["params"]
    for text, parse in ((s.to_toml(), Scenario.from_toml), (s.to_json(), Scenario.from_json)):
        back = parse(text)
        assert back == s
        assert hash(back) == hash(s)
        assert back.to_dict() == s.to_dict()
    assert Scenario.from_file_text(s.to_json(), "a.JSON") == s
    assert Scenario.from_file_text(s.to_toml(), "a.toml") == s
    assert json.loads(s.to_json()) == s.to_dict()


@pytest.mark.parametrize("name", ["\u0000\u001f\u007f", "bell\u0007", "\ud800 alone"])
def test_a_name_no_file_could_hold_is_refused_by_from_dict_too(name):
    with pytest.raises(InputError, match="name"):
        Scenario.from_dict({"kernel": "vector_add", "name": name})


def test_scenario_is_hashable_and_equal_scenarios_hash_equal():
    a = Scenario.make(params={"n": 1000, "block_dim": 1, "tile": 256}, seed=3, name="a")
    b = Scenario.from_dict({"name": "a", "seed": 3,
                            "params": {"tile": 256, "block_dim": 1, "n": 1000}})
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    cache = {a: "cached"}
    assert cache[b] == "cached"
    for other in (a.replace(seed=4), a.replace(name="b"), a.replace(params={"n": 1001}),
                  a.replace(overrides={"ub_KiB": 128}), a.replace(preset="910B1")):
        assert other != a
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.seed = 5


def test_validated_fills_defaults():
    raw = Scenario()
    assert raw.params == ()
    full = raw.validated()
    assert full.params_dict == {s.name: s.default for s in va.PARAMS}
    assert Scenario.make() == full
    partial = Scenario.make(params={"n": 1000, "dtype": "int16"})
    assert partial.params_dict == {**{s.name: s.default for s in va.PARAMS}, "n": 1000,
                                   "dtype": "int16"}
    assert partial.validated() == partial  # idempotent
    assert Scenario.from_toml("") == full


@pytest.mark.parametrize("preset,cores", [("910B1", 48), ("910B2", 48), ("910B3", 40),
                                          ("910B4", 40), ("910", 32), ("310P3", 8)])
def test_defaults_are_valid_on_every_preset(preset, cores):
    s = Scenario.make(preset=preset)  # block_dim defaults to all of the chip's vector cores
    assert s.params_dict["block_dim"] == cores == len(s.chip().vector_core_ids())
    assert Scenario.from_toml(f'preset = "{preset}"') == s


def test_overrides_round_trip_and_are_applied():
    params = {"tile": 8192, "buffer_num": 2, "dtype": "fp16", "block_dim": 1}
    Scenario.make(params=params)  # fits the 192 KiB UB of the 910B2
    with pytest.raises(InputError) as info:
        Scenario.make(params=params, overrides={"ub_KiB": 64})
    assert info.value.field == "params.tile"
    small = Scenario.make(params={**params, "tile": 4096}, overrides={"ub_KiB": 64})
    assert small.chip().ub_KiB == 64
    assert small.chip().overridden == {"ub_KiB": 64}
    assert Scenario.from_toml(small.to_toml()) == small
    assert Scenario.from_json(small.to_json()) == small
    assert Scenario.from_toml(small.to_toml()).chip().ub_bytes == 64 * 1024 - 256


def test_bad_override_names_the_field():
    with pytest.raises(InputError) as info:
        Scenario.make(overrides={"ub_KiB": 0})
    assert "ub_KiB" in info.value.field and "ub_KiB" in str(info.value)
    with pytest.raises(InputError) as info:
        Scenario.make(overrides={"warp_size": 32})
    assert "warp_size" in str(info.value)


@pytest.mark.parametrize("data,field", [
    ({"nmae": "typo"}, "scenario: nmae"),
    ({"params": [1, 2]}, "scenario: params"),
    ({"params": "n = 1"}, "scenario: params"),
    ({"overrides": 5}, "scenario: overrides"),
    ({"seed": -1}, "seed"),
    ({"seed": SEED_MAX + 1}, "seed"),
    ({"seed": True}, "seed"),
    ({"seed": "7"}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"name": "x" * (NAME_MAX + 1)}, "name"),
    ({"name": 5}, "name"),
    ({"preset": "910D"}, "preset"),
    ({"kernel": "matmul"}, "kernel"),
    ({"params": {"tile": 24}}, "params.tile"),
    ({"params": {"dtype": "fp64"}}, "params.dtype"),
    ({"params": {"blockdim": 4}}, "params.blockdim"),
])
def test_from_dict_refuses_bad_fields_naming_them(data, field):
    with pytest.raises(InputError) as info:
        Scenario.from_dict(data)
    assert info.value.field == field
    assert field in str(info.value)


def test_limits_are_inclusive():
    assert Scenario.make(seed=SEED_MAX).seed == SEED_MAX
    assert Scenario.make(seed=0).seed == 0
    assert Scenario.make(name="é" * NAME_MAX).name == "é" * NAME_MAX


def test_from_dict_refuses_a_non_table():
    with pytest.raises(InputError) as info:
        Scenario.from_dict([("seed", 1)], origin="up.json")
    assert info.value.field == "up.json"


@pytest.mark.parametrize("text,parse,origin", [
    ("name = 'unterminated", Scenario.from_toml, "scenario.toml"),
    ("[params\nn = 1", Scenario.from_toml, "scenario.toml"),
    ("seed = 1\nseed = 2", Scenario.from_toml, "scenario.toml"),
    ('{"seed": 1,}', Scenario.from_json, "scenario.json"),
    ("", Scenario.from_json, "scenario.json"),
    ("[1, 2]", Scenario.from_json, "scenario.json"),
    ("null", Scenario.from_json, "scenario.json"),
])
def test_invalid_text_is_an_input_error_naming_the_origin(text, parse, origin):
    with pytest.raises(InputError) as info:
        parse(text)
    assert info.value.field == origin and origin in str(info.value)


def test_file_text_errors_name_the_file():
    with pytest.raises(InputError) as info:
        Scenario.from_file_text("not = [valid", "mine.toml")
    assert "mine.toml" in str(info.value)
    with pytest.raises(InputError) as info:
        Scenario.from_file_text("seed = 1", "mine.json")  # TOML text in a .json file
    assert info.value.field == "mine.json"
    with pytest.raises(InputError) as info:
        Scenario.from_file_text('[params]\nn = 0', "mine.toml")
    assert info.value.field == "params.n"


CODE = "__import__('os').system('touch PWNED') or exec('import sys; sys.exit(9)')"


@pytest.mark.parametrize("fmt", ["toml", "json"])
def test_files_are_parsed_as_data_only(fmt, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if fmt == "toml":
        text = f'name = "{CODE}"\nseed = 1\n'
        s = Scenario.from_toml(text)
    else:
        s = Scenario.from_json(json.dumps({"name": CODE, "seed": 1}))
    assert s.name == CODE
    assert not (tmp_path / "PWNED").exists()
    assert Scenario.from_toml(s.to_toml()).name == CODE
    # code in a value that must be a number or a choice is refused, never evaluated
    with pytest.raises(InputError) as info:
        Scenario.from_dict({"params": {"dtype": CODE}})
    assert info.value.field == "params.dtype"
    with pytest.raises(InputError) as info:
        Scenario.from_dict({"params": {"n": "__import__('os').getpid()"}})
    assert info.value.field == "params.n"
    assert not (tmp_path / "PWNED").exists()


# ---- replace -----------------------------------------------------------------------------
def test_replace_merges_params_and_overrides():
    s = Scenario.make(params={"n": 1000, "tile": 256, "block_dim": 2, "dtype": "fp32"},
                      overrides={"ub_KiB": 128}, seed=5, name="base")
    r = s.replace(params={"n": 2000})
    assert r.params_dict == {**s.params_dict, "n": 2000}
    assert (r.seed, r.name, r.overrides) == (s.seed, s.name, s.overrides)
    r = s.replace(overrides={"hbm_bandwidth_GBps": 800.0})
    assert r.overrides_dict == {"ub_KiB": 128, "hbm_bandwidth_GBps": 800.0}
    assert r.params == s.params
    r = s.replace(seed=6, name="other")
    assert (r.seed, r.name, r.params) == (6, "other", s.params)
    assert s.seed == 5  # the original is untouched
    with pytest.raises(InputError) as info:
        s.replace(params={"block_dim": 49})
    assert info.value.field == "params.block_dim"
    with pytest.raises(InputError) as info:
        s.replace(seed=-1)
    assert info.value.field == "seed"


# ---- determinism -------------------------------------------------------------------------
SMALL = {"n": 5000, "tile": 1024, "block_dim": 3}


def _same_result(a, b):
    pd.testing.assert_frame_equal(a.timeline, b.timeline)
    pd.testing.assert_frame_equal(a.per_core, b.per_core)
    pd.testing.assert_frame_equal(a.traffic, b.traffic)
    pd.testing.assert_frame_equal(a.bandwidth, b.bandwidth)
    assert a.metrics == b.metrics


def spy_on_inputs(monkeypatch, make_inputs) -> None:
    """The vector add's record with ``make_inputs`` replaced (the record is frozen)."""
    record = kernels.KERNELS["vector_add"]
    numerics = dataclasses.replace(record.numerics, make_inputs=make_inputs)
    monkeypatch.setitem(kernels.KERNELS, "vector_add",
                        dataclasses.replace(record, numerics=numerics))


def test_simulate_is_deterministic_and_the_seed_changes_only_inputs(monkeypatch,
                                                                   fresh_numerics):
    drawn = []
    real = va.make_inputs

    def spy(params, rng):
        inputs = real(params, rng)
        drawn.append(inputs)
        return inputs

    spy_on_inputs(monkeypatch, spy)
    s = Scenario.make(params=SMALL, seed=11)
    first = simulate(s)
    remembered_check.cache_clear()  # compute the same check again
    again = simulate(s)
    other = simulate(s.replace(seed=12))
    assert len(drawn) == 3
    _same_result(first, again)
    assert first.numerics == again.numerics
    np.testing.assert_array_equal(drawn[0]["x"], drawn[1]["x"])
    np.testing.assert_array_equal(drawn[0]["y"], drawn[1]["y"])
    # another seed: same timing and metrics, different input values
    _same_result(first, other)
    assert not np.array_equal(drawn[0]["x"], drawn[2]["x"])
    assert not np.array_equal(drawn[0]["y"], drawn[2]["y"])
    assert other.numerics.passed


def test_a_check_is_remembered_across_chips_but_not_across_parameters(monkeypatch,
                                                                     fresh_numerics):
    """The numerical check depends on the kernel, its parameters and the seed only: another
    preset or override reuses it, another parameter or seed computes a new one."""
    calls = []
    real = va.make_inputs
    spy_on_inputs(monkeypatch, lambda p, rng: calls.append(p) or real(p, rng))
    s = Scenario.make(params=SMALL, seed=3)
    base = simulate(s)
    on_b4 = simulate(s.replace(preset="910B4"))
    small_ub = simulate(s.replace(overrides={"ub_KiB": 96}))
    assert len(calls) == 1 and base.numerics == on_b4.numerics == small_ub.numerics
    assert on_b4.metrics != base.metrics  # the time is the other chip's
    simulate(s.replace(params={"tile": 512}))
    simulate(s.replace(seed=4))
    assert len(calls) == 3


def test_simulate_validates_an_unvalidated_scenario():
    raw = Scenario(params=(("block_dim", 1), ("n", 1000), ("tile", 256)))
    res = simulate(raw)
    assert res.scenario == raw.validated()
    assert res.params == res.scenario.params_dict
    with pytest.raises(InputError):
        simulate(Scenario(params=(("tile", 24),)))

"""Model presets (kernels.models): every preset loads with the sourced values of
hardware_facts.md / the Qwen2.5 cards, bad files and user shapes are refused with the
field named, and KV / weight bytes follow the documented formulas."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardware_presets.errors import InputError
from kernels.models import (
    KV_DTYPES,
    MODEL_FIELDS,
    WEIGHT_DTYPES,
    ModelShape,
    list_models,
    load_model,
    load_model_text,
    model_from_dict,
)
from kernels.models.loader import MODEL_DIR, MODELS

# hardware_facts.md "LLM shapes for decode scenarios" + Qwen2.5 model cards / config.json
TABLE = {  # layers, q heads, kv heads, head dim, hidden, params (B)
    "llama3-8b": (32, 32, 8, 128, 4096, 8.0),
    "llama3-70b": (80, 64, 8, 128, 8192, 70.6),
    "llama2-7b": (32, 32, 32, 128, 4096, 6.7),
    "llama2-70b": (80, 64, 8, 128, 8192, 69.0),
    "qwen2.5-7b": (28, 28, 4, 128, 3584, 7.61),
    "qwen2.5-72b": (80, 64, 8, 128, 8192, 72.7),
}
KEYS = ("layers", "q_heads", "kv_heads", "head_dim", "hidden", "params_B")
GOOD = {"layers": 2, "q_heads": 4, "kv_heads": 2, "head_dim": 8, "hidden": 32, "params_B": 0.5}
ELEMENT_BYTES = {"fp16": 2, "bf16": 2, "int8_token": 1, "int8_head": 1, "int8_channel": 1,
                 "fp8_e4m3": 1, "fp8_e5m2": 1, "hif8": 1, "mxfp8": 1, "mxfp4": 0.5}


def test_list_models_is_the_six_presets():
    assert set(list_models()) == set(TABLE)


@pytest.mark.parametrize("name", list(TABLE))
def test_preset_values_equal_the_table(name):
    m = load_model(name)
    assert tuple(getattr(m, k) for k in KEYS) == TABLE[name]
    assert m.name == name and m.origin == MODELS[name]
    assert m.intermediate_size > 0
    hash(m)  # frozen and hashable


@pytest.mark.parametrize("name", list(TABLE))
def test_every_number_has_provenance(name):
    m = load_model(name)
    for key in MODEL_FIELDS:
        p = m.provenance_of(key)
        assert p.source and p.status in ("published", "derived") and p.confidence in "HM"
        assert p.status == "published" or p.note


@pytest.mark.parametrize("name", list(TABLE))
@pytest.mark.parametrize("kv_dtype", KV_DTYPES)
def test_kv_bytes_equal_the_formula(name, kv_dtype):
    m = load_model(name)
    L, _, kvh, d, _, _ = TABLE[name]
    scales = {"int8_token": 2 * L * kvh * 4,  # an fp32 scale per token, head, K|V
              "mxfp8": 2 * L * kvh * d // 32, "mxfp4": 2 * L * kvh * d // 32}  # E8M0 / 32
    assert m.kv_bytes_per_token(kv_dtype) == \
        2 * L * kvh * d * ELEMENT_BYTES[kv_dtype] + scales.get(kv_dtype, 0)
    assert m.kv_bytes_per_token_per_layer(kv_dtype) * L == m.kv_bytes_per_token(kv_dtype)
    fixed = {"int8_head": 2 * L * kvh * 4, "int8_channel": 2 * L * kvh * d * 4,
             **{f: 2 * L * kvh * d * 4 for f in ("fp8_e4m3", "fp8_e5m2", "hif8")}}
    assert m.kv_scale_bytes_fixed(kv_dtype) == fixed.get(kv_dtype, 0)


def test_int8_is_per_token_int8():
    m = load_model("llama3-8b")
    assert m.kv_bytes_per_token("int8") == m.kv_bytes_per_token("int8_token")


@pytest.mark.parametrize("dtype,nbytes", [("fp16", 2), ("bf16", 2), ("fp32", 4), ("int8", 1),
                                          ("int4", 0.5)])
def test_weight_bytes(dtype, nbytes):
    m = load_model("llama3-70b")
    assert m.weight_bytes(dtype) == pytest.approx(70.6e9 * nbytes)
    assert dtype in WEIGHT_DTYPES


def test_llama3_70b_facts():
    m = load_model("llama3-70b")
    assert m.kv_bytes_per_token("fp16") == 320 * 1024 == 327_680
    assert m.weight_bytes("fp16") == pytest.approx(141e9, rel=0.01)
    assert m.gqa_group == 8


def test_gqa_groups():
    assert {n: load_model(n).gqa_group for n in TABLE} == {
        "llama3-8b": 4, "llama3-70b": 8, "llama2-7b": 1, "llama2-70b": 8,
        "qwen2.5-7b": 7, "qwen2.5-72b": 8}


# ---- refusals --------------------------------------------------------------------------
def test_unknown_model_is_refused_with_a_hint():
    with pytest.raises(InputError) as err:
        load_model("llama3-80b")
    assert err.value.field == "model" and "llama3-8b" in str(err.value)


def test_unknown_kv_dtype_is_refused():
    with pytest.raises(InputError) as err:
        load_model("llama3-8b").kv_bytes_per_token("fp8")
    assert err.value.field == "kv_dtype"
    with pytest.raises(InputError):
        load_model("llama3-8b").weight_bytes("fp8")


def test_user_shape_round_trip():
    m = model_from_dict(GOOD)
    assert isinstance(m, ModelShape) and m.gqa_group == 2 and m.intermediate_size == 0
    assert m.provenance_of("layers").source == "user input"
    assert model_from_dict(GOOD) == m and hash(model_from_dict(GOOD)) == hash(m)


@pytest.mark.parametrize("key,value,field", [
    ("layers", 0, "layers"), ("layers", 2.5, "layers"), ("q_heads", -4, "q_heads"),
    ("kv_heads", 3, "kv_heads"), ("kv_heads", True, "kv_heads"), ("head_dim", "8", "head_dim"),
    ("hidden", 64, "hidden"), ("params_B", 0, "params_B"), ("params_B", float("nan"), "params_B"),
    ("intermediate_size", -1, "intermediate_size"), ("vocab", 32000, "vocab"),
])
def test_bad_user_shapes_name_the_field(key, value, field):
    with pytest.raises(InputError) as err:
        model_from_dict({**GOOD, key: value})
    assert err.value.field == f"user shape: {field}"
    assert err.value.allowed


def test_missing_user_field_is_named():
    d = dict(GOOD)
    del d["kv_heads"]
    with pytest.raises(InputError) as err:
        model_from_dict(d)
    assert err.value.field == "user shape: kv_heads"


def test_kv_heads_must_divide_q_heads_message():
    with pytest.raises(InputError) as err:
        model_from_dict({**GOOD, "q_heads": 6, "kv_heads": 4, "hidden": 48})
    assert "divisor of q_heads = 6" in err.value.allowed and "1, 2, 3, 6" in err.value.allowed


def test_hidden_rule_message():
    with pytest.raises(InputError) as err:
        model_from_dict({**GOOD, "hidden": 40})
    assert "head_dim x q_heads = 8 x 4 = 32" in err.value.allowed


@settings(max_examples=60, deadline=None)
@given(layers=st.integers(1, 200), kv=st.integers(1, 16), group=st.integers(1, 8),
       d=st.sampled_from([64, 80, 96, 128, 256]))
def test_valid_user_shapes_follow_the_formula(layers, kv, group, d):
    m = model_from_dict({"layers": layers, "q_heads": kv * group, "kv_heads": kv,
                         "head_dim": d, "hidden": kv * group * d, "params_B": 1.0})
    assert m.gqa_group == group
    assert m.kv_bytes_per_token("bf16") == 2 * layers * kv * d * 2


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(KEYS), value=st.one_of(st.integers(-10, 0), st.text(max_size=3),
                                                  st.none(), st.floats(allow_nan=True)))
def test_bad_values_are_refused_with_the_field(key, value):
    if key == "params_B" and isinstance(value, float) and 0.001 <= value <= 10_000:
        return  # a valid parameter count
    with pytest.raises(InputError) as err:
        model_from_dict({**GOOD, key: value})
    assert err.value.field == f"user shape: {key}"


def _preset_text(name="llama3_8b.toml") -> str:
    return (MODEL_DIR / name).read_text("utf-8")


@pytest.mark.parametrize("old,new,field", [
    ("value = 32, source", "value = 0, source", "x.toml: shape.layers.value"),
    ('status = "published"', 'status = "rumour"', "x.toml: shape.layers.status"),
    ('confidence = "H"', 'confidence = "Z"', "x.toml: shape.layers.confidence"),
    ("layers = {", "layerz = {", "x.toml: shape.layerz"),
    ("value = 8, source", "value = 5, source", "x.toml: shape.kv_heads"),
    ("value = 4096, source", "value = 4000, source", "x.toml: shape.hidden"),
    ('name = "llama3-8b"', 'nom = "llama3-8b"', "x.toml: nom"),
    ("[shape]", "[shap]", "x.toml: shap"),
])
def test_bad_preset_files_name_file_and_key(old, new, field):
    text = _preset_text()
    assert old in text
    with pytest.raises(InputError) as err:
        load_model_text(text.replace(old, new, 1), origin="x.toml")
    assert err.value.field == field


def test_derived_value_without_note_is_refused():
    text = _preset_text().replace(
        'note = "hidden_size / num_attention_heads = 4096 / 32 (the config has no head_dim key)"',
        'note = ""')
    with pytest.raises(InputError) as err:
        load_model_text(text, origin="x.toml")
    assert err.value.field == "x.toml: shape.head_dim.note"


def test_missing_required_key_in_a_file_is_named():
    lines = [ln for ln in _preset_text().splitlines() if not ln.startswith("hidden =")]
    with pytest.raises(InputError) as err:
        load_model_text("\n".join(lines), origin="x.toml")
    assert err.value.field == "x.toml: shape.hidden"


def test_broken_toml_is_refused():
    with pytest.raises(InputError) as err:
        load_model_text("layers = [", origin="x.toml")
    assert err.value.field == "x.toml: TOML"


def test_preset_text_loads_to_the_preset():
    assert load_model_text(_preset_text(), origin="llama3_8b.toml") == load_model("llama3-8b")

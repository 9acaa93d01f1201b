"""Synthetic attention inputs (the knobs do what they say) and the loader of a user's
.npz dump (data only, every refusal names the array and the problem)."""
from __future__ import annotations

import io
import math
import zipfile

import numpy as np
import pytest

from hardware_presets.errors import InputError
from kernels.sparse import data as sd
from kernels.sparse.policies import softmax

SMALL = {"tokens": 256, "head_dim": 32, "kv_heads": 2, "group": 2, "past_queries": 4}


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ranks = [np.argsort(np.argsort(x)) for x in (a, b)]
    return float(np.corrcoef(*ranks)[0, 1])


def _norm_attention_correlation(norm_relation: float) -> list[float]:
    data = sd.synthetic(np.random.default_rng(5), tokens=1024, kv_heads=4,
                        norm_relation=norm_relation)
    out = []
    for h in range(data.kv_heads):
        q, k, _, _ = data.head(h)
        attention = softmax(q @ k.T / math.sqrt(k.shape[1])).mean(axis=0)
        out.append(_spearman(np.linalg.norm(k, axis=1), attention))
    return out


def test_shapes_dtypes_and_groups():
    data = sd.synthetic(np.random.default_rng(0), **SMALL)
    assert data.q.shape == (4, 32) and data.k.shape == data.v.shape == (2, 256, 32)
    assert data.q_past.shape == (4, 4, 32) and data.group == 2
    assert all(a.dtype == np.float64 for a in (data.q, data.k, data.v, data.q_past))
    q, k, _, past = data.head(1)
    assert np.array_equal(q, data.q[2:4]) and np.array_equal(past, data.q_past[:, 2:4])
    no_past = sd.synthetic(np.random.default_rng(0), **{**SMALL, "past_queries": 0})
    assert no_past.q_past is None


def test_deterministic_for_a_seed():
    a, b, c = (sd.synthetic(np.random.default_rng(s), **SMALL) for s in (1, 1, 2))
    for name in ("q", "k", "v", "q_past"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.k, c.k)


def test_logits_and_norms_are_the_designed_ones():
    """head_spread 0 and no outliers: q.k / sqrt(d) is l_t for every head and ||k_t|| is
    N_t, both drawn first from the same generator."""
    s = sd.Structure(**SMALL, head_spread=0.0, outlier_channels=0)
    q, past, k, _ = sd.synthetic_head(np.random.default_rng(3), s)
    rng = np.random.default_rng(3)
    logits = sd.designed_logits(rng, s)
    norms = sd.key_norms(rng, s, logits)
    assert np.allclose(q @ k.T / math.sqrt(32), logits, atol=1e-9)
    assert np.allclose(past @ k.T / math.sqrt(32), logits, atol=1e-9)
    assert np.allclose(np.linalg.norm(k, axis=1), norms)


def test_norm_relation_sets_the_sign_of_norm_attention_correlation():
    assert max(_norm_attention_correlation(-1.0)) < -0.6
    assert max(abs(r) for r in _norm_attention_correlation(0.0)) < 0.12
    assert min(_norm_attention_correlation(1.0)) > 0.6


def test_sinks_draw_large_attention():
    data = sd.synthetic(np.random.default_rng(4), **SMALL, sink_tokens=1, sink_strength=8.0)
    q, k, _, _ = data.head(0)
    attention = softmax(q @ k.T / math.sqrt(32)).mean(axis=0)
    assert attention.argmax() == 0 and attention[0] > 0.3


@pytest.mark.parametrize("knob,value", [("tokens", 1), ("tokens", 2.5),
                                        ("norm_relation", 1.5), ("head_spread", -1.0),
                                        ("query_channels + outlier_channels", None)])
def test_bad_knobs_are_refused_by_name(knob, value):
    knobs = ({"head_dim": 8, "query_channels": 4, "outlier_channels": 3} if value is None
             else {knob: value})
    with pytest.raises(InputError) as err:
        sd.synthetic(np.random.default_rng(0), **knobs)
    assert err.value.field == knob


# ---- loader ---------------------------------------------------------------------------

def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _valid(dtype=np.float32, **changes) -> dict:
    rng = np.random.default_rng(0)
    arrays = {"q": rng.standard_normal((4, 16)), "k": rng.standard_normal((2, 40, 16)),
              "v": rng.standard_normal((2, 40, 16)),
              "q_past": rng.standard_normal((3, 4, 16))}
    arrays = {name: a.astype(dtype) for name, a in arrays.items()}
    arrays.update(changes)
    return {name: a for name, a in arrays.items() if a is not None}


def _refused(data: bytes) -> InputError:
    with pytest.raises(InputError) as err:
        sd.load_npz(data, "dump.npz")
    return err.value


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_valid_dump_loads_as_float64(dtype):
    arrays = _valid(dtype)
    data = sd.load_npz(_npz(**arrays), "dump.npz")
    assert data.kv_heads == 2 and data.tokens == 40 and data.group == 2
    assert data.k.dtype == np.float64 and np.array_equal(data.k, arrays["k"])
    assert sd.load_npz(_npz(**_valid(q_past=None))).q_past is None


@pytest.mark.parametrize("change,array", [
    ({"keys": np.zeros((2, 40, 16))}, "array name"),
    ({"v": None}, "v"),
    ({"k": np.zeros((2, 40, 16), np.int32)}, "k"),
    ({"q": np.zeros((4, 16), np.complex128)}, "q"),
    ({"q": np.zeros((3, 16))}, "q"),
    ({"v": np.zeros((2, 41, 16))}, "v"),
    ({"k": np.zeros((2, 40))}, "k"),
    ({"q_past": np.zeros((40, 4, 16))}, "q_past"),
    ({"q": np.full((4, 16), np.inf)}, "q"),
])
def test_bad_arrays_are_refused_naming_the_array(change, array):
    assert _refused(_npz(**_valid(**change))).field == f"{array} in dump.npz"


def test_pickled_objects_are_refused_from_the_header():
    buf = io.BytesIO()
    np.savez(buf, **_valid(v=np.array([[[None]]], dtype=object)))
    err = _refused(buf.getvalue())
    assert err.field == "v in dump.npz" and err.value == "object"


def test_non_zip_bytes_and_a_bare_npy_are_refused():
    npy = io.BytesIO()
    np.save(npy, np.zeros(3))
    for data in (b"hello", npy.getvalue()):
        err = _refused(data)
        assert err.field == "dump.npz" and "not a zip" in str(err)


def test_an_unreadable_header_is_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("q.npy", b"\x93NUMPY garbage")
    assert _refused(buf.getvalue()).field == "q in dump.npz"


@pytest.mark.parametrize("cap,value,field", [("MAX_FILE_BYTES", 100, "dump.npz"),
                                             ("MAX_TOKENS", 39, "k in dump.npz"),
                                             ("MAX_HEADS", 2, "q in dump.npz"),
                                             ("MAX_ELEMENTS", 2000, "arrays in dump.npz")])
def test_caps_are_checked_before_any_array_is_read(monkeypatch, cap, value, field):
    data = _npz(**_valid())
    monkeypatch.setattr(sd, cap, value)
    monkeypatch.setattr(np, "load", lambda *a, **k: pytest.fail("array read"))
    assert _refused(data).field == field

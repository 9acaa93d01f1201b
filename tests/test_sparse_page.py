"""The "Sparse attention" page under ``streamlit.testing.v1.AppTest``: it renders every
policy's accuracy on synthetic inputs, the kept tokens, the measured norm relation, the
emulated bytes and step times with the compression on the timeline; a control, once
applied, changes the output; bad input (a keep ratio too small for the sinks and window,
a window longer than the cache, a keep ratio of 0, a malformed or too large upload) is a
translated message and never an exception; an uploaded dump is measured; a link reopens
a scenario; Chinese works.
"""
from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import hardware_presets as hp
from explorer.core.sparse_step import batch_bytes, blog_claim
from explorer.plots.style import format_bytes
from explorer.ui import sparse_controls as controls
from explorer.ui import sparse_view
from explorer.ui.state import DEFAULT_PRESET
from hardware_presets.errors import InputError
from kernels.decode import kernel as decode
from kernels.models import load_model
from kernels.sparse.compress import COMPRESSING
from kernels.sparse.data import MAX_FILE_BYTES, synthetic
from kernels.sparse.policies import budget
from tests.apptest_helpers import apply, open_page, run, set_and_apply, texts
from tests.apptest_helpers import widget as find
from tests.test_decode_page import metric

PAGE, PREFIX = "explorer/ui/pages/sparse.py", "w.sa."
SMALL = {"batch": "2", "mean_len": "1024"}  # a quicker decode step where time is not tested


def defaults(**changed) -> dict:
    """The page's parameters as it opens (its defaults over the specs'), then ``changed``."""
    return {**{n: controls.UI_DEFAULTS.get(n, s.default) for n, s in controls.SPECS.items()},
            **changed}


def dense_bytes(p: dict) -> float:
    """The dense KV bytes of the page's decode scenario, as the core counts them: the
    checked decode parameters, their drawn lengths (the page's seed), the whole model."""
    checked = decode.check(hp.load(DEFAULT_PRESET), sparse_view.decode_params(p))
    lengths, _ = decode.workload(checked, np.random.default_rng(sparse_view.SEED))
    return batch_bytes(checked, load_model(checked["model"]), lengths).dense


def sparse_page(query: dict | None = None) -> AppTest:
    return open_page(PAGE, query)


def value(at: AppTest, name: str) -> object:
    return find(at, PREFIX + name).value


def table(at: AppTest):
    """The accuracy table, its scores (shown as text) read back as numbers."""
    return at.dataframe[0].value.set_index("Policy").map(float)


def test_default_page_measures_every_policy_and_emulates_the_blogs_rule():
    at = sparse_page()
    assert at.title[0].value == "Sparse attention and KV compression"
    assert not at.error
    assert value(at, "sparse") == "norm_high" and value(at, "keep_ratio") == 0.3
    assert len(at.get("plotly_chart")) == 6  # accuracy, kept, norm, bytes, step, timeline
    p = defaults()
    captions = texts(at.caption)
    assert "**designed** structure" in captions and f"{p['tokens']:,} tokens" in captions
    assert f"{p['batch']} sequences of mean {p['mean_len']:,} tokens" in captions
    rows = table(at)
    assert len(rows) == 6
    assert rows.loc["smallest norm (Devoto)", "Mass recall"] > \
        rows.loc["largest norm (the blog)", "Mass recall"]  # Devoto-like default data
    assert "Low key norm goes with high attention" in texts(at.info)
    assert metric(at, "Dense KV cache") == format_bytes(dense_bytes(p))
    assert metric(at, "Sparse step").endswith("ms")
    prose, claim = texts(at.markdown), blog_claim()
    assert f"**{claim['kept_GB']:.2f} GB**" in prose
    assert f"**{claim['blog_share_kept']:.0%}** of the cache" in prose
    assert "Devoto et al. 2024, A Simple and Effective L2 Norm" in prose
    assert "`Sort32`" in prose
    assert at.query_params["sparse"] == "norm_high" and at.query_params["source"] == "synthetic"


def test_controls_change_the_output():
    at = sparse_page(SMALL)
    stored, recall = metric(at, "Stored after compression"), table(at)["Mass recall"]
    set_and_apply(at, PREFIX, keep_ratio=0.1)
    assert metric(at, "Stored after compression") != stored
    assert (table(at)["Mass recall"] < recall).all()
    set_and_apply(at, PREFIX, norm_relation=1.0)
    assert "the blog's assumption holds" in texts(at.info)
    set_and_apply(at, PREFIX, sparse="streaming")
    assert "streaming" not in COMPRESSING  # nothing to amortise: it breaks even at once
    assert "does not compress the cache" in texts(at.info)
    assert metric(at, "Break-even (steps)") == f"{0.0:,.1f}"


def test_refusals_are_messages():
    at = sparse_page({"keep_ratio": "0", **SMALL})
    assert "Keep ratio (params.keep_ratio) = 0.0 is not allowed" in texts(at.error)
    set_and_apply(at, PREFIX, window=100)
    p = defaults(keep_ratio=value(at, "keep_ratio"), window=value(at, "window"))
    _, dropped = sparse_view.ratios(p, p["tokens"])
    assert dropped, "a window of 100 should leave the smallest keep ratios out"
    assert f"Keep ratios {', '.join(f'{r:g}' for r in dropped)} are left out of the curves" \
        in texts(at.caption)
    set_and_apply(at, PREFIX, window=200, keep_ratio=0.1)
    message = texts(at.error)
    assert "Keep ratio (keep_ratio) = 0.1 is not allowed" in message
    p = defaults(keep_ratio=value(at, "keep_ratio"), window=value(at, "window"))
    with pytest.raises(InputError) as refused:  # the rule the page applies to its data
        budget(p["sparse"], p["tokens"], p["keep_ratio"], p["sinks"], p["window"],
               p["page_size"])
    assert refused.value.hint in message
    assert message.count(refused.value.hint) == 2  # the data and the decode step
    set_and_apply(at, PREFIX, window=2000)
    assert "Window (recent tokens) (window) = 2000 is not allowed" in texts(at.error)
    assert "The policies and their papers" in [h.value for h in at.subheader]


def npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def test_uploads_are_measured_or_refused():
    at = sparse_page({"source": "upload", **SMALL})
    assert "Upload an .npz dump" in texts(at.info) and not at.error
    at.file_uploader(key="sa_upload").set_value(("bad.npz", b"not a zip", "application/zip"))
    apply(at)
    assert "bad.npz = " in texts(at.error) and "not a zip archive" in texts(at.error)
    data = synthetic(np.random.default_rng(1), tokens=300, kv_heads=1, group=2)
    at.file_uploader(key="sa_upload").set_value(
        ("dump.npz", npz(q=data.q, k=data.k, v=data.v), "application/zip"))
    apply(at)
    assert not at.error
    assert "Your dump dump.npz: 300 tokens, 1 KV heads × 2 query heads" in texts(at.caption)
    assert len(table(at)) == 6


def test_a_too_large_upload_is_refused_before_reading():
    huge = SimpleNamespace(name="big.npz", size=MAX_FILE_BYTES + 1, file_id="x",
                           getvalue=lambda: pytest.fail("read a file over the cap"))
    with pytest.raises(InputError, match=f"at most {MAX_FILE_BYTES:,} bytes"):
        sparse_view.read_upload(huge)


def test_link_reopens_the_scenario_and_chinese():
    at = sparse_page({"lang": "zh", "sparse": "h2o", "keep_ratio": "0.2", "head": "1",
                      "norm_relation": "0.5", "bogus": "1", **SMALL})
    assert at.title[0].value == "稀疏注意力与 KV 压缩"
    assert value(at, "sparse") == "h2o" and value(at, "keep_ratio") == 0.2
    assert value(at, "head") == 1 and value(at, "norm_relation") == 0.5
    assert "bogus = '1' 不合法" in texts(at.error)
    assert at.query_params["norm_relation"] == "0.5" and at.query_params["head"] == "1"
    at.button(key="sa_example_quest").click()
    run(at)
    assert value(at, "sparse") == "quest" and value(at, "keep_ratio") == 0.1
    assert "各策略及其论文" in [h.value for h in at.subheader]

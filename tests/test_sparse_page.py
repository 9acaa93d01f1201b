"""The "Sparse attention" page under ``streamlit.testing.v1.AppTest``: it renders every
policy's accuracy on synthetic inputs, the kept tokens, the measured norm relation, the
emulated bytes and step times with the compression on the timeline; a control changes the
output; bad input (a keep ratio too small for the sinks and window, a window longer than
the cache, a keep ratio of 0, a malformed or too large upload) is a translated message and
never an exception; an uploaded dump is measured; a link reopens a scenario; Chinese works.
"""
from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from explorer.ui import sparse_view
from hardware_presets.errors import InputError
from kernels.sparse.data import MAX_FILE_BYTES, synthetic
from tests.apptest_helpers import open_page, run, set_widgets, texts, widget as find
from tests.test_decode_page import metric

PAGE, PREFIX = "explorer/ui/pages/sparse.py", "w.sa."
SMALL = {"batch": "2", "mean_len": "1024"}  # a quicker decode step where time is not tested


def sparse_page(query: dict | None = None) -> AppTest:
    return open_page(PAGE, query)


def value(at: AppTest, name: str) -> object:
    return find(at, PREFIX + name).value


def table(at: AppTest):
    return at.dataframe[0].value.set_index("Policy")


def test_default_page_measures_every_policy_and_emulates_the_blogs_rule():
    at = sparse_page()
    assert at.title[0].value == "Sparse attention and KV compression"
    assert not at.error
    assert value(at, "sparse") == "norm_high" and value(at, "keep_ratio") == 0.3
    assert len(at.get("plotly_chart")) == 6  # accuracy, kept, norm, bytes, step, timeline
    captions = texts(at.caption)
    assert "**designed** structure" in captions and "1,024 tokens" in captions
    assert "8 sequences of mean 4,096 tokens" in captions
    rows = table(at)
    assert len(rows) == 6
    assert rows.loc["smallest norm (Devoto)", "Mass recall"] > \
        rows.loc["largest norm (the blog)", "Mass recall"]  # Devoto-like default data
    assert "Low key norm goes with high attention" in texts(at.info)
    assert metric(at, "Dense KV cache") == "4.00 GiB"
    assert metric(at, "Sparse step").endswith("ms")
    prose = texts(at.markdown)
    assert "**6.69 GB**" in prose and "**68%** of the cache" in prose
    assert "Devoto et al. 2024, A Simple and Effective L2 Norm" in prose
    assert "`Sort32`" in prose
    assert at.query_params["sparse"] == "norm_high" and at.query_params["source"] == "synthetic"


def test_controls_change_the_output():
    at = sparse_page(SMALL)
    stored, recall = metric(at, "Stored after compression"), table(at)["Mass recall"]
    set_widgets(at, PREFIX, keep_ratio=0.1)
    assert metric(at, "Stored after compression") != stored
    assert (table(at)["Mass recall"] < recall).all()
    set_widgets(at, PREFIX, norm_relation=1.0)
    assert "the blog's assumption holds" in texts(at.info)
    set_widgets(at, PREFIX, sparse="streaming")
    assert "does not compress the cache" in texts(at.info)
    assert metric(at, "Break-even (steps)") == "0.0"


def test_refusals_are_messages():
    at = sparse_page({"keep_ratio": "0", **SMALL})
    assert "Keep ratio (params.keep_ratio) = 0.0 is not allowed" in texts(at.error)
    set_widgets(at, PREFIX, window=100)
    assert "Keep ratios 0.05, 0.1 are left out of the curves" in texts(at.caption)  # Quest: pages
    set_widgets(at, PREFIX, window=200, keep_ratio=0.1)
    message = texts(at.error)
    assert "Keep ratio (keep_ratio) = 0.1 is not allowed" in message
    assert "the sinks and window need 202 of the 1024 tokens kept" in message
    assert message.count("need 202 of the 1024 tokens") == 2  # the data and the decode step
    set_widgets(at, PREFIX, window=2000)
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
    run(at)
    assert "bad.npz = 'not a zip archive' is not allowed" in texts(at.error)
    data = synthetic(np.random.default_rng(1), tokens=300, kv_heads=1, group=2)
    at.file_uploader(key="sa_upload").set_value(
        ("dump.npz", npz(q=data.q, k=data.k, v=data.v), "application/zip"))
    run(at)
    assert not at.error
    assert "Your dump dump.npz: 300 tokens, 1 KV heads × 2 query heads" in texts(at.caption)
    assert len(table(at)) == 6


def test_a_too_large_upload_is_refused_before_reading():
    huge = SimpleNamespace(name="big.npz", size=MAX_FILE_BYTES + 1, file_id="x",
                           getvalue=lambda: pytest.fail("read a file over the cap"))
    with pytest.raises(InputError, match="at most 67,108,864 bytes"):
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

"""The "Compare" page under ``streamlit.testing.v1.AppTest``: a gallery pair from a link
renders its lesson, the diff, the sentences, the metric table and three charts; a pair
button fills both sides; an uploaded scenario file is compared and a bad one is a
translated message (never an exception); a bad link is refused; Chinese works."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from explorer.core import gallery
from explorer.plots.values import DASH
from explorer.ui.compare_controls import MAX_UPLOAD_BYTES, parse_upload
from explorer.ui.sweep_controls import knob_label
from hardware_presets.errors import InputError
from tests.apptest_helpers import open_page, run, texts

PAGE = "explorer/ui/pages/compare.py"


def compare_page(query: dict | None = None) -> AppTest:
    return open_page(PAGE, query)


def subheaders(at: AppTest) -> list[str]:
    return [h.value for h in at.subheader]


def test_a_gallery_pair_from_a_link_renders_everything():
    at = compare_page({"a": "split_k_a", "b": "split_k_b"})
    assert not at.error and at.title[0].value == "Compare two scenarios"
    assert "Split-K for a skinny GEMM" in texts(at.info)  # the pair's lesson
    diff = at.dataframe[0].value
    assert list(diff.iloc[0]) == [knob_label("gemm", "grid_z", "en"), "1", "8"]
    prose = texts(at.markdown)
    assert "B is 5.14× faster" in prose and "cores busy where A keeps 1" in prose
    table = at.dataframe[1].value.set_index("Metric")
    assert table.loc["Kernel duration", "A"] == "89.16 µs"
    assert table.loc["Kernel duration", "B / A"] == "0.195"
    assert table.loc["Cores used", "Definition"].startswith("Cores whose CUBE")
    assert list(table.loc["Cores used", ["A", "B"]]) == ["1", "11"]
    assert table.loc["L2 hit rate", "A"] == "0.0%" and table.loc["Bound", "B / A"] == DASH
    assert len(at.get("plotly_chart")) == 3  # timelines, traffic, B / A
    assert subheaders(at).index("What differs") < subheaders(at).index("What changed, and why")
    assert at.query_params["a"] == "split_k_a" and at.query_params["b"] == "split_k_b"


def test_pair_buttons_fill_both_sides():
    at = compare_page()
    assert at.query_params["a"] == "double_buffer_a"  # the page opens on the first pair
    assert "MTE2 no longer waits on VECTOR" in texts(at.markdown)
    at.button(key="cmp_pair_int8_kv").click()
    run(at)
    assert at.query_params["a"] == "int8_kv_a" and at.query_params["b"] == "int8_kv_b"
    assert "HBM traffic **halves**" in "\n".join(m.value for m in at.markdown)
    assert list(at.dataframe[0].value["Field"]) == [
        knob_label("decode", name, "en") for name in ("heads_per_pass", "kv_dtype")]


def test_a_single_scenario_against_itself_is_identical():
    at = compare_page({"a": "tail_wave", "b": "tail_wave"})
    info = texts(at.info)
    assert "The two scenarios are identical" in info and "No difference passes" in info
    assert "tail wave of only 5 tiles" in texts(at.caption)


def test_upload_is_compared_and_a_bad_file_is_a_message():
    at = compare_page()
    at.radio(key="w.cmp.b_source").set_value("upload")
    run(at)
    assert "Upload a scenario file" in texts(at.info)
    assert "b" not in at.query_params and at.query_params["a"] == "double_buffer_a"
    assert len(at.get("plotly_chart")) == 0
    at.get("file_uploader")[0].set_value(("mine.toml", b"kernel = 'vector_add'\nbogus = 1\n",
                                          "application/toml"))
    run(at)
    assert "mine.toml: bogus = 1 is not allowed" in texts(at.error)
    scenario = gallery.load("double_buffer_a").replace(params={"block_dim": 2})
    at.get("file_uploader")[0].set_value(("mine.toml", scenario.to_toml().encode(),
                                          "application/toml"))
    run(at)
    assert not at.error and len(at.get("plotly_chart")) == 3
    assert list(at.dataframe[0].value.iloc[0]) == [
        knob_label("vector_add", "block_dim", "en"), "4", "2"]


def test_parse_upload_refuses_what_is_not_a_small_text_scenario():
    with pytest.raises(InputError, match="at most 1,048,576 bytes"):
        parse_upload(b"#" * (MAX_UPLOAD_BYTES + 1), "big.toml")
    with pytest.raises(InputError, match="UTF-8"):
        parse_upload(b"\xff\xfe", "bin.json")
    with pytest.raises(InputError, match="valid JSON"):
        parse_upload(b"{", "broken.json")
    text = gallery.load("lpt_b").to_json().encode()
    assert parse_upload(text, "s.json") == gallery.load("lpt_b")
    with pytest.raises(InputError, match="最多"):
        parse_upload(b"#" * (MAX_UPLOAD_BYTES + 1), "big.toml", "zh")


def test_a_bad_link_is_refused_and_the_page_goes_on():
    at = compare_page({"a": "nope", "c": "split_k_a"})
    message = texts(at.error)
    assert "gallery = 'nope' is not allowed" in message and "c = 'split_k_a'" in message
    assert at.query_params["a"] == "double_buffer_a" and len(at.get("plotly_chart")) == 3


def test_chinese():
    at = compare_page({"lang": "zh", "a": "lpt_a", "b": "lpt_b"})
    assert at.title[0].value == "对比两个场景"
    prose = texts(at.markdown)
    assert "B 比 A 快" in prose and "负载均衡改善" in prose
    assert "batch 64 下的 LPT" in texts(at.info)
    assert "有哪些不同" in subheaders(at)
    assert at.dataframe[1].value.columns[0] == "指标"

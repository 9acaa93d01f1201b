"""The "Mixed precision" page under ``streamlit.testing.v1.AppTest``: it renders on a split
(910B2) and two coupled presets (910, 310P3), its table follows the kernel and the
formats, an unsupported or impossible choice is a translated message (never a traceback),
the blog routine's verdict comes from the run, links set the study, and Chinese works.
"""
from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

import hardware_presets as hp
from explorer.core import precision_formats as pf
from explorer.core import precision_study as ps
from explorer.ui import precision_controls, precision_view
from tests.apptest_helpers import open_page, set_widgets, texts
from tests.apptest_helpers import widget as find

PAGE = "explorer/ui/pages/precision.py"
SMALL = {"M": "256", "N": "256", "K": "256"}  # quick to measure and to emulate
PREFIX = "w.pr."
FORMAT_CHARTS = 3  # element errors, outcomes, dot products


def widget(at: AppTest, name: str):
    return find(at, PREFIX + name)


def set_values(at: AppTest, **values) -> AppTest:
    return set_widgets(at, PREFIX, **values)


def precision_page(query: dict | None = None, **values) -> AppTest:
    """The app from its entry point, switched to the precision page, widgets set."""
    at = open_page(PAGE, {**SMALL, **(query or {})})
    return set_values(at, **values) if values else at


def table(at: AppTest):
    return at.dataframe[0].value


def format_table(at: AppTest):
    return at.dataframe[1].value


def format_summary(at: AppTest):
    return at.dataframe[2].value


def row(at: AppTest, config: str):
    df = table(at)
    return df[df[df.columns[0]] == config].iloc[0]


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


# ---- renders -------------------------------------------------------------------------------
def test_default_page_renders_the_study_on_910b2():
    at = precision_page()
    assert at.title[0].value == "Mixed precision: error, time and bytes"
    assert widget(at, "kernel").value == "gemm"
    df = table(at)
    assert len(df) == 9  # eight standard configurations and the user's
    assert list(df["Configuration"])[-1] == "★ your choice"
    assert set(df["Status"]) == {"runs"} and set(df["Time from"]) == {"emulator"}
    assert float(row(at, "fp32 everywhere")["Rel. Frobenius error"]) < \
        float(row(at, "fp16 + fp32 acc (blog's sandwich)")["Rel. Frobenius error"])
    specs = charts(at)
    # Pareto, error vs K, histogram, sandwich, blog vs Kahan; the formats' three
    assert len(specs) == 5 + FORMAT_CHARTS
    assert specs[0]["layout"]["xaxis"]["type"] == "log"
    assert not at.error
    markdown = texts(at.markdown)
    assert "QuantMode_t::F322F16" in markdown and "`Mmad`" in markdown
    assert "at beta = 0 the largest |compensation| of the blog's routine is 0" in \
        texts(at.warning)
    assert at.query_params["kernel"] == "gemm" and at.query_params["M"] == "256"


@pytest.mark.parametrize("preset", ["910", "310P3"])
def test_coupled_presets_render_and_label_what_they_lack(preset):
    at = precision_page({"preset": preset})
    fp32 = row(at, "fp32 everywhere")
    assert fp32["Status"] == "not on this chip"
    assert f"the Ascend {preset} cube has no fp32 mode" in fp32["Why"]
    assert fp32["Time (µs)"] == "–"
    assert row(at, "fp16 + fp32 acc (blog's sandwich)")["Status"] == "runs"
    assert not at.error  # the user's fp16 sandwich runs there
    assert "No Fixpipe on the" in texts(at.markdown)  # L0C -> UB, Cast on the vector unit
    assert len(at.get("plotly_chart")) == 5 + FORMAT_CHARTS


# ---- the table follows the kernel and the formats ------------------------------------------
def test_changing_the_kernel_changes_the_table():
    at = precision_page()
    gemm_rows = list(table(at)["Configuration"])
    set_values(at, kernel="kv_storage")
    set_values(at, T=1024, d=64)
    df = table(at)
    assert list(df["Configuration"]) != gemm_rows
    assert "int8 KV per channel" in set(df["Configuration"])
    assert set(df["Time from"]) == {"estimate (bytes / HBM bandwidth)"}
    assert "memory-roofline" in texts(at.caption)
    assert at.query_params["kernel"] == "kv_storage" and "M" not in at.query_params
    set_values(at, kernel="attention_score")
    assert list(table(at)["Configuration"]) == list(df["Configuration"])
    assert table(at)["Rel. Frobenius error"].tolist() != df["Rel. Frobenius error"].tolist()


def test_changing_the_formats_changes_the_users_row():
    at = precision_page()
    before = row(at, "★ your choice")
    set_values(at, storage="int8", granularity="tensor")
    tensor = row(at, "★ your choice")
    assert tensor["storage > compute · acc > output"] == "int8/t > fp16 · acc fp32 > fp16"
    assert float(tensor["Rel. Frobenius error"]) > float(before["Rel. Frobenius error"])
    set_values(at, distribution="outliers")
    tensor = float(row(at, "★ your choice")["Rel. Frobenius error"])
    set_values(at, granularity="channel")
    channel = float(row(at, "★ your choice")["Rel. Frobenius error"])
    assert channel < tensor / 3
    assert "AscendAntiQuant" in texts(at.markdown)
    set_values(at, compute="int8")
    mine = row(at, "★ your choice")
    assert mine["storage > compute · acc > output"] == "int8/ch > int8 · acc int32 > fp16"
    assert float(mine["Time (µs)"]) < float(before["Time (µs)"])
    assert "QuantMode_t::VDEQF16" in texts(at.markdown)


# ---- bad input -----------------------------------------------------------------------------
def test_unsupported_choice_is_a_translated_error():
    at = precision_page({"preset": "910"})
    set_values(at, storage="bf16", compute="bf16")
    message = texts(at.error)
    assert "Your configuration does not run on this chip" in message
    assert "the Ascend 910 cube has no bf16 mode (it takes fp16, int8)" in message
    mine = row(at, "★ your choice")
    assert mine["Status"] == "not on this chip" and mine["Time (µs)"] == "–"
    assert len(at.get("plotly_chart")) == 5 + FORMAT_CHARTS  # the page goes on drawing
    at = precision_page({"preset": "310P3"}, storage="fp32", compute="fp32", output="fp32")
    assert "the Ascend 310P3 cube has no fp32 mode" in texts(at.error)


def test_impossible_scale_settings_are_a_translated_error():
    at = precision_page()
    set_values(at, storage="int8", granularity="group", group_size=100)
    message = texts(at.error)
    assert "Impossible settings: groups of 100 elements do not tile K = 256" in message
    assert row(at, "★ your choice")["Status"] == "impossible settings"
    assert "No errors to show" in texts(at.info)
    set_values(at, group_size=64, compute="int8")
    assert "scales change along K" in texts(at.error)
    set_values(at, granularity="channel")
    assert not at.error


def test_link_sets_the_study_and_bad_values_are_reported():
    at = precision_page({"kernel": "attention_score", "T": "2048", "storage": "int4",
                         "granularity": "group", "group_size": "32", "bogus": "1",
                         "compute": "fp8"})
    assert widget(at, "kernel").value == "attention_score"
    assert widget(at, "T").value == 2048
    assert row(at, "★ your choice")["storage > compute · acc > output"] == \
        "int4/g32 > fp16 · acc fp32 > fp16"
    message = texts(at.error)
    assert "bogus = '1' is not allowed" in message
    assert "fp8" in message


# ---- language ------------------------------------------------------------------------------
def test_chinese_renders():
    at = precision_page({"lang": "zh", "preset": "910"})
    assert at.title[0].value == "混合精度：误差、耗时与字节"
    df = table(at)
    assert "配置" in df.columns and "★ 你的选择" in set(df["配置"])
    assert "本芯片不支持" in set(df["状态"])
    assert "博客例程" in texts(at.warning)
    assert "帕累托前沿" in json.dumps(charts(at)[0], ensure_ascii=False)
    set_values(at, storage="bf16", compute="bf16")
    assert "Ascend 910 的 Cube 没有 bf16 模式" in texts(at.error)


def test_every_choice_and_configuration_has_a_name():
    """Choices and the table's configurations are named from tables of ids."""
    for name, ids in precision_controls.CHOICE_IDS.items():
        assert set(precision_controls.SPECS[name].choices) <= set(ids), name
    configs = {n for family in ps.STANDARD.values() for n in family} | {precision_view.YOURS}
    assert configs <= set(precision_view.CONFIG_IDS)


# ---- the number formats --------------------------------------------------------------------
def test_format_table_lists_the_new_formats_and_asks_each_chip():
    """Every format with its bits and unit roundoff; which units and presets take it come
    from the presets' own fields (950PR's cube takes the 8- and 4-bit floats, 910B2's not)."""
    at = precision_page()
    df = format_table(at).set_index("Format")
    for name, bits, u in (("★ fp8_e4m3", "8", "2⁻⁴"), ("★ fp8_e5m2", "8", "2⁻³"),
                          ("★ hif8", "8", "2⁻²"), ("★ mxfp8", "8.25", "2⁻³"),
                          ("★ mxfp4", "4.25", "2⁻²"), ("fp16", "16", "2⁻¹¹")):
        assert (df.loc[name, "Bits per element"], df.loc[name, "Unit roundoff u"]) == (bits, u)
    assert df.loc["★ fp8_e4m3", "Largest"] == "448" and df.loc["★ mxfp8", "Largest"] == \
        "448 × 2¹²⁷"
    # an MX format's smallest normal: its element's times the smallest scale, one power of 2
    assert (df.loc["★ mxfp8", "Smallest normal"], df.loc["★ mxfp4", "Smallest normal"]) == \
        ("2⁻¹³³", "2⁻¹²⁷")
    assert df.loc["★ mxfp4", "u relative to"] == "the largest |value| of its block of 32"
    cube = {p for p in hp.PRESETS if "hif8" in hp.load(p).cube_precisions}
    shown = set(df.loc["★ hif8", "Presets that take it"].split(", "))
    assert shown == {hp.load(p).display_name for p in cube}
    assert df.loc["★ hif8", "On this chip"] == "–" and df.loc["fp16", "On this chip"] != "–"
    assert "does not take fp8_e4m3" in texts(at.info)
    assert at.query_params["format"] == "fp8_e4m3" and at.query_params["magnitude"] == "0"


def test_picking_a_format_and_a_magnitude_changes_the_study():
    """mxfp4 on outlier data flushes far more elements than on Gaussian data; FP8 E4M3
    saturates once the data is 1000 times larger; the summary follows the library."""
    at = precision_page({"preset": "950PR"}, format="mxfp4")
    assert "takes mxfp4 on its units: Cube" in texts(at.success)
    gauss = format_summary(at).set_index("Format")
    set_values(at, distribution="outliers")
    outliers = format_summary(at).set_index("Format")
    flushed = lambda df: float(df.loc["mxfp4", "Flushed to 0"].rstrip("%"))  # noqa: E731
    assert flushed(outliers) > 3 * flushed(gauss)
    expected = pf.element_study("outliers", 0, 0).table.set_index("format")
    assert flushed(outliers) == pytest.approx(100 * expected.loc["mxfp4", "share_flushed"],
                                              abs=0.05)
    set_values(at, magnitude=3)
    big = format_summary(at).set_index("Format")
    assert float(big.loc["fp8_e4m3", "Saturated"].rstrip("%")) > 10
    assert big.loc["mxfp8", "Saturated"] == "0.0%"  # the block scale follows the data
    assert at.query_params["magnitude"] == "3" and at.query_params["format"] == "mxfp4"
    assert not at.error


def test_formats_section_in_chinese():
    at = precision_page({"lang": "zh", "format": "hif8"})
    assert "格式" in format_table(at).columns
    assert "锥形精度" in texts(at.markdown)

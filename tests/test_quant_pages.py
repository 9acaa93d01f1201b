"""The GEMM and decode pages with 8- and 4-bit formats (explorer/ui/quant_view.py): on the
950 the pages offer them and show what the inputs lost (the library's own numbers) beside
the output's error; on a chip without them the decode page does not offer them, says
why, and moves a linked one back to fp16 with the refusal, in Chinese too."""
from __future__ import annotations

from explorer.core import Scenario
from explorer.core.i18n import t
from explorer.core.quantization import input_quantization
from tests.apptest_helpers import open_page, set_and_apply, texts, widget

GEMM, DECODE = "explorer/ui/pages/gemm.py", "explorer/ui/pages/decode.py"
SMALL_GEMM = {"M": 256, "N": 256, "K": 512}
SMALL_DECODE = {"batch": 2, "mean_len": 512, "phases": "attention"}


def _table(at):
    return next(d.value for d in at.dataframe if "Format" in d.value.columns
                or "格式" in d.value.columns)


def test_the_gemm_page_shows_what_fp8_inputs_lost():
    at = open_page(GEMM, {"preset": "950PR"})
    at = set_and_apply(at, "w.gm.", **SMALL_GEMM, dtype_in="fp8_e4m3")
    assert not at.error
    rows = _table(at).to_dict("records")
    params = {**widget_values(at, "w.gm.", SMALL_GEMM), "dtype_in": "fp8_e4m3"}
    lost = input_quantization(Scenario.make("950PR", "gemm", params))
    assert [r["Operand"] for r in rows] == ["A", "B"]
    for row, operand in zip(rows, ("A", "B")):
        assert row["Norm-wise error"] == f"{lost[operand]['norm_rel']:.3%}"
        assert row["Format"] == "fp8_e4m3"
    assert "inputs **as stored**" in texts(at.markdown).replace("\\", "")


def widget_values(at, prefix: str, names: dict) -> dict:
    """The page's values of ``names`` (what it applied), for the scenario it ran."""
    return {name: widget(at, prefix + name).value for name in names}


def test_the_decode_page_offers_fp8_on_the_950_and_shows_the_cache_loss():
    at = open_page(DECODE, {"preset": "950PR"})
    assert "mxfp4" in widget(at, "w.dc.kv_dtype").options
    at = set_and_apply(at, "w.dc.", **SMALL_DECODE, kv_dtype="fp8_e4m3")
    assert not at.error and at.query_params["kv_dtype"] == "fp8_e4m3"
    rows = _table(at).to_dict("records")
    assert [(r["Operand"], r["Format"]) for r in rows] == [("K", "fp8_e4m3"), ("V", "fp8_e4m3")]
    assert "**real** K and V" in texts(at.markdown).replace("\\", "")


def test_the_decode_page_on_910b2_says_why_fp8_is_absent_in_chinese():
    query = {"preset": "910B2", "kv_dtype": "mxfp4", "lang": "zh"}
    at = open_page(DECODE, {**query, **{k: str(v) for k, v in SMALL_DECODE.items()}})
    kv = widget(at, "w.dc.kv_dtype")
    assert kv.value == "fp16" and not {"fp8_e4m3", "hif8", "mxfp4"} & set(kv.options)
    moved = [e.value for e in at.error]
    assert len(moved) == 1 and "mxfp4" in moved[0] and "params\\.kv\\_dtype" in moved[0]
    caption = next(c.value for c in at.caption if "不提供" in c.value)
    assert caption == t("ui.decode.kv_formats.absent", "zh", chip="Ascend 910B2",
                        formats="fp8_e4m3, fp8_e5m2, hif8, mxfp8, mxfp4",
                        chips="Ascend 950PR, Ascend 950DT")
    assert "计算单元不支持该格式" in moved[0]  # the refusal in Chinese (tests/test_zh_pages.py
    # holds every word of the default decode page on 910B2, this caption included, strictly)


def test_the_linear_kernel_page_shows_what_mxfp4_weights_lost():
    query = {"kernel": "linear", "weight_dtype": "mxfp4", "act_dtype": "bf16", "M": "8",
             "N": "512", "K": "1024"}
    at = open_page("explorer/ui/pages/kernels.py", {"preset": "950PR", **query})
    assert not at.error
    rows = _table(at).to_dict("records")
    assert [(r["Operand"], r["Format"]) for r in rows] == [("W", "mxfp4")]
    refused = open_page("explorer/ui/pages/kernels.py", {"preset": "910B2", **query})
    assert "params\\.weight\\_dtype" in refused.error[0].value and "mxfp4" in refused.error[0].value

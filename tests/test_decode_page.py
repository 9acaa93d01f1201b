"""The "KV cache and decode" page under ``streamlit.testing.v1.AppTest``: it renders the
small default scenario (KV calculator, step, layer, append comparison, numerical check,
the blog's claim recomputed), its controls change the output once applied, bad input (a
length list of the wrong size, a tile too big for UB, a linked batch that does not fit in
HBM or makes a program too big for the page, a bad link) is a translated error and never
an exception, a link reopens a scenario, and Chinese works. tests/test_decode_inputs.py
covers the inputs' ranges, the model list and the units.
"""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from explorer.core.i18n import LANGUAGES, t
from explorer.plots import decode as decode_plots
from explorer.plots.style import format_bytes
from explorer.ui import decode_controls
from kernels.decode import layer
from kernels.models import load_model
from tests.apptest_helpers import apply, open_page, run, set_and_apply, texts
from tests.apptest_helpers import widget as find

PAGE = "explorer/ui/pages/decode.py"
PREFIX = "w.dc."


def widget(at: AppTest, name: str):
    return find(at, PREFIX + name)


def decode_page(query: dict | None = None, **values) -> AppTest:
    """The app started from its entry point, switched to the decode page, widgets set and
    applied."""
    at = open_page(PAGE, query)
    return set_and_apply(at, PREFIX, **values) if values else at


def expanders(at: AppTest) -> list[str]:
    return [e.label for e in at.expander]


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def number(text: str) -> float:
    return float(text.split()[0].replace(",", ""))


def test_default_page_renders_the_small_scenario():
    at = decode_page()
    assert at.title[0].value == "KV cache and decode"
    assert (widget(at, "model").value, widget(at, "batch").value) == ("llama3-8b", 8)
    assert metric(at, "KV per token") == "128.00 KiB"  # 2 x 32 x 8 x 128 x 2 bytes
    assert metric(at, "KV per sequence (mean)") == "256.00 MiB"  # x 2,048 tokens
    assert metric(at, "Step time").endswith("ms")
    assert number(metric(at, "Tokens/s")) > 0
    assert "of the 1,600 GB/s peak" in "".join(str(m.proto.delta) for m in at.metric)
    assert "Passed" in texts(at.success) and "output elements verified" in texts(at.caption)
    assert len(at.get("plotly_chart")) == 10  # memory, split, latency, timeline, ratios,
    # traffic, bandwidth, balance, roofline, append
    ops = next(d.value for d in at.dataframe if "Op" in d.value.columns)
    every = [decode_plots.op_name(op, "en") for op in layer.LAYER_OPS + layer.HEAD_OPS]
    assert list(ops["Op"]) == every  # every op of the layer and the head, emulated
    step_ms = number(metric(at, "Step time"))
    assert ops["Per step (ms)"].sum() == pytest.approx(step_ms, rel=0.01)  # shown rounded
    assert "ESTIMATE" not in texts(at.caption)  # nothing in the step is a roofline estimate
    blog = texts(at.markdown)
    m = load_model("llama3-70b")  # per 8K sequence and weights, in the page's one unit
    assert f"**{format_bytes(m.kv_bytes_per_token('fp16') * 8192)}**" in blog
    assert f"**{format_bytes(m.weight_bytes('fp16'))}**" in blog
    assert "**18.1 sequences**" in blog and "**0.34×** the weights, not 1.8×" in blog
    assert "heads_per_block" in blog and "min(8, 262,144 / 512)" in blog
    assert at.query_params["batch"] == "8" and at.query_params["impl"] == "vector"


def test_changing_controls_changes_the_output():
    at = decode_page()
    step, kv = metric(at, "Step time"), metric(at, "KV of the batch (reserved)")
    set_and_apply(at, PREFIX, batch=16)
    assert metric(at, "KV of the batch (reserved)") != kv
    assert metric(at, "Step time") != step
    set_and_apply(at, PREFIX, impl="cube_vector")
    assert "aic_cube_ratio" in {m.label for m in at.metric}
    assert "CrossCoreSetFlag" in texts(at.info)


def test_example_buttons_set_the_scenario():
    at = decode_page()
    at.button(key="dc_example_split").click()
    run(at)
    assert (widget(at, "impl").value, widget(at, "batch").value) == ("split_kv", 2)
    assert "Passed" in texts(at.success)
    at.button(key="dc_example_concat").click()
    run(at)
    assert widget(at, "append").value == "concat" and widget(at, "batch").value == 8


def test_lengths_list_of_the_wrong_size_is_an_error_message():
    at = decode_page(distribution="list")
    at.text_input(key="w.dc.lengths").set_value("512, 1024")
    apply(at)
    message = texts(at.error)
    assert "Lengths (one per sequence) (params.lengths) = " in message
    assert "2 lengths" in message and "is not allowed" in message
    assert "exactly batch = 8 lengths" in message
    assert not at.get("plotly_chart")  # nothing to compute; the page still explains
    assert "What this is in Ascend C" in expanders(at)
    at.text_input(key="w.dc.lengths").set_value("512, 1024, 64, 2048, 100, 300, 900, 4000")
    apply(at)
    assert not at.error and "Passed" in texts(at.success)


def test_tile_too_big_for_ub_names_the_limit():
    at = decode_page()
    widget(at, "tile_tokens").set_value(128)
    apply(at)
    message = texts(at.error)
    assert "tile_tokens (0 = auto) (params.tile_tokens) = 128 is not allowed" in message
    assert "at most 64 tokens" in message


def test_linked_batch_beyond_hbm_moves_into_range_until_overcommit_is_allowed():
    """The refusal is an error box, as on every page (it used to be a warning)."""
    at = decode_page({"batch": "256"})
    refusal, used = texts(at.error), widget(at, "batch").value
    assert len(at.error) == 1
    assert "Batch (sequences) (params.batch) = 256 is not allowed: at most" in refusal
    assert "GiB HBM" in refusal and f"Batch (sequences) = {used:,} instead" in refusal
    assert used < 256 and "Passed" in texts(at.success)
    set_and_apply(at, PREFIX, allow_overcommit=True)
    set_and_apply(at, PREFIX, batch=256)  # offered now: only the emulation size limits it
    assert not at.error and not at.warning
    assert "Does not fit" in texts(at.caption)


def test_linked_program_too_big_for_the_page_is_refused_and_moved_into_range():
    at = decode_page({"allow_overcommit": "true", "batch": "1024", "mean_len": "16384",
                      "max_len": "16384"})
    assert "at most 1,000,000 instructions" in texts(at.error)
    assert widget(at, "batch").value < 1024 and "Passed" in texts(at.success)
    assert not at.exception and not at.warning


def test_link_reopens_the_scenario_and_reports_bad_values():
    at = decode_page({"batch": "4", "impl": "cube_vector", "kv_dtype": "int8_token",
                      "buffer_num": "1", "bogus": "1", "layout": "sideways"})
    assert widget(at, "batch").value == 4
    assert widget(at, "impl").value == "cube_vector"
    assert widget(at, "kv_dtype").value == "int8_token"
    assert widget(at, "buffer_num").value == 1
    message = texts(at.error)
    assert "bogus = '1' is not allowed" in message and "sideways" in message
    assert "Passed" in texts(at.success)
    assert at.query_params["impl"] == "cube_vector"


def test_chinese():
    at = decode_page({"lang": "zh"})
    assert at.title[0].value == "KV 缓存与解码"
    assert "通过" in texts(at.success)
    assert "解码步" in [h.value for h in at.subheader]
    assert metric(at, "每 token 的 KV") == "128.00 KiB"


def test_the_seed_draws_the_batch_and_lives_in_the_url():
    query = {"distribution": "lognormal", "batch": "4", "mean_len": "1024"}
    first = decode_page({**query, "seed": "1"})
    second = decode_page({**query, "seed": "2"})
    label = "KV of the batch (reserved)"
    assert metric(first, label) != metric(second, label)
    assert first.query_params["seed"] == "1" and not first.exception


def test_every_choice_the_page_offers_has_a_name():
    """The choice widgets name their options from a table of ids: none may be missing."""
    for name, ids in decode_controls.CHOICE_IDS.items():
        offered = decode_controls.PAGE_PHASES if name == "phases" else \
            decode_controls.SPECS[name].choices
        assert set(offered) <= set(ids), name
        for lang in LANGUAGES:
            assert all(t(ids[choice], lang) != ids[choice] for choice in offered)

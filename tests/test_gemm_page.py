"""The GEMM page under ``streamlit.testing.v1.AppTest``: it renders on the default and on
the coupled presets, its task-grid picture follows the policy once applied, split-K
shortens a small GEMM, bad input (a precision the chip lacks, 4:2 sparsity on 310P, a
tile too large for L0B, a huge problem, a bad link) is a translated message, and Chinese
works.
"""
from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest_helpers import open_page, run, set_and_apply, set_widgets, texts
from tests.apptest_helpers import widget as find

PAGE = "explorer/ui/pages/gemm.py"
SMALL = {"M": 512, "N": 512, "K": 512}  # 4 x 2 = 8 tasks: quick to emulate
PREFIX = "w.gm."


def widget(at: AppTest, name: str):
    return find(at, PREFIX + name)


def set_values(at: AppTest, **values) -> AppTest:
    """Set widgets and press Apply: the page then runs them."""
    return set_and_apply(at, PREFIX, **values)


def gemm_page(query: dict | None = None, **values) -> AppTest:
    """The app started from its entry point, switched to the GEMM page, widgets set."""
    at = open_page(PAGE, query)
    return set_values(at, **values) if values else at


def metric(at: AppTest, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def makespan_us(at: AppTest) -> float:
    return float(metric(at, "Kernel duration").split()[0].replace(",", ""))


def grid_spec(at: AppTest) -> dict:
    """The task-grid figure (the chart keyed "task_grid")."""
    return json.loads(next(c for c in at.get("plotly_chart") if c.key == "task_grid").proto.spec)


def grid_cells(at: AppTest) -> list:
    return [trace["z"] for trace in grid_spec(at)["data"] if trace["type"] == "heatmap"]


# ---- renders -------------------------------------------------------------------------------
def test_default_page_renders_a_large_gemm_near_the_cube_peak():
    at = gemm_page()
    assert at.title[0].value == "GEMM and the 3-D task grid"
    assert widget(at, "M").value == widget(at, "N").value == widget(at, "K").value == 4096
    assert widget(at, "block_dim").value == 24  # all cube cores of 910B2
    assert widget(at, "base_k").value == 64
    assert "512 tasks on 24 cores = 21 full waves + a tail of 8" in texts(at.warning)
    assert metric(at, "Kernel duration").endswith("µs")
    tflops = float(metric(at, "Achieved TFLOPS").replace(",", ""))
    assert 0.5 * 353.9 < tflops <= 353.9  # near, never above, the fp16 cube peak
    assert "aic_cube_ratio" in {m.label for m in at.metric}
    assert "Passed" in texts(at.success)
    assert len(at.get("plotly_chart")) == 7  # grid, timeline, roofline, ratios, traffic,
    # load balance, bandwidth
    assert "L0B: 64 of 64 KiB (100%)" in "\n".join(p.proto.text for p in at.get("progress"))
    assert "Launches are 1-D" in texts(at.markdown)
    assert at.query_params["policy"] == "swizzle"


@pytest.mark.parametrize(("preset", "cores"), [("910", 32), ("310P3", 8)])
def test_coupled_presets_render(preset, cores):
    at = gemm_page({"preset": preset})  # the default 4096^3 fp16 GEMM
    assert widget(at, "block_dim").value == cores
    assert "Passed" in texts(at.success)
    assert not at.error
    assert "UB" in "\n".join(p.proto.text for p in at.get("progress"))  # L0C -> UB -> GM


def test_block_dim_follows_the_preset_when_it_was_all_cores():
    at = gemm_page(**SMALL)
    assert widget(at, "block_dim").value == 24
    at.sidebar.selectbox[0].set_value("310P3")
    run(at)
    assert widget(at, "block_dim").value == 8


# ---- the task grid -------------------------------------------------------------------------
def test_changing_the_policy_changes_the_grid_figure():
    at = gemm_page(M=2048, N=2048, K=256)
    before = grid_cells(at)
    set_values(at, policy="col_major")
    after = grid_cells(at)
    assert before != after
    set_values(at, policy="swizzle")
    assert grid_cells(at) == before


def test_colour_by_wave():
    at = gemm_page(**SMALL)
    at.radio(key="w.gm.view.colour_by").set_value("wave")
    run(at)
    assert "coloured by wave" in grid_spec(at)["layout"]["title"]["text"]


def test_split_k_shortens_a_small_gemm_and_draws_its_layers():
    at = gemm_page(M=256, N=256, K=8192)
    single = makespan_us(at)
    assert "2 tasks on 24 cores: a single partial wave; 22 cores stay idle" in texts(at.warning)
    set_values(at, grid_z=4)
    split = makespan_us(at)
    assert split < single
    assert len(grid_cells(at)) == 4  # one panel per K layer
    assert "Passed" in texts(at.success)
    set_values(at, split_k_mode="atomic")
    assert makespan_us(at) < single


def test_example_buttons_set_the_scenario():
    at = gemm_page()
    at.button(key="gm_example_small_split").click()
    run(at)
    assert (widget(at, "M").value, widget(at, "K").value, widget(at, "grid_z").value) == \
        (256, 8192, 8)
    at.button(key="gm_example_tail").click()
    run(at)
    assert widget(at, "grid_z").value == 1
    assert "520 tasks on 24 cores = 21 full waves + a tail of 16: the last wave leaves " \
        "8 cores idle" in texts(at.warning)


# ---- bad input -----------------------------------------------------------------------------
def test_unsupported_precision_is_an_error_message():
    at = gemm_page({"preset": "910"}, **SMALL)
    set_values(at, dtype_in="bf16")
    message = texts(at.error)
    assert "Input precision (A, B) (params.dtype_in) = 'bf16' is not allowed" in message
    assert "fp16, int8" in message
    assert not at.get("plotly_chart")  # no run, no figures; the page still explains
    assert "Launches are 1-D" in texts(at.markdown)
    set_values(at, dtype_in="fp16")
    assert "Passed" in texts(at.success)


def test_sparsity_4_2_on_310p_is_refused_and_2_4_is_labelled_a_what_if():
    at = gemm_page({"preset": "310P3"}, **SMALL)
    set_values(at, dtype_in="int8", dtype_out="int32", sparsity="4:2")
    assert "Ascend 310P3: its cube_sparse_42 = 0 (no 4:2 sparse MMAD)" in texts(at.error)
    at = gemm_page(**SMALL)
    set_values(at, sparsity="2:4")
    assert "not offered by any Ascend chip" in texts(at.warning)
    assert "Passed" in texts(at.success)


def test_tile_too_large_for_l0b_names_the_limit():
    """The base_k widget offers only tiles L0B holds with base_n = 256 (it used to offer
    128, which the page then refused); a link's 128 is refused, naming the limit, and the
    page runs the largest base_k that fits."""
    at = gemm_page({"base_k": "128", **{k: str(v) for k, v in SMALL.items()}})
    message = texts(at.error)
    assert "base_k" in message and "L0B holds 65536 bytes" in message
    assert "at most 64" in message
    assert widget(at, "base_k").options[-1] == "64" and widget(at, "base_k").value == 64
    assert "⚠ L0B" not in "\n".join(p.proto.text for p in at.get("progress"))
    assert "Passed" in texts(at.success)


def test_huge_problem_is_refused_before_building_it():
    """Typed sizes beyond the page's budget are refused visibly (each naming the budget)
    and the widgets keep their values (the number inputs used to leave them red)."""
    at = gemm_page()
    set_widgets(at, PREFIX, M=65536, N=65536, K=65536)  # refused in the controls at once
    assert texts(at.error).count("at most 1,000,000 instructions") == 3
    assert widget(at, "M").value == widget(at, "N").value == widget(at, "K").value == 4096


def test_link_sets_parameters_and_bad_values_are_reported():
    at = gemm_page({"M": "1024", "policy": "col_major", "db_l0": "false", "grid_z": "2",
                    "bogus": "1", "base_m": "17"})
    assert widget(at, "M").value == 1024
    assert widget(at, "policy").value == "col_major"
    assert widget(at, "db_l0").value is False
    assert widget(at, "grid_z").value == 2
    message = texts(at.error)
    assert "bogus = '1' is not allowed" in message
    assert at.query_params["db_l0"] == "False"


# ---- language ------------------------------------------------------------------------------
def test_chinese_titles():
    at = gemm_page({"lang": "zh"}, **SMALL)
    assert at.title[0].value == "GEMM 与三维任务网格"
    assert "运行结果" in [h.value for h in at.subheader]
    assert "通过" in texts(at.success)
    assert "C 划分为" in grid_spec(at)["layout"]["title"]["text"]
    assert metric(at, "内核耗时").endswith("µs")


def test_static_balance_gives_each_core_a_contiguous_block():
    at = gemm_page(M=1024, N=1024, K=256, block_dim=5)  # 32 tasks on 5 cores
    rr = grid_cells(at)
    set_values(at, balance="static")
    assert grid_cells(at) != rr and not at.exception
    assert at.query_params["balance"] == "static"


def test_the_seed_lives_in_the_url_and_changes_the_check():
    first = gemm_page({"M": "256", "N": "256", "K": "256", "seed": "1"})
    second = gemm_page({"M": "256", "N": "256", "K": "256", "seed": "2"})
    assert first.query_params["seed"] == "1" and not first.exception
    # other inputs, other errors: the check's numbers (the verdict and its captions) differ
    assert texts([*first.success, *first.caption]) != texts([*second.success, *second.caption])
    assert "Norm-wise relative error" in texts(first.caption)

"""Links that reproduce, inputs refused visibly (issue 19), on the vector add and GEMM pages
under ``streamlit.testing.v1.AppTest``:

* every link of the troubleshooting lab to these pages opens a page that shows the refusal
  the lab describes (naming the same field), and a fix's link opens without one;
* a URL value the page cannot run (``tile=1000``, ``tile=65536``, ``block_dim=0``, an n
  above the instruction budget) is refused in a visible error that names the field by its
  translated label, the value and the range allowed on this chip, and the widget shows the
  value the message says the page runs with (never another one, silently);
* every numeric widget's largest value runs without a refusal, and a typed number beyond
  the range is refused visibly while the widget keeps its value;
* the kernels refuse block_dim = 0 with the chip's core count, not the schema's range.

Expected ranges come from the library functions the pages use (the kernels' checks, the
chips' core counts, the budgets), never from copied numbers.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

import pytest

import hardware_presets as hp
from explorer.core import Scenario
from explorer.core import troubleshoot as ts
from explorer.core.i18n import param_label_id, t
from explorer.ui import errors, gemm_controls, kernel_pages, playground
from explorer.ui.widgets import number
from hardware_presets.errors import InputError
from kernels.common.budget import default_instruction_cap
from kernels.gemm import params as gp
from kernels.vector_add import kernel as vector_add
from tests.apptest_helpers import apply, open_page, run, texts, widget

VA, GEMM = "explorer/ui/pages/vector_add.py", "explorer/ui/pages/gemm.py"
PAGE_FILES = {"vector_add": VA, "gemm": GEMM}
PRESET = "910B2"
SMALL = {"M": "512", "N": "512", "K": "512"}  # quick to emulate, far from every limit
RANGE = re.compile(r"([\d,]+) to ([\d,]+)")


def label(name: str, lang: str = "en", prefix: str = "ui.param") -> str:
    return t(param_label_id(name, prefix), lang)


def as_int(text: str) -> int:
    """A number as a widget or a message shows it ("4,194,304 (2^22)" -> 4194304)."""
    return int(str(text).split()[0].replace(",", ""))


# ---- the lab's links ---------------------------------------------------------------------
def _lab_links() -> list[dict]:
    """Every link of the lab page to the vector add and GEMM pages, as its query."""
    at = open_page("explorer/ui/pages/lab.py", {"lang": "en"})
    prose = "\n".join(str(m.value) for m in at.markdown)
    links = [urlsplit(url) for url in re.findall(r"\]\((\./[^)]+)\)", prose)]
    return [{"page": u.path.removeprefix("./"), **dict(parse_qsl(u.query))}
            for u in links if u.path.removeprefix("./") in PAGE_FILES]


def _case(query: dict) -> ts.Case:
    """The lab's case a link opens (same kernel, preset and parameters)."""
    def same(case: ts.Case) -> bool:
        wanted = {k: str(v).lower() if isinstance(v, bool) else str(v)
                  for k, v in case.params.items()}
        return case.kernel == query["page"] and case.preset == query["preset"] and \
            all(query.get(k) == v for k, v in wanted.items())
    cases = [c for p in ts.PROBLEMS for o in [ts.run_problem(p)] for c in (o.trigger, o.fix)]
    return next(c for c in cases if same(c))


def test_every_lab_link_shows_the_refusal_the_lab_describes():
    """Before: the vector add page silently changed tile 65536 / 1000 to a tile it runs,
    and the GEMM page grid_z = 32 to 16, without a word: the lab said "Refused"."""
    links = _lab_links()
    assert {q["page"] for q in links} == set(PAGE_FILES)
    refused = 0
    for query in links:
        case = _case(query)
        params = {k: v for k, v in query.items() if k != "page"}
        at = open_page(PAGE_FILES[query["page"]], params)
        shown = texts(at.error)
        if case.refusal is None:
            assert not shown, (query, shown)
            continue
        refused += 1
        name = case.refusal.field.removeprefix("params.")
        assert f"{label(name)} ({case.refusal.field}) = {params[name]}" in shown, shown
        assert case.refusal.allowed in shown  # the kernel's own words, as the lab quotes them
    assert refused == 3  # ub_overflow, misaligned_copy, split_k_depth


# ---- bad URL values ----------------------------------------------------------------------
def _va_largest(chip: hp.Chip) -> dict[str, int]:
    """The largest value of each the vector add page accepts with its defaults (fp16,
    BUFFER_NUM 2, tiles of 8192), from the kernel and the page's budget."""
    budget = min(playground.UI_MAX_INSTRUCTIONS, default_instruction_cap())
    return {"tile": vector_add.largest_tile(chip, "fp16", 2),
            "block_dim": len(chip.vector_core_ids()),
            "n": budget // vector_add.ops_per_tile(chip, "fp16") * 8192}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize(("name", "value"), [
    ("tile", 1000), ("tile", 65536), ("block_dim", 0), ("n", 1 << 34)])
def test_a_bad_url_value_is_refused_visibly_with_the_chips_range(name, value, lang):
    """Before: tile and block_dim were clamped or snapped in silence (block_dim = 0 said
    "1 to 128", a range no chip has); n = 2^34 passed the widget's range and was refused
    later, with the widget showing it."""
    at = open_page(VA, {"lang": lang, name: str(value)})
    shown = texts(at.error)
    assert f"{label(name, lang)} (params.{name}) = {value}" in shown, shown
    largest = _va_largest(hp.load(PRESET))[name]
    assert re.search(rf"\d \D+ {number(largest)}\D", shown), (largest, shown)
    assert hp.load(PRESET).display_name in shown
    used = at.session_state[f"va.{name}"]
    assert used != value and f"{label(name, lang)} = {number(used)}" in shown
    assert used == as_int(widget(at, f"w.va.{name}").value)
    assert t("ui.va.numerics", lang) in [e.label for e in at.expander]  # it still runs


@pytest.mark.parametrize(("page", "cores"), [
    (VA, lambda chip: chip.vector_core_ids()), (GEMM, lambda chip: chip.cube_core_ids())])
def test_block_dim_zero_names_the_chips_cores(page, cores):
    """Before: "1 to 128" on vector add and "1 to 256" on GEMM (the schema's ranges)."""
    at = open_page(page, {"preset": "910B4", "block_dim": "0"})
    chip = hp.load("910B4")
    shown = texts(at.error)
    assert f"1 to {len(cores(chip))}" in shown and chip.display_name in shown
    assert not {"128", "256"} & set(re.findall(r"\d+", shown))


@pytest.mark.parametrize(("kernel", "what"), [("vector_add", "vector cores"),
                                              ("gemm", "cube cores")])
@pytest.mark.parametrize("value", [0, "beyond the schema", "abc"])
def test_the_kernels_refuse_block_dim_with_the_chips_range(kernel, what, value):
    """Before: 0, "abc" and values beyond the schema were refused with the schema's range
    (1 to 128 or 1 to 256), which no chip has."""
    import kernels
    chip = hp.load("310P3")
    count = len(chip.vector_core_ids() if kernel == "vector_add" else chip.cube_core_ids())
    if value == "beyond the schema":
        value = int(next(s.max for s in kernels.get(kernel).params if s.name == "block_dim")) + 1
    with pytest.raises(InputError) as err:
        Scenario.make("310P3", kernel, {"block_dim": value})
    assert err.value.field == "params.block_dim"
    assert err.value.allowed == f"1 to {count} ({what} of {chip.display_name})"


def test_a_gemm_tile_the_buffers_cannot_hold_is_moved_visibly():
    """Before: a link's base_k = 128 stayed, the page refused to run and the base_k widget
    (which then offered 16 to 1024) showed an over-full L0B."""
    at = open_page(GEMM, {**SMALL, "base_k": "128"})
    shown = texts(at.error)
    assert f"{label('base_k')} (params.base_k) = 128" in shown
    assert "L0B holds" in shown  # the kernel's reason
    used = widget(at, "w.gm.base_k").value
    assert f"{label('base_k')} = {number(used)}" in shown
    assert used == gp.default_base_k("fp16") == as_int(widget(at, "w.gm.base_k").options[-1])
    assert at.get("plotly_chart")


# ---- widgets offer what the page runs ------------------------------------------------------
def _top(w) -> int:
    """A widget's largest value: its options' last, a slider's max, a number input's range
    as its help states it ("Accepted now: 1 to 65,536 rows")."""
    if hasattr(w, "options") and w.options:
        return as_int(w.options[-1])
    if getattr(w, "max", None) is not None:
        return int(w.max)
    return as_int(RANGE.findall(w.help)[-1][1])


@pytest.mark.parametrize(("page", "prefix", "names", "query"), [
    (VA, "w.va.", ("n", "block_dim", "tile"), {"n": "65536"}),
    (GEMM, "w.gm.", ("M", "N", "K", "base_m", "base_n", "base_k", "depth_k", "grid_x",
                     "grid_y", "grid_z", "group", "block_dim"), SMALL),
])
def test_every_numeric_widgets_largest_value_runs(page, prefix, names, query):
    """Before: n offered 2^34 (the page refused above about 614 million), base_k offered
    1024 (L0B holds 64 with base_n 256), grid_z and M, N, K their schema's maxima."""
    for name in names:
        at = open_page(page, query)
        top = _top(widget(at, prefix + name))
        widget(at, prefix + name).set_value(top)
        apply(at)
        assert not at.error, (name, top, texts(at.error))
        assert as_int(widget(at, prefix + name).value) == top
        assert at.get("plotly_chart"), name  # it ran: figures drawn


def test_a_typed_number_beyond_the_range_is_refused_and_kept():
    """Before: the number input's own maximum left a larger typed M red and unapplied
    while the results showed the old value, with no message."""
    at = open_page(GEMM)
    m = widget(at, "w.gm.M")
    lo, hi = (as_int(v) for v in RANGE.findall(m.help)[-1])
    m.set_value(65536)
    run(at)
    shown = texts(at.error)
    assert f"{label('M')} (params.M) = 65536" in shown
    assert f"{number(lo)} to {number(hi)}" in shown
    assert f"{label('M')} = 4,096" in shown and widget(at, "w.gm.M").value == 4096
    chip = hp.load(PRESET)
    accepted = gp.check(chip, {"M": hi})
    assert gp.instruction_count(gp.GemmParams.of(accepted)) <= gemm_controls.UI_MAX_INSTRUCTIONS
    over = gp.check(chip, {"M": hi + 1})
    assert gp.instruction_count(gp.GemmParams.of(over)) > gemm_controls.UI_MAX_INSTRUCTIONS


def test_a_setting_that_shrinks_another_range_moves_it_visibly():
    """Before: fp32 halves the largest tile; the tile was snapped down in silence."""
    at = open_page(VA, {"n": "65536", "tile": "16352"})
    assert not at.error
    widget(at, "w.va.dtype").set_value("fp32")
    run(at)
    shown = texts(at.error)
    fit = vector_add.largest_tile(hp.load(PRESET), "fp32", 2)
    assert f"{label('tile')} (params.tile) = 16352" in shown
    assert f"{label('tile')} = {number(fit)}" in shown
    assert widget(at, "w.va.tile").value == fit


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_refusal_of_a_multi_field_budget_names_every_label(lang):
    """The GEMM budget names M, N and K together: each by its label, not K's alone."""
    text = errors.field_label("params.M, N, K", lang, kernel_pages.PAGES["gemm"].label_id)
    assert text == f"{label('M', lang)}, {label('N', lang)}, {label('K', lang)} " \
        "(params.M, N, K)"

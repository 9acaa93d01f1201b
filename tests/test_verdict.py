"""The numerical check's verdict (explorer/core/verdict.py): what is compared against which
bound, worked by hand; the GEMM gallery scenario reads "passed" with nothing above its bound
beside it; a failing check says how many elements failed and by how much; the CLI and the
vector add page show the same numbers (the report's: tests/test_report.py)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer import cli
from explorer.core import Scenario, gallery, simulate
from explorer.core.i18n import t
from explorer.core.verdict import SMALL_SHARE, compare, verdict
from explorer.ui import playground as va_page
from explorer.ui.state import DEFAULT_PRESET
from kernels.vector_add import kernel as va
from tests.apptest_helpers import widget
from tests.test_app import playground, start

#: a number as the verdict prints it (not the digits of "fp16", "‖x‖₂" or "1%")
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
SMALL = {"n": 5000, "block_dim": 3, "tile": 1024}


def numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in NUMBER.findall(text)]


def numerics_lines(out: str) -> list[str]:
    """The CLI's verdict: the "numerics:" line and the indented lines under it."""
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("  numerics: "))
    rest = [line.strip() for line in lines[first + 1:first + 4]]
    return [lines[first].removeprefix("  numerics: "), *rest]


# ---- the comparison, by hand -------------------------------------------------------------
def test_compare_by_hand():
    want = np.array([3.0, -4.0, 0.0, 0.01])  # ||want|| = 5.00001, RMS 2.500005
    got = np.array([3.003, -4.0, 1e-6, 0.0101])
    allowed = np.array([0.006, 0.004, 1e-6, 2e-4])
    c = compare(got, want, allowed, 2.0 ** -11, 10)
    assert (c.passed, c.failed, c.verified, c.total) == (True, 0, 4, 10)
    assert c.bound == 2.0 ** -11
    assert c.bound_ratio == pytest.approx(max(0.003 / 0.006, 1e-6 / 1e-6, 1e-4 / 2e-4))
    norm = np.sqrt(3.0 ** 2 + 4.0 ** 2 + 0.01 ** 2)
    assert c.norm_rel_error == pytest.approx(np.sqrt(0.003 ** 2 + 1e-12 + 1e-8) / norm)
    assert c.norm_bound == pytest.approx(np.sqrt(0.006 ** 2 + 0.004 ** 2 + 1e-12 + 4e-8) / norm)
    # 0.0 and 0.01 are below 1% of the RMS (0.025): relative errors inf and 0.01 there
    assert c.small_below == pytest.approx(SMALL_SHARE * norm / 2)
    assert c.small == 2
    assert c.max_rel_error_large == pytest.approx(0.001)
    assert c.max_rel_error_small == c.max_rel_error == np.inf
    assert c.max_abs_error == pytest.approx(0.003)


def test_a_failing_comparison_counts_its_elements_and_nan_fails():
    c = compare([1.0, 2.5, np.nan], [1.0, 2.0, 1.0], [0.1, 0.1, 0.1], 0.5, 3)
    assert (c.passed, c.failed) == (False, 2)
    c = compare([1.0, 2.5], [1.0, 2.0], [0.1, 0.1], 0.5, 2)
    assert c.bound_ratio == pytest.approx(5.0)
    head = verdict(c)[0]
    assert head.startswith("Failed: 1 of 2 verified elements")
    assert "5 times its allowance" in head


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e6, 1e6), st.floats(0, 1), st.floats(0, 1e3)),
                min_size=1, max_size=40))
def test_a_pass_never_shows_a_norm_above_its_bound(rows):
    want = np.array([r[0] for r in rows])
    allowed = np.array([r[2] for r in rows])
    got = want + np.array([r[1] for r in rows]) * allowed  # every error within its allowance
    c = compare(got, want, allowed, 2.0 ** -24, len(rows))
    assert c.passed and c.bound_ratio <= 1.0
    assert c.norm_rel_error <= c.norm_bound * (1 + 1e-12)
    assert c.small + int((np.abs(want) >= c.small_below).sum()) == len(rows)


# ---- the CLI: the GEMM scenario of the issue, and a failing check ---------------------------
def test_the_gemm_gallery_scenario_reads_passed_with_its_norm_below_its_bound(capsys):
    path = gallery.GALLERY_DIR / "gemm_double_buffer_b.toml"
    assert cli.main(["run", str(path)]) == cli.EXIT_OK
    out = capsys.readouterr().out
    head, norm, relative, detail = numerics_lines(out)
    assert head.startswith("Passed: every verified element of the output is within")
    assert all(x <= 1 for x in numbers(head))  # the worst error as a share of its allowance
    value, bound = numbers(norm)[-2:]
    assert norm.startswith("Norm-wise relative error") and f"bound {bound:.3g}" in norm
    assert value <= bound
    # the large relative error of elements near zero is reported apart, and said to be so
    assert "smaller ones" in relative and "close the reference is to zero" in relative
    assert "65,536 of 4,194,304 output elements" in detail
    assert "max rel error" not in out and "(bound 0.000488)" not in out


def test_a_failing_check_says_how_many_and_by_how_much(tmp_path, capsys, monkeypatch,
                                                       fresh_numerics):
    u = 2.0 ** -13  # a quarter of fp16's unit roundoff: many roundings now "fail"
    monkeypatch.setattr(va, "unit_roundoff", lambda params: u)
    path = tmp_path / "s.toml"
    path.write_text(Scenario.make(params=SMALL).to_toml(), encoding="utf-8")
    assert cli.main(["run", str(path)]) == cli.EXIT_NUMERICS
    head, norm, _, detail = numerics_lines(capsys.readouterr().out)
    # the same comparison in float64, independently
    params = Scenario.make(params=SMALL).params_dict
    inputs = va.make_inputs(params, np.random.default_rng(0))
    want = va.reference(inputs)["z"]
    err = np.abs(np.asarray(va.execute(params, inputs)["z"], np.float64) - want)
    allowed = u * np.abs(want)
    failed = int((err > allowed).sum())
    ratio = np.max(np.divide(err, allowed, out=np.zeros_like(err), where=allowed > 0))
    assert failed > 0
    assert head == (f"Failed: {failed:,} of 5,000 verified elements of the output exceed their "
                    f"error bound (the worst error is {ratio:.3g} times its allowance).")
    # allowed = u |reference|, so the norm-wise bound is u itself
    assert f"bound {u:.3g} " in norm
    assert numbers(norm)[-2] == pytest.approx(
        float(f"{np.linalg.norm(err) / np.linalg.norm(want):.3g}"))
    assert detail.startswith(f"Max abs error {err.max():.3g};")


# ---- the same numbers on the page ---------------------------------------------------------
def test_the_vector_add_page_and_the_cli_show_the_same_check(tmp_path, capsys):
    at = playground(start())
    shown = {name: widget(at, f"w.va.{name}").value for name in va_page.SPECS}
    scenario = Scenario.make(DEFAULT_PRESET, "vector_add", shown, {}, 0)
    check = simulate(scenario).numerics
    subject = t("verdict.subject.result", dtype=shown["dtype"])
    head, *rest = verdict(check, "en", subject)
    assert [box.value for box in at.success] == [head]
    captions = [c.value for c in at.caption]
    assert all(line in captions for line in rest)
    path = tmp_path / "s.toml"
    path.write_text(scenario.to_toml(), encoding="utf-8")
    assert cli.main(["run", str(path)]) == cli.EXIT_OK
    cli_lines = numerics_lines(capsys.readouterr().out)
    assert [numbers(line) for line in cli_lines] == [numbers(line) for line in [head, *rest]]


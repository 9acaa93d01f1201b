"""The emulator against published real-hardware figures (explorer/core/validation).

Every case must stay within its tolerance: a change to the time model that moves a case
out fails here, and ``python -m bench.validate`` prints the whole table. The presets must
carry the values ``bench.calibrate`` fits to the published DataCopy curves.
"""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets
from explorer.core.validation import cases as validation
from explorer.core.validation import copies

CASES = validation.cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_within_its_tolerance(case):
    outcome = validation.emulate(case)
    assert abs(outcome.error) <= case.tolerance, (
        f"{case.id}: emulated {outcome.emulated_us:.2f} us vs published "
        f"{case.published_us:.2f} us ({case.source})")
    for name, error in outcome.ratio_errors.items():
        assert abs(error) <= case.ratio_tolerance, f"{case.id}: {name} off by {error:+.2f}"


def test_every_case_names_its_source_chip_and_method():
    for case in CASES:
        assert case.source and case.chip_note and case.method, case.id
        assert 0 < case.tolerance < 1 and case.published_us > 0, case.id
    assert {c.group for c in CASES} >= {"gemm", "datacopy"}


@pytest.mark.parametrize("preset", ["910B1", "910B2", "910B3", "910B4"])
def test_presets_carry_the_fitted_queue_numbers(preset):
    chip = hardware_presets.load(preset)
    fit = copies.fit(chip)
    for queue, latency in fit.latency.items():
        assert getattr(chip, f"{queue}_latency_cycles") == round(latency), queue
    for path, cap in fit.cap.items():
        assert abs(getattr(chip, copies.PATHS[path][4]) - cap) <= 0.5, path
        q = copies.QUEUE_OF[path]
        depth = copies.depth_for_full_rate(
            getattr(chip, f"{q}_issue_cycles"), getattr(chip, f"{q}_burst_cycles"),
            chip.dma_burst_bytes, fit.latency[q], cap)
        assert getattr(chip, f"{q}_max_outstanding") == depth, q


def test_serial_harness_pays_one_copy_at_a_time():
    # msKPP's copies wait for each other, so the queue depth cannot change their time
    chip = hardware_presets.load("910B1")
    deep = chip.with_overrides(gm_read_max_outstanding=64)
    for c in (chip, deep):
        cycles = copies.emulated_cycles(c, "gm_read_ub", 16384)
        issue = 12 + 128 * 0.5
        assert cycles == pytest.approx((issue + chip.gm_read_latency_cycles
                                        + 16384 / chip.gm_read_l2_bytes_per_cycle)
                                       * 1800 / chip.clock_MHz)


def test_fit_recovers_numbers_it_was_given(monkeypatch):
    # curves made by the model itself are fitted back exactly
    chip = hardware_presets.load("910B1")
    made = []
    for curve in copies.curves():
        q = copies.QUEUE_OF[curve.path]
        cap = {"gm_read_l1": 300.0, "gm_read_ub": 150.0, "gm_write": 90.0,
               "fixpipe_gm": 200.0}[curve.path]
        latency = {"gm_read": 150.0, "gm_write": 100.0, "fixpipe_gm": 60.0}[q]
        cycles = 12 + np.ceil(curve.nbytes / 128) * 0.5 + latency + curve.nbytes / cap
        made.append(copies.Curve(curve.path, curve.title, curve.table, curve.nbytes, cycles))
    monkeypatch.setattr(copies, "curves", lambda: tuple(made))
    fit = copies.fit(chip)
    assert fit.latency == pytest.approx({"gm_read": 150.0, "gm_write": 100.0,
                                         "fixpipe_gm": 60.0})
    assert fit.cap["gm_read_ub"] == pytest.approx(150.0)
    assert all(np.allclose(r, 0, atol=1e-9) for r in fit.residuals.values())

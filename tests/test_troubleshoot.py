"""The troubleshooting lab's problems: each trigger is caught by the kernel, the emulator
or the measured figures (the refusal with its field, the deadlock, the criterion crossed)
and each fix is not."""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core import troubleshoot as ts
from explorer.core.emulator.engine import DeadlockError, run
from hardware_presets.errors import InputError
from kernels.vector_add import kernel as vector_add


@pytest.fixture(scope="module")
def outcomes() -> dict[str, ts.Outcome]:
    return {problem: ts.run_problem(problem) for problem in ts.PROBLEMS}


@pytest.mark.parametrize("problem", ts.PROBLEMS)
def test_every_problem_is_detected_and_its_fix_clears_it(outcomes, problem):
    found = outcomes[problem]
    assert found.problem == problem
    assert found.detected and found.fixed
    assert not found.fix.failed


def test_unknown_problem_is_refused():
    with pytest.raises(InputError, match="ub_overflow"):
        ts.run_problem("no_such_problem")


@pytest.mark.parametrize("problem", ["ub_overflow", "misaligned_copy"])
def test_vector_add_refusals_name_the_tile(outcomes, problem):
    trigger = outcomes[problem].trigger
    assert trigger.refusal.field == "params.tile"
    assert trigger.refusal.value == trigger.params["tile"]


def test_ub_overflow_fix_is_the_largest_tile_that_fits(outcomes):
    fix = outcomes["ub_overflow"].fix.figures
    assert "UB holds" in outcomes["ub_overflow"].trigger.refusal.allowed
    assert fix["ub_bytes_needed"] <= fix["ub_bytes"]
    chip, params = hp.load(ts.VA_PRESET), outcomes["ub_overflow"].fix.params
    step = chip.ub_align_bytes // vector_add.elem_bytes(params["dtype"])
    with pytest.raises(InputError, match="at most"):  # one block more no longer fits
        vector_add.check(chip, {**params, "tile": fix["tile"] + step})
    assert f"at most {fix['tile']} elements" in outcomes["ub_overflow"].trigger.refusal.allowed


def test_misaligned_fix_is_a_whole_number_of_32_byte_blocks(outcomes):
    case = outcomes["misaligned_copy"]
    assert "32-byte" in case.trigger.refusal.allowed
    assert case.fix.figures["tile"] * 2 % 32 == 0 and case.fix.figures["makespan_us"] > 0


def test_sync_all_with_more_blocks_than_cores_deadlocks():
    chip = hp.load(ts.SYNC_PRESET)
    cores = len(chip.vector_core_ids())
    with pytest.raises(DeadlockError, match="SyncAll needs every participating core"):
        run(ts.sync_all_program(chip, cores + 1), chip, engine="reference")
    assert run(ts.sync_all_program(chip, cores), chip).makespan_ns > 0


def test_sync_all_outcome_reports_the_deadlock(outcomes):
    found = outcomes["sync_all_blocks"]
    assert found.trigger.params["blocks"] > found.trigger.params["cores"]
    assert "deadlock" in found.trigger.deadlock
    assert 0 < found.trigger.figures["unfinished"] <= found.trigger.figures["instructions"]
    assert found.fix.params["blocks"] == found.fix.params["cores"]
    assert found.fix.figures["makespan_us"] > 0


def test_single_buffering_starves_the_cube(outcomes):
    off, on = outcomes["single_buffer"].trigger.figures, outcomes["single_buffer"].fix.figures
    assert off["aic_cube_ratio"] < ts.STARVED_SHARE * on["aic_cube_ratio"]
    assert off["makespan_us"] > ts.SLOWDOWN * on["makespan_us"]
    assert off["overlap_ratio"] < on["overlap_ratio"]  # copies no longer hidden
    assert off["mte2_ratio"] + off["mte1_ratio"] > off["aic_cube_ratio"]


def test_tail_wave_idle_cores_and_an_even_fix(outcomes):
    trig, fix = outcomes["tail_wave"].trigger.figures, outcomes["tail_wave"].fix.figures
    assert trig["tasks"] % trig["cores"] == trig["tail_tasks"] > 0
    assert trig["idle_cores"] == trig["cores"] - trig["tail_tasks"]
    assert fix["tail_tasks"] == fix["idle_cores"] == 0 and fix["tasks"] % fix["cores"] == 0
    assert fix["makespan_us"] < trig["makespan_us"]
    assert fix["load_balance_mean_max"] > trig["load_balance_mean_max"]


def test_split_k_without_enough_k_is_refused_and_the_fix_measured(outcomes):
    found = outcomes["split_k_depth"]
    assert found.trigger.refusal.field == "params.grid_z"
    fix = found.fix.figures
    assert fix["grid_z"] < found.trigger.params["grid_z"]
    assert fix["makespan_us"] < fix["makespan_us_no_split"]
    assert fix["makespan_us"] <= fix["makespan_us_most_splits"]
    assert fix["k_per_split"] >= 64  # at least one base_k step


def test_int8_without_scale_clips_and_per_channel_does_not(outcomes):
    trig, fix = outcomes["int8_overflow"].trigger.figures, outcomes["int8_overflow"].fix.figures
    assert trig["max_abs_value"] > 127 and trig["clipped_share"] >= ts.CLIP_SHARE
    assert trig["max_abs_error"] > 100 * fix["max_abs_error"]
    assert fix["clipped_share"] == 0 and fix["rel_rms_error"] < 0.01


def test_cast_without_scale_saturates_at_127():
    x = np.array([[-300.0, -5.4, 0.0, 5.6, 300.0]])
    q = ts.cast_without_scale(x)
    assert q.codes.tolist() == [[-127, -5, 0, 6, 127]]
    assert q.dequantize().tolist() == [[-127.0, -5.0, 0.0, 6.0, 127.0]]

"""The one pure entry point: ``simulate(scenario) -> Result``.

It builds the kernel's program for the chip, runs it on the emulator (in time), runs the
kernel's arithmetic on real arrays in the emulated precision (in value), checks it against
float64, and returns tidy tables plus scalar metrics. No printing, no files. The one piece
of state is a bounded memo of numerical checks: a check depends on the kernel, its
parameters but its record's ``timing_only`` ones, and the seed (not on the chip), so
a scenario that differs from an earlier one only in chip, overrides or timing parameters
reuses its check instead of redoing the arithmetic.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

import kernels
from hardware_presets import Chip

from .emulator.engine import run
from .metrics import compute_metrics, waves_of
from .scenario import Scenario
from .tables import bandwidth_table, per_core_table, timeline_table, traffic_table
from .verdict import NumericsCheck, compare


@dataclass(frozen=True, eq=False)
class Result:
    """Everything one run produced (tables are pandas DataFrames)."""

    scenario: Scenario
    chip: Chip
    params: dict
    timeline: pd.DataFrame
    per_core: pd.DataFrame
    traffic: pd.DataFrame
    bandwidth: pd.DataFrame
    metrics: dict
    numerics: NumericsCheck
    notes: tuple[tuple[str, dict], ...]  # (message id, values) for the UI to translate

    @property
    def makespan_ns(self) -> float:
        return float(self.metrics["makespan_us"]) * 1e3


def check_numerics(kernel, params: dict, seed: int) -> NumericsCheck:
    """Execute the kernel and its reference on the same inputs and compare element by
    element against the kernel's own error bound (see each kernel's ``error_bound``;
    ``explorer.core.verdict`` says what is compared and how it reads)."""
    num = kernel.numerics
    inputs = num.make_inputs(params, np.random.default_rng(seed))
    out = num.execute(params, inputs)
    if num.as_real is not None:  # e.g. int8 outputs compared after dequantisation
        out = num.as_real(params, out)
    ref = num.reference(inputs)
    name = next(iter(ref))
    allowed = num.error_bound(params, inputs, ref[name])
    return compare(out[name], ref[name], allowed, num.unit_roundoff(params),
                   num.output_elements(params))


#: numerical checks remembered per process (each a few numbers)
NUMERICS_MEMO_SIZE = 256


@functools.lru_cache(maxsize=NUMERICS_MEMO_SIZE)
def remembered_check(kernel_name: str, params_json: str, seed: int) -> NumericsCheck:
    """``check_numerics`` memoised (``remembered_check.cache_clear()`` forgets)."""
    return check_numerics(kernels.get(kernel_name), json.loads(params_json), seed)


def numerics_params(kernel, params: dict) -> dict:
    """What the kernel's numerics may read: its parameters but the timing-only ones."""
    return {k: v for k, v in params.items() if k not in kernel.timing_only}


def numerics_of(scenario: Scenario) -> NumericsCheck:
    """The numerical check of a validated scenario, computed once per process for each
    (kernel, numerics parameters, seed)."""
    params = numerics_params(kernels.get(scenario.kernel), scenario.params_dict)
    return remembered_check(scenario.kernel, json.dumps(params, sort_keys=True), scenario.seed)


def simulate(scenario: Scenario, *, engine: str = "jit") -> Result:
    """Run ``scenario`` in time and in value."""
    scenario = scenario.validated()
    chip = scenario.chip()
    kernel = kernels.get(scenario.kernel)
    params = scenario.params_dict
    program = kernel.build_program(chip, params, scenario.seed)
    schedule = run(program, chip, engine=engine)
    timeline = timeline_table(program, schedule, chip)
    per_core = per_core_table(timeline, chip, schedule.makespan_ns)
    metrics = compute_metrics(timeline, per_core, chip, float(program.flops().sum()),
                              waves_of(kernel, params))
    numerics = numerics_of(scenario)
    notes = []
    if numerics.verified < numerics.total:
        notes.append(("note.verified_sample",
                      {"verified": numerics.verified, "total": numerics.total}))
    return Result(scenario, chip, params, timeline, per_core, traffic_table(timeline),
                  bandwidth_table(schedule), metrics, numerics, tuple(notes))

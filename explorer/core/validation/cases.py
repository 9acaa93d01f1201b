"""The validation table: published real-hardware figures beside the emulator's.

Two kinds of case: kernel runs (``published_cases.toml``: a kernel, its parameters, a
preset, the published time and, where published, pipe ratios) and single-core DataCopy
points (msKPP's curves, ``mskpp_copies.toml``, rebuilt as its serial-copy harness). Each
case has a relative time tolerance, and ratios an absolute one; ``check`` says which cases
leave them. Only the timing runs: no numerics (a 6144^3 GEMM's values are not the point).
"""
from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import hardware_presets
import kernels
from kernels.common.params import validate_params

from ..emulator.engine import run
from ..metrics import compute_metrics
from ..tables import per_core_table, timeline_table
from . import copies

CASES = Path(__file__).with_name("published_cases.toml")
#: relative tolerance of the DataCopy points, per path (the fixpipe's floor is not modelled)
COPY_TOLERANCE = {"gm_read_l1": 0.15, "gm_read_ub": 0.15, "gm_write": 0.15, "fixpipe_gm": 0.45}
MSKPP_SOURCE = ("MindStudio msKPP csrc/prof_data/resource910b.cpp (mirror "
                "xiaobingling93-pixel/Ascend-mskpp), table {table}")
#: the version of the time model these figures validate; reports name it
MODEL_VERSION = "3 (DMA queues, write-back L2)"


@dataclass(frozen=True)
class Case:
    """One published figure and how to reproduce it."""

    id: str
    group: str  # "gemm", "datacopy", ...
    preset: str
    published_us: float
    tolerance: float
    source: str
    chip_note: str
    method: str
    kernel: str = ""
    params: tuple = ()
    ratios: tuple = ()  # (metric, published value)
    ratio_tolerance: float = 0.0
    copy: tuple = ()  # (path, bytes) for a DataCopy point
    chip_note_zh: str = ""  # the two descriptions in Chinese ("": the English stands in)
    method_zh: str = ""

    def described(self, lang: str) -> tuple[str, str]:
        """(chip note, method) in ``lang``: the Chinese when the case gives it."""
        if lang == "zh":
            return self.chip_note_zh or self.chip_note, self.method_zh or self.method
        return self.chip_note, self.method


@dataclass(frozen=True)
class Outcome:
    """A case with the emulator's figures."""

    case: Case
    emulated_us: float
    ratios: dict = field(default_factory=dict)  # metric -> emulated value

    @property
    def error(self) -> float:
        return self.emulated_us / self.case.published_us - 1.0

    @property
    def ratio_errors(self) -> dict[str, float]:
        return {k: self.ratios[k] - v for k, v in self.case.ratios}

    @property
    def ok(self) -> bool:
        return abs(self.error) <= self.case.tolerance and all(
            abs(e) <= self.case.ratio_tolerance for e in self.ratio_errors.values())


@functools.lru_cache(maxsize=1)
def cases() -> tuple[Case, ...]:
    """Every validation case: the kernel runs, then the DataCopy points."""
    doc = tomllib.loads(CASES.read_text(encoding="utf-8"))
    out = [Case(id=c["id"], group=c["group"], preset=c["preset"],
                published_us=float(c["published_us"]), tolerance=float(c["tolerance"]),
                source=c["source"], chip_note=c["chip_note"], method=c["method"],
                chip_note_zh=c.get("chip_note_zh", ""), method_zh=c.get("method_zh", ""),
                kernel=c["kernel"], params=tuple(sorted(c["params"].items())),
                ratios=tuple(sorted(c.get("ratios", {}).items())),
                ratio_tolerance=float(c.get("ratio_tolerance", 0.0)))
           for c in doc["case"]]
    clock, say = copies.clock_mhz(), copies.descriptions()
    for curve in copies.curves():
        for nbytes, cycles in zip(curve.nbytes, curve.cycles):
            out.append(Case(
                id=f"mskpp_{curve.path}_{nbytes / 1024:g}KiB", group="datacopy",
                preset="910B1", published_us=float(cycles / clock),
                tolerance=COPY_TOLERANCE[curve.path],
                source=MSKPP_SOURCE.format(table=curve.table),
                chip_note=say["chip_note"].format(title=curve.title),
                chip_note_zh=say["chip_note_zh"].format(title=curve.title),
                method=say["method"], method_zh=say["method_zh"],
                copy=(curve.path, int(nbytes))))
    return tuple(out)


def emulate(case: Case) -> Outcome:
    """Run one case on its preset."""
    chip = hardware_presets.load(case.preset)
    if case.copy:
        cycles = copies.emulated_cycles(chip, *case.copy)
        return Outcome(case, cycles / copies.clock_mhz())
    kernel = kernels.get(case.kernel)
    params = validate_params(kernel.params, dict(case.params))
    program = kernel.build_program(chip, params)
    schedule = run(program, chip)
    timeline = timeline_table(program, schedule, chip)
    per_core = per_core_table(timeline, chip, schedule.makespan_ns)
    metrics = compute_metrics(timeline, per_core, chip, float(program.flops().sum()))
    return Outcome(case, metrics["makespan_us"],
                   {name: float(metrics[name]) for name, _ in case.ratios})


def summary(outcomes: list[Outcome], group: str | None = None) -> dict[str, float]:
    """Mean and max |time error| (and of ratio errors, in points) over a group's cases."""
    chosen = [o for o in outcomes if group is None or o.case.group == group]
    errors = np.abs([o.error for o in chosen]) if chosen else np.zeros(1)
    ratio = np.abs([e for o in chosen for e in o.ratio_errors.values()] or [0.0])
    return {"cases": len(chosen), "mean_error": float(errors.mean()),
            "max_error": float(errors.max()), "mean_ratio_error": float(ratio.mean()),
            "max_ratio_error": float(ratio.max()),
            "within": sum(o.ok for o in chosen)}

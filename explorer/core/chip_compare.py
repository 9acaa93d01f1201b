"""Today's chips side by side with 910B2: the key figures of each preset with the provenance
status each figure rests on, for the chip page's table and figure and the reports.

A figure computed from several fields (a peak, a package total) is only as firm as its
weakest input: computed from published numbers it is "derived"; resting on an announced or
an estimated number it says so, so that an announced 950 figure or the 910C's assumed clock
never reads like a published one.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import hardware_presets as hp
from hardware_presets import Chip

#: the presets compared, the reference first
COMPARED = ("910B2", "910C", "950PR", "950DT")
#: statuses from firmest to weakest (a figure takes its weakest input's)
RANK = ("published", "derived", "announced", "estimated", "override")
_PEAK_INPUTS = ("ai_cores", "clock_MHz", "cube_m0", "cube_n0")


@dataclass(frozen=True)
class KeyFigure:
    """One row of the comparison: what it is (a message id), the fields it rests on and
    how to compute it (None where the chip lacks it, say an FP8 peak on 910B2)."""

    msg_id: str
    inputs: tuple[str, ...]
    value: Callable[[Chip], float | None]


def _peak(msg_id: str, precision: str) -> KeyFigure:
    return KeyFigure(msg_id, _PEAK_INPUTS + (f"cube_k0_{precision}",),
                     lambda c: c.peak_tflops(precision) if precision in c.cube_precisions
                     else None)


def _field(msg_id: str, key: str) -> KeyFigure:
    return KeyFigure(msg_id, (key,), lambda c: getattr(c, key))


def _total(msg_id: str, key: str) -> KeyFigure:
    return KeyFigure(msg_id, ("package_devices", key), lambda c: c.package_total(key))


#: the rows of the comparison, in order
KEY_FIGURES = (
    _field("ui.chip.compare.row.ai_cores", "ai_cores"),
    _field("ui.chip.compare.row.clock_MHz", "clock_MHz"),
    _field("ui.chip.compare.row.l2_MiB", "l2_MiB"),
    _field("ui.chip.compare.row.ub_KiB", "ub_KiB"),
    _field("ui.chip.compare.row.l0c_KiB", "l0c_KiB"),
    _field("ui.chip.compare.row.hbm_GiB", "hbm_GiB"),
    _field("ui.chip.compare.row.hbm_bandwidth_GBps", "hbm_bandwidth_GBps"),
    _peak("ui.chip.compare.row.peak_fp16", "fp16"),
    _peak("ui.chip.compare.row.peak_int8", "int8"),
    _peak("ui.chip.compare.row.peak_fp8_e4m3", "fp8_e4m3"),
    _peak("ui.chip.compare.row.peak_hif8", "hif8"),
    _peak("ui.chip.compare.row.peak_mxfp4", "mxfp4"),
    _field("ui.chip.compare.row.cube_sparse_42", "cube_sparse_42"),
    _field("ui.chip.compare.row.package_devices", "package_devices"),
    _field("ui.chip.compare.row.package_dies", "package_dies"),
    _total("ui.chip.compare.row.package_hbm_GiB", "hbm_GiB"),
    _total("ui.chip.compare.row.package_hbm_bandwidth_GBps", "hbm_bandwidth_GBps"),
    KeyFigure("ui.chip.compare.row.package_peak_fp16",
              ("package_devices",) + _PEAK_INPUTS + ("cube_k0_fp16",),
              lambda c: c.package_peak_tflops("fp16")),
)
#: the precisions of the figure's peak panel, in the cube's order
PEAK_PRECISIONS = tuple(p for p in hp.CUBE_PRECISIONS if p not in ("int4", "fp32"))


def status_of(chip: Chip, inputs: tuple[str, ...]) -> str:
    """The status a figure resting on ``inputs`` has: its weakest input's, and "derived"
    (not "published") for a figure computed from several published ones."""
    worst = max((chip.provenance_of(k).status for k in inputs), key=RANK.index)
    return "derived" if worst == "published" and len(inputs) > 1 else worst


def peak_status(chip: Chip, precision: str) -> str:
    """The status of the chip's cube peak in ``precision`` (cores, clock, fractal)."""
    return status_of(chip, _PEAK_INPUTS + (f"cube_k0_{precision}",))


def compared_chips() -> tuple[Chip, ...]:
    """The presets of the comparison (never the session's overrides: it compares chips)."""
    return tuple(hp.load(name) for name in COMPARED)


def comparison(chips: tuple[Chip, ...]) -> list[tuple[str, list[tuple[float | None, str]]]]:
    """Each key figure's message id with (value, status) per chip, in ``chips`` order."""
    return [(row.msg_id, [(row.value(c), status_of(c, row.inputs)) for c in chips])
            for row in KEY_FIGURES]


def peaks(chip: Chip) -> list[tuple[str, float | None, str]]:
    """(precision, peak TFLOPS or None, status) for the figure's peak panel."""
    return [(p, chip.peak_tflops(p) if p in chip.cube_precisions else None,
             peak_status(chip, p)) for p in PEAK_PRECISIONS]

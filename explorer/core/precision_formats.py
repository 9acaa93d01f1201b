"""The number formats themselves, side by side: what each one is and which chips take it,
how it rounds real data, and what that does to a dot product accumulated in fp32.

* ``format_table(chip)``: one row per format of ``kernels.common.formats.FORMATS`` (the
  five 8- and 4-bit formats among them): bits and bytes per element, layout, range, unit
  roundoff and what it is relative to (the element, the element's binade for the tapered
  hif8, the block's largest magnitude for the MX formats), the units of ``chip`` that
  take it and every preset whose cube or vector unit lists it (each chip is asked, no
  chip is named here).
* ``element_study``: the same data (``precision_numerics.data``, scaled by 10^magnitude)
  rounded to each format, saturating as quantisation does: error relative to each
  element, the worst error over the format's own bound (``formats.rounding_bound``; <= 1
  means the bound holds), and the share of elements rounded in the normal range,
  subnormal, flushed to zero or saturated. Blocks of 32 run along the last axis, where
  the "outliers" data puts its large channels, so half of the MX blocks hold an outlier.
* ``dot_study``: dot products of length k of two such vectors, inputs rounded to each
  format (MX blocks along k), products accumulated left to right in fp32 as L0C does;
  error relative to sum |x y| against float64, and the bound that follows from the
  inputs' rounding bounds plus the fp32 accumulation, gamma_{k}(2^-24).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd

import hardware_presets as hp
from hardware_presets.errors import InputError, Phrase
from kernels.common import formats, microscaling
from kernels.common.accumulate import sum_sequence

from .precision_numerics import DISTRIBUTIONS, data

#: the float formats of the study, in the table's order (fp32 is the reference's cousin)
STUDY_FORMATS = tuple(n for n in formats.FLOAT_FORMATS if n not in ("fp32", "hf32"))
#: the formats the issue added; the others are there to compare with
NEW_FORMATS = ("fp8_e4m3", "fp8_e5m2", "hif8", "mxfp8", "mxfp4")
#: what the unit roundoff of a format is relative to
ROUNDOFF_KINDS = ("element", "band", "block", "none")
#: what happens to an element when it is rounded (``element_study``'s shares)
OUTCOMES = ("rounded", "subnormal", "flushed", "saturated")
#: data shape of the element study: rows x 64 channels (blocks of 32 along the channels)
ELEMENT_SHAPE = (64, 64)
DOT_KS = (32, 128, 512, 2048, 8192)
DOT_TRIALS = 16
MAGNITUDE_RANGE = (-8, 8)
_U32 = formats.UNIT_ROUNDOFF["fp32"]


def roundoff_kind(fmt: formats.Format) -> str:
    if fmt.is_integer:
        return "none"
    return "block" if fmt.is_block else "band" if fmt.tapered else "element"


def layout(fmt: formats.Format) -> str:
    """The fields in the usual shorthand: E4M3, E5M2 ...; the MX element's; "" for the
    tapered hif8 and the integers (the page says those in words)."""
    if fmt.is_integer or fmt.tapered:
        return ""
    if fmt.is_block:
        return f"{microscaling.MX_FORMATS[fmt.name].element_name} ×{fmt.block_size} + E8M0"
    return f"E{fmt.exponent_bits}M{fmt.mantissa_bits}"


@functools.lru_cache(maxsize=1)
def _preset_units() -> dict[str, dict[str, tuple[str, ...]]]:
    """{preset display name: {format: units}} over every preset, asked once."""
    out = {}
    for name in hp.PRESETS:
        chip = hp.load(name)
        out[chip.display_name] = {f: formats.units_with(chip, f) for f in formats.FORMATS}
    return out


def format_table(chip) -> pd.DataFrame:
    """One row per format (see the module); ``units`` are ``chip``'s, ``presets`` the
    display names of the presets that take the format on any unit."""
    rows = []
    for name, fmt in formats.FORMATS.items():
        rows.append({
            "format": name, "kind": roundoff_kind(fmt), "new": name in NEW_FORMATS,
            "bits": fmt.bits, "bytes": float(fmt.bytes), "layout": layout(fmt),
            "c_type": fmt.c_type, "max_value": fmt.max_value,
            "min_normal": fmt.min_normal, "min_subnormal": 2 * fmt.subnormal_error,
            "unit_roundoff": fmt.unit_roundoff, "block_size": fmt.block_size,
            "units": formats.units_with(chip, name),
            "presets": tuple(p for p, units in _preset_units().items() if units[name])})
    return pd.DataFrame(rows)


def _check(formats_: tuple, distribution: str, magnitude: int) -> tuple[str, ...]:
    bad = [f for f in formats_ if f not in STUDY_FORMATS]
    if bad or not formats_:
        raise InputError("formats", ", ".join(bad) or "–",
                         Phrase("refusal.one_of", options=", ".join(STUDY_FORMATS)))
    if distribution not in DISTRIBUTIONS:
        raise InputError("precision.distribution", distribution,
                         Phrase("refusal.one_of", options=", ".join(DISTRIBUTIONS)))
    lo, hi = MAGNITUDE_RANGE
    if isinstance(magnitude, bool) or not isinstance(magnitude, (int, np.integer)) \
            or not lo <= magnitude <= hi:
        raise InputError("precision.magnitude", magnitude,
                         Phrase("refusal.int_range", low=lo, high=hi))
    return tuple(formats_)


def _mx_scales(x: np.ndarray, name: str) -> np.ndarray:
    """The shared scale X of each element's block (blocks along the last axis)."""
    fmt = microscaling.MX_FORMATS[name]
    s = microscaling.shared_exponents(microscaling.block_amax(x, -1, fmt.block_size), fmt)
    return np.ldexp(1.0, s)


def _outcomes(name: str, x: np.ndarray, r: np.ndarray, bound: np.ndarray) -> dict:
    """Share of the elements of each outcome (OUTCOMES), in that order of precedence."""
    fmt = formats.FORMATS[name]
    small = fmt.min_normal
    if fmt.is_block:
        mx = microscaling.MX_FORMATS[name]
        small = float(mx.finfo.smallest_normal) * _mx_scales(x, name)
    saturated = ~np.isfinite(bound)
    flushed = ~saturated & (x != 0) & (r == 0)
    subnormal = ~saturated & ~flushed & (np.abs(r) < small) & (r != 0)
    rounded = ~(saturated | flushed | subnormal)  # exact values among them
    return {f"share_{k}": float(np.mean(v)) for k, v in zip(
        OUTCOMES, (rounded, subnormal, flushed, saturated))}


@dataclass(frozen=True, eq=False)
class ElementStudy:
    """``table``: one row per format; ``rel_errors``: |error| / |x| of every nonzero
    element per format (for the distribution figure)."""

    table: pd.DataFrame
    rel_errors: dict[str, np.ndarray]


def _element_row(name: str, x: np.ndarray) -> tuple[dict, np.ndarray]:
    r = formats.round_to(x, name, saturate=True).astype(np.float64)
    bound = formats.rounding_bound(x, name)
    err = np.abs(r - x)
    nonzero = x != 0
    rel = err[nonzero] / np.abs(x[nonzero])
    within = np.isfinite(bound) & (bound > 0)
    row = {"format": name, "median_rel": float(np.median(rel)),
           "p99_rel": float(np.quantile(rel, 0.99)), "max_rel": float(rel.max()),
           "rel_rms": float(np.linalg.norm(err) / np.linalg.norm(x)),
           "worst_over_bound": float(np.max(err[within] / bound[within], initial=0.0)),
           "unit_roundoff": formats.FORMATS[name].unit_roundoff,
           "kind": roundoff_kind(formats.FORMATS[name])}
    row.update(_outcomes(name, x, r, bound))
    return row, rel


def element_study(distribution: str = "gaussian", magnitude: int = 0, seed: int = 0,
                  formats_: tuple[str, ...] = STUDY_FORMATS) -> ElementStudy:
    """Every format of ``formats_`` rounding the same ``ELEMENT_SHAPE`` data (see the
    module)."""
    formats_ = _check(tuple(formats_), distribution, magnitude)
    x = data("x", ELEMENT_SHAPE, distribution, seed) * 10.0 ** magnitude
    rows, rels = [], {}
    for name in formats_:
        row, rels[name] = _element_row(name, x)
        rows.append(row)
    return ElementStudy(pd.DataFrame(rows), rels)


def _dot(name: str, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(|computed - exact|, bound) per trial, both relative to sum |x y|."""
    xr = formats.round_to(x, name, saturate=True, axis=0).astype(np.float64)
    yr = formats.round_to(y, name, saturate=True, axis=0).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        got = sum_sequence(xr * yr, "fp32", axis=0)
    exact, scale = np.sum(x * y, axis=0), np.sum(np.abs(x * y), axis=0)
    bx, by = formats.rounding_bound(x, name, axis=0), formats.rounding_bound(y, name, axis=0)
    inputs = np.sum(bx * np.abs(y) + np.abs(x) * by + bx * by, axis=0)
    k = x.shape[0]
    acc = formats.gamma(k, _U32) * np.sum(np.abs(xr * yr), axis=0)  # products + k - 1 adds
    return np.abs(got - exact) / scale, (inputs + acc) / scale


def dot_study(distribution: str = "gaussian", magnitude: int = 0, seed: int = 0,
              formats_: tuple[str, ...] = STUDY_FORMATS, ks=DOT_KS,
              trials: int = DOT_TRIALS) -> pd.DataFrame:
    """Rows (k, format, rel_error, bound): the largest error and the largest bound over
    ``trials`` dot products of length k (bound inf where an input saturates)."""
    formats_ = _check(tuple(formats_), distribution, magnitude)
    rows = []
    for k in ks:
        # trials x k, transposed: the outlier channels of "outliers" lie along k
        x = data("x", (trials, int(k)), distribution, seed).T * 10.0 ** magnitude
        y = data("y", (trials, int(k)), distribution, seed).T * 10.0 ** magnitude
        for name in formats_:
            err, bound = _dot(name, x, y)
            rows.append({"k": int(k), "format": name, "rel_error": float(err.max()),
                         "bound": float(bound.max())})
    return pd.DataFrame(rows, columns=["k", "format", "rel_error", "bound"])

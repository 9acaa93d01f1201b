"""The numerical check of a run: what was compared, against which bound, and the verdict in
words. One definition for the CLI (text and --json), the pages, the reports and notebooks.

The check is element-wise: every verified element y_i of the kernel's output must be within
the kernel's own allowed error a_i of the float64 reference r_i (``Numerics.error_bound``:
the accumulation and rounding bound of the kernel's arithmetic). A relative error
|y_i - r_i| / |r_i| is not what that bound limits: where r_i is near zero (a GEMM output
that cancels, an attention weight that underflows) it can be large while the element is
well inside its bound. So the verdict says three things apart:

* the element-wise verdict: the worst error as a share of its allowance
  (``bound_ratio = max |y_i - r_i| / a_i``, pass when <= 1);
* the norm-wise relative error ||y - r||_2 / ||r||_2 beside the same bound taken norm-wise,
  ||a||_2 / ||r||_2 (every |y_i - r_i| <= a_i implies it, so a pass never shows a norm
  above its bound);
* the largest relative error on the elements with |r_i| >= SMALL_SHARE x RMS(r), and on the
  "small" ones below it separately, labelled as such.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .i18n import DEFAULT_LANGUAGE, t

#: elements whose |reference| is below this share of the reference's RMS are "small": there
#: a relative error measures how close the reference is to zero, not the kernel's accuracy
SMALL_SHARE = 0.01


@dataclass(frozen=True)
class NumericsCheck:
    """Kernel output vs float64 reference on the verified elements."""

    max_abs_error: float
    max_rel_error: float  # over every verified element (see max_rel_error_large / _small)
    bound: float  # unit roundoff of the output format (relative), for reference
    bound_ratio: float  # max over elements of |error| / allowed error (pass when <= 1)
    passed: bool  # every verified element within its allowed error
    verified: int  # elements compared
    total: int  # elements the kernel produces
    failed: int  # verified elements over their allowed error
    norm_rel_error: float  # ||output - reference||_2 / ||reference||_2
    norm_bound: float  # ||allowed error||_2 / ||reference||_2: the same bound norm-wise
    small_below: float  # |reference| under which an element is "small" (SMALL_SHARE x RMS)
    small: int  # verified elements that are small
    max_rel_error_large: float  # largest relative error where |reference| >= small_below
    max_rel_error_small: float  # largest relative error on the small elements (0 if none)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, with 0 / 0 = 0 and x / 0 = inf for x > 0 (a huge quotient is inf too)."""
    with np.errstate(over="ignore"):
        return np.divide(num, den, out=np.where(num > 0, np.inf, 0.0), where=den > 0)


def _norm(x: np.ndarray) -> float:
    """Euclidean norm scaled by the largest magnitude, so that 1e200 does not overflow."""
    top = float(np.max(x, initial=0.0))
    if not np.isfinite(top) or top == 0.0:
        return top
    return top * float(np.sqrt(np.sum(np.square(x / top))))


def _max(x: np.ndarray) -> float:
    return float(x.max(initial=0.0))


def compare(got, want, allowed, unit_roundoff: float, total: int) -> NumericsCheck:
    """Compare the output ``got`` with the float64 reference ``want`` against the allowed
    error of every element (``allowed``, the kernel's ``error_bound``)."""
    want = np.asarray(want, np.float64)
    got = np.asarray(got, np.float64).ravel()
    allowed = np.broadcast_to(np.asarray(allowed, np.float64), want.shape).ravel()
    want = want.ravel()
    err, scale = np.abs(got - want), np.abs(want)
    rel = _ratio(err, scale)
    ref_norm = _norm(scale)
    small_below = SMALL_SHARE * ref_norm / np.sqrt(max(want.size, 1))
    small = scale < small_below
    within = err <= allowed  # False for NaN
    return NumericsCheck(
        max_abs_error=_max(err), max_rel_error=_max(rel), bound=float(unit_roundoff),
        bound_ratio=_max(_ratio(err, allowed)), passed=bool(within.all()),
        verified=int(want.size), total=int(total), failed=int((~within).sum()),
        norm_rel_error=float(_ratio(np.array(_norm(err)), np.array(ref_norm))),
        norm_bound=float(_ratio(np.array(_norm(allowed)), np.array(ref_norm))),
        small_below=float(small_below), small=int(small.sum()),
        max_rel_error_large=_max(rel[~small]), max_rel_error_small=_max(rel[small]))


def _g(x: float) -> str:
    return f"{x:.3g}"


def verdict(check: NumericsCheck, lang: str = DEFAULT_LANGUAGE,
            subject: str | None = None) -> tuple[str, ...]:
    """The check in words, one sentence each: the element-wise verdict, the norm-wise error
    beside its bound, the relative errors (small elements apart), what was verified.
    ``subject`` names the output ("C (fp16 in, fp16 out)"); by default "the output"."""
    subject = subject or t("verdict.subject.output", lang)
    if check.passed:
        head = t("verdict.passed", lang, subject=subject, ratio=_g(check.bound_ratio))
    else:
        head = t("verdict.failed", lang, subject=subject, ratio=_g(check.bound_ratio),
                 failed=f"{check.failed:,}", verified=f"{check.verified:,}")
    share = f"{SMALL_SHARE:.0%}"
    relative = (t("verdict.relative", lang, large=_g(check.max_rel_error_large),
                  small=_g(check.max_rel_error_small), cut=_g(check.small_below),
                  count=f"{check.small:,}", share=share) if check.small else
                t("verdict.relative_all", lang, large=_g(check.max_rel_error_large),
                  cut=_g(check.small_below), share=share))
    return (head,
            t("verdict.norm", lang, norm=_g(check.norm_rel_error), bound=_g(check.norm_bound)),
            relative,
            t("verdict.detail", lang, abs=_g(check.max_abs_error), verified=f"{check.verified:,}",
              total=f"{check.total:,}"))

"""HiFloat8 (HiF8), Huawei's tapered 8-bit float: decoding, encoding and rounding.

No library implements it, so it is written here from its definition in Luo et al.,
"Ascend HiFloat8 Format for Deep Learning" (arXiv 2409.16626, 2024), checked against the
data-type pages of Ascend C (``hifloat8_t``, CANN 9.0: the encoding of each dot value and
the worked example 0x2E = 14) and the conversion ``__float22hif82_rna`` (CAST_ROUND).

Layout of one byte, most significant bit first: sign S, then a prefix-coded *dot* field
that says how many exponent bits follow, then the exponent (sign-magnitude, no bias, the
leading 1 of the magnitude implicit), then the mantissa:

=========  ==========  ===============  ==============  =========================
dot code   exponent    exponents E      mantissa bits   values per sign
=========  ==========  ===============  ==============  =========================
``11``     4 bits      +-8 .. +-15      1               32 (one is Inf)
``10``     3 bits      +-4 .. +-7       2               32
``01``     2 bits      +-2, +-3         3               32
``001``    1 bit       +-1              3               16
``0001``   none        0                3               8
``0000``   none        denormal         (3 bits: M)     2^(M - 23), M = 1..7
=========  ==========  ===============  ==============  =========================

A normal value is (-1)^S 2^E (1 + m / 2^t). Special codes: 0x00 is the only zero (no
-0), 0x80 the only NaN, 0x6F / 0xEF are +-Inf (the pattern of 1.5 x 2^15). So the
largest finite value is 2^15 = 32768, the smallest normal 2^-15, the smallest denormal
2^-22: 31 binades of normals plus 7 of denormals, 38 in all (the paper's count).

Rounding is round to nearest with ties *away from zero* ("TA" in the paper, Ascend C's
CAST_ROUND / ``_rna``): a value is compared with the midpoints of consecutive HiF8 values
(exact in float64, HiF8 values have at most 4 significant bits). Overflow: from 1.25 x
2^15 = 40960 (the midpoint between 32768 and the Inf pattern's 1.5 x 2^15) a value rounds
to +-Inf, as the TA carry lands on the Inf code (also what the open implementations
en_dtypes and CANN's AI-CPU kernel do); ``saturate=True`` gives +-32768 instead (Ascend
C's ``_rna_sat``). Below 2^-23 a value rounds to 0; 2^-23 itself is a tie and goes to
2^-22. NaN stays NaN, +-Inf stays +-Inf.

Not implemented: the paper's hybrid rounding "HR" (Ascend C ``_rh``) and its stochastic
variants; the definition of HR's thresholds was not found in the sources available here,
so it is left out rather than guessed.

Error bound: a value x with 2^e <= |x| < 2^(e+1) inside the range rounds with
|fl(x) - x| <= 2^-(t_e + 1) |x|, t_e the mantissa bits of its binade (``mantissa_bits``:
3 near 1, 2, then 1 towards the ends, 0 for the denormals); below 2^-22 the absolute
error is at most 2^-23 (``SUBNORMAL_ERROR``).
"""
from __future__ import annotations

import math

import numpy as np

NAN_CODE, INF_CODE, ZERO_CODE = 0x80, 0x6F, 0x00
#: the code of the largest finite value, 2^15 (one below the Inf pattern)
MAX_CODE = 0x6E
SIGN_BIT = 0x80
#: (dot prefix, stored exponent bits, mantissa bits) of the normal codes, longest field first
DOT_FIELDS = (("11", 4, 1), ("10", 3, 2), ("01", 2, 3), ("001", 1, 3), ("0001", 0, 3))
DENORMAL_DOT = "0000"
#: the exponent of a denormal code is its 3-bit field minus this (2^(M - 23))
DENORMAL_BIAS = 23
MAX = 2.0 ** 15
MIN_NORMAL = 2.0 ** -15
MIN_DENORMAL = 2.0 ** -22
#: from here on a value rounds to Inf (or to MAX when saturating): the TA midpoint
OVERFLOW = 1.25 * MAX
#: the largest absolute error of a rounding below the smallest denormal
SUBNORMAL_ERROR = MIN_DENORMAL / 2
#: (lowest exponent, highest exponent, mantissa bits) of every binade band, low to high
BANDS = ((-22, -16, 0), (-15, -8, 1), (-7, -4, 2), (-3, 3, 3), (4, 7, 2), (8, 15, 1))


def _exponent(field: str) -> int:
    """A sign-magnitude exponent field with its implicit leading magnitude bit."""
    if not field:
        return 0
    magnitude = int("1" + field[1:], 2)
    return -magnitude if field[0] == "1" else magnitude


def decode_code(code: int) -> float:
    """The value of one code, read field by field (builds ``VALUES``)."""
    negative, payload = bool(code & SIGN_BIT), code & 0x7F
    if payload == 0:
        return math.nan if negative else 0.0
    if payload == INF_CODE:
        return -math.inf if negative else math.inf
    bits = f"{payload:07b}"
    if bits.startswith(DENORMAL_DOT):
        value = 2.0 ** (int(bits[4:], 2) - DENORMAL_BIAS)
    else:
        dot, width, t = next(f for f in DOT_FIELDS if bits.startswith(f[0]))
        field = bits[len(dot):len(dot) + width]
        mantissa = int(bits[len(dot) + width:], 2)
        value = 2.0 ** _exponent(field) * (1.0 + mantissa / 2 ** t)
    return -value if negative else value


#: the value of every code 0..255 (float64; NaN for 0x80, +-Inf for 0x6F / 0xEF)
VALUES = np.array([decode_code(c) for c in range(256)], dtype=np.float64)
VALUES.setflags(write=False)
_FINITE = np.flatnonzero(np.isfinite(VALUES))
_ORDER = _FINITE[np.argsort(VALUES[_FINITE], kind="stable")]
#: the finite values in increasing order and their codes (253: one zero, 126 per sign)
SORTED_VALUES = VALUES[_ORDER]
SORTED_CODES = _ORDER.astype(np.uint8)
#: midpoints between consecutive finite values (exact: few significant bits)
MIDPOINTS = (SORTED_VALUES[:-1] + SORTED_VALUES[1:]) / 2


def encode(x, *, saturate: bool = False) -> np.ndarray:
    """``x`` (any real array) rounded to HiF8 as uint8 codes: nearest value, ties away
    from zero; |x| >= ``OVERFLOW`` gives +-Inf (``saturate``: +-32768)."""
    x = np.asarray(x, dtype=np.float64)
    up = np.searchsorted(MIDPOINTS, x, side="right")  # a positive tie goes up (away)
    down = np.searchsorted(MIDPOINTS, x, side="left")  # a negative tie goes down (away)
    codes = SORTED_CODES[np.where(x > 0, up, down)]
    over = np.where(np.isinf(x) | (not saturate), INF_CODE, MAX_CODE)
    over = np.where(x < 0, over | SIGN_BIT, over)
    codes = np.where(np.abs(x) >= OVERFLOW, over, codes)
    return np.where(np.isnan(x), np.uint8(NAN_CODE), codes).astype(np.uint8)


def decode(codes) -> np.ndarray:
    """The float64 values of uint8 codes (a table lookup)."""
    codes = np.asarray(codes)
    if codes.dtype != np.uint8:
        raise TypeError(f"HiF8 codes are uint8, not {codes.dtype}")
    return VALUES[codes]


def round_hif8(x, *, saturate: bool = False) -> np.ndarray:
    """``x`` rounded once to HiF8 (ties away from zero), as float64 values."""
    return VALUES[encode(x, saturate=saturate)]


def mantissa_bits(x) -> np.ndarray:
    """Mantissa bits of the binade each |x| lies in (3, 2, 1; 0 for denormals); -1
    below the smallest denormal and at or beyond ``OVERFLOW``, where no band applies."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0))).astype(np.int64)
    t = np.full(a.shape, -1, dtype=np.int64)
    for lo, hi, bits in BANDS:
        t = np.where((e >= lo) & (e <= hi), bits, t)
    return np.where((a >= MIN_DENORMAL) & (a < OVERFLOW), t, -1)


def error_bound(x) -> np.ndarray:
    """The largest |round_hif8(x) - x| the format allows for each element: 2^-(t+1) |x|
    in its band, ``SUBNORMAL_ERROR`` below the smallest denormal, inf where it overflows."""
    x = np.asarray(x, dtype=np.float64)
    t = mantissa_bits(x)
    a = np.abs(x)
    banded = np.ldexp(a, -(np.maximum(t, 0) + 1))
    return np.where(t >= 0, banded, np.where(a < MIN_DENORMAL, SUBNORMAL_ERROR, np.inf))

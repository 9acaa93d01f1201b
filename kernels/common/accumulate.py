"""Accumulation strategies for sums, dot products and GEMM K-loops, and the seed blog's
"Kahan" routine run exactly as written.

Strategies (every add is one IEEE add rounded to nearest even):
* "fp32": left to right with an fp32 accumulator (the cube's L0C default);
* "fp16": left to right with an fp16 accumulator (what partial sums kept in half give;
  it stagnates: once the sum reaches 2048, adding 1 changes nothing);
* "pairwise": recursive pairwise summation in fp32 (error grows like log2 n, not n);
* "kahan": classic Kahan compensated summation in fp32 (y = x - c; t = s + y;
  c = (t - s) - y; s = t), error 2u + O(n u**2) relative to sum |x_i|, nearly
  independent of n.

Values are first rounded to fp32 (the adders take fp32 operands, as L0C holds fp32), so
the error of a strategy is measured against the exact sum of those fp32 values. An fp16
add of an fp16 sum and an fp32 value is exact in float64 before its one rounding to fp16.

``blog_routine`` is ``apply_fp32_correction`` of the seed (section 5.1). With its default
beta = 0 it is not Kahan summation: nothing is summed, t == y exactly, the compensation is
always 0 and the result is alpha * C.
"""
from __future__ import annotations

import numpy as np

from hardware_presets.errors import InputError, Phrase
from kernels.common.formats import UNIT_ROUNDOFF, gamma
from kernels.common.precision import FLOAT_FORMATS, format_of, round_to

STRATEGIES = ("fp32", "fp16", "pairwise", "kahan")
#: the format each strategy's adder rounds to (its unit roundoff is the table's)
ADDER = {"fp32": "fp32", "fp16": "fp16", "pairwise": "fp32", "kahan": "fp32"}
_F16, _F32, _F64 = np.float16, np.float32, np.float64


def _check_strategy(strategy: str, field: str = "accumulation strategy") -> None:
    if strategy not in STRATEGIES:
        raise InputError(field, strategy, Phrase("refusal.one_of", options=", ".join(STRATEGIES)))


def _to_fp32(values) -> np.ndarray:
    x = np.asarray(values)
    if x.dtype.kind not in "fiub" and x.dtype.name != "bfloat16":
        raise InputError("values", str(x.dtype), Phrase("refusal.real_array"))
    with np.errstate(over="ignore"):
        return x.astype(_F32)


def _fp16_add(acc16: np.ndarray, v32: np.ndarray) -> np.ndarray:
    """fp16(acc + v): the float64 sum of an fp16 and an fp32 value is exact whenever the
    result is below the fp16 overflow threshold, so this is one rounding."""
    return (acc16.astype(_F64) + v32.astype(_F64)).astype(_F16)


class Accumulator:
    """A running sum of fp32 arrays of one shape, one ``add`` per term, in a strategy.

    Pairwise keeps a binary-counter stack of complete power-of-two blocks; ``result``
    combines the open blocks from the newest (smallest) to the oldest, which is the same
    tree as ``sum_sequence``'s level-by-level pairing.
    """

    def __init__(self, strategy: str, shape: tuple[int, ...]) -> None:
        _check_strategy(strategy)
        self.strategy = strategy
        self.shape = tuple(shape)
        self.s = np.zeros(shape, _F16 if strategy == "fp16" else _F32)
        self.c = np.zeros(shape, _F32)
        self.stack: list[tuple[int, np.ndarray]] = []

    def add(self, v) -> None:
        """Add one term (an array of ``shape``, or broadcastable to it)."""
        v = _to_fp32(v)
        if v.shape != self.shape:
            v = np.broadcast_to(v, self.shape)
        with np.errstate(over="ignore", invalid="ignore"):
            self._add(v)

    def _add(self, v: np.ndarray) -> None:
        """add() for a float32 array of ``shape``, without checks (caller sets errstate)."""
        if self.strategy == "fp32":
            self.s = self.s + v
        elif self.strategy == "fp16":
            self.s = _fp16_add(self.s, v)
        elif self.strategy == "kahan":
            y = v - self.c
            t = self.s + y
            self.c = (t - self.s) - y
            self.s = t
        else:
            level = 0
            while self.stack and self.stack[-1][0] == level:
                v = self.stack.pop()[1] + v
                level += 1
            self.stack.append((level, v))

    def result(self) -> np.ndarray:
        """The sum so far, float64 holder of the accumulator's value."""
        if self.strategy != "pairwise":
            return self.s.astype(_F64)
        if not self.stack:
            return np.zeros(self.shape, _F64)
        total = self.stack[-1][1]
        with np.errstate(over="ignore", invalid="ignore"):
            for _, block in reversed(self.stack[:-1]):
                total = block + total
        return total.astype(_F64)


def pairwise_sum(x: np.ndarray) -> np.ndarray:
    """Sum over axis 0 of float32 ``x`` by pairing neighbours level by level (an odd last
    element moves up a level unchanged): depth ceil(log2 n), n - 1 fp32 adds."""
    while x.shape[0] > 1:
        m = x.shape[0] // 2 * 2
        pairs = x[0:m:2] + x[1:m:2]
        x = np.concatenate([pairs, x[m:]]) if m < x.shape[0] else pairs
    return x[0]


def sum_sequence(values, strategy: str, *, axis: int = 0) -> np.ndarray:
    """Sum of ``values`` along ``axis`` in ``strategy`` (see the module docstring),
    vectorised over the other axes; float64 holder of the accumulator's value. An empty
    axis sums to 0. Overflow gives inf (Kahan: inf - inf in the compensation gives nan)."""
    _check_strategy(strategy)
    x = _to_fp32(values)
    if x.ndim == 0:
        raise InputError("values", Phrase("refusal.value.scalar"), Phrase("refusal.array_dims"))
    if not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise InputError("axis", axis, Phrase("refusal.axis", low=-x.ndim, high=x.ndim - 1))
    x = np.moveaxis(x, axis, 0)
    if x.shape[0] == 0:
        return np.zeros(x.shape[1:], _F64)
    with np.errstate(over="ignore", invalid="ignore"):
        if strategy == "fp32":  # ufunc.accumulate adds strictly left to right in float32
            return np.add.accumulate(x, axis=0, dtype=_F32)[-1].astype(_F64)
        if strategy == "pairwise":
            return pairwise_sum(x).astype(_F64)
        if x[0].size == 1:  # one long sequence: a loop over scalars is much faster
            return np.full(x.shape[1:], _scalar_sum(x.ravel(), strategy), _F64)
        acc = Accumulator(strategy, x.shape[1:])
        for row in x:
            acc._add(row)
    return acc.result()


def _scalar_sum(x: np.ndarray, strategy: str) -> float:
    """fp16 or Kahan sum of a 1-D float32 array, one numpy / Python scalar at a time
    (the same arithmetic as Accumulator: fp32 scalar ops; fp16: the exact float64 sum
    of the fp16 total and the fp32 term, rounded once to fp16)."""
    if strategy == "fp16":
        acc = 0.0
        for v in x.tolist():
            acc = float(_F16(acc + v))
        return acc
    s = c = _F32(0.0)
    for v in x:
        y = v - c
        t = s + y
        c = (t - s) - y
        s = t
    return float(s)


def gemm_k_loop(A, B, *, compute: str = "fp16", accumulate: str = "fp32",
                base_k: int = 64) -> np.ndarray:
    """C = A @ B the way a K loop of MMADs builds it, as float64 holders of the result.

    A [M, K] and B [K, N] are rounded to ``compute`` (a float format; an MX format in
    blocks of 32 along K, as a block-scaled Mmad takes them). Each K block of
    ``base_k`` (the last one may be shorter) is one MMAD: its product is computed in
    float64 and rounded once to fp32. The blocks are then combined in ``accumulate``
    (fp32: L0C's fp32 adds; fp16: the running sum rounded to fp16 after every block;
    pairwise; kahan). ``base_k=1`` makes every single product a block, i.e. element-level
    accumulation in the chosen strategy.
    """
    _check_strategy(accumulate, "accumulate")
    if format_of(compute).kind != "float":
        raise InputError("compute", compute, Phrase("refusal.float_format",
                                                    names=", ".join(FLOAT_FORMATS)),
                         hint=Phrase("refusal.hint.dequantize_first"))
    if isinstance(base_k, bool) or not isinstance(base_k, (int, np.integer)) or base_k < 1:
        raise InputError("base_k", base_k, Phrase("refusal.whole_at_least_1"))
    a, b = round_to(A, compute, axis=1), round_to(B, compute, axis=0)  # MX blocks run along K
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise InputError("A, B shapes", (a.shape, b.shape),
                         Phrase("refusal.shapes.ab"))
    acc = Accumulator(accumulate, (a.shape[0], b.shape[1]))
    with np.errstate(over="ignore", invalid="ignore"):
        for k0 in range(0, a.shape[1], base_k):
            acc._add((a[:, k0:k0 + base_k] @ b[k0:k0 + base_k]).astype(_F32))
    return acc.result()


def blog_routine(C, alpha: float = 1.0, beta: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The seed's ``apply_fp32_correction`` exactly as written, in fp32::

        float compensation = 0.0f;
        for (int i = 0; i < M * N; ++i) {
            float y = C[i] * alpha - compensation;
            float t = beta * C[i] + y;
            compensation = (t - beta * C[i]) - y;
            C[i] = t;
        }

    Every operation is one fp32 rounding (no FMA contraction), elements in flat (row
    major) order, the compensation carried from one element to the next. Returns (the
    new C as float32, the compensation after each element as a flat float32 array).

    It is not Kahan summation: nothing is being summed. With the default beta = 0,
    beta * C[i] is 0, so t == y exactly, the compensation (t - 0) - y is always exactly 0
    and the result is fp32(alpha * C[i]), bit for bit (up to the sign of a zero result;
    an inf in C gives 0 * inf = nan). The conclusion is the same with FMA contraction.
    With beta != 0 it computes (alpha + beta) C with a "compensation" that feeds the
    rounding error of one element into the next, unrelated element.
    """
    c_in = np.asarray(C)
    flat = c_in.astype(_F32).ravel()
    a, b = _F32(alpha), _F32(beta)
    comp = _F32(0.0)
    out = np.empty_like(flat)
    trace = np.empty_like(flat)
    with np.errstate(over="ignore", invalid="ignore"):
        for i, ci in enumerate(flat):
            y = ci * a - comp
            t = b * ci + y
            comp = (t - b * ci) - y
            out[i] = t
            trace[i] = comp
    return out.reshape(c_in.shape), trace


def strategy_unit(strategy: str) -> float:
    """Unit roundoff of a strategy's adds: fp16 2**-11, the others (fp32 adders) 2**-24.

    Worst-case error relative to sum |x_i| for n terms: fp32/fp16 sequential
    gamma_{n-1}(u) ~ n u; pairwise gamma_{ceil(log2 n)}(u); Kahan 2u + O(n u**2)
    (Knuth; Higham, Accuracy and Stability, 4.3), see ``strategy_bound``.
    """
    _check_strategy(strategy)
    return UNIT_ROUNDOFF[ADDER[strategy]]


def bounds(n, u: float) -> tuple[np.ndarray, np.ndarray]:
    """(n u, sqrt(n) u) for n terms: the classic worst-case relative error bound of
    recursive summation (first order of gamma_n = n u / (1 - n u)) and the probabilistic
    one (rounding errors as independent zero-mean variables: the error grows like
    sqrt(n) u with high probability). Both relative to sum |x_i|."""
    n = np.asarray(n, _F64)
    if np.any(~np.isfinite(n)) or np.any(n < 0):
        raise InputError("n", Phrase("refusal.value.negative"), Phrase("refusal.term_counts"))
    if not np.isfinite(u) or u < 0:
        raise InputError("u", u, Phrase("refusal.unit_roundoff"))
    return n * u, np.sqrt(n) * u


def strategy_bound(strategy: str, n) -> np.ndarray:
    """A strategy's own worst-case error for n terms, relative to sum |x_i|: fp32/fp16
    gamma_{n-1}(u) (inf once (n - 1) u >= 1: no bound, fp16 can stagnate);
    pairwise gamma_{ceil(log2 n)}(2**-24); kahan 2u + n u**2 (the O(n u**2) term of Knuth's
    2u + O(n u**2) taken with constant 1: an indicator, not a proven constant)."""
    u = strategy_unit(strategy)
    n = np.maximum(np.asarray(n, _F64), 1.0)
    if strategy == "kahan":
        return 2 * u + n * u * u
    steps = np.ceil(np.log2(n)) if strategy == "pairwise" else n - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(steps * u < 1, gamma(steps, u), np.inf)

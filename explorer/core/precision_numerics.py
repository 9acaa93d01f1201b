"""The error side of the mixed-precision study: data, configurations and their errors.

A configuration says where each format lives (see ``PrecisionConfig``); the errors are
measured against float64 on the same data, drawn only from ``numpy.random.default_rng``
so that a seed reproduces every number. The arithmetic itself lives in ``kernels``
(``precision``: rounding and quantisation, ``accumulate``: the K loop and the summation
strategies, ``attention_math``: decode attention); this module only decides what is
rounded or quantised to what, in which order, as an Ascend kernel would do it.

Work is bounded so that a page recompute stays interactive: the GEMM error is measured on
the top-left ``ERROR_BLOCK`` x ``ERROR_BLOCK`` block of C with the full K (each element of
C depends only on its own row of A and column of B, so the block is a fair sample of the
whole matrix; per-tensor scales are taken over the sampled A and B), and shapes are
refused beyond ``LIMITS``. Every function is pure; operands and references are cached
(read-only arrays) because every configuration of a table reuses them.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hardware_presets.errors import InputError, Phrase
from kernels.common import accumulate, attention_math, precision
from kernels.gemm.params import default_base_k

#: the operations the study measures (not kernels of the emulator's registry)
OPERATIONS = ("gemm", "attention_score", "kv_storage")
#: the family of each operation: both attention operations share formats and shapes
FAMILIES = {"gemm": "gemm", "attention_score": "attention", "kv_storage": "attention"}
DISTRIBUTIONS = ("gaussian", "uniform", "heavy", "outliers")
#: degrees of freedom of the heavy-tailed data (Student t: finite variance, rare big values)
HEAVY_DOF = 3
STORAGE_FORMATS = ("fp32", "bf16", "fp16", "int8", "int4")
INT_FORMATS = precision.INT_FORMATS
COMPUTE_FORMATS = {"gemm": ("fp32", "hf32", "bf16", "fp16", "int8"),
                   "attention": ("fp32", "bf16", "fp16")}
OUTPUT_FORMATS = {"gemm": ("fp32", "bf16", "fp16", "int8"),
                  "attention": ("fp32", "bf16", "fp16")}
GRANULARITIES, SCHEMES = precision.GRANULARITIES, precision.SCHEMES
#: a few channels (columns of the last axis) of "outliers" data are this much larger
OUTLIER_FACTOR = 50.0
#: rows and columns of C whose error is measured (the full K is always used)
ERROR_BLOCK = 256
#: accepted shapes: GEMM (M, N, K), attention (T tokens of K/V, d head dim)
LIMITS = {"gemm": (("M", 16, 4096), ("N", 16, 4096), ("K", 16, 8192)),
          "attention": (("T", 16, 32768), ("d", 16, 512))}
#: the axis of each operation's shape that the reduction (and quantisation groups) runs along
REDUCTION_AXIS = {"gemm": "K", "attention_score": "d", "kv_storage": "d"}
#: which result of one decode step each attention operation measures
ATTENTION_OUTPUT = {"attention_score": "scores", "kv_storage": "out"}
DEFAULT_KS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
_KINDS = ("A", "B", "q", "K", "V", "x", "y", "blog")


def family(operation: str) -> str:
    """"gemm" or "attention" (both attention operations share formats and shapes)."""
    if operation not in OPERATIONS:  # "kernel": the page's parameter (URL) name
        raise InputError("kernel", operation, Phrase("refusal.one_of",
                                                     options=", ".join(OPERATIONS)))
    return FAMILIES[operation]


@dataclass(frozen=True)
class PrecisionConfig:
    """Where each format lives.

    storage: how B (GEMM weights) or K/V (the cache) sit in GM: a float format, or int8 /
    int4 codes with scales at ``granularity`` (``group_size`` elements along the
    reduction axis per scale for "group"). compute: what the cube multiplies in.
    accumulate: an ``accumulate.STRATEGIES`` entry for the K loop (int8 compute always
    accumulates exactly in int32 in L0C). output: C's format (int8: one per-tensor scale).
    A (GEMM activations) sits in the storage format when that is a float; with quantised
    storage it stays in the compute format (weight-only quantisation, AntiQuant of B),
    or, for int8 compute, is quantised per token (the W8A8 scheme of the int8 Mmad).
    """

    storage: str
    compute: str
    accumulate: str
    output: str
    granularity: str = "channel"
    group_size: int = 128
    scheme: str = "symmetric"

    @property
    def quantized(self) -> bool:
        return self.storage in INT_FORMATS

    def short(self) -> str:
        """A compact technical label: ``int8/ch > fp16 · acc fp32 > fp16``."""
        store = self.storage
        if self.quantized:
            tag = {"tensor": "t", "channel": "ch", "token": "tok", "group": f"g{self.group_size}"}
            store += f"/{tag[self.granularity]}" + ("/asym" if self.scheme != "symmetric" else "")
        acc = "int32" if self.compute == "int8" else self.accumulate
        return f"{store} > {self.compute} · acc {acc} > {self.output}"


def check_config(operation: str, config: PrecisionConfig) -> None:
    """Refuse names that are no choice at all (a widget never offers them)."""
    fam = family(operation)
    for field, value, allowed in (
            ("storage", config.storage, STORAGE_FORMATS),
            ("compute", config.compute, COMPUTE_FORMATS[fam]),
            ("accumulate", config.accumulate, accumulate.STRATEGIES),
            ("output", config.output, OUTPUT_FORMATS[fam]),
            ("granularity", config.granularity, GRANULARITIES),
            ("scheme", config.scheme, SCHEMES)):
        if value not in allowed:
            raise InputError(f"precision.{field}", value, Phrase("refusal.one_of",
                                                                 options=", ".join(allowed)))
    if not isinstance(config.group_size, int) or not 1 <= config.group_size <= 4096:
        raise InputError("precision.group_size", config.group_size,
                         Phrase("refusal.int_range", low=1, high=4096))


def check_shape(operation: str, shape) -> tuple[int, ...]:
    """The shape as a tuple of ints within ``LIMITS``, or an InputError naming the axis."""
    limits = LIMITS[family(operation)]
    shape = tuple(shape)
    if len(shape) != len(limits):
        raise InputError("precision.shape", shape, " x ".join(n for n, _, _ in limits))
    for value, (name, lo, hi) in zip(shape, limits):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not lo <= value <= hi:
            raise InputError(f"precision.{name}", value, Phrase("refusal.int_range", low=lo,
                                                                high=hi))
    return tuple(int(v) for v in shape)


# ---- data --------------------------------------------------------------------------------
def data(kind: str, shape, distribution: str = "gaussian", seed: int = 0) -> np.ndarray:
    """Float64 test data of ``shape`` for one operand ``kind`` (A, B, q, K, V, x, y, blog).

    gaussian: standard normal; uniform: on [-1, 1); heavy: Student t with ``HEAVY_DOF``
    degrees of freedom (heavy tails: values 10-30x the typical one turn up in every few
    thousand); outliers: standard normal with a few
    channels (columns of the last axis, 1 in 64, at least one) multiplied by 50, as LLM
    activations and K caches have. Each kind has its own stream of
    ``default_rng((seed, kind))``, so A does not change when B's shape does.
    """
    if kind not in _KINDS:
        raise InputError("precision.kind", kind, Phrase("refusal.one_of",
                                                        options=", ".join(_KINDS)))
    if distribution not in DISTRIBUTIONS:
        raise InputError("precision.distribution", distribution,
                         Phrase("refusal.one_of", options=", ".join(DISTRIBUTIONS)))
    rng = np.random.default_rng((int(seed), _KINDS.index(kind)))
    shape = tuple(int(s) for s in np.atleast_1d(shape))
    if distribution == "uniform":
        return rng.uniform(-1.0, 1.0, size=shape)
    if distribution == "heavy":
        return rng.standard_t(HEAVY_DOF, size=shape)
    x = rng.standard_normal(shape)
    if distribution == "outliers":
        channels = shape[-1]
        picked = rng.choice(channels, size=max(1, channels // 64), replace=False)
        x[..., picked] *= OUTLIER_FACTOR
    return x


def _frozen(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    for a in arrays:
        a.setflags(write=False)
    return arrays


@functools.lru_cache(maxsize=8)
def gemm_operands(shape: tuple[int, int, int], distribution: str, seed: int):
    """(A block, B block, float64 reference of their product), read-only and cached."""
    M, N, K = shape
    A = data("A", (min(M, ERROR_BLOCK), K), distribution, seed)
    B = data("B", (K, min(N, ERROR_BLOCK)), distribution, seed)
    return _frozen(A, B, A @ B)


@functools.lru_cache(maxsize=8)
def attention_operands(shape: tuple[int, int], distribution: str, seed: int):
    """(q, K, V, float64 reference dict): q is one decode query (outliers live in the
    cache: q uses the gaussian draw for "outliers")."""
    T, d = shape
    q = data("q", (d,), "gaussian" if distribution == "outliers" else distribution, seed)
    K = data("K", (T, d), distribution, seed)
    V = data("V", (T, d), distribution, seed)
    ref = attention_math.decode_attention_reference(q, K, V)
    return _frozen(q, K, V) + ({k: np.asarray(v, dtype=np.float64) for k, v in ref.items()},)


# ---- the arithmetic of one configuration -------------------------------------------------
def _weights(B: np.ndarray, config: PrecisionConfig) -> np.ndarray:
    """B (K x N) as stored: rounded to a float format, or int codes with scales per
    tensor, per output column ("channel"), per K row ("token") or per group of
    ``group_size`` along K ("group"), dequantised to the values they represent."""
    if not config.quantized:
        return precision.round_to(B, config.storage)
    axis = 0 if config.granularity == "group" else -1
    q = precision.quantize(B, config.storage, config.scheme, config.granularity, axis=axis,
                           group_size=config.group_size)
    return np.asarray(q.dequantize(), dtype=np.float64)


def _activations(A: np.ndarray, config: PrecisionConfig) -> np.ndarray:
    if not config.quantized:
        return precision.round_to(A, config.storage)
    if config.compute == "int8":  # W8A8: dynamic per-token int8 for the int8 Mmad
        q = precision.quantize(A, "int8", "symmetric", "token", axis=1)
        return np.asarray(q.dequantize(), dtype=np.float64)
    return precision.round_to(A, config.compute)


def _to_output(C: np.ndarray, fmt: str) -> np.ndarray:
    """The Fixpipe's last step: cast to C's format (int8: per-tensor scale from max |C|)."""
    if fmt == "int8":
        return np.asarray(precision.quantize(C, "int8", "symmetric", "tensor").dequantize(),
                          dtype=np.float64)
    return precision.round_to(C, fmt)


def gemm_result(shape, distribution: str, seed: int, config: PrecisionConfig) -> np.ndarray:
    """C (the error block) computed in ``config``: A and B as stored, the cube's K loop in
    the compute format with the accumulation strategy, then the output cast. int8 compute
    is an exact int32 accumulation scaled once in fp32 (the Fixpipe's deq scale)."""
    A, B, _ = gemm_operands(tuple(shape), distribution, seed)
    a, b = _activations(A, config), _weights(B, config)
    if config.compute == "int8":
        C = precision.round_to(a @ b, "fp32")
    else:
        C = accumulate.gemm_k_loop(a, b, compute=config.compute, accumulate=config.accumulate,
                                   base_k=default_base_k(config.compute))
    return _to_output(np.asarray(C, dtype=np.float64), config.output)


def attention_result(operation: str, shape, distribution: str, seed: int,
                     config: PrecisionConfig) -> np.ndarray:
    """Scores (attention_score) or the output (kv_storage) of one decode step with K/V
    stored per ``config``, then cast to the output format."""
    q, K, V, _ = attention_operands(tuple(shape), distribution, seed)
    got = attention_math.decode_attention(
        q, K, V, kv_format=config.storage, compute=config.compute,
        accumulate=config.accumulate, granularity=config.granularity,
        group_size=config.group_size, scheme=config.scheme)
    key = ATTENTION_OUTPUT[operation]
    return precision.round_to(np.asarray(got[key], dtype=np.float64), config.output)


def _outputs(operation: str, shape, distribution: str, seed: int, config: PrecisionConfig):
    """(computed, float64 reference) for one configuration."""
    if family(operation) == "gemm":
        return gemm_result(shape, distribution, seed, config), \
            gemm_operands(tuple(shape), distribution, seed)[2]
    ref = attention_operands(tuple(shape), distribution, seed)[3]
    return attention_result(operation, shape, distribution, seed, config), \
        ref[ATTENTION_OUTPUT[operation]]


def metrics(got: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    """max_abs = max |err|; rel_fro = ||err||_F / ||ref||_F; mean_rel = mean |err| /
    mean |ref| (a mean relative error that near-zero references cannot blow up)."""
    err = np.abs(np.asarray(got, dtype=np.float64) - ref)
    err = np.where(np.isnan(err), np.inf, err)
    norm, mean = float(np.linalg.norm(ref)), float(np.mean(np.abs(ref)))
    return {"max_abs": float(err.max(initial=0.0)),
            "rel_fro": float(np.linalg.norm(err) / norm) if norm else float("inf"),
            "mean_rel": float(err.mean() / mean) if mean else float("inf")}


def errors(operation: str, shape, distribution: str, seed: int,
           config: PrecisionConfig) -> dict[str, float]:
    """dict(max_abs, rel_fro, mean_rel) of one configuration against float64."""
    shape = check_shape(operation, shape)
    check_config(operation, config)
    return metrics(*_outputs(operation, shape, distribution, seed, config))


def element_errors(operation: str, shape, distribution: str, seed: int,
                   config: PrecisionConfig) -> np.ndarray:
    """|error| of every measured element divided by the RMS of the reference (so that
    operations and distributions compare on one scale), flattened, for a histogram."""
    shape = check_shape(operation, shape)
    check_config(operation, config)
    got, ref = _outputs(operation, shape, distribution, seed, config)
    rms = float(np.sqrt(np.mean(np.square(ref)))) or 1.0
    return (np.abs(got - ref) / rms).ravel()


# ---- accumulation against K --------------------------------------------------------------
def error_vs_k(compute: str = "fp16", strategies=accumulate.STRATEGIES, ks=DEFAULT_KS,
               seed: int = 0, *, trials: int = 16) -> pd.DataFrame:
    """Accumulation error of dot products of length k for each strategy.

    Terms are products of two non-negative uniform values rounded to ``compute`` (all of
    one sign: partial sums grow steadily, the hard case for a short accumulator); the
    products enter the accumulator as fp32 (exact for fp16, bf16 and hf32 inputs). rel_error is the
    largest over ``trials`` dot products of |sum - exact| / sum |terms| (Higham's measure,
    which the worst-case bound n*u covers); bound_prob is the typical sqrt(n)*u.
    """
    if compute not in ("fp32", "hf32", "bf16", "fp16"):
        raise InputError("precision.compute", compute,
                         Phrase("refusal.float_format", names="fp32, hf32, bf16, fp16"))
    rows = []
    for k in ks:
        x = precision.round_to(np.abs(data("x", (k, trials), "uniform", seed)), compute)
        y = precision.round_to(np.abs(data("y", (k, trials), "uniform", seed)), compute)
        terms = precision.round_to(x * y, "fp32")  # the adders take fp32 operands
        exact = np.array([math.fsum(col) for col in terms.T])
        scale = np.abs(terms).sum(axis=0)
        for strategy in strategies:
            got = np.asarray(accumulate.sum_sequence(terms, strategy, axis=0), np.float64)
            worst, prob = accumulate.bounds(k, accumulate.strategy_unit(strategy))
            rows.append({"k": int(k), "strategy": strategy,
                         "rel_error": float(np.max(np.abs(got - exact) / scale)),
                         "bound_worst": float(worst), "bound_prob": float(prob)})
    return pd.DataFrame(rows, columns=["k", "strategy", "rel_error", "bound_worst",
                                       "bound_prob"])


# ---- the blog's routine against Kahan ----------------------------------------------------
def blog_vs_kahan(values: int = 4096, seed: int = 0, *, alpha: float = 1.0,
                  beta: float = 0.5) -> dict:
    """The seed's "Kahan" routine (section 5.1) next to true Kahan summation, same data.

    ``values`` fp32 numbers of mixed magnitude (10^-3..10^3, both signs: an
    ill-conditioned sum). Rows: the plain fp32 sum, Kahan summation in fp32, and the
    blog's routine at beta = 0 and at ``beta`` followed by the fp32 sum of what it
    returns; errors against math.fsum of the (alpha + beta)-scaled data. Also the routine's
    compensation per element at both betas: at beta = 0 it is zero everywhere and the
    routine returns alpha * C, so it corrects nothing.
    """
    if not isinstance(values, (int, np.integer)) or not 2 <= values <= 1 << 20:
        raise InputError("precision.values", values, Phrase("refusal.int_range", low=2,
                                                            high=1048576))
    rng_data = data("blog", (2, int(values)), "gaussian", seed)
    c = (rng_data[0] * 10.0 ** (3.0 * np.tanh(rng_data[1]))).astype(np.float32)
    c64 = c.astype(np.float64)
    exact = math.fsum(c64)
    rows, comps = [], {}
    for name, strategy in (("fp32", "fp32"), ("kahan", "kahan")):
        got = float(np.asarray(accumulate.sum_sequence(c64, strategy)).item())
        rows.append(_blog_row(name, got, exact, np.nan))
    for b in (0.0, float(beta)):
        result, comp = accumulate.blog_routine(c, alpha=alpha, beta=b)
        result, comp = np.asarray(result, np.float64), np.asarray(comp, np.float64)
        comps[b] = comp
        got = float(np.asarray(accumulate.sum_sequence(result, "fp32")).item())
        rows.append(_blog_row(f"blog_beta_{b:g}", got, (alpha + b) * exact,
                              float(np.max(np.abs(comp)))))
    beta0 = comps[0.0]
    result0 = np.asarray(accumulate.blog_routine(c, alpha=alpha, beta=0.0)[0])
    return {"table": pd.DataFrame(rows), "compensation": comps, "alpha": float(alpha),
            "beta": float(beta), "values": int(values), "exact": exact,
            "zero_at_beta0": bool(np.all(beta0 == 0.0)),
            "returns_alpha_c": bool(np.array_equal(
                result0.astype(np.float32), (np.float32(alpha) * c).astype(np.float32)))}


def _blog_row(method: str, got: float, target: float, max_comp: float) -> dict:
    err = abs(got - target)
    return {"method": method, "sum": got, "target": target, "abs_error": err,
            "rel_error": err / abs(target) if target else float("inf"),
            "max_abs_compensation": max_comp}

"""GEMM numerics: C = A x B (+ bias) computed the way the cube and the fixpipe compute it.

One output base tile (base_m x base_n, clipped at the edges) for one split-K index z:
L0C starts at 0 in fp32 (int32 for int8 inputs) and, for each K step of base_k in the z
range in increasing k, ``acc = fp32(acc + fp32(A_blk @ B_blk))`` on inputs already rounded
to dtype_in. The fixpipe then adds the bias (fp32, int32 for int8 inputs) and casts to
dtype_out (round to nearest even; int8 = saturate(rint(fp32(C * quant_scale))); int32
wraps). Split-K (Z > 1): "workspace" sums the Z fp32 partials in z order in fp32, adds the
bias and casts once; "atomic" writes cast(partial_0 + bias) and then adds cast(partial_z)
into C in dtype_out, one rounding per add (int8 outputs cannot be added: ValueError).

8- and 4-bit float inputs (FP8, HiF8 with fp32 scales per row of A and column of B; MXFP8,
MXFP4 with E8M0 scales per 32 K elements) are drawn as real values and quantised; see
``gemm.quant`` for where the scales are applied.

How the emulator computes it (same arithmetic, fast):
* fp16, bf16 and hf32 products are exact in fp32 (11/8/12-bit significands), so a block
  product is numpy's float32 matmul (BLAS). BLAS sums the base_k products in its own order,
  i.e. with up to base_k - 1 fp32 roundings, where the cube's adder tree (not published)
  may use fewer; ``error_bound`` allows for the BLAS count, which covers both.
* fp32 inputs: the block product in float64, rounded once to fp32.
* int8: products and sums are exact integers (float64 BLAS is exact below 2**53), and
  int32 accumulation wraps modulo 2**32, which does not depend on the order.
* Each C element depends only on its own row of A, its column of B and the K schedule,
  so execute runs each K step on the whole verified block at once; that is the same
  arithmetic as tile by tile. The exact bits of a block product may depend on how BLAS
  blocks the call; any order is within the bound.
"""
from __future__ import annotations

import numpy as np

from kernels.common.formats import (
    FORMATS,
    FP64_UNIT_ROUNDOFF,
    ROUNDING,
    STORAGE,
    UNIT_ROUNDOFF,
    after_rounding,
    gamma,
    prune_2_of_4,
    round_to,
)
from kernels.gemm import quant
from kernels.gemm.params import GemmValueParams

__all__ = ["round_to", "prune_2_of_4", "verified_block", "make_inputs", "execute",
           "reference", "error_bound", "dequantize", "as_real", "unit_roundoff"]

#: all of C is verified up to this many elements (if its inputs fit INPUT_BUDGET) ...
VERIFY_ALL = 1 << 16
#: ... else the top-left block, at most this many rows and columns
VERIFY_SIDE = 256
#: (rows + cols) x K input elements at most, the size of a 256 x 256 block at K = 65536
INPUT_BUDGET = 2 * VERIFY_SIDE * 65536
#: input elements converted to the compute type at a time (bounds temporary memory)
_CHUNK_ELEMS = 1 << 22
#: the int8 output's range: codes -128..127 of one scale
_I8_MIN, _I8_MAX = FORMATS["int8"].min_value, FORMATS["int8"].max_value


def verified_block(p: GemmValueParams) -> tuple[int, int]:
    """(rows, cols) of the top-left block of C that is computed and checked.

    All of C when M x N <= 2**16 (and its A and B rows/columns stay within INPUT_BUDGET
    elements), else min(M, 256) x min(N, 256) rounded down to whole base tiles where at
    least one whole tile fits (fewer than 256 only when K > 65536 would need it). K is
    always complete: every verified element is the full sum over K, all z included.
    """
    M, N, K = p.M, p.N, p.K
    if M * N <= VERIFY_ALL and (M + N) * K <= INPUT_BUDGET:
        return M, N
    side = max(1, min(VERIFY_SIDE, INPUT_BUDGET // (2 * K)))

    def whole(n: int, base: int) -> int:
        r = min(n, side)
        return r if r == n or r < base else r // base * base
    return whole(M, p.base_m), whole(N, p.base_n)


def _input_scale(p: GemmValueParams) -> float:
    """Standard deviation of the inputs (floats) or range (int8) that keeps C well inside
    the output range: 16 standard deviations of C fit, so saturation and overflow are
    excluded by construction (|C| ~ sqrt(K) s**2)."""
    out = p.dtype_out
    limit = _I8_MAX / p.quant_scale if out == "int8" else FORMATS[out].max_value
    s2 = limit / (16.0 * np.sqrt(p.K))
    if p.integer:  # uniform on [-h, h]: variance ~ h**2 / 3
        return float(np.clip(np.floor(np.sqrt(3.0 * s2)), 1, _I8_MAX))
    top = 2.0 ** 7 if p.dtype_out == "int8" else 1.0  # float outputs: normal(0, 1)
    return float(np.clip(np.sqrt(s2), 2.0 ** -7, top))


def _draw(rng: np.random.Generator, shape: tuple, p: GemmValueParams, scale: float) -> np.ndarray:
    """Random data of ``shape`` in dtype_in: integers in [-scale, scale] for int8, else
    normal(0, scale) rounded to the format (hf32: via fp32, as the data sit in GM)."""
    if p.integer:
        h = int(scale)
        return rng.integers(-h, h + 1, size=shape, dtype=np.int8)
    x = rng.standard_normal(shape, dtype=np.float32)
    x *= np.float32(scale)
    return round_to(x, p.dtype_in)


def make_inputs(params: dict, rng: np.random.Generator) -> dict:
    """A (rows x K), B (K x cols) and, with ``bias``, bias (cols) for the verified block,
    drawn from ``rng`` and rounded to dtype_in (B pruned 2-of-4 when sparse), plus the
    block's "rows"/"cols" and C's "M"/"N" for reporting.

    Floats are normal(0, s): s = 1 for float outputs (fp16 holds 16 standard deviations of
    C for any K <= 65536); for int8 outputs s**2 sqrt(K) quant_scale = 127 / 16 (s within
    2**-7..2**7), so C uses the int8 range without saturating. int8 inputs are uniform
    integers in [-h, h], h = 127 unless the output range needs less (fp16 or int8 outputs
    at large K). The float bias is normal with the spread of C, the int32 bias uniform in
    a similar range.
    """
    p = GemmValueParams.of(params)
    rows, cols = verified_block(p)
    K, s = p.K, _input_scale(p)
    if p.low:  # real values quantised, with what each operand lost (gemm.quant)
        inputs = quant.quantized_inputs(rng, p, rows, cols, s)
    else:
        A = _draw(rng, (rows, K), p, s)
        B = _draw(rng, (K, cols), p, s)
        inputs = {"A": A, "B": prune_2_of_4(B) if p.sparse else B}
    inputs.update(rows=rows, cols=cols, M=p.M, N=p.N)
    if p.bias:
        spread = s * s * np.sqrt(K) / (3.0 if p.integer else 1.0)
        if p.integer:
            hb = max(1, int(spread))
            inputs["bias"] = rng.integers(-hb, hb + 1, size=cols).astype(np.int32)
        elif p.scaled:
            inputs["bias"] = quant.code_bias(rng, inputs, cols, spread)
        else:
            inputs["bias"] = (rng.standard_normal(cols) * spread).astype(np.float32)
    return inputs


def _k_chunk(rows: int, cols: int, bk: int) -> int:
    """K elements per conversion chunk: a whole number of K steps, bounded memory."""
    return max(bk, _CHUNK_ELEMS // (rows + cols) // bk * bk)


def _int_partial(A: np.ndarray, B: np.ndarray, k0: int, k1: int) -> np.ndarray:
    """Exact integer sum over [k0, k1) wrapped to int32 (float64 BLAS is exact here:
    every partial sum is an integer far below 2**53)."""
    total = np.zeros((A.shape[0], B.shape[1]), np.float64)
    step = _k_chunk(A.shape[0], B.shape[1], 1)
    for c0 in range(k0, k1, step):
        c1 = min(k1, c0 + step)
        total += A[:, c0:c1].astype(np.float64) @ B[c0:c1].astype(np.float64)
    wrapped = (total.astype(np.int64) + 2 ** 31) % 2 ** 32 - 2 ** 31
    return wrapped.astype(np.int32)


def _float_partial(A: np.ndarray, B: np.ndarray, k0: int, k1: int, bk: int,
                   wide: type) -> np.ndarray:
    """L0C for one z: fp32 acc += fp32(block product), K step by K step in increasing k.

    ``wide`` is float32 for fp16/bf16/hf32 (exact products, BLAS sums in fp32) and float64
    for fp32 inputs (the block product rounded once to fp32).
    """
    rows, cols = A.shape[0], B.shape[1]
    acc = np.zeros((rows, cols), np.float32)
    blk = np.empty((rows, cols), wide)
    step = _k_chunk(rows, cols, bk)
    for c0 in range(k0, k1, step):
        c1 = min(k1, c0 + step)
        a, b = A[:, c0:c1].astype(wide), B[c0:c1].astype(wide)
        for s in range(0, c1 - c0, bk):
            np.matmul(a[:, s:s + bk], b[s:s + bk], out=blk)
            acc += blk if wide is np.float32 else blk.astype(np.float32)
    return acc


def _partial(p: GemmValueParams, A: np.ndarray, B: np.ndarray, k0: int, k1: int) -> np.ndarray:
    if p.integer:
        return _int_partial(A, B, k0, k1)
    wide = np.float64 if p.dtype_in == "fp32" else np.float32
    return _float_partial(A, B, k0, k1, p.base_k, wide)


def _cast(p: GemmValueParams, acc: np.ndarray) -> np.ndarray:
    """The fixpipe's conversion of an fp32 / int32 accumulator to dtype_out."""
    out = p.dtype_out
    if out == "int8":
        scaled = (acc.astype(np.float64) * p.quant_scale_fp32)
        return round_to(scaled.astype(np.float32), "int8")
    if out == "int32":
        if acc.dtype != np.int32:
            raise ValueError("dtype_out int32 needs int8 inputs (an int32 accumulator)")
        return acc
    if acc.dtype == STORAGE[out]:
        return acc
    return round_to(acc.astype(np.float64) if acc.dtype == np.int32 else acc, out)


def _atomic_add(p: GemmValueParams, C: np.ndarray, c: np.ndarray) -> np.ndarray:
    """C += c in dtype_out with one rounding (int32 wraps). The float64 sum of two values
    of the output format rounds to it exactly as a single rounding would (53 >= 2p + 2)."""
    if p.dtype_out == "int32":
        return C + c  # numpy int32 arithmetic wraps
    return round_to(C.astype(np.float64) + c.astype(np.float64), p.dtype_out)


def execute(params: dict, inputs: dict) -> dict[str, np.ndarray]:
    """C for the verified block (the rows of A x the columns of B), in dtype_out, computed
    in the hardware's order: per z the L0C accumulation, then the split-K combination."""
    p = GemmValueParams.of(params)
    A, B = inputs["A"], inputs["B"]
    bias = inputs["bias"] if p.bias else None
    atomic = p.atomic
    if p.split_k_mode == "atomic" and p.grid_z > 1 and p.dtype_out == "int8":
        raise ValueError("split_k_mode 'atomic' cannot add int8 outputs: use 'workspace'")
    C = total = None
    for z, (k0, k1) in enumerate(z_ranges(p)):
        part = _partial(p, A, B, k0, k1)
        if atomic:
            c = _cast(p, quant.dequant(part if z or bias is None else part + bias, inputs))
            C = c if z == 0 else _atomic_add(p, C, c)
        else:
            total = part if z == 0 else total + part  # fp32 adds (int32: wraps)
    if not atomic:
        C = _cast(p, quant.dequant(total if bias is None else total + bias, inputs))
    return {"C": C}


def reference(inputs: dict) -> dict[str, np.ndarray]:
    """C = A @ B (+ bias) in float64 on the same (rounded, pruned) inputs."""
    A, B = inputs["A"], inputs["B"]
    ref = np.zeros((A.shape[0], B.shape[1]), np.float64)
    step = _k_chunk(A.shape[0], B.shape[1], 1)
    for c0 in range(0, A.shape[1], step):
        ref += A[:, c0:c0 + step].astype(np.float64) @ B[c0:c0 + step].astype(np.float64)
    if inputs.get("bias") is not None:
        ref += inputs["bias"].astype(np.float64)
    return {"C": quant.real(ref, inputs)}


def dequantize(p: GemmValueParams, C: np.ndarray) -> np.ndarray:
    """C as real values (float64): int8 outputs divided by the scale the fixpipe used
    (quant_scale rounded to fp32), other formats converted exactly."""
    if p.dtype_out == "int8":
        return np.asarray(C, np.float64) / p.quant_scale_fp32
    return np.asarray(C, np.float64)


def as_real(params: dict, out: dict) -> dict[str, np.ndarray]:
    """execute's output dict with C dequantised (see ``dequantize``)."""
    return {"C": dequantize(GemmValueParams.of(params), out["C"])}


def unit_roundoff(params: dict) -> float:
    """Relative rounding of the output format (int8: half a step of full scale 127)."""
    out = GemmValueParams.of(params).dtype_out
    return {**UNIT_ROUNDOFF, "int32": 0.0, "int8": 0.5 / _I8_MAX}[out]


def z_ranges(p: GemmValueParams) -> list[tuple[int, int]]:
    """K range [k0, k1) of each split-K index z (``GemmValueParams.k_per_z`` each; a z that
    would start at or past K does not exist, as in gemm.plan)."""
    kz = p.k_per_z
    return [(k0, min(p.K, k0 + kz)) for k0 in range(0, p.K, kz)]


# ---- error bound ---------------------------------------------------------------------
_U32, _ETA32 = ROUNDING["fp32"]


def _exact_parts(A: np.ndarray, B: np.ndarray, k0: int, k1: int):
    """P = A @ B and T = |A| @ |B| over [k0, k1), in float64."""
    P = np.zeros((A.shape[0], B.shape[1]), np.float64)
    T = np.zeros_like(P)
    step = _k_chunk(A.shape[0], B.shape[1], 1)
    for c0 in range(k0, k1, step):
        a = A[:, c0:min(k1, c0 + step)].astype(np.float64)
        b = B[c0:min(k1, c0 + step)].astype(np.float64)
        P += a @ b
        T += np.abs(a) @ np.abs(b)
    return P, T


def _chain_error(p: GemmValueParams, T: np.ndarray, length: int) -> np.ndarray:
    """Bound on |L0C partial - exact| for one z of ``length`` K elements (see error_bound)."""
    bk = p.base_k
    steps = -(-length // bk)
    if p.dtype_in == "fp32":  # float64 block product, rounded once to fp32
        n = 1 + steps
        inner = gamma(bk, FP64_UNIT_ROUNDOFF) * (1.0 + gamma(n, _U32)) * T
    else:  # exact products, BLAS fp32 sum: at most bk - 1 roundings per block
        n, inner = bk - 1 + steps, 0.0
    return gamma(n, _U32) * T + inner + (length + n) * _ETA32


def _roundings(p: GemmValueParams) -> tuple[tuple, tuple, tuple]:
    """(u, eta) of the accumulator adds, of the accumulator -> dtype_out cast (int8:
    handled in _final_cast) and of an atomic add in dtype_out."""
    out, integer = p.dtype_out, p.integer
    acc = ROUNDING["int32"] if integer else ROUNDING["fp32"]
    exact_cast = out in ("int8", "int32") or (out == "fp32" and not integer)
    add = ROUNDING["int32"] if out == "int8" else ROUNDING[out]  # (int8: never added)
    return acc, ROUNDING["int32"] if exact_cast else ROUNDING[out], add


def error_bound(params: dict, inputs: dict, ref: np.ndarray | None = None) -> np.ndarray:
    """Elementwise allowed |dequantize(p, execute(p, inputs)["C"]) - reference(inputs)["C"]|.

    With u = 2**-24, gamma_n = n u / (1 - n u), P_z = A_z @ B_z and T_z = |A_z| @ |B_z|
    over z's K range (float64) and S_z its K steps:
      L0C partial:  e_z = gamma_{n_z} T_z + (len_z + n_z) 2**-150, n_z = (base_k - 1) + S_z
                    (fp16/bf16/hf32: BLAS sums a block with <= base_k - 1 roundings, the
                    acc add is one more per step; fp32 inputs: n_z = 1 + S_z plus the
                    float64 block product's gamma_{base_k}(2**-53) T_z); int8: e_z = 0.
    Every later rounding (u, eta) of a value whose exact magnitude is m adds u (m + E) + eta
    to the running error E. Workspace (and Z = 1): the fp32 sum of the partials in z order
    (m = |P_0 + .. + P_z|), + bias (m = |ref|), one cast (u_out: fp16 2**-11, bf16 2**-8;
    none for fp32). Atomic: cast(partial_0 + bias), then per z >= 1 cast(partial_z)
    (m = |P_z|) and the add in dtype_out (m = |running exact sum|): Z - 1 extra output
    roundings. int8 output, q = fp32(quant_scale): fp32(C q) and rint add
    u (|ref| + E) + (0.5 + 2**-150) / q; where saturation cannot be excluded the bound is
    |ref| + E + 128 / q. int8 inputs: exact (0 with int32 output; inf where int32 could
    wrap). Finally (K + Z + 4) 2**-52 (T + |bias|) covers the float64 arithmetic of the
    reference and of P_z. Results are assumed finite (make_inputs keeps C far inside the
    output range). ``ref`` is accepted for the kernel protocol; it is not needed.
    FP8 / HiF8 inputs (``gemm.quant``): P, T and the bias are in the codes' domain; each
    of the fixpipe's two fp32 scalings by an exact scale s turns (E, m) into
    (|s| E + u (|s| m + |s| E) + eta, |s| m) before the cast, and the float64 slack is
    scaled too. MX inputs are the plain float path on their dequantised values.
    """
    p = GemmValueParams.of(params)
    integer, atomic = p.integer, p.atomic
    bias = inputs["bias"].astype(np.float64) if p.bias else np.zeros(inputs["B"].shape[1])
    ranges = z_ranges(p)
    g64 = 0.0 if integer else (p.K + len(ranges) + 4) * 2 * FP64_UNIT_ROUNDOFF
    acc_r, cast_r, add_r = _roundings(p)
    Q = E = T_all = 0.0
    for z, (k0, k1) in enumerate(ranges):
        P, T = _exact_parts(inputs["A"], inputs["B"], k0, k1)
        T *= 1.0 + g64
        T_all = T_all + T
        e = 0.0 if integer else _chain_error(p, T, k1 - k0)
        slack = g64 * (T_all + np.abs(bias))  # float64 error of any exact value so far
        if not atomic:  # fp32 (int32) sum of the partials in z order
            Q = Q + P
            E = e if z == 0 else after_rounding(E + e, np.abs(Q) + slack, acc_r)
        elif z == 0:  # cast(dequant(partial_0 + bias))
            Q = P + bias
            E = after_rounding(e, np.abs(Q) + slack, acc_r) if p.bias else e
            E = after_rounding(*quant.dequant_error(E, np.abs(Q) + slack, inputs), cast_r)
        else:  # atomic add of cast(dequant(partial_z)) in dtype_out
            Q = Q + P
            c_err = after_rounding(*quant.dequant_error(e, np.abs(P) + slack, inputs), cast_r)
            E = after_rounding(E + c_err, (np.abs(Q) + slack) * quant.scale_of(inputs), add_r)
    if not atomic:
        if p.bias:
            Q = Q + bias
            E = after_rounding(E, np.abs(Q) + slack, acc_r)
        E = _final_cast(p, *quant.dequant_error(E, np.abs(Q) + slack, inputs), cast_r)
    bound = E + quant.reference_slack(Q, slack, inputs)
    if integer:
        bound = np.where(T_all + np.abs(bias) > FORMATS["int32"].max_value, np.inf, bound)
    return np.broadcast_to(bound, Q.shape).astype(np.float64)


def _final_cast(p: GemmValueParams, E, mag, cast_r) -> np.ndarray:
    """Error after the fixpipe's cast, in the real domain (int8: after dequantising)."""
    if p.dtype_out != "int8":
        return after_rounding(E, mag, cast_r)
    q = p.quant_scale_fp32
    quantised = E + _U32 * (mag + E) + (0.5 + _ETA32) / q
    free = (mag + E) * q * (1.0 + _U32) + _ETA32 <= _I8_MAX
    return np.where(free, quantised, mag + E - _I8_MIN / q)

"""GEMM parameters, the default tiling a careful Ascend C author would pick, and the
capacity checks that refuse a tiling the buffers cannot hold (saying what would fit)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Self

import numpy as np

from hardware_presets import Chip, list_presets
from hardware_presets import load as load_preset
from hardware_presets.errors import InputError, Phrase
from kernels.common.budget import default_instruction_cap, instruction_limit_text
from kernels.common.cycles import mmad_cycles, onchip_cycles
from kernels.common.formats import BYTES
from kernels.common.lowp import BLOCK_FORMATS, LOW_FORMATS, SCALED_FORMATS
from kernels.common.params import ParamSpec, validate_params
from kernels.common.program import Level, stored_bytes
from kernels.common.sizes import ceil_div, round_up
from kernels.gemm.grid import BALANCES, POLICIES

#: the input and output precisions (widget order), bytes per element from the formats table
#: (MX: the element plus its share of the E8M0 scale, 1/32 byte)
IN_BYTES = {name: BYTES[name] for name in ("fp16", "bf16", "fp32", "hf32", "int8")
            + LOW_FORMATS}
OUT_BYTES = {name: BYTES[name] for name in ("fp16", "bf16", "fp32", "int32", "int8")}
ACC_BYTES = BYTES["fp32"]  # L0C accumulates in fp32 / int32 (the same width); bias is fp32
SPARSITY = ("dense", "4:2", "2:4")
#: K elements sharing one E8M0 scale in the MX formats (OCP MX v1.0)
BLOCK_K = 32

PARAMS = (
    ParamSpec("M", int, 4096, 1, 65536, unit="rows"),
    ParamSpec("N", int, 4096, 1, 65536, unit="columns"),
    ParamSpec("K", int, 4096, 1, 65536, unit="elements"),
    ParamSpec("dtype_in", str, "fp16", choices=tuple(IN_BYTES)),
    ParamSpec("dtype_out", str, "fp16", choices=tuple(OUT_BYTES)),
    ParamSpec("bias", bool, False),
    ParamSpec("quant_scale", float, 0.01, 1e-6, 1e6),
    ParamSpec("base_m", int, 128, 16, 1024, unit="rows"),
    ParamSpec("base_n", int, 256, 16, 1024, unit="columns"),
    ParamSpec("base_k", int, 64, 16, 1024, unit="elements"),
    ParamSpec("depth_k", int, 4, 1, 64, unit="K steps per L1 load"),
    ParamSpec("db_l1", bool, True),
    ParamSpec("db_l0", bool, True),
    ParamSpec("db_l0c", bool, False),
    ParamSpec("grid_x", int, 0, 0, 65536, unit="tasks (0 = one per base tile)"),
    ParamSpec("grid_y", int, 0, 0, 65536, unit="tasks (0 = one per base tile)"),
    ParamSpec("grid_z", int, 1, 1, 64, unit="split-K factor"),
    ParamSpec("split_k_mode", str, "workspace", choices=("workspace", "atomic")),
    ParamSpec("policy", str, "swizzle", choices=POLICIES),
    ParamSpec("group", int, 4, 1, 64, unit="panels"),
    ParamSpec("balance", str, "round_robin", choices=BALANCES),
    ParamSpec("block_dim", int, 24, 1, 256, unit="cube cores"),
    ParamSpec("sparsity", str, "dense", choices=SPARSITY),
)


@dataclass(frozen=True)
class GemmValueParams:
    """What C's values depend on, typed: the shape, the precisions, bias and int8 scale,
    sparsity, the base tile (K is accumulated in base_k steps) and the split-K factor and
    mode. The numerics read these and nothing else; `GemmParams` adds the parameters that
    change the time only. Each quantity the kernel derives from them is defined here once."""

    M: int
    N: int
    K: int
    dtype_in: str
    dtype_out: str
    bias: bool
    quant_scale: float
    base_m: int
    base_n: int
    base_k: int
    grid_z: int
    split_k_mode: str
    sparsity: str

    @classmethod
    def of(cls, p: Mapping[str, object]) -> Self:
        """The typed view of checked parameters ``p`` (a dict, as scenarios store them):
        only this class's fields are read, so the numerics never touch a timing-only one."""
        return cls(**{f.name: p[f.name] for f in fields(cls)})

    @property
    def in_bytes(self) -> float:
        return IN_BYTES[self.dtype_in]

    def nbytes(self, count) -> np.ndarray:
        """Whole bytes of ``count`` input elements as stored (MX: with their scales)."""
        return stored_bytes(count, self.dtype_in)

    @property
    def low(self) -> bool:
        """8- or 4-bit float inputs: quantised from real values (see kernels.common.lowp)."""
        return self.dtype_in in LOW_FORMATS

    @property
    def scaled(self) -> bool:
        """FP8 / HiF8 codes with an fp32 scale per row of A and per column of B, applied
        by the fixpipe after the fp32 accumulation (aclnnQuantMatmulV5's K-C mode)."""
        return self.dtype_in in SCALED_FORMATS

    @property
    def out_bytes(self) -> int:
        return OUT_BYTES[self.dtype_out]

    @property
    def sparse(self) -> bool:
        """B is stored and multiplied 2-of-4 (4:2 or the 2:4 what-if)."""
        return self.sparsity != "dense"

    @property
    def integer(self) -> bool:
        """int8 inputs: exact products, accumulated in int32."""
        return self.dtype_in == "int8"

    @property
    def quant_scale_fp32(self) -> float:
        """The int8 output scale as the fixpipe applies it (rounded to fp32)."""
        return float(np.float32(self.quant_scale))

    @property
    def tiles_m(self) -> int:
        """Base tiles along M (the last one may be partial)."""
        return ceil_div(self.M, self.base_m)

    @property
    def tiles_n(self) -> int:
        """Base tiles along N (the last one may be partial)."""
        return ceil_div(self.N, self.base_n)

    @property
    def k_steps(self) -> int:
        """base_k steps that cover K."""
        return ceil_div(self.K, self.base_k)

    @property
    def k_per_z(self) -> int:
        """K elements per split-K index: ceil(K / grid_z) rounded up to whole base_k steps."""
        return ceil_div(ceil_div(self.K, self.grid_z), self.base_k) * self.base_k

    @property
    def splits(self) -> int:
        """Split-K indices z that exist (one starting at or past K does not): <= grid_z."""
        return ceil_div(self.K, self.k_per_z)

    @property
    def workspace(self) -> bool:
        """Split-K partials go to a workspace, summed by a reduction pass."""
        return self.splits > 1 and self.split_k_mode == "workspace"

    @property
    def atomic(self) -> bool:
        """Split-K partials are added into C by atomic adds in dtype_out."""
        return self.splits > 1 and self.split_k_mode == "atomic"

    def k_step(self, chip: Chip) -> int:
        """base_k's fractal step: the cube's k0 for dtype_in, doubled when sparse."""
        return chip.cube_k0(self.dtype_in) * (2 if self.sparse else 1)

    def b_bytes(self, k: int, n: int) -> int:
        """Bytes of a k x n block of B as stored (see ``b_tile_bytes``)."""
        return b_tile_bytes(self.dtype_in, self.sparsity, k, n)


@dataclass(frozen=True)
class GemmParams(GemmValueParams):
    """Checked parameters of the GEMM, typed: one field per parameter of `PARAMS` (same
    name, Python type; ``block_dim`` and ``base_k`` as `check` resolved them for the chip,
    ``grid_x`` / ``grid_y`` 0 for one task per base tile, resolved by the plan). The fields
    added here are the timing-only ones (`TIMING_ONLY_PARAMS`): task order and placement,
    grid shape, buffer depths, L1 depth; each base tile is still accumulated over K in
    base_k steps by the same arithmetic."""

    depth_k: int
    db_l1: bool
    db_l0: bool
    db_l0c: bool
    grid_x: int
    grid_y: int
    policy: str
    group: int
    balance: str
    block_dim: int

    @property
    def l1_slots(self) -> int:
        return 2 if self.db_l1 else 1

    @property
    def l0_slots(self) -> int:
        return 2 if self.db_l0 else 1

    @property
    def l0c_slots(self) -> int:
        return 2 if self.db_l0c else 1


#: the parameters that change the time only (`GemmParams`' own fields)
TIMING_ONLY_PARAMS = frozenset(f.name for f in fields(GemmParams)) - frozenset(
    f.name for f in fields(GemmValueParams))


def default_base_k(dtype_in: str) -> int:
    """base_k that keeps L0B double-buffered with base_n = 256: the largest power of two
    whose 256-column slice fits one 32 KiB L0B buffer: 64 for 2-byte inputs, 32 for
    fp32/hf32, 128 for int8 and the 8-bit floats, 128 for MXFP4 (256 would need 34 KiB
    with its scales)."""
    return 1 << int(np.floor(np.log2(32 * 1024 / (256 * IN_BYTES[dtype_in]))))


def b_tile_bytes(dtype_in: str, sparsity: str, k: int, n: int) -> int:
    """Bytes of a k x n block of B as stored: dense, or half the values plus 2-bit indices."""
    if sparsity == "dense":
        return int(stored_bytes(k * n, dtype_in))
    kept = ceil_div(k, 2) * n
    return int(stored_bytes(kept, dtype_in)) + ceil_div(kept * 2, 8)


def l1_bytes_needed(p: GemmParams) -> int:
    """A and B chunks of depth_k K steps (B compressed when sparse) per L1 buffer, + bias."""
    chunk_k = p.depth_k * p.base_k
    per_slot = int(p.nbytes(p.base_m * chunk_k)) + p.b_bytes(chunk_k, p.base_n)
    return per_slot * p.l1_slots + (p.base_n * ACC_BYTES if p.bias else 0)


def _check_support(chip: Chip, p: GemmParams) -> None:
    if p.dtype_in not in chip.cube_precisions:
        raise InputError("params.dtype_in", p.dtype_in, Phrase(
            "refusal.gemm.dtype_in", options=", ".join(chip.cube_precisions),
            chip=chip.display_name))
    if p.dtype_out == "int32" and p.dtype_in != "int8":
        raise InputError("params.dtype_out", "int32", Phrase("refusal.gemm.int32_out"))
    if p.low and p.dtype_out == "int8":  # aclnnQuantMatmulV5 gives them float outputs
        raise InputError("params.dtype_out", "int8", Phrase(
            "refusal.gemm.low_out", dtype=p.dtype_in, options="fp16, bf16, fp32"))
    if p.dtype_out == "bf16" and "bf16" not in chip.cube_precisions:
        raise InputError("params.dtype_out", "bf16", Phrase("refusal.gemm.bf16_out",
                                                            chip=chip.display_name))
    if p.sparsity == "4:2" and p.dtype_in != "int8":
        raise InputError("params.sparsity", "4:2", Phrase("refusal.gemm.sparse_42"))
    if p.sparsity == "4:2" and not chip.cube_sparse_42:  # a feature of the chip's data
        raise InputError("params.sparsity", "4:2", Phrase(
            "refusal.gemm.sparse_42_chip", chip=chip.display_name, chips=", ".join(
                n for n in list_presets() if load_preset(n).cube_sparse_42)))
    if p.sparsity == "2:4" and p.dtype_in not in ("fp16", "bf16"):
        raise InputError("params.sparsity", "2:4", Phrase("refusal.gemm.sparse_24"))
    if p.grid_z > 1 and p.split_k_mode == "atomic" and p.dtype_out in ("int8",):
        raise InputError("params.split_k_mode", "atomic", Phrase("refusal.gemm.atomic_int8"))


def _check_shapes(chip: Chip, p: GemmParams) -> None:
    k0 = p.k_step(chip)
    if p.dtype_in in BLOCK_FORMATS and p.base_k % BLOCK_K:
        raise InputError("params.base_k", p.base_k, Phrase(
            "refusal.gemm.mx_block", block=BLOCK_K, dtype=p.dtype_in))
    for key, step in (("base_m", chip.cube_m0), ("base_n", chip.cube_n0), ("base_k", k0)):
        if getattr(p, key) % step:
            sparse = k0 > chip.cube_k0(p.dtype_in)
            raise InputError(f"params.{key}", getattr(p, key), Phrase(
                "refusal.gemm.fractal_sparse" if sparse else "refusal.gemm.fractal",
                step=step, dtype=p.dtype_in))
    for key, most, dim, base in (("grid_x", p.tiles_m, "M", "base_m"),
                                 ("grid_y", p.tiles_n, "N", "base_n")):
        if getattr(p, key) > most:
            raise InputError(f"params.{key}", getattr(p, key),
                             Phrase("refusal.gemm.grid", most=most, dim=dim, base=base))
    if p.grid_z > p.k_steps:
        raise InputError("params.grid_z", p.grid_z, Phrase("refusal.gemm.grid_z",
                                                           steps=p.k_steps))


def buffer_use(chip: Chip, p: GemmParams) -> dict[str, tuple[int, int, str, int]]:
    """Per on-chip buffer: (bytes this tiling needs, bytes the chip has, the knob that
    sizes it, buffer count). The capacity check and the page's occupancy bars both use it."""
    l0, l0c = p.l0_slots, p.l0c_slots
    use = {
        "L0A": (int(p.nbytes(p.base_m * p.base_k)) * l0, chip.l0a_bytes, "base_k", l0),
        "L0B": (p.b_bytes(p.base_k, p.base_n) * l0, chip.l0b_bytes, "base_k", l0),
        "L0C": (p.base_m * p.base_n * ACC_BYTES * l0c, chip.l0c_bytes, "base_n", l0c),
        "L1": (l1_bytes_needed(p), chip.l1_bytes, "depth_k", p.l1_slots),
    }
    if chip.architecture == "coupled":  # L0C -> UB (fp32) -> GM: one C tile in UB
        use["UB"] = (p.base_m * p.base_n * ACC_BYTES, chip.ub_bytes, "base_n", 1)
    return use


def instruction_count(p: GemmParams) -> int:
    """Instructions of the K loop and the output path, counted without building anything:
    a huge shape is refused before per-step arrays are allocated."""
    tiles = p.tiles_m * p.tiles_n
    bk, depth, kz, layers = p.base_k, p.depth_k, p.k_per_z, p.splits
    last = p.K - (layers - 1) * kz
    steps = (layers - 1) * (kz // bk) + ceil_div(last, bk)
    chunks = (layers - 1) * ceil_div(kz // bk, depth) + ceil_div(ceil_div(last, bk), depth)
    return 3 * tiles * (steps + chunks + layers)


def check_size(p: GemmParams) -> None:
    """Refuse, before any per-step array exists, a shape whose program exceeds the cap (a
    per-run setting, so it is not part of `check`: a valid scenario stays valid)."""
    count, cap = instruction_count(p), default_instruction_cap()
    if count > cap:
        raise InputError("instructions", count, instruction_limit_text(cap), Phrase(
            "refusal.hint.gemm_size", M=p.M, N=p.N, K=p.K, base_m=p.base_m, base_n=p.base_n,
            base_k=p.base_k))


def _overflow(chip: Chip, p: GemmParams) -> tuple[str, int, int, str] | None:
    """The first buffer the tiling overflows, or None when everything fits."""
    for buffer, (used, limit, knob, _) in buffer_use(chip, p).items():
        if used > limit:
            return buffer, used, limit, knob
    return None


def _largest_fit(chip: Chip, p: GemmParams, knob: str) -> int | None:
    """The largest value of ``knob`` (on its fractal step, at most the requested one) with
    which every buffer fits, all other parameters unchanged; None if even the smallest fails."""
    step = 1 if knob == "depth_k" else (p.k_step(chip) if knob == "base_k" else 16)
    lowest = -(-int(next(s.min for s in PARAMS if s.name == knob)) // step) * step
    for value in range(getattr(p, knob) // step * step, lowest - 1, -step):
        if _overflow(chip, replace(p, **{knob: value})) is None:
            return value
    return None


def _check_capacity(chip: Chip, p: GemmParams) -> None:
    """Each buffer holds its tiles times its buffer count, or the tiling is refused with
    the largest value of the knob that would fit (checked against every buffer)."""
    over = _overflow(chip, p)
    if over is None:
        return
    buffer, used, limit, knob = over
    fit = _largest_fit(chip, p, knob)
    raise InputError(f"params.{knob}", getattr(p, knob), Phrase(
        "refusal.gemm.fits" if fit else "refusal.gemm.fits_none", fit=fit, buffer=buffer,
        limit=limit, used=used), Phrase("refusal.hint.gemm_fits"))


def check(chip: Chip, params: dict) -> dict:
    """Validated parameters with chip-dependent defaults (block_dim = all cube cores,
    base_k from the input precision) filled in; refuses what the chip cannot run."""
    dtype_in = params.get("dtype_in", "fp16")  # not validated yet: may be any value
    defaults = {"block_dim": len(chip.cube_core_ids()),
                "base_k": default_base_k(dtype_in) if isinstance(dtype_in, str) and
                dtype_in in IN_BYTES else 64}
    cores = (len(chip.cube_core_ids()), Phrase("refusal.params.cube_cores",
                                               chip=chip.display_name))
    p = validate_params(PARAMS, {**defaults, **params}, limits={"block_dim": cores})
    g = GemmParams.of(p)
    _check_support(chip, g)
    _check_shapes(chip, g)
    _check_capacity(chip, g)
    if g.grid_z > 1 and g.split_k_mode == "atomic" and g.balance != "round_robin":
        raise InputError("params.balance", g.balance, Phrase("refusal.gemm.balance"),
                         hint=Phrase("refusal.hint.gemm_balance"))
    return p


def step_budget(chip: Chip, p: GemmParams) -> dict[str, float]:
    """Cycles of one K step of one full base tile on each cube-side pipe, with the cost
    model's own formulas (``kernels.common.cycles``; no contention, no GM latency), and the
    chip-wide GM read rate (GB/s) all cores would need to keep the cube at its pace."""
    k0 = chip.cube_k0(p.dtype_in)
    cube = mmad_cycles(chip, p.base_m, p.base_n,
                       ceil_div(p.base_k, 2) if p.sparse else p.base_k, k0)
    kpad = round_up(p.base_k, k0)
    l0a = p.nbytes(round_up(p.base_m, chip.cube_m0) * kpad)
    l0b = p.nbytes(kpad * round_up(p.base_n, chip.cube_n0)) // (2 if p.sparse else 1)
    mte1 = onchip_cycles(chip, Level.L1, Level.L0A, l0a) + \
        onchip_cycles(chip, Level.L1, Level.L0B, l0b)
    gm = int(p.nbytes(p.base_m * p.base_k)) + p.b_bytes(p.base_k, p.base_n)
    need = p.block_dim * gm / float(cube) * chip.clock_MHz / 1000.0
    return {"cube": float(cube), "mte1": float(mte1), "gm_bytes": gm,
            "mte2_l2": gm / chip.gm_read_l1_bytes_per_cycle,
            "mte2_hbm": gm / chip.gm_read_hbm_bytes_per_cycle, "need_GBps": need,
            "hit": max(0.0, 1.0 - chip.hbm_bandwidth_GBps / need)}


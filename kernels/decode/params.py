"""Parameters of the decode step (KV append + decode attention), the buffer plans that
decide tile sizes, and the capacity checks that refuse what UB, L1 or L0 cannot hold.

The workload part (model, batch, lengths, KV dtype, layout) is `decode_workload`'s; this
module adds the kernel's choices and resolves every "auto" (0) to a number, so a checked
parameter dict says exactly what the program and the numerics do:

* ``tile_tokens``: tokens of one cache tile moved through UB (vector) or L1 (cube);
  paged layouts use a divisor of ``block_size`` so a tile never straddles two blocks.
* ``heads_per_pass``: KV heads one vector task processes together, from UB capacity
  (`vector_ub_bytes`; the blog's ``heads_per_block`` counted one token's K and V only).
* ``split_tokens``: split-KV chunk length (flash-decoding), a multiple of tile_tokens.
* ``block_dim``: cores used (vector cores for vector work, cube cores for the cube).

`check` returns that dict (scenarios store it); `DecodeParams.of(p)` is its typed form, which
the kernel's functions take. Its base `AttentionParams` holds all that the numerics read;
the fields DecodeParams adds are the timing-only parameters (`TIMING_ONLY`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from functools import cached_property

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from hardware_presets.fields import MX_BLOCK
from kernels.common.params import ParamSpec, validate_params
from kernels.common.scheduling import POLICIES
from kernels.common.sizes import ceil_div, round_up
from kernels.decode import workload as wl
from kernels.decode.kv_formats import check_kv_format
from kernels.models import ModelShape, kv_format, list_models, load_model, model_from_dict
from kernels.models.schema import LAYER_FIELDS
from kernels.sparse.policies import POLICIES as SPARSE_POLICIES

IMPLS = ("vector", "cube_vector", "split_kv")
APPENDS = ("incremental", "concat")
#: "layer": every op of a decoder layer and the LM head (kernels.decode.layer); "both": the
#: KV append and attention alone; "append", "attention", "compress" one phase alone
PHASES = ("layer", "both", "append", "attention", "compress")
#: weight formats the emulated linear layers run (W8A16 for int8)
LAYER_WEIGHT_DTYPES = ("fp16", "bf16", "int8")
SPARSE = ("none",) + SPARSE_POLICIES
CUSTOM = "custom"
FP32 = 4
CUBE_M0 = 16  # the cube's fractal: query rows are padded to 16
CUSTOM_FIELDS = ("layers", "q_heads", "kv_heads", "head_dim", "hidden", "params_B",
                 "intermediate_size", "vocab_size", "rope_theta", "rms_norm_eps")


def _workload_specs() -> tuple[ParamSpec, ...]:
    """decode_workload's specs, with "custom" added to the model choices."""
    return tuple(ParamSpec("model", str, s.default, choices=list_models() + (CUSTOM,))
                 if s.name == "model" else s for s in wl.PARAMS)


PARAMS: tuple[ParamSpec, ...] = _workload_specs() + (
    ParamSpec("custom_layers", int, 32, 1, 1000, unit="layers"),
    ParamSpec("custom_q_heads", int, 32, 1, 1024, unit="heads"),
    ParamSpec("custom_kv_heads", int, 8, 1, 1024, unit="heads"),
    ParamSpec("custom_head_dim", int, 128, 8, 1024, unit="elements"),
    ParamSpec("custom_hidden", int, 4096, 128, 262_144, unit="elements"),
    ParamSpec("custom_params_B", float, 8.0, 0.001, 10_000, unit="billion parameters"),
    ParamSpec("custom_intermediate_size", int, 14336, 128, 1_048_576, unit="elements"),
    ParamSpec("custom_vocab_size", int, 128256, 128, 4_194_304, unit="tokens"),
    ParamSpec("custom_rope_theta", float, 500000.0, 1.0, 1e9),
    ParamSpec("custom_rms_norm_eps", float, 1e-5, 1e-12, 0.1),
    # the model is one card's 1/tp share of a tensor-parallel group (explorer.core.multicard)
    ParamSpec("tp", int, 1, 1, 64, unit="cards"),
    ParamSpec("impl", str, "vector", choices=IMPLS),
    ParamSpec("append", str, "incremental", choices=APPENDS),
    ParamSpec("phases", str, "layer", choices=PHASES),
    ParamSpec("policy", str, "static", choices=POLICIES),
    ParamSpec("inter_core_cost", float, 0.0, 0.0, 1e6, unit="cycles per task off core 0"),
    ParamSpec("buffer_num", int, 2, choices=(1, 2)),
    ParamSpec("block_dim", int, 0, 0, 256, unit="cores (0 = all)"),
    ParamSpec("tile_tokens", int, 0, 0, 4096, unit="tokens (0 = auto)"),
    ParamSpec("heads_per_pass", int, 0, 0, 1024, unit="KV heads (0 = auto)"),
    ParamSpec("split_tokens", int, 0, 0, wl.MAX_LEN, unit="tokens (0 = auto)"),
    ParamSpec("allow_overcommit", bool, False),
    ParamSpec("sparse", str, "none", choices=SPARSE),
    ParamSpec("keep_ratio", float, 0.3, 0.001, 1.0),
    ParamSpec("sinks", int, 2, 0, 1 << 20, unit="tokens"),
    ParamSpec("window", int, 16, 0, 1 << 20, unit="tokens"),
    ParamSpec("page_size", int, 16, 1, 4096, unit="tokens (Quest)"),
    ParamSpec("compress_every", int, 64, 1, 1 << 20, unit="decode steps"),
)


@dataclass(frozen=True)
class AttentionParams(wl.BatchParams):
    """What the attention's values depend on, typed: the batch, the model, the KV format,
    the implementation and its resolved tiles. The numerics read these and nothing else;
    `DecodeParams` adds the parameters that change the time only."""

    model: str
    kv_dtype: str
    custom_layers: int
    custom_q_heads: int
    custom_kv_heads: int
    custom_head_dim: int
    custom_hidden: int
    custom_params_B: float
    custom_intermediate_size: int
    custom_vocab_size: int
    custom_rope_theta: float
    custom_rms_norm_eps: float
    impl: str
    tile_tokens: int
    split_tokens: int

    @cached_property
    def model_shape(self) -> ModelShape:
        """The model: a shipped preset, or the custom_* shape."""
        if self.model != CUSTOM:
            return load_model(self.model)
        shape = {k: getattr(self, f"custom_{k}") for k in CUSTOM_FIELDS}
        return model_from_dict(shape, origin="params.custom")

    @property
    def out_dtype(self) -> str:
        """Dtype of q and of the attention output: bf16 with a bf16 cache, else fp16."""
        return "bf16" if self.kv_dtype == "bf16" else "fp16"

    @property
    def compute_dtype(self) -> str:
        """The cube's input format for cube_vector ("" for the vector-only impls): bf16
        with a bf16 cache, else fp16 (the same rule as the output format)."""
        return self.out_dtype if self.impl == "cube_vector" else ""

    @property
    def kv_bytes(self) -> float:
        """Bytes of one stored K or V element (int8 and 8-bit float codes: 1; MXFP4: 0.5)."""
        return kv_format(self.kv_dtype).element_bytes

    @property
    def quantized_kv(self) -> bool:
        """The cache holds codes with scales (int8, the 8-bit floats, MX), which the
        kernels dequantise (Cast, then Mul by the scale) before use."""
        return kv_format(self.kv_dtype).scales != ""

    @property
    def token_scale_bytes(self) -> int:
        """Per-token scale bytes per (head, K|V) stored next to the codes (int8_token: 4;
        MX: one E8M0 byte per 32 elements of head_dim, counted by `head_row_bytes`)."""
        return FP32 if kv_format(self.kv_dtype).scales == "token" else 0

    def head_row_bytes(self, head_dim: int) -> int:
        """One token's K (or V) of one KV head as stored: codes plus per-token scales."""
        fmt = kv_format(self.kv_dtype)
        blocks = -(-head_dim // MX_BLOCK) if fmt.scales == "block" else 0
        return math.ceil(head_dim * self.kv_bytes) + self.token_scale_bytes + blocks


@dataclass(frozen=True)
class DecodeParams(AttentionParams):
    """Checked parameters of the decode kernel, typed: one field per parameter of `PARAMS`
    (same name, Python type), every auto resolved by `check`. The fields added here are
    the timing-only ones (`TIMING_ONLY`): which phases run, how tasks are placed and
    buffered, what the linear layers' weights cost, the sparse policy (the numerics check
    the attention over the full cache); none of them changes an attention output."""

    weight_dtype: str
    tp: int
    append: str
    phases: str
    policy: str
    inter_core_cost: float
    buffer_num: int
    block_dim: int
    heads_per_pass: int
    allow_overcommit: bool
    sparse: str
    keep_ratio: float
    sinks: int
    window: int
    page_size: int
    compress_every: int

    def vector_cores(self, chip: Chip) -> int:
        """Vector cores the vector phases use (block_dim, or all)."""
        return self.block_dim or len(chip.vector_core_ids())

    def vector_core_ids(self, chip: Chip) -> np.ndarray:
        """The ids of those cores (the first ``vector_cores``)."""
        return np.asarray(chip.vector_core_ids(), np.int64)[:self.vector_cores(chip)]

    def cube_cores(self, chip: Chip) -> int:
        """Cube cores the cube+vector attention uses (block_dim, or all); each is paired
        with the vector core(s) of its group."""
        return min(self.block_dim or chip.ai_cores, chip.ai_cores)

    def schedule(self, chip: Chip, n_cores: int) -> dict:
        """`scheduling.assign`'s keyword arguments for these parameters (see `schedule`)."""
        return schedule(chip, self.policy, self.inter_core_cost, n_cores)

    def ub_rows(self, chip: Chip, row_bytes: int) -> int:
        """Rows of ``row_bytes`` that BUFFER_NUM slots of K rows and as many of V rows
        hold in UB, at least 1 (a concat tile, a gather batch)."""
        return max(1, chip.ub_bytes // (2 * self.buffer_num * row_bytes))


#: the parameters that change the time only (`DecodeParams`' own fields)
TIMING_ONLY = frozenset(f.name for f in fields(DecodeParams)) - frozenset(
    f.name for f in fields(AttentionParams))


def model_of(p: dict) -> ModelShape:
    """The model of checked parameters (the scenario's dict, as the layers above hold it)."""
    return AttentionParams.of(p).model_shape


def schedule(chip: Chip, policy: str, inter_core_cost: float, n_cores: int) -> dict:
    """Keyword arguments of `scheduling.assign`: the policy, the blog's inter-core cost, the
    chip's cluster size, and the dynamic queue's predicted cost of taking a task (a GM
    atomic: read plus write latency; the emulator times the atomics the kernel emits)."""
    return {"policy": policy, "inter_core_cost": inter_core_cost,
            "cluster_size": max(1, min(chip.cluster_size, n_cores)),
            "dispatch_cost": chip.gm_read_latency_cycles + chip.gm_write_latency_cycles}


def cube_rows(model: ModelShape) -> int:
    """Query rows of one cube task: the GQA group padded to the cube's fractal (16)."""
    return round_up(model.gqa_group, CUBE_M0)


# ---- UB / L1 / L0 plans ------------------------------------------------------------------
def vector_ub_bytes(p: DecodeParams, model: ModelShape, tokens: int,
                    heads: int) -> dict[str, int]:
    """UB the vector attention needs for a tile of ``tokens`` x ``heads`` KV heads, by buffer:
    K and V tiles (x buffer_num), their per-token scales, one fp32 working copy of the
    tile (Cast / dequantisation), one T x d fp32 product scratch (query heads are done one
    at a time), scores and probabilities (g per head), and q, the output accumulator and
    the running max and sum in fp32."""
    d, g, bn = model.head_dim, model.gqa_group, p.buffer_num
    return {
        "kv_tiles": 2 * bn * tokens * heads * math.ceil(d * p.kv_bytes),
        "kv_scales": 2 * bn * tokens * heads * (p.head_row_bytes(d) - math.ceil(d * p.kv_bytes)),
        "fp32_tile": tokens * heads * d * FP32,
        "product_scratch": tokens * d * FP32,
        "scores": 2 * heads * g * tokens * FP32,
        "q_out_stats": heads * g * (2 * d + 2) * FP32,
    }


def heads_that_fit(chip: Chip, p: DecodeParams, model: ModelShape, tokens: int) -> int:
    """The largest heads_per_pass whose buffers fit UB (0 if not even one):
    floor((UB - T d 4) / (per-head bytes)), capped at kv_heads."""
    fixed = tokens * model.head_dim * FP32
    per_head = sum(vector_ub_bytes(p, model, tokens, 1).values()) - fixed
    return int(min(model.kv_heads, max(0, (chip.ub_bytes - fixed) // per_head)))


def cube_buffers(p: DecodeParams, model: ModelShape, tokens: int) -> dict[str, dict[str, int]]:
    """Bytes per buffer of the cube + vector attention for a tile of ``tokens``:
    the AIC's L1 (K and V tiles, P), L0A (q or P), L0B (K^T or V), L0C (S or O), and the
    AIV's UB (S in fp32, P, the O partial, the accumulator, dequantised tiles for int8)."""
    d, bn = model.head_dim, p.buffer_num
    m = cube_rows(model)
    cb = 2  # the cube multiplies fp16 / bf16
    return {
        "L1": {"kv_tiles": 2 * bn * tokens * d * cb, "p": bn * m * tokens * cb, "q": m * d * cb},
        "L0A": {"q_or_p": bn * m * max(d, tokens) * cb},
        "L0B": {"k_or_v": bn * tokens * d * cb},
        "L0C": {"s_or_o": bn * m * max(d, tokens) * FP32},
        "UB": {"s": bn * m * tokens * FP32, "p": bn * m * tokens * cb,
               "o": bn * m * d * FP32, "acc": m * (d + 2) * FP32,
               "dequant": (2 * bn * tokens * d * (1 + cb) + 2 * bn * tokens * FP32)
               if p.quantized_kv else 0},
    }


def _cube_fits(chip: Chip, p: DecodeParams, model: ModelShape, tokens: int) -> str:
    """The first buffer that overflows for this tile ("" when all fit)."""
    caps = {"L1": chip.l1_bytes, "L0A": chip.l0a_bytes, "L0B": chip.l0b_bytes,
            "L0C": chip.l0c_bytes, "UB": chip.ub_bytes}
    for name, parts in cube_buffers(p, model, tokens).items():
        if sum(parts.values()) > caps[name]:
            return name
    return ""


def _tile_candidates(p: DecodeParams) -> list[int]:
    """Tile sizes to try, largest first: divisors of block_size (paged) or powers of two
    from 512 (contiguous); at least 16 tokens unless the block itself is smaller."""
    top = p.block_size if p.layout == "paged" else 512
    sizes = [t for t in (top >> s for s in range(12)) if t >= 1]
    return [t for t in sizes if t >= min(16, top) and top % t == 0]


def _fits(chip: Chip, p: DecodeParams, model: ModelShape, tokens: int) -> bool:
    if p.impl == "cube_vector":
        return not _cube_fits(chip, p, model, tokens)
    return heads_that_fit(chip, p, model, tokens) >= 1


def _resolve_tile(chip: Chip, p: DecodeParams, model: ModelShape) -> int:
    if p.tile_tokens:
        t = p.tile_tokens
        if p.layout == "paged" and p.block_size % t:
            raise InputError("params.tile_tokens", t, Phrase("refusal.decode.tile_divisor",
                                                             block_size=p.block_size))
        if not _fits(chip, p, model, t):
            best = next((c for c in _tile_candidates(p) if _fits(chip, p, model, c)), 0)
            raise InputError("params.tile_tokens", t, Phrase(
                "refusal.decode.tile_fits", best=best, impl=p.impl, model=model.display_name,
                buffer=_cube_fits(chip, p, model, t) or "UB", ub=chip.ub_bytes),
                             hint=Phrase("refusal.hint.decode_tile"))
        return t
    for t in _tile_candidates(p):
        if _fits(chip, p, model, t):
            return t
    raise InputError("params.impl", p.impl, Phrase(
        "refusal.decode.no_tile", chip=chip.display_name, model=model.display_name,
        head_dim=model.head_dim, group=model.gqa_group), hint=Phrase("refusal.hint.decode_impl"))


def _resolve_heads(chip: Chip, p: DecodeParams, model: ModelShape) -> int:
    if p.impl == "cube_vector":
        return 1  # one KV head (its GQA group of query rows) per cube task
    fit = heads_that_fit(chip, p, model, p.tile_tokens)
    if p.heads_per_pass > fit:
        raise InputError("params.heads_per_pass", p.heads_per_pass, Phrase(
            "refusal.decode.heads", fit=fit, heads=p.heads_per_pass, tile=p.tile_tokens,
            ub=chip.ub_bytes), hint=Phrase("refusal.hint.decode_heads"))
    return p.heads_per_pass or fit


def _resolve_split(chip: Chip, p: DecodeParams, model: ModelShape) -> int:
    """Chunk length: given (rounded up to whole tiles), or auto: enough chunks per sequence
    for about two tasks per core, ceil(2 cores / unsplit tasks) chunks of the mean length."""
    t = p.tile_tokens
    if p.split_tokens:
        return -(-p.split_tokens // t) * t
    unsplit = p.batch * -(-model.kv_heads // p.heads_per_pass)
    chunks = max(1, -(-2 * p.vector_cores(chip) // unsplit))
    mean = p.mean_len if p.distribution != "list" else \
        int(np.mean(wl.parse_lengths(p.lengths)))
    return max(t, round_up(ceil_div(mean, chunks), t))


def _resolve(chip: Chip, p: DecodeParams, model: ModelShape) -> DecodeParams:
    """``p`` with tile_tokens, heads_per_pass and split_tokens resolved, in that order
    (each rule reads the ones before it)."""
    p = replace(p, tile_tokens=_resolve_tile(chip, p, model))
    p = replace(p, heads_per_pass=_resolve_heads(chip, p, model))
    return replace(p, split_tokens=_resolve_split(chip, p, model)
                   if p.impl == "split_kv" else 0)


def block_dim_limit(chip: Chip) -> int:
    """The most cores block_dim may name: the chip's vector cores (the vector phases run on
    them, and cube_vector pairs each of its cube cores with its vector cores)."""
    return len(chip.vector_core_ids())


def check_block_dim(chip: Chip, block_dim: int) -> int:
    """block_dim within this chip's range, 0 (all) to its vector cores; the refusal names that
    range, not the parameter's 0 to 256, which covers every chip."""
    limit = block_dim_limit(chip)
    if not 0 <= block_dim <= limit:
        raise InputError("params.block_dim", block_dim,
                         Phrase("refusal.decode.block_dim", n=limit, chip=chip.display_name))
    return block_dim


def block_dim_refusal(chip: Chip, exc: InputError) -> InputError:
    """``exc`` itself, or for a whole number of block_dim refused by the parameter's range
    the refusal that names this chip's range instead."""
    if exc.field != "params.block_dim":
        return exc
    try:
        check_block_dim(chip, int(str(exc.value)))
    except ValueError as refused:  # InputError is a ValueError, as is int("abc")
        return refused if isinstance(refused, InputError) else exc
    return exc


def check(chip: Chip, params: dict) -> dict:
    """Validated parameters with every auto value resolved (see the module docstring)."""
    try:
        p = validate_params(PARAMS, params)
    except InputError as exc:
        raise block_dim_refusal(chip, exc) from None
    wl.check({k: p[k] for k in (s.name for s in wl.PARAMS) if k != "model"}
             | {"model": wl.PARAMS[0].default})
    typed = DecodeParams.of(p)
    model = typed.model_shape
    check_block_dim(chip, typed.block_dim)
    if typed.impl == "cube_vector" and typed.kv_dtype == "bf16" and \
            "bf16" not in chip.cube_precisions:
        raise InputError("params.kv_dtype", "bf16", Phrase("refusal.decode.kv_bf16",
                                                           chip=chip.display_name))
    check_kv_format(chip, typed.kv_dtype)
    typed = _resolve(chip, typed, model)
    _check_phases(typed, model)
    p.update(tile_tokens=typed.tile_tokens, heads_per_pass=typed.heads_per_pass,
             split_tokens=typed.split_tokens)
    return p


def _check_phases(p: DecodeParams, model: ModelShape) -> None:
    """Refuse phases the model or the sparse policy cannot run."""
    missing = [f for f in LAYER_FIELDS if not getattr(model, f)]
    if p.phases == "layer" and missing:
        raise InputError("params.phases", "layer", Phrase(
            "refusal.decode.layer_shape", model=model.display_name, missing=", ".join(missing)))
    if p.phases == "layer" and p.weight_dtype not in LAYER_WEIGHT_DTYPES:
        raise InputError("params.weight_dtype", p.weight_dtype, Phrase(
            "refusal.decode.layer_weights", options=", ".join(LAYER_WEIGHT_DTYPES)))
    if p.phases == "compress" and p.sparse not in ("norm_high", "norm_low", "h2o", "random"):
        raise InputError("params.phases", "compress", Phrase("refusal.decode.compress",
                                                             policy=p.sparse))


def workload(p: dict, rng: np.random.Generator):
    """(lengths, layout) of checked parameters, drawn first from ``rng``: the program
    (built with default_rng(seed)) and the numerics (make_inputs) see the same batch.
    A length counts the new token: the append writes position length - 1 and attention
    reads positions 0 .. length - 1. Typed parameters draw the same with ``draw``."""
    return wl.BatchParams.of(p).draw(rng)

"""Mixed precision as a measured dimension: error, time, bytes and footprint per format.

The error side (data, configurations, errors against float64, error growth with K, the
blog's routine against Kahan) lives in ``precision_numerics`` and is re-exported here;
this module adds what a configuration costs and whether the chip can run it:

* ``problems`` says why a configuration cannot run: "not_on_chip" (a format the chip's
  cube lacks, bf16 on the first 910, fp32 on 310P3) or "impossible" (scales an int8 Mmad
  cannot apply, a group size that does not divide the axis). Each problem is a message
  id plus values for the UI to translate;
* ``error_table`` gives one row per configuration: errors, then for GEMM the emulated time
  and HBM bytes of ``simulate`` (A and B moved in the compute format, C in the output
  format), for the attention operations the K/V bytes and a memory-roofline time estimate
  (bytes / HBM bandwidth, labelled as such), and the footprint of every operand in its
  storage format including scales;
* ``stages`` names the format at each level of the "sandwich" (GM, UB, L1, L0A/L0B, L0C,
  Fixpipe, GM) and the Ascend C operation on each arrow, for the picture and the text.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

import hardware_presets as hp
from hardware_presets.errors import InputError
from kernels.common import precision

from .precision_numerics import (
    ATTENTION_OUTPUT,
    COMPUTE_FORMATS,
    DEFAULT_KS,
    DISTRIBUTIONS,
    ERROR_BLOCK,
    FAMILIES,
    GRANULARITIES,
    INT_FORMATS,
    LIMITS,
    OPERATIONS,
    OUTPUT_FORMATS,
    REDUCTION_AXIS,
    SCHEMES,
    STORAGE_FORMATS,
    PrecisionConfig,
    blog_vs_kahan,
    check_config,
    check_shape,
    data,
    element_errors,
    error_vs_k,
    errors,
    family,
    gemm_operands,
)
from .scenario import Scenario
from .simulate import simulate

__all__ = ["ATTENTION_OUTPUT", "COMPUTE_FORMATS", "DEFAULT_KS", "DISTRIBUTIONS", "ERROR_BLOCK",
           "FAMILIES", "GRANULARITIES", "INT_FORMATS", "LIMITS", "OPERATIONS", "OUTPUT_FORMATS",
           "REDUCTION_AXIS", "SCHEMES", "STANDARD", "STORAGE_FORMATS",
           "PrecisionConfig", "Problem", "blog_vs_kahan", "data", "element_errors",
           "error_table", "error_vs_k", "errors", "footprint", "problems", "stages",
           "table_row"]

#: scales (and zero points) are kept in fp32
SCALE_BYTES = precision.FORMATS["fp32"].bytes
C = PrecisionConfig
#: the standard configurations of each operation family, in the order the table lists them
STANDARD = {
    "gemm": {
        "fp32": C("fp32", "fp32", "fp32", "fp32"),
        "hf32": C("fp32", "hf32", "fp32", "fp32"),
        "bf16": C("bf16", "bf16", "fp32", "bf16"),
        "sandwich": C("fp16", "fp16", "fp32", "fp16"),
        "fp16_acc": C("fp16", "fp16", "fp16", "fp16"),
        "w8_channel": C("int8", "fp16", "fp32", "fp16", "channel"),
        "w4_group": C("int4", "fp16", "fp32", "fp16", "group", 128),
        "w8a8": C("int8", "int8", "fp32", "fp16", "channel"),
    },
    "attention": {
        "fp32": C("fp32", "fp32", "fp32", "fp32"),
        "bf16": C("bf16", "bf16", "fp32", "bf16"),
        "sandwich": C("fp16", "fp16", "fp32", "fp16"),
        "fp16_acc": C("fp16", "fp16", "fp16", "fp16"),
        "kv8_token": C("int8", "fp16", "fp32", "fp16", "token"),
        "kv8_channel": C("int8", "fp16", "fp32", "fp16", "channel"),
        "kv4_group": C("int4", "fp16", "fp32", "fp16", "group", 32),
    },
}
del C


@dataclass(frozen=True)
class Problem:
    """Why a configuration cannot run: status "not_on_chip" or "impossible", and the
    message (catalogue id + values) that says it in the user's language."""

    status: str
    msg_id: str
    values: dict = field(default_factory=dict, hash=False)


def _chip(chip) -> hp.Chip:
    return hp.load(chip) if isinstance(chip, str) else chip


def _reduction(operation: str, shape: tuple[int, ...]) -> int:
    """Length of the axis groups run along: K for GEMM, the head dim d for K/V."""
    names = [name for name, _, _ in LIMITS[family(operation)]]
    return shape[names.index(REDUCTION_AXIS[operation])]


def _impossible(operation: str, shape: tuple[int, ...], cfg: PrecisionConfig) -> list[Problem]:
    found = []
    length = _reduction(operation, shape)
    if cfg.quantized and cfg.granularity == "group" and (
            cfg.group_size > length or length % cfg.group_size):
        found.append(Problem("impossible", "precision.problem.group_size",
                             {"group": cfg.group_size, "length": length,
                              "axis": REDUCTION_AXIS[operation]}))
    if cfg.compute == "int8":
        if not cfg.quantized:
            found.append(Problem("impossible", "precision.problem.int8_needs_codes",
                                 {"storage": cfg.storage}))
        elif cfg.granularity in ("token", "group"):
            found.append(Problem("impossible", "precision.problem.int8_scales_along_k",
                                 {"granularity": cfg.granularity}))
        elif cfg.scheme != "symmetric":
            found.append(Problem("impossible", "precision.problem.int8_asymmetric", {}))
    return found


def problems(operation: str, shape, config: PrecisionConfig, chip) -> tuple[Problem, ...]:
    """Everything that stops ``config`` from running on ``chip`` (empty when it can)."""
    shape = check_shape(operation, shape)
    check_config(operation, config)
    chip = _chip(chip)
    found = _impossible(operation, shape, config)
    units = precision.chip_formats(chip)
    cube, vector = tuple(units["cube"]), tuple(units["vector"])
    if config.compute not in cube:
        found.append(Problem("not_on_chip", "precision.problem.cube_lacks",
                             {"fmt": config.compute, "chip": chip.display_name,
                              "have": ", ".join(cube)}))
    elif config.output == "bf16" and "bf16" not in cube:
        found.append(Problem("not_on_chip", "precision.problem.output_lacks",
                             {"fmt": "bf16", "chip": chip.display_name}))
    if config.storage == "bf16" and config.compute != "bf16" and "bf16" not in vector:
        found.append(Problem("not_on_chip", "precision.problem.cast_lacks",
                             {"fmt": "bf16", "chip": chip.display_name}))
    return tuple(found)


# ---- bytes -------------------------------------------------------------------------------
def _elem_bytes(fmt: str) -> float:
    return float(precision.format_of(fmt).bytes)


def _scale_count(rows: int, cols: int, cfg: PrecisionConfig, reduce_rows: bool) -> int:
    """Scales of a rows x cols matrix quantised at cfg.granularity; groups run along the
    reduction axis (rows of B for GEMM, columns of K/V); asymmetric adds zero points."""
    if not cfg.quantized:
        return 0
    length, across = (rows, cols) if reduce_rows else (cols, rows)
    count = {"tensor": 1, "channel": cols, "token": rows,
             "group": -(-length // cfg.group_size) * across}[cfg.granularity]
    return count * (2 if cfg.scheme != "symmetric" else 1)


def footprint(operation: str, shape, config: PrecisionConfig) -> dict[str, float]:
    """Bytes of every operand in its storage format: in_bytes (A, or q), store_bytes
    (B, or K and V, as codes or floats), scale_bytes, out_bytes (C, the scores or the
    output) and their sum footprint_bytes. Bytes are exact counts (int4: half a byte)."""
    shape = check_shape(operation, shape)
    cfg = config
    if family(operation) == "gemm":
        M, N, K = shape
        act = cfg.storage if not cfg.quantized else ("int8" if cfg.compute == "int8"
                                                     else cfg.compute)
        act = "fp32" if act == "hf32" else act
        in_b = M * K * _elem_bytes(act)
        store_b = K * N * _elem_bytes(cfg.storage)
        scales = _scale_count(K, N, cfg, reduce_rows=True) + (M if act == "int8" else 0)
        out_b = M * N * _elem_bytes(cfg.output) + (SCALE_BYTES if cfg.output == "int8" else 0)
    else:
        T, d = shape
        in_b = d * _elem_bytes("fp16" if cfg.compute == "fp16" else cfg.compute)
        store_b = 2 * T * d * _elem_bytes(cfg.storage)
        scales = 2 * _scale_count(T, d, cfg, reduce_rows=False)
        out_len = {"scores": T, "out": d}[ATTENTION_OUTPUT[operation]]  # T scores or d values
        out_b = out_len * _elem_bytes(cfg.output)
    scale_b = float(scales * SCALE_BYTES)
    return {"in_bytes": in_b, "store_bytes": store_b, "scale_bytes": scale_b,
            "out_bytes": out_b, "footprint_bytes": in_b + store_b + scale_b + out_b}


# ---- time --------------------------------------------------------------------------------
def _gemm_params(shape, config: PrecisionConfig, distribution: str, seed: int) -> dict:
    M, N, K = shape
    params = {"M": M, "N": N, "K": K, "dtype_in": config.compute, "dtype_out": config.output}
    if config.output == "int8":  # the Fixpipe's static scale: C's largest value -> 127
        top = float(np.max(np.abs(gemm_operands(shape, distribution, seed)[2])))
        params["quant_scale"] = float(np.clip(127.0 / top if top else 1.0, 1e-6, 1e6))
    return params


@functools.lru_cache(maxsize=64)
def _emulated(preset: str, overrides: tuple, params: tuple) -> dict:
    """Time, moved bytes and TFLOPS of one GEMM scenario (configurations that differ only
    in storage or accumulation share a scenario, so it runs once)."""
    m = simulate(Scenario.make(preset, "gemm", dict(params), dict(overrides))).metrics
    return {"time_us": float(m["makespan_us"]), "time_source": "emulator",
            "moved_bytes": float(m["hbm_bytes"]), "tflops": float(m["achieved_tflops"])}


def _gemm_cost(shape, config, distribution, seed, preset, overrides) -> dict:
    """Time, moved bytes and TFLOPS from the emulator (A and B in the compute format)."""
    params = _gemm_params(shape, config, distribution, seed)
    return dict(_emulated(preset, tuple(sorted(overrides.items())),
                          tuple(sorted(params.items()))))


def _attention_cost(operation, shape, config, chip: hp.Chip) -> dict:
    """Memory roofline of one decode step: K/V bytes over HBM bandwidth (an estimate)."""
    fp = footprint(operation, shape, config)
    moved = fp["footprint_bytes"]
    return {"time_us": moved / float(chip.hbm_bandwidth_GBps) / 1e3,
            "time_source": "estimate", "moved_bytes": moved, "tflops": np.nan}


def table_row(operation: str, shape, distribution: str, seed: int, config: PrecisionConfig,
              chip, *, overrides=None, name: str = "") -> dict:
    """One row of the table: config, status, errors, cost and footprint. A configuration
    the chip cannot run keeps its errors (the arithmetic is the chip's business only for
    time) but gets no time; an impossible one gets neither."""
    shape = check_shape(operation, shape)
    chip_obj = _chip(chip)
    preset = chip if isinstance(chip, str) else chip_obj.name
    overrides = dict(overrides or (chip_obj.overridden if not isinstance(chip, str) else {}))
    found = problems(operation, shape, config, chip_obj)
    row = {"name": name, "label": config.short(), "storage": config.storage,
           "compute": config.compute,
           "accumulate": "int32" if config.compute == "int8" else config.accumulate,
           "output": config.output,
           "granularity": config.granularity if config.quantized else "",
           "status": found[0].status if found else "ok",
           "note_id": found[0].msg_id if found else "",
           "note_values": dict(found[0].values) if found else {},
           "max_abs": np.nan, "rel_fro": np.nan, "mean_rel": np.nan,
           "time_us": np.nan, "time_source": "", "moved_bytes": np.nan, "tflops": np.nan}
    row.update(footprint(operation, shape, config))
    if any(p.status == "impossible" for p in found):
        return row
    row.update(errors(operation, shape, distribution, seed, config))
    if found:
        return row
    try:
        cost = (_gemm_cost(shape, config, distribution, seed, preset, overrides)
                if family(operation) == "gemm"
                else _attention_cost(operation, shape, config, chip_obj))
    except InputError as exc:  # the emulator refuses (a capacity or support check)
        row.update(status="not_on_chip", note_id="precision.problem.emulator",
                   note_values={"reason": str(exc.allowed)})
        return row
    row.update(cost)
    return row


def error_table(operation: str, shape, distribution: str, seed: int, configs, chip, *,
                overrides=None) -> pd.DataFrame:
    """One row per configuration (``configs``: a mapping name -> PrecisionConfig, or a
    sequence of configs named by their short label). See ``table_row``."""
    items = configs.items() if hasattr(configs, "items") else ((c.short(), c) for c in configs)
    rows = [table_row(operation, shape, distribution, seed, cfg, chip, overrides=overrides,
                      name=name) for name, cfg in items]
    return pd.DataFrame(rows)


# ---- the sandwich ------------------------------------------------------------------------
_FIXPIPE_FLOAT = {"fp32": "NoQuant", "fp16": "F322F16", "bf16": "F322BF16",
                  "int8": "QF322B8_PRE"}
_FIXPIPE_INT = {"fp16": ("DEQF16", "VDEQF16"), "bf16": ("QS322BF16_PRE", "VQS322BF16_PRE"),
                "int8": ("REQ8", "VREQ8"), "fp32": ("NoQuant", "NoQuant")}


def stages(operation: str, config: PrecisionConfig, chip) -> dict:
    """The format at each level and the operation on each path, for ``config`` on ``chip``.

    Keys: gm_in (B or K/V in GM), gm_act (A or q), vector_op ("antiquant", "cast" or ""),
    ub_from / ub_to (formats in UB around that op), l1, l0 (L0A/L0B: the Mmad inputs),
    l0c ("fp32" or "int32"), acc (the accumulation strategy or "int32"), fixpipe (the
    Fixpipe quantPre mode, or "" on chips without a Fixpipe: L0C -> UB and a vector
    Cast), gm_out, has_fixpipe, hf32 (SetHF32Mode needed), operation.
    """
    chip = _chip(chip)
    cfg = config
    int8 = cfg.compute == "int8"
    op = ""
    if cfg.quantized and not int8:
        op = "antiquant"
    elif cfg.storage == "int4" and int8:  # int4 codes unpacked to the int8 Mmad
        op = "cast"
    elif not cfg.quantized and cfg.storage != cfg.compute and cfg.compute != "hf32":
        op = "cast"
    if family(operation) == "gemm":
        act = cfg.storage if not cfg.quantized else ("int8" if int8 else cfg.compute)
    else:
        act = "fp16" if cfg.compute == "fp16" else cfg.compute
    per_channel = cfg.granularity == "channel"
    fix = (_FIXPIPE_INT[cfg.output][per_channel] if int8 else _FIXPIPE_FLOAT[cfg.output])
    return {"operation": operation, "gm_in": cfg.storage, "quantized": cfg.quantized,
            "granularity": cfg.granularity, "gm_act": "fp32" if act == "hf32" else act,
            "vector_op": op, "ub_from": cfg.storage, "ub_to": cfg.compute,
            "l1": cfg.compute if (op or int8) else cfg.storage,
            "l0": cfg.compute, "l0c": "int32" if int8 else "fp32",
            "acc": "int32" if int8 else cfg.accumulate,
            "fixpipe": fix if chip.has_fixpipe else "", "has_fixpipe": bool(chip.has_fixpipe),
            "gm_out": cfg.output, "hf32": cfg.compute == "hf32"}

"""What a run's quantised inputs lost to their format, apart from the kernel's own check.

A kernel whose numerics draw real values and store them in a low-precision format (the
GEMM's FP8 / HiF8 / MX inputs, the linear layer's MXFP4 weights, a quantised KV cache)
records ``inputs["quantization"]``: one ``kernels.common.lowp.QuantError`` summary per
operand. The check compares the kernel with float64 on the *stored* values (or, for the
decode attention, on the real ones with a bound that holds the storage error); this
module answers the question users ask of a format, how much it loses against the real
values (norm-wise, next to bf16), for the same inputs the check draws: the same parameters
but the timing-only ones, the same seed. Nothing here names a kernel.
"""
from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd

import kernels

from .i18n import t
from .scenario import Scenario
from .simulate import numerics_params

#: the table's columns (message ids), in order
COLUMNS = {"operand": "ui.quant.col.operand", "fmt": "ui.quant.col.format",
           "norm_rel": "ui.quant.col.norm_rel", "bf16_norm_rel": "ui.quant.col.bf16",
           "max_abs": "ui.quant.col.max_abs", "bound_ratio": "ui.quant.col.bound_ratio",
           "flushed": "ui.quant.col.flushed"}


@functools.lru_cache(maxsize=64)
def _remembered(kernel_name: str, params_json: str, seed: int) -> str:
    """The kernel's "quantization" record for these inputs, as JSON ("null" if none)."""
    numerics = kernels.get(kernel_name).numerics
    inputs = numerics.make_inputs(json.loads(params_json), np.random.default_rng(seed))
    return json.dumps(inputs.get("quantization"))


def input_quantization(scenario: Scenario) -> dict[str, dict] | None:
    """{operand: QuantError summary} of a validated scenario's quantised inputs, or None
    when its kernel stores nothing in a quantised format. Computed once per process for
    each (kernel, numerics parameters, seed)."""
    params = numerics_params(kernels.get(scenario.kernel), scenario.params_dict)
    return json.loads(_remembered(scenario.kernel, json.dumps(params, sort_keys=True),
                                  scenario.seed))


def quantization_frame(lost: dict[str, dict]) -> pd.DataFrame:
    """One row per operand, as numbers (a notebook's table, the CLI's lines): the format,
    the norm-wise relative error ||q - x|| / ||x|| and bf16's for the same values, the
    largest element error, its ratio to the format's own bound, and how many of the
    nonzero elements were stored as 0."""
    return pd.DataFrame([{"operand": operand, "fmt": e["fmt"], "norm_rel": e["norm_rel"],
                          "bf16_norm_rel": e["bf16_norm_rel"], "max_abs": e["max_abs"],
                          "bound_ratio": e["bound_ratio"], "flushed": e["flushed"],
                          "nonzero": e["nonzero"]} for operand, e in lost.items()],
                        columns=[*COLUMNS, "nonzero"])


def quantization_table(lost: dict[str, dict], lang: str = "en") -> pd.DataFrame:
    """``quantization_frame`` as the pages show it: headed in ``lang``, values formatted
    (shares in %, the flushed count out of the nonzero ones)."""
    df = quantization_frame(lost)
    shown = pd.DataFrame({
        "operand": df["operand"], "fmt": df["fmt"],
        "norm_rel": [f"{v:.3%}" for v in df["norm_rel"]],
        "bf16_norm_rel": [f"{v:.3%}" for v in df["bf16_norm_rel"]],
        "max_abs": [f"{v:.3g}" for v in df["max_abs"]],
        "bound_ratio": [f"{v:.3f}" for v in df["bound_ratio"]],
        "flushed": [f"{f:,} / {n:,}" for f, n in zip(df["flushed"], df["nonzero"])]},
        columns=list(COLUMNS))
    return shown.rename(columns={k: t(v, lang) for k, v in COLUMNS.items()})

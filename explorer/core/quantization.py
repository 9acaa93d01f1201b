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


def quantization_table(lost: dict[str, dict], lang: str = "en") -> pd.DataFrame:
    """One row per operand, headed in ``lang``: the format, the norm-wise relative error
    ||q - x|| / ||x|| (and bf16's for the same values), the largest element error, its
    ratio to the format's own bound, and the nonzero elements stored as 0."""
    rows = []
    for operand, e in lost.items():
        rows.append({"operand": operand, "fmt": e["fmt"], "norm_rel": f"{e['norm_rel']:.3%}",
                     "bf16_norm_rel": f"{e['bf16_norm_rel']:.3%}",
                     "max_abs": f"{e['max_abs']:.3g}", "bound_ratio": f"{e['bound_ratio']:.3f}",
                     "flushed": f"{e['flushed']:,} / {e['nonzero']:,}"})
    return pd.DataFrame(rows, columns=list(COLUMNS)).rename(
        columns={k: t(v, lang) for k, v in COLUMNS.items()})

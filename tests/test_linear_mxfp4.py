"""MXFP4 weights in the linear layer (kernels/linear/antiquant.py's generalised path): on
the 950 the vector side reads FP4 codes plus E8M0 scales, antiquantises and hands bf16 to
the cube; the values hold against float64 on the dequantised weights; what the weights
lost is reported; chips without the format refuse it."""
from __future__ import annotations

import numpy as np
import pytest

import hardware_presets as hp
from explorer.core import Scenario, simulate
from hardware_presets.errors import InputError
from kernels.linear import kernel as linear
from kernels.linear import numerics as ln

C950, B2 = hp.load("950PR"), hp.load("910B2")
LAYER = {"M": 8, "N": 512, "K": 1024, "act_dtype": "bf16", "block_dim": 4}


def _weight_bytes(result, op: str) -> int:
    tl = result.timeline
    return int(tl.loc[tl["op"] == op, "bytes"].sum())


def test_mxfp4_weights_stream_a_quarter_plus_their_scales():
    """512 x 1024 weights: 0.5 byte each plus one E8M0 byte per 32 (272 KiB) against
    int8's 512 KiB; the vector side's hand-over and the cube's input stay bf16."""
    mx = simulate(Scenario.make("950PR", "linear", {**LAYER, "weight_dtype": "mxfp4"}))
    i8 = simulate(Scenario.make("950PR", "linear", {**LAYER, "weight_dtype": "int8"}))
    assert _weight_bytes(mx, "CopyIn W mxfp4") == 512 * 1024 // 2 + 512 * 1024 // 32
    assert _weight_bytes(i8, "CopyIn W int8") == 512 * 1024
    assert _weight_bytes(mx, "CopyOut W bf16") == _weight_bytes(i8, "CopyOut W bf16") \
        == 512 * 1024 * 2
    assert mx.numerics.passed and i8.numerics.passed
    assert mx.metrics["makespan_us"] <= i8.metrics["makespan_us"]


def test_values_and_what_the_weights_lost():
    p = linear.check(C950, {**LAYER, "weight_dtype": "mxfp4"})
    inputs = ln.make_inputs(p, np.random.default_rng(4))
    out, ref = ln.execute(p, inputs)["y"], ln.reference(inputs)["y"]
    err = np.abs(out.astype(np.float64) - ref)
    assert (err <= ln.error_bound(p, inputs, ref)).all()
    lost = inputs["quantization"]["W"]
    assert lost["elements"] == 1024 * 512 and 0 < lost["bound_ratio"] <= 1
    assert 0.05 < lost["norm_rel"] < 0.2  # one mantissa bit: ~10% of the weights' norm


@pytest.mark.parametrize("chip", [B2, hp.load("310P3")])
def test_refused_where_the_chip_lacks_mxfp4(chip):
    with pytest.raises(InputError) as err:
        linear.check(chip, {**LAYER, "act_dtype": "fp16", "weight_dtype": "mxfp4"})
    e = err.value
    assert e.field == "params.weight_dtype" and e.value == "mxfp4"
    assert chip.display_name in str(e) and "int8" in str(e)

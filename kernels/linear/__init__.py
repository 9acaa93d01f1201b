"""A linear layer at decode time, a skinny GEMM y = x @ W with M = tokens, fp16 / bf16
weights or weight-only int8 (W8A16, antiquant on the vector side), as a kernel of its own
and as the decode layer's projections and LM head (kernels.decode.layer): the plan,
program and typed shape live in ``kernel``, values against float64 in ``numerics``;
``RECORD`` describes it; ``locales`` and ``examples`` hold its messages and scenarios."""
from __future__ import annotations

from pathlib import Path

from kernels.common.record import Advice, KernelRecord, Numerics
from kernels.linear import kernel as k
from kernels.linear import numerics as n

HERE = Path(__file__).parent
RECORD = KernelRecord(
    name=k.NAME, title_key="linear.title", params=k.PARAMS, check=k.check,
    build=k.build, timing_only=k.TIMING_ONLY,
    numerics=Numerics(n.make_inputs, n.execute, n.reference, n.error_bound,
                      n.unit_roundoff, n.output_elements),
    precision=lambda p: p["act_dtype"],
    roofline_label=lambda p: ("linear.roofline_point",
                              {"M": p["M"], "N": p["N"], "K": p["K"],
                               "dtype": p["weight_dtype"]}),
    advice=Advice(double_buffer=("advisor.tip.buffer_num", {"buffer_num": 2}),
                  block_cores="cube", l2_reuse=True),
    explanation=("linear.explain", "linear.explain_w8a16"),
    examples=HERE / "examples", locales=HERE / "locales",
)

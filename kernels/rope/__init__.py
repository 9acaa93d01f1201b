"""RoPE on the query and key heads (rotate-half, the model's rope_theta) on the vector
cores, as a kernel of its own and as a piece of a bigger program (the decode layer's
rotation chains it with ``kernel.emit``). This package owns RoPE's parameters, typed shape
and program (``kernel``: a row-wise op of ``kernels.common.rows`` with two parts, q and k),
its arithmetic against float64 (``numerics``), its messages (``locales``) and its gallery
scenario (``examples``). ``RECORD`` describes it to the layers above."""
from __future__ import annotations

from pathlib import Path

from kernels.common.record import Advice, KernelRecord, Numerics
from kernels.rope import kernel as k
from kernels.rope import numerics as num

HERE = Path(__file__).parent
RECORD = KernelRecord(
    name=k.NAME, title_key="rope.title", params=k.PARAMS, check=k.check, build=k.build,
    timing_only=k.TIMING_ONLY,
    numerics=Numerics(num.make_inputs, num.execute, num.reference, num.error_bound,
                      num.unit_roundoff, num.output_elements),
    precision=lambda p: "fp32",
    roofline_label=lambda p: ("rope.roofline_point",
                              {"rows": p["rows"], "heads": p["q_heads"] + p["kv_heads"],
                               "dtype": p["dtype"]}),
    advice=Advice(double_buffer=("advisor.tip.buffer_num", {"buffer_num": 2}),
                  block_cores="vector"),
    explanation=("rope.explain.stages", "rope.explain.numerics"),
    examples=HERE / "examples", locales=HERE / "locales",
)

"""RMSNorm on the vector cores, as a kernel of its own and as the decode layer's two norms
(kernels.decode.layer): its parameters, program (a row-wise kernel of
kernels.common.rows) and numerics against float64 live in ``kernel``; ``RECORD``
describes it; ``locales`` holds its messages and ``examples`` its gallery scenarios."""
from __future__ import annotations

from pathlib import Path

from kernels.common import rows as rw
from kernels.common.record import Advice, KernelRecord, Numerics
from kernels.rmsnorm import kernel as k

HERE = Path(__file__).parent
RECORD = KernelRecord(
    name=k.NAME, title_key="kernels.rmsnorm.title", params=k.PARAMS, check=k.check,
    build=k.build, timing_only=rw.TIMING_ONLY,
    numerics=Numerics(k.make_inputs, k.execute, k.reference, k.error_bound,
                      k.unit_roundoff, k.output_elements),
    precision=lambda p: "fp32",
    roofline_label=lambda p: ("kernels.rmsnorm.roofline_point",
                              {"rows": p["rows"], "hidden": p["hidden"]}),
    advice=Advice(double_buffer=("advisor.tip.buffer_num", {"buffer_num": 2}),
                  block_cores="vector", tile_param="tile_rows"),
    explanation=("kernels.rmsnorm.explain",),
    examples=HERE / "examples", locales=HERE / "locales",
)

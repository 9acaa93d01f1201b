"""RMSNorm on the vector cores, as a kernel of its own and as a piece of a bigger program
(a decode layer's two norms chain it with ``kernel.emit``). This package owns the norm's
parameters, typed shape, program (``kernel``: a row-wise op of ``kernels.common.rows``), its
arithmetic against float64 (``numerics``), its messages (``locales``; also the labels of
the row-wise parameters rows and tile_rows that RoPE and SwiGLU share) and its gallery
scenario (``examples``). ``RECORD`` describes it to the layers above."""
from __future__ import annotations

from pathlib import Path

from kernels.common.record import Advice, KernelRecord, Numerics
from kernels.rmsnorm import kernel as k
from kernels.rmsnorm import numerics as num

HERE = Path(__file__).parent
RECORD = KernelRecord(
    name=k.NAME, title_key="rmsnorm.title", params=k.PARAMS, check=k.check, build=k.build,
    timing_only=k.TIMING_ONLY,
    numerics=Numerics(num.make_inputs, num.execute, num.reference, num.error_bound,
                      num.unit_roundoff, num.output_elements),
    precision=lambda p: "fp32",
    roofline_label=lambda p: ("rmsnorm.roofline_point",
                              {"rows": p["rows"], "hidden": p["hidden"], "dtype": p["dtype"]}),
    advice=Advice(double_buffer=("advisor.tip.buffer_num", {"buffer_num": 2}),
                  block_cores="vector", tile_param="tile_rows", waves=k.waves,
                  buffer_use=lambda chip, p: ("UB", k.ub_share(chip, p))),
    explanation=("rmsnorm.explain.stages", "rmsnorm.explain.fp32"),
    examples=HERE / "examples", locales=HERE / "locales",
)

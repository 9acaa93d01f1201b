"""The vector add, z = x + y on the vector cores: the Ascend C CopyIn -> Compute ->
CopyOut pipeline with TQue double buffering, its parameters, program and numerics
(``kernel``). ``RECORD`` describes it."""
from __future__ import annotations

from kernels.common.record import Advice, KernelRecord, Numerics
from kernels.vector_add import kernel as va

RECORD = KernelRecord(
    name=va.NAME, title_key="nav.vector_add", params=va.PARAMS, check=va.check,
    build=va.build,
    numerics=Numerics(va.make_inputs, va.execute, va.reference, va.error_bound,
                      va.unit_roundoff, va.output_elements),
    precision=lambda p: "fp16",
    roofline_label=lambda p: ("ui.va.roofline_point", {"dtype": p.get("dtype", "fp16")}),
    advice=Advice(double_buffer=("advisor.tip.buffer_num", {"buffer_num": 2}),
                  block_cores="vector", tile_param="tile",
                  buffer_use=lambda chip, p: ("UB", va.ub_bytes_needed(chip, p)
                                              / chip.ub_bytes)),
    explanation=("ui.va.explain.stages", "ui.va.explain.tque", "ui.va.explain.buffer_num"),
)

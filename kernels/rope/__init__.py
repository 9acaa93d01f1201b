"""RoPE on the query and key heads (rotate-half, the model's rope_theta) on the vector cores, as a kernel of its own and as the decode layer's rotation (kernels.decode.layer): parameters, the program (a row-wise kernel of kernels.common.rows), the typed
shape and numerics against float64 live in ``kernel``; ``RECORD`` describes it;
``locales`` and ``examples`` hold its messages and gallery scenarios."""
from __future__ import annotations

from pathlib import Path

from kernels.common import rows as rw
from kernels.common.record import Advice, KernelRecord, Numerics
from kernels.rope import kernel as k

HERE = Path(__file__).parent
RECORD = KernelRecord(
    name=k.NAME, title_key="kernels.rope.title", params=k.PARAMS, check=k.check,
    build=k.build, timing_only=rw.TIMING_ONLY,
    numerics=Numerics(k.make_inputs, k.execute, k.reference, k.error_bound,
                      k.unit_roundoff, k.output_elements),
    precision=lambda p: "fp32",
    roofline_label=lambda p: ("kernels.rope.roofline_point", {"rows": p["rows"], "heads": p["q_heads"] + p["kv_heads"]}),
    advice=Advice(double_buffer=("advisor.tip.buffer_num", {"buffer_num": 2}),
                  block_cores="vector", tile_param="tile_cols"),
    explanation=("kernels.rope.explain",),
    examples=HERE / "examples", locales=HERE / "locales",
)

"""The decode kernel: one incremental decode step's KV append and attention over a batch of
requests with a KV cache; this package owns parameters and the model's shapes
(``params``, ``workload``), the task split (``tasks``), the vector and cube attention
programs (``attention``, ``cube``), the KV append (``kv_append``), the stored cache and its
quantisation (``kv_store``), the online softmax (``online_attention``), values against
float64 (``numerics``) and advisor rules (``advice``). ``RECORD`` describes it."""
from __future__ import annotations

from kernels.common.record import Advice, KernelRecord, Numerics
from kernels.decode import advice as decode_advice
from kernels.decode import kernel as decode
from kernels.decode import params as dp

RECORD = KernelRecord(
    name=decode.NAME, title_key="nav.decode", params=decode.PARAMS, check=decode.check,
    build=decode.build, seeded=decode.SEEDED, timing_only=decode.TIMING_ONLY_PARAMS,
    numerics=Numerics(decode.make_inputs, decode.execute, decode.reference,
                      decode.error_bound, decode.unit_roundoff, decode.output_elements),
    precision=lambda p: dp.AttentionParams.of(p).out_dtype,
    roofline_label=lambda p: ("ui.decode.roofline_point",
                              {"impl": p["impl"], "group": dp.model_of(p).gqa_group}),
    advice=Advice(double_buffer=("advisor.tip.buffer_num", {"buffer_num": 2}),
                  tile_param="tile_tokens", buffer_use=decode_advice.buffer_use,
                  rules=decode_advice.RULES),
    explanation=("ui.decode.explain.step", "ui.decode.explain.tque", "ui.decode.explain.cube",
                 "ui.decode.explain.split", "ui.decode.explain.append"),
    extensions=("decode_step",),
)

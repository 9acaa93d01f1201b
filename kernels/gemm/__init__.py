"""The GEMM kernel, C = A x B on the cube, tiled on a 3-D task grid; this package owns it
whole: parameters and their checks (``params``), the task grid and its balance policies
(``grid``), the program (``kernel``), the split-K reduction (``reduce``), values against a
float64 reference (``numerics``) and advisor rules (``advice``). ``RECORD`` says all of it to
the layers above."""
from __future__ import annotations

from kernels.common.record import Advice, KernelRecord, Numerics
from kernels.gemm import advice as gemm_advice
from kernels.gemm import kernel as gemm
from kernels.gemm import numerics as gn

RECORD = KernelRecord(
    name=gemm.NAME, title_key="nav.gemm", params=gemm.PARAMS, check=gemm.check,
    build=gemm.build, timing_only=gemm.TIMING_ONLY_PARAMS,
    numerics=Numerics(gn.make_inputs, gn.execute, gn.reference, gn.error_bound,
                      gn.unit_roundoff, gemm.output_elements, as_real=gn.as_real),
    precision=lambda p: p["dtype_in"],
    roofline_label=lambda p: ("ui.gemm.roofline_point",
                              {"dtype": p["dtype_in"], "M": p["M"], "N": p["N"], "K": p["K"]}),
    advice=Advice(double_buffer=("advisor.tip.double_buffer", {"db_l1": True, "db_l0": True}),
                  block_cores="cube", buffer_use=gemm_advice.buffer_use, l2_reuse=True,
                  waves=gemm_advice.waves, rules=gemm_advice.RULES),
    explanation=("ui.gemm.explain.launch", "ui.gemm.explain.default", "ui.gemm.explain.small",
                 "ui.gemm.explain.split_k"),
    figures=("task_grid",),
)

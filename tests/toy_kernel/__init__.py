"""A toy kernel in one folder, to prove that adding a kernel needs nothing else: y = a x
(fp32 ``Muls``) on the vector cores, tile by tile (CopyIn x, Muls, CopyOut y with TQue
dependencies), its own messages (``locales/``) and a gallery example (``examples/``).
tests/test_toy_kernel.py registers it and finds it in the CLI, sweeps, compare,
reports, the advisor and the gallery."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from hardware_presets.errors import InputError
from kernels.common.params import ParamSpec, validate_params
from kernels.common.program import Level, Pipe, ProgramBuilder
from kernels.common.record import Advice, KernelRecord, Numerics
from kernels.common.tque import Stage, staged_loop

NAME = "toy_scale"
HERE = Path(__file__).parent
PARAMS = (
    ParamSpec("n", int, 1 << 16, 1, 1 << 22, unit="elements"),
    ParamSpec("tile", int, 2048, 8, 1 << 14, unit="elements"),
    ParamSpec("block_dim", int, 8, 1, 64, unit="cores"),
    ParamSpec("buffer_num", int, 1, choices=(1, 2)),
    ParamSpec("a", float, 3.0, -1e6, 1e6),
)


def check(chip, params: dict) -> dict:
    p = validate_params(PARAMS, params)
    cores = len(chip.vector_core_ids())
    if p["block_dim"] > cores:
        raise InputError("params.block_dim", p["block_dim"], f"1 to {cores}")
    if p["tile"] * 4 % chip.ub_align_bytes:
        raise InputError("params.tile", p["tile"], f"a multiple of {chip.ub_align_bytes // 4}")
    return p


def build(chip, params: dict):
    p = check(chip, params)
    tiles = -(-p["n"] // p["tile"])
    elems = np.full(tiles, p["tile"], np.int64)
    elems[-1] = p["n"] - p["tile"] * (tiles - 1)
    nbytes = -(-elems * 4 // chip.ub_align_bytes) * chip.ub_align_bytes
    slot = np.arange(tiles) % p["block_dim"]
    cores = np.asarray(chip.vector_core_ids(), np.int64)[slot]
    b = ProgramBuilder(NAME)
    stages = [Stage.copy("CopyIn x", Pipe.MTE2, Level.GM, Level.UB, nbytes, b.regions(nbytes)),
              Stage.vector("Muls", elems, "fp32"),
              Stage.copy("CopyOut y", Pipe.MTE3, Level.UB, Level.GM, nbytes, b.regions(nbytes))]
    bn = p["buffer_num"]
    staged_loop(b, cores, np.arange(tiles) // p["block_dim"], np.arange(tiles), stages,
                [(0, 1, bn), (1, 2, bn)])
    return b.build()


def make_inputs(p: dict, rng) -> dict:
    return {"x": rng.standard_normal(p["n"]).astype(np.float32), "a": np.float32(p["a"])}


def execute(p: dict, inputs: dict) -> dict:
    return {"y": inputs["x"] * inputs["a"]}  # one fp32 rounding per element


def reference(inputs: dict) -> dict:
    return {"y": inputs["x"].astype(np.float64) * float(inputs["a"])}


RECORD = KernelRecord(
    name=NAME, title_key="toy.title", params=PARAMS, check=check, build=build,
    numerics=Numerics(make_inputs, execute, reference,
                      lambda p, inputs, ref: 2.0 ** -24 * np.abs(ref),
                      lambda p: 2.0 ** -24, lambda p: p["n"]),
    precision=lambda p: "fp32",
    roofline_label=lambda p: ("toy.roofline_point", {"a": p["a"]}),
    advice=Advice(double_buffer=("advisor.tip.buffer_num", {"buffer_num": 2}),
                  block_cores="vector", tile_param="tile"),
    explanation=("toy.explain",),
    examples=HERE / "examples",
    locales=HERE / "locales",
)

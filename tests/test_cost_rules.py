"""The cost model's compiled pass (explorer/core/emulator/cost.py) against a plain numpy
statement of the same rules, one boolean mask per rule (the model before the pass was
compiled for speed): bitwise equal costs and class numbering on random programs of the tiny
chip and on every kernel's default program on every preset, and the same refusal, in the
same order, for programs a chip cannot run."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import hardware_presets as hp
import kernels
from explorer.core import Scenario
from explorer.core.emulator import cost
from explorer.core.emulator.cost import GM_READ, GM_WRITE, costs_of
from hardware_presets.errors import InputError
from kernels.common.cycles import ONCHIP_PATHS, mmad_cycles, onchip_cycles, vector_cycles
from kernels.common.program import DTYPE_BYTES, DTYPES, Kind, Level, Pipe, ProgramBuilder
from tests.engine_helpers import build_program, program_specs, tiny

FIELDS = ("issue_ns", "latency_ns", "max_outstanding", "gm", "cls_hbm", "cls_l2", "class_cap",
          "class_pool")


def reference(c: dict, chip) -> dict:
    """The cost rules on whole columns, for programs the chip can run."""
    n, kind, src, dst = len(c["core"]), c["kind"], c["src"], c["dst"]
    cycles, latency = np.zeros(n), np.zeros(n)
    max_out, gm, cap = np.ones(n, np.int8), np.zeros(n, np.int8), np.zeros((2, n))
    mm, vec, move = kind == Kind.MMAD, kind == Kind.VECTOR, kind == Kind.TRANSFER
    k0 = np.array([getattr(chip, f"cube_k0_{d}", 0) for d in DTYPES])[c["dtype"][mm]]
    cycles[mm] = mmad_cycles(chip, c["m"][mm], c["n"][mm], c["k"][mm], k0)
    width = np.array([DTYPE_BYTES[d] for d in DTYPES])[np.maximum(c["dtype"][vec], 0)]
    cycles[vec] = vector_cycles(chip, c["elems"][vec], width, c["vclass"][vec])
    cycles[kind == Kind.SCALAR] = c["cycles"][kind == Kind.SCALAR]
    for s, d in ONCHIP_PATHS:
        on = move & (src == s) & (dst == d)
        cycles[on] = onchip_cycles(chip, s, d, c["nbytes"][on])
    read = move & (src == Level.GM)
    write = move & ~read & (dst == Level.GM)
    fix = write & (c["pipe"] == Pipe.FIX)
    gm[read], gm[write] = GM_READ, GM_WRITE
    l2_read = np.where(dst == Level.L1, chip.gm_read_l1_bytes_per_cycle,
                       chip.gm_read_l2_bytes_per_cycle)
    for prefix, on in (("gm_read", read), ("gm_write", write & ~fix), ("fixpipe_gm", fix)):
        bursts = np.ceil(c["nbytes"][on] / chip.dma_burst_bytes)
        cycles[on] = getattr(chip, f"{prefix}_issue_cycles") + \
            bursts * getattr(chip, f"{prefix}_burst_cycles")
        latency[on] = getattr(chip, f"{prefix}_latency_cycles")
        max_out[on] = getattr(chip, f"{prefix}_max_outstanding")
        if prefix == "gm_read":
            cap[0, on], cap[1, on] = chip.gm_read_hbm_bytes_per_cycle, l2_read[on]
        else:
            cap[:, on] = getattr(chip, f"{prefix}_bytes_per_cycle")
    clock = np.asarray(chip.core_clocks_MHz(), float)[c["core"]]
    cap *= clock / 1000.0
    copy, cls, values = gm != 0, np.full((2, n), -1, np.int8), []
    for pool in (0, 1):  # classes: (pool, cap) ascending over the caps copies use
        values.append(np.unique(cap[pool, copy]))
        cls[pool, copy] = sum(map(len, values[:-1])) + np.searchsorted(values[-1], cap[pool, copy])
    return dict(issue_ns=cycles * 1000.0 / clock, latency_ns=latency * 1000.0 / clock,
                max_outstanding=max_out, gm=gm, cls_hbm=cls[0], cls_l2=cls[1],
                class_cap=np.concatenate(values),
                class_pool=np.repeat(np.arange(2, dtype=np.int8), list(map(len, values))))


def assert_same(c: dict, chip) -> None:
    got, want = costs_of(c, chip), reference(c, chip)
    for name in FIELDS:
        a, b = getattr(got, name), want[name]
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), name  # bitwise


@settings(max_examples=4 * settings.default.max_examples, deadline=None)
@given(program_specs())
def test_random_programs_cost_as_the_rules_say(spec):
    program, chip = build_program(spec)
    assert_same(program.cols, chip)


@pytest.mark.parametrize("preset", hp.list_presets())
def test_kernels_cost_as_the_rules_say_on_every_preset(preset):
    for name, kernel in kernels.KERNELS.items():
        scenario = Scenario.make(preset=preset, kernel=name).validated()
        chip = scenario.chip()
        assert_same(kernel.build_program(chip, scenario.params_dict, scenario.seed).cols, chip)


def test_rows_costed_a_few_at_a_time_cost_the_same(monkeypatch):
    # the formulas take their group's rows in stretches of COST_CHUNK: here of 5 rows,
    # so that every group of every kernel is cut, mid-run, many times
    monkeypatch.setattr(cost, "COST_CHUNK", 5)
    for name, kernel in kernels.KERNELS.items():
        scenario = Scenario.make(preset="910B2", kernel=name).validated()
        chip = scenario.chip()
        assert_same(kernel.build_program(chip, scenario.params_dict, scenario.seed).cols, chip)


#: instructions some chips cannot run, each on core 0 at its own sequence number
REFUSED = {
    "hif8 MMAD": lambda b: b.mmad(0, "mm", 16, 16, 32, "hif8", 0),
    "L0C->L1": lambda b: b.transfer(0, Pipe.FIX, "t", Level.L0C, Level.L1, 64, 1),
    "L0A->L0B": lambda b: b.transfer(0, Pipe.MTE1, "t", Level.L0A, Level.L0B, 64, 2),
    "fixpipe to GM": lambda b: b.transfer(0, Pipe.FIX, "t", Level.L0C, Level.GM, 64, 3),
    "core 72": lambda b: b.scalar(72, "s", 1, 4),
}


def refusal(chip, *names) -> tuple:
    """(field, value, message id) of the refusal of a program of ``names`` (REFUSED)."""
    b = ProgramBuilder("refused")
    for name in names:
        REFUSED[name](b)
    with pytest.raises(InputError) as err:
        costs_of(b.build().cols, chip)
    return err.value.field, err.value.value, err.value.allowed.msg_id


def test_refusals_come_in_the_order_of_the_rules():
    """Core first, then the cube's precisions, the on-chip paths (one the chip lacks, then
    one no chip has) and last the fixpipe, whatever the program order."""
    b2, old = hp.load("910B2"), hp.load("910")  # 910: no fixpipe, no L0C->L1 path
    assert old.num_cores <= 72
    everything = tuple(REFUSED)
    assert refusal(old, *everything)[:2] == ("core", 72)
    assert refusal(b2, *everything[:4]) == ("precision", "hif8", "refusal.emulator.precision")
    assert refusal(old, *everything[1:4]) == ("transfer path", "L0C->L1",
                                              "refusal.emulator.path")
    assert refusal(old, *everything[2:4]) == ("transfer path", "L0A->L0B",
                                              "refusal.emulator.paths")
    assert refusal(tiny(), "L0A->L0B")[1] == "L0A->L0B"
    assert refusal(old, "fixpipe to GM") == ("pipe", "FIX", "refusal.emulator.fixpipe")

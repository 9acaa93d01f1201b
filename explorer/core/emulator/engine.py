"""Running a program on a chip: cost model, lowering, then one of the two engines.

``run(program, chip)`` is the emulator's single entry point. ``engine="jit"`` (default) is
the numba event loop; ``engine="reference"`` the readable twin it is tested against.
"""
from __future__ import annotations

import time

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common.budget import default_instruction_cap, instruction_limit_text
from kernels.common.memory import return_freed_memory
from kernels.common.program import TRIM_ABOVE, Level, Pipe, Program, ProgramBuilder, VClass

from ..i18n import t
from ._jit.events import MAX_INSTRUCTIONS, run_events
from ._jit.state import LoopState, OnDemand, loop_state, set_up
from .lowering import EPS_NS, TOL_BYTES, EngineInput, lower
from .map_back import MapBack
from .reference import run_reference
from .schedule import Schedule
from .side_thread import side_thread

ENGINES = ("jit", "reference")
#: the message id of what a deadlock says; ``DeadlockError.values`` fill it
DEADLOCK_ID = "engine.deadlock"


class DeadlockError(RuntimeError):
    """The program's dependencies (or a SyncAll) can never be satisfied.

    ``values`` holds its parts (how many instructions never ran, of how many, the first
    one's index, op and core), which ``DEADLOCK_ID`` words in the reader's language; the
    exception's text is that sentence in English (logs, the CLI)."""

    def __init__(self, unfinished: np.ndarray, program: Program) -> None:
        first = int(unfinished[0])
        self.unfinished = unfinished
        self.values = {"unfinished": len(unfinished), "instructions": len(program),
                       "first": first, "op": program.op_names[int(program.cols["op"][first])],
                       "core": int(program.cols["core"][first])}
        super().__init__(t(DEADLOCK_ID, "en", **self.values))


def run_jit(inp: EngineInput) -> Schedule:
    """Execute a lowered program with the numba event loop (on a copy of its dependency
    counts, which the loop counts down: the input stays as it was)."""
    state = loop_state(inp.n, bool(inp.cluster.max(initial=-1) >= 0))
    set_up(state, 0, inp.n)
    with side_thread(inp.n) as helper:
        return _loop(inp, state, helper, inp.dep_count.copy())


def _run_jit(program: Program, chip: Chip) -> Schedule:
    """Lower ``program`` and run the event loop on it, the loop starting while the side
    thread still gathers the instructions it has not reached (``lowering.Gathering``) and
    sets up their state, then maps blocks back. The lowering is made for this run alone:
    the loop counts down its own dependency counts, not a copy."""
    n = len(program)
    state = OnDemand(n, chip.cluster_size > 1)
    with side_thread(n) as helper:
        inp, finishing = lower(program, chip, helper, state.set_up)
        if n >= TRIM_ABOVE:  # the costs and the lowering's temporaries are gone
            return_freed_memory()
        schedule = _loop(inp, state.made(), helper, inp.dep_count)
        finishing.result()  # (raises what stopped the gather: the loop then stopped too)
        return schedule


def _loop(inp: EngineInput, state: LoopState, helper, deps_left: np.ndarray) -> Schedule:
    """The event loop on ``state``, its results mapped back to program ids beside it on
    ``helper`` (``MapBack``) once it is done with what it was given before."""
    out = MapBack(inp, state)
    seg = np.zeros((4 * inp.copies + 4, 4))
    beside = helper.submit(out.while_running)
    try:
        nseg = run_events(inp, deps_left, state, seg, EPS_NS, TOL_BYTES, out.done,
                          out.block_bits)
    finally:
        out.loop_over.set()
    out.rest()
    beside.result()
    return out.schedule(seg[:max(nseg, 0)].copy())


def run(program: Program, chip: Chip, *, engine: str = "jit",
        max_instructions: int | None = None) -> Schedule:
    """Execute ``program`` on ``chip`` and return its schedule.

    Refuses a program above the instruction cap before doing any work, and raises
    DeadlockError when some instructions can never run.
    """
    cap = min(max_instructions or default_instruction_cap(), MAX_INSTRUCTIONS)
    if len(program) > cap:
        raise InputError("instructions", len(program), instruction_limit_text(cap),
                         Phrase("refusal.hint.larger_tiles"))
    if engine not in ENGINES:
        raise InputError("engine", engine, f"one of {ENGINES}")
    schedule = _run_jit(program, chip) if engine == "jit" else \
        run_reference(prepare(program, chip))
    if len(schedule.unfinished):
        raise DeadlockError(schedule.unfinished, program)
    return schedule


def prepare(program: Program, chip: Chip) -> EngineInput:
    """Cost model and lowering: the passes before the event loop. The costs and the
    lowering's temporaries are dropped by then; their pages go back to the system."""
    with side_thread(len(program)) as helper:
        inp, finishing = lower(program, chip, helper)
        finishing.result()
    if inp.n >= TRIM_ABOVE:
        return_freed_memory()
    return inp


def execute(inp: EngineInput, engine: str = "jit") -> Schedule:
    """The event loop alone, on a program ``prepare`` lowered (left as it was)."""
    return run_jit(inp) if engine == "jit" else run_reference(inp)


def warm_up(chip: Chip) -> float:
    """Compile (or load from numba's cache) everything ``run`` uses, on a program of a few
    instructions of every kind; returns the seconds it took."""
    started = time.perf_counter()
    b = ProgramBuilder("warm-up")
    core = chip.vector_core_ids()[0]
    region = b.regions(1024)[0]
    read = b.transfer(core, Pipe.MTE2, "CopyIn", Level.GM, Level.UB, 1024, 0, region=region)
    add = b.vector(core, "Add", 512, "fp16", 1, vclass=VClass.SIMPLE)
    write = b.transfer(core, Pipe.MTE3, "CopyOut", Level.UB, Level.GM, 1024, 2, region=region)
    b.depend(add, read)
    b.depend(write, add)
    b.sync_all([core], 3)
    run(b.build(), chip)
    return time.perf_counter() - started


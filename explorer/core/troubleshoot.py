"""The troubleshooting lab: common Ascend C problems, each as a scenario that triggers it
and a fix, detected by the kernels' own refusals, the emulator or measured figures.

Nothing here hard-codes a verdict: a refusal is the InputError the kernel raises, a
deadlock is the emulator's DeadlockError, a slowdown is two emulated runs compared against
a stated criterion, an overflow is the quantiser's clipping measured against float64.
``run_problem(id)`` returns an :class:`Outcome` the lab page and the tests read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import hardware_presets as hp
from hardware_presets.errors import InputError, Phrase
from kernels.common import precision
from kernels.common.program import Level, Pipe, Program, ProgramBuilder
from kernels.gemm import kernel as gemm
from kernels.vector_add import kernel as vector_add

from .emulator.engine import DeadlockError, run
from .scenario import Scenario
from .simulate import simulate

PROBLEMS = ("ub_overflow", "misaligned_copy", "sync_all_blocks", "single_buffer",
            "tail_wave", "split_k_depth", "int8_overflow")
#: single buffering "starves the cube" when its cube ratio is below this share of the
#: double-buffered one and the run is at least SLOWDOWN times longer
STARVED_SHARE, SLOWDOWN = 0.8, 1.2
#: int8 without a scale "overflows" when this share of the values clip or more
CLIP_SHARE = 1e-3
NO_PRESET = "-"  # a case that runs on no chip (the quantiser)


@dataclass(frozen=True, eq=False)
class Case:
    """One run: what was asked (preset, kernel, params) and what came back: a refusal,
    a deadlock (its message and counts in ``figures``) or measured ``figures``."""

    preset: str
    kernel: str  # a kernels name, or "program" (hand-built) / "quantize" (precision.py)
    params: dict
    figures: dict = field(default_factory=dict)
    refusal: InputError | None = None
    deadlock: str = ""

    @property
    def failed(self) -> bool:
        return self.refusal is not None or bool(self.deadlock)


@dataclass(frozen=True, eq=False)
class Outcome:
    """A problem's trigger and fix, and whether the criterion saw the problem in each."""

    problem: str
    trigger: Case
    fix: Case
    detected: bool  # the trigger shows the problem
    fixed: bool  # the fix does not


def run_problem(problem: str) -> Outcome:
    """Run one problem's trigger and fix (an InputError names the known ids otherwise)."""
    if problem not in PROBLEMS:
        raise InputError("problem", problem, Phrase("refusal.one_of", options=", ".join(PROBLEMS)))
    return _RUNNERS[problem]()


# ---- shared helpers ----------------------------------------------------------------------
def _attempt(preset: str, kernel: str, params: dict, measure) -> Case:
    """Validate and run a kernel scenario; a refusal is kept, not raised."""
    try:
        scenario = Scenario.make(preset, kernel, params)
    except InputError as exc:
        return Case(preset, kernel, params, refusal=exc)
    return Case(preset, kernel, params, measure(scenario))


def _accepted(preset: str, kernel: str, params: dict) -> bool:
    try:
        Scenario.make(preset, kernel, params)
    except InputError:
        return False
    return True


def _run_metrics(*names: str):
    """A measure function: the named metrics of one emulated run."""
    def measure(scenario: Scenario) -> dict:
        metrics = simulate(scenario).metrics
        return {name: metrics[name] for name in names}
    return measure


def _outcome(problem: str, trigger: Case, fix: Case, shows) -> Outcome:
    """Apply the problem's criterion ``shows(case) -> bool`` to both cases."""
    return Outcome(problem, trigger, fix, shows(trigger), not shows(fix))


# ---- 1, 2: vector_add refusals -----------------------------------------------------------
VA_PRESET = "910B2"
VA_BASE = {"n": 1 << 20, "block_dim": 8, "buffer_num": 2, "dtype": "fp16"}


def _tile_refused(case: Case) -> bool:
    return case.refusal is not None and case.refusal.field == "params.tile"


def _largest_fitting_tile(params: dict) -> int:
    """Binary search over whole 32-byte blocks for the largest tile the kernel accepts."""
    chip = hp.load(VA_PRESET)
    step = chip.ub_align_bytes // vector_add.elem_bytes(params["dtype"])
    lo, hi = 1, params["tile"] // step
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _accepted(VA_PRESET, "vector_add", {**params, "tile": mid * step}):
            lo = mid
        else:
            hi = mid - 1
    return lo * step


def _va_measure(scenario: Scenario) -> dict:
    chip, p = scenario.chip(), scenario.params_dict
    return {"tile": p["tile"], "ub_bytes_needed": vector_add.ub_bytes_needed(chip, p),
            "ub_bytes": chip.ub_bytes, **_run_metrics("makespan_us")(scenario)}


def _ub_overflow() -> Outcome:
    params = {**VA_BASE, "tile": 65536}
    trigger = _attempt(VA_PRESET, "vector_add", params, _va_measure)
    fixed = {**params, "tile": _largest_fitting_tile(params)}
    return _outcome("ub_overflow", trigger,
                    _attempt(VA_PRESET, "vector_add", fixed, _va_measure), _tile_refused)


def _misaligned_copy() -> Outcome:
    params = {**VA_BASE, "tile": 1000}
    trigger = _attempt(VA_PRESET, "vector_add", params, _va_measure)
    tile = next(t for t in range(params["tile"], 0, -1)
                if _accepted(VA_PRESET, "vector_add", {**params, "tile": t}))
    fix = _attempt(VA_PRESET, "vector_add", {**params, "tile": tile}, _va_measure)
    return _outcome("misaligned_copy", trigger, fix, _tile_refused)


# ---- 3: SyncAll with more blocks than cores ----------------------------------------------
SYNC_PRESET = "910B4"
SYNC_BYTES = 16 * 1024  # per block: CopyIn, Add, SyncAll, CopyOut


def sync_all_program(chip: hp.Chip, blocks: int) -> Program:
    """``blocks`` blocks of CopyIn -> Add -> SyncAll -> CopyOut on the vector cores.

    Block b runs on core b mod cores after the blocks before it on that core (blocks
    beyond the core count wait for a free core, as the launcher runs them). The kernel's
    SyncAll waits for all ``blocks`` blocks: one barrier group with a member per block.
    """
    cores = np.asarray(chip.vector_core_ids(), np.int64)
    b = ProgramBuilder("sync_all_lab")
    ids = np.arange(blocks)
    core, wave = cores[ids % len(cores)], ids // len(cores)
    seq = 4 * wave
    region = b.regions(np.full(blocks, SYNC_BYTES))
    load = b.transfer(core, Pipe.MTE2, "CopyIn x", Level.GM, Level.UB, SYNC_BYTES, seq,
                      region=region)
    add = b.vector(core, "Add", SYNC_BYTES // 2, "fp16", seq + 1)
    b.depend(add, load)
    for w in range(int(wave.max()) + 1):
        b.sync_all(core[wave == w], 4 * w + 2)
    store = b.transfer(core, Pipe.MTE3, "CopyOut z", Level.UB, Level.GM, SYNC_BYTES,
                       seq + 3, region=b.regions(np.full(blocks, SYNC_BYTES)))
    b.depend(store, add)
    return _one_barrier(b.build())


def _one_barrier(program: Program) -> Program:
    """Merge the per-wave SyncAll groups into one: a SyncAll counts every block."""
    cols = dict(program.cols)
    cols["barrier"] = np.where(cols["barrier"] >= 0, 0, -1).astype(cols["barrier"].dtype)
    size = np.asarray([int(program.barrier_size.sum())], np.int32)
    return Program(program.name, cols, program.dep_ptr, program.dep_idx,
                   program.region_bytes, program.op_names, size)


def _sync_case(blocks: int) -> Case:
    chip = hp.load(SYNC_PRESET)
    params = {"blocks": blocks, "cores": len(chip.vector_core_ids())}
    program = sync_all_program(chip, blocks)
    try:
        schedule = run(program, chip)
    except DeadlockError as exc:  # its parts (counts, the first op) are the figures
        return Case(SYNC_PRESET, "program", params, dict(exc.values), deadlock=str(exc))
    return Case(SYNC_PRESET, "program", params,
                {"instructions": len(program), "makespan_us": schedule.makespan_ns / 1e3})


def _sync_all_blocks() -> Outcome:
    cores = len(hp.load(SYNC_PRESET).vector_core_ids())
    return _outcome("sync_all_blocks", _sync_case(cores + 8), _sync_case(cores),
                    lambda case: bool(case.deadlock))


# ---- 4, 5, 6: GEMM measured ----------------------------------------------------------------
DB_PRESET = "910B2"
DB_PARAMS = {"M": 2048, "N": 2048, "K": 2048}
DB_METRICS = ("makespan_us", "aic_cube_ratio", "mte2_ratio", "mte1_ratio", "overlap_ratio")


def _single_buffer() -> Outcome:
    measure = _run_metrics(*DB_METRICS)
    off = _attempt(DB_PRESET, "gemm", {**DB_PARAMS, "db_l1": False, "db_l0": False}, measure)
    on = _attempt(DB_PRESET, "gemm", {**DB_PARAMS, "db_l1": True, "db_l0": True}, measure)

    def starved(case: Case) -> bool:  # compared with the double-buffered run
        f, ref = case.figures, on.figures
        return (f["aic_cube_ratio"] < STARVED_SHARE * ref["aic_cube_ratio"]
                and f["makespan_us"] > SLOWDOWN * ref["makespan_us"])
    return _outcome("single_buffer", off, on, starved)


TAIL_PRESET = "910B4"
TAIL_PARAMS = {"M": 1152, "N": 1280, "K": 1024, "base_m": 128, "base_n": 256}


def _wave_measure(scenario: Scenario) -> dict:
    grid = gemm.plan(gemm.GemmParams.of(scenario.params_dict)).grid
    cores = grid.block_dim
    return {"tasks": len(grid.x), "cores": cores, "waves": grid.waves,
            "tail_tasks": grid.tail_tasks,
            "idle_cores": cores - grid.tail_tasks if grid.tail_tasks else 0,
            **_run_metrics("makespan_us", "load_balance_mean_max")(scenario)}


def _even_base_m(params: dict) -> dict:
    """The base_m nearest the trigger's (smaller first) whose task count fills every wave."""
    start = params["base_m"]
    for value in sorted(range(16, 257, 16), key=lambda v: (abs(v - start), v)):
        trial = {**params, "base_m": value}
        if _accepted(TAIL_PRESET, "gemm", trial):
            p = Scenario.make(TAIL_PRESET, "gemm", trial).params_dict
            if gemm.plan(gemm.GemmParams.of(p)).grid.tail_tasks == 0:
                return trial
    return params


def _tail_wave() -> Outcome:
    trigger = _attempt(TAIL_PRESET, "gemm", TAIL_PARAMS, _wave_measure)
    fix = _attempt(TAIL_PRESET, "gemm", _even_base_m(TAIL_PARAMS), _wave_measure)
    return _outcome("tail_wave", trigger, fix, lambda case: case.figures["idle_cores"] > 0)


SPLIT_PRESET = "910B4"
SPLIT_PARAMS = {"M": 128, "N": 256, "K": 1024, "grid_z": 32}


def _split_k_depth() -> Outcome:
    """grid_z beyond K / base_k is refused; the fix is the fastest accepted power of two."""
    trigger = _attempt(SPLIT_PRESET, "gemm", SPLIT_PARAMS, _run_metrics("makespan_us"))
    times = {}
    z = 1
    while z <= SPLIT_PARAMS["grid_z"]:
        case = _attempt(SPLIT_PRESET, "gemm", {**SPLIT_PARAMS, "grid_z": z},
                        _run_metrics("makespan_us"))
        if case.failed:
            break
        times[z] = case.figures["makespan_us"]
        z *= 2
    best = min(times, key=times.get)
    p = Scenario.make(SPLIT_PRESET, "gemm", {**SPLIT_PARAMS, "grid_z": best}).params_dict
    figures = {"grid_z": best, "k_per_split": gemm.plan(gemm.GemmParams.of(p)).k_per_z,
               "makespan_us": times[best], "makespan_us_no_split": times[1],
               "makespan_us_most_splits": times[max(times)], "most_splits": max(times)}
    fix = Case(SPLIT_PRESET, "gemm", {**SPLIT_PARAMS, "grid_z": best}, figures)
    return _outcome("split_k_depth", trigger, fix,
                    lambda case: case.refusal is not None
                    and case.refusal.field == "params.grid_z")


# ---- 7: int8 without a scale ---------------------------------------------------------------
INT8_SHAPE, INT8_SEED = (64, 256), 0


def int8_data(seed: int = INT8_SEED) -> np.ndarray:
    """Activations whose channels (columns) span 0.5 to 400 in magnitude: a few channels
    reach far past the int8 range, as outlier channels of an LLM do."""
    rng = np.random.default_rng(seed)
    spread = np.geomspace(0.5, 400.0, INT8_SHAPE[1])
    return rng.standard_normal(INT8_SHAPE) * spread


def _error_figures(x: np.ndarray, q: precision.Quantized, qmax: float = 127.0) -> dict:
    """Error of the dequantised values vs float64, and the share of clipped values."""
    err = np.abs(q.dequantize() - x)
    clipped = np.abs(x / q.expand(q.scale)) > qmax + 0.5
    return {"clipped_share": float(clipped.mean()), "max_abs_error": float(err.max()),
            "rel_rms_error": float(np.sqrt((err ** 2).mean() / (x ** 2).mean())),
            "max_abs_value": float(np.abs(x).max())}


def cast_without_scale(x: np.ndarray, scale: float = 1.0) -> precision.Quantized:
    """A saturating Cast to int8 with a fixed scale (1.0: no scaling at all)."""
    codes = np.clip(np.rint(x / scale), -127, 127).astype(np.int8)
    one = np.full((1,) * x.ndim, float(scale))
    return precision.Quantized(codes, one, np.zeros_like(one), "int8", "symmetric",
                               "tensor", x.ndim - 1, 128)


def _int8_overflow() -> Outcome:
    x = int8_data()
    trigger = Case(NO_PRESET, "quantize", {"scale": 1.0, "shape": "x".join(map(str, INT8_SHAPE))},
                   _error_figures(x, cast_without_scale(x)))
    q = precision.quantize(x, "int8", "symmetric", "channel", axis=-1)
    fix = Case(NO_PRESET, "quantize", {"granularity": "channel", "scheme": "symmetric"},
               _error_figures(x, q))
    return _outcome("int8_overflow", trigger, fix,
                    lambda case: case.figures["clipped_share"] >= CLIP_SHARE)


_RUNNERS = {"ub_overflow": _ub_overflow, "misaligned_copy": _misaligned_copy,
            "sync_all_blocks": _sync_all_blocks, "single_buffer": _single_buffer,
            "tail_wave": _tail_wave, "split_k_depth": _split_k_depth,
            "int8_overflow": _int8_overflow}

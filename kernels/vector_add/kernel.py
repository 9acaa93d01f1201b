"""The canonical Ascend C ``Add`` kernel: z = x + y over n elements on blockDim vector cores.

Each core takes a contiguous block of tiles (the sample's static split) and loops
CopyIn (MTE2: DataCopy GM->UB of x and y) -> Compute (V: Add) -> CopyOut (MTE3: DataCopy
UB->GM of z), with TQue queues of BUFFER_NUM slots between the stages. When the chip's
vector unit has no Add for the dtype (bf16 on the presets' vector dtype list), Compute
becomes Cast to fp32, Add, Cast back, with two fp32 scratch tiles (a TBuf) in UB.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common.budget import default_instruction_cap, instruction_limit_text
from kernels.common.formats import BYTES, FORMATS, STORAGE, UNIT_ROUNDOFF
from kernels.common.params import ParamSpec, validate_params
from kernels.common.program import Level, Pipe, Program, ProgramBuilder
from kernels.common.tque import Stage, staged_loop

NAME = "vector_add"
DTYPES = ("fp16", "fp32", "bf16", "int16", "int32")
NUMPY_DTYPES = {name: STORAGE[name] for name in DTYPES}
#: the Cast path's two fp32 scratch tiles (a TBuf): bytes per element
SCRATCH_BYTES = 2 * BYTES["fp32"]
#: numerics are checked on at most this many elements / tiles (stated in the result)
VERIFY_ELEMENTS = 1 << 17
VERIFY_TILES = 2048

PARAMS = (
    ParamSpec("n", int, 1 << 22, 1, 1 << 34, unit="elements", log_scale=True),
    ParamSpec("block_dim", int, 48, 1, 128, unit="cores"),
    ParamSpec("tile", int, 8192, 16, 1 << 20, unit="elements", log_scale=True),
    ParamSpec("buffer_num", int, 2, choices=(1, 2)),
    ParamSpec("dtype", str, "fp16", choices=DTYPES),
)


@dataclass(frozen=True)
class Layout:
    """How the n elements fall into tiles and onto cores."""

    n: int
    tile: int
    elem_bytes: int
    n_tiles: int
    tile_core: np.ndarray  # core slot (0..block_dim-1) of each tile
    tile_iter: np.ndarray  # iteration index of the tile within its core

    def tile_elems(self) -> np.ndarray:
        sizes = np.full(self.n_tiles, self.tile, np.int64)
        sizes[-1] = self.n - self.tile * (self.n_tiles - 1)
        return sizes


def layout(params: dict) -> Layout:
    """Contiguous blocks of whole tiles per core (the last tile may be partial)."""
    n, tile, block_dim = params["n"], params["tile"], params["block_dim"]
    n_tiles = -(-n // tile)
    tile_core = (np.arange(n_tiles, dtype=np.int64) * block_dim) // n_tiles
    first = np.searchsorted(tile_core, np.arange(block_dim))
    tile_iter = np.arange(n_tiles) - first[tile_core]
    return Layout(n, tile, elem_bytes(params["dtype"]), n_tiles, tile_core, tile_iter)


def elem_bytes(dtype: str) -> int:
    return BYTES[dtype]


def needs_fp32_compute(chip: Chip, dtype: str) -> bool:
    """True when the vector unit cannot Add this dtype and the kernel must Cast via fp32."""
    return dtype not in chip.vector_dtypes


def ub_bytes_needed(chip: Chip, params: dict) -> int:
    """UB the kernel's queues (x, y, z) x BUFFER_NUM slots plus fp32 scratch occupy."""
    tile_bytes = params["tile"] * elem_bytes(params["dtype"])
    scratch = params["tile"] * SCRATCH_BYTES if needs_fp32_compute(chip, params["dtype"]) else 0
    return 3 * params["buffer_num"] * tile_bytes + scratch


def default_block_dim(chip: Chip) -> int:
    """blockDim when none is given: every vector core (at most the schema's default)."""
    schema = next(spec.default for spec in PARAMS if spec.name == "block_dim")
    return min(len(chip.vector_core_ids()), int(schema))


def check(chip: Chip, params: dict) -> dict:
    """Validated parameters; refuses more cores than the chip has (naming its range, not
    the schema's), tiles that break the 32-byte rule or overflow UB."""
    cores = (len(chip.vector_core_ids()),
             Phrase("refusal.params.vector_cores", chip=chip.display_name))
    p = validate_params(PARAMS, {"block_dim": default_block_dim(chip), **params},
                        limits={"block_dim": cores})
    tile_bytes = p["tile"] * elem_bytes(p["dtype"])
    if tile_bytes % chip.ub_align_bytes:
        step = chip.ub_align_bytes // elem_bytes(p["dtype"])
        raise InputError("params.tile", p["tile"], Phrase(
            "refusal.vector_add.align", step=step, align=chip.ub_align_bytes, dtype=p["dtype"]))
    need = ub_bytes_needed(chip, p)
    if need > chip.ub_bytes:
        fit = largest_tile(chip, p["dtype"], p["buffer_num"])
        raise InputError("params.tile", p["tile"], Phrase(
            "refusal.vector_add.fits_ub", fit=fit, buffers=p["buffer_num"], need=need,
            chip=chip.display_name, ub=chip.ub_bytes))
    return p


def ops_per_tile(chip: Chip, dtype: str) -> int:
    """CopyIn x, CopyIn y, CopyOut z and the compute (Add, or Cast, Cast, Add, Cast)."""
    return 3 + (4 if needs_fp32_compute(chip, dtype) else 1)


def instruction_count(chip: Chip, p: dict) -> int:
    """Instructions of the program, counted without building it: ops per tile x tiles."""
    return ops_per_tile(chip, p["dtype"]) * -(-p["n"] // p["tile"])


def check_size(chip: Chip, p: dict) -> None:
    """Refuse, before any per-tile array exists, an n whose program exceeds the cap (a
    per-run setting, so it is not part of `check`: a valid scenario stays valid)."""
    per_tile, cap = ops_per_tile(chip, p["dtype"]), default_instruction_cap()
    count = instruction_count(chip, p)
    if count > cap:
        raise InputError("instructions", count, instruction_limit_text(cap), Phrase(
            "refusal.hint.vector_add_size", n=f"{p['n']:,}", tile=f"{p['tile']:,}",
            per_tile=per_tile, most=f"{cap // per_tile * p['tile']:,}"))


def largest_tile(chip: Chip, dtype: str, buffer_num: int) -> int:
    """The largest aligned tile whose queues (and fp32 scratch, if any) fit the UB."""
    per_elem = 3 * buffer_num * elem_bytes(dtype) + \
        (SCRATCH_BYTES if needs_fp32_compute(chip, dtype) else 0)
    step = chip.ub_align_bytes // elem_bytes(dtype)
    return chip.ub_bytes // per_elem // step * step


def _compute_stages(chip: Chip, dtype: str, elems: np.ndarray) -> list[Stage]:
    if not needs_fp32_compute(chip, dtype):
        return [Stage.vector("Add", elems, dtype)]
    return [Stage.vector("Cast x->fp32", elems, "fp32"), Stage.vector("Cast y->fp32", elems,
            "fp32"), Stage.vector("Add", elems, "fp32"), Stage.vector("Cast z->" + dtype,
                                                                        elems, "fp32")]


def build(chip: Chip, params: dict) -> Program:
    """Emit the kernel: per tile CopyIn x, CopyIn y, Compute, CopyOut z, with TQue deps."""
    p = check(chip, params)
    check_size(chip, p)
    b = ProgramBuilder(NAME)
    lay = layout(p)  # allocates per tile: only after the instruction cap is checked
    compute = _compute_stages(chip, p["dtype"], lay.tile_elems())
    nbytes = _aligned_bytes(lay, chip.ub_align_bytes)
    cores = np.asarray(chip.vector_core_ids(), np.int64)[lay.tile_core]
    regions = [b.regions(nbytes) for _ in "xyz"]
    stages = [Stage.copy("CopyIn x", Pipe.MTE2, Level.GM, Level.UB, nbytes, regions[0]),
              Stage.copy("CopyIn y", Pipe.MTE2, Level.GM, Level.UB, nbytes, regions[1]),
              *compute,
              Stage.copy("CopyOut z", Pipe.MTE3, Level.UB, Level.GM, nbytes, regions[2])]
    last = len(stages) - 1
    # TQue: inQueueX/inQueueY feed the first compute op, outQueueZ feeds CopyOut.
    y_reader = 2 if len(compute) == 1 else 3  # Add, or "Cast y->fp32"
    queues = [(0, 2, p["buffer_num"]), (1, y_reader, p["buffer_num"]),
              (last - 1, last, p["buffer_num"])]
    staged_loop(b, cores, lay.tile_iter, np.arange(lay.n_tiles), stages, queues)
    return b.build()


def _aligned_bytes(lay: Layout, align: int) -> np.ndarray:
    """Bytes per DataCopy: a partial last tile is padded to the alignment (DataCopyPad)."""
    raw = lay.tile_elems() * lay.elem_bytes
    return -(-raw // align) * align


def verified_tiles(params: dict) -> np.ndarray:
    """Tiles whose values are computed and checked: all when small, else a bounded sample
    of the first tiles plus the (possibly partial) last one."""
    lay = layout(params)
    budget = min(VERIFY_TILES, max(1, VERIFY_ELEMENTS // params["tile"]))
    if lay.n_tiles <= budget:
        return np.arange(lay.n_tiles)
    return np.append(np.arange(budget - 1), lay.n_tiles - 1)


def make_inputs(params: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """x and y for the verified tiles, in the storage dtype, drawn from ``rng``."""
    p = validate_params(PARAMS, params)
    lay = layout(p)
    tiles = verified_tiles(p)
    size = int(lay.tile_elems()[tiles].sum())
    dt, fmt = NUMPY_DTYPES[p["dtype"]], FORMATS[p["dtype"]]
    if fmt.is_integer:
        hi = int(fmt.max_value) // 2
        x, y = (rng.integers(-hi, hi, size).astype(dt) for _ in "xy")
    else:
        x, y = (rng.uniform(-100.0, 100.0, size).astype(dt) for _ in "xy")
    return {"x": x, "y": y, "tiles": tiles}


def _add(x: np.ndarray, y: np.ndarray, dtype: str) -> np.ndarray:
    """One tile's Add in the emulated precision, rounding exactly once per operation."""
    if dtype == "fp16":  # exact sum in float64, then one round-to-nearest-even to fp16
        return (x.astype(np.float64) + y.astype(np.float64)).astype(np.float16)
    if dtype == "bf16":  # Cast to fp32 (exact), fp32 Add, Cast back (round to nearest even)
        return (x.astype(np.float32) + y.astype(np.float32)).astype(STORAGE["bf16"])
    return x + y  # fp32 IEEE add; int16/int32 wrap as the vector unit does


def execute(params: dict, inputs: dict) -> dict[str, np.ndarray]:
    """Run the kernel's arithmetic tile by tile, in the order the cores process them."""
    p = validate_params(PARAMS, params)
    sizes = layout(p).tile_elems()[inputs["tiles"]]
    z = np.empty_like(inputs["x"])
    offset = 0
    for size in sizes:
        sl = slice(offset, offset + int(size))
        z[sl] = _add(inputs["x"][sl], inputs["y"][sl], p["dtype"])
        offset += int(size)
    return {"z": z}


def reference(inputs: dict) -> dict[str, np.ndarray]:
    """z in float64 (exact for every supported dtype's inputs)."""
    return {"z": inputs["x"].astype(np.float64) + inputs["y"].astype(np.float64)}


def unit_roundoff(params: dict) -> float:
    """Error bound relative to |z|: one rounding to the dtype (bf16: after the fp32 add of
    ``_add``, so fp32's u as well); integers are exact (0)."""
    dtype = params["dtype"]
    return FORMATS[dtype].unit_roundoff + (UNIT_ROUNDOFF["fp32"] if dtype == "bf16" else 0.0)


def error_bound(params: dict, inputs: dict, ref: np.ndarray) -> np.ndarray:
    """Allowed |z - ref| per element: one rounding of the exact sum."""
    return unit_roundoff(params) * np.abs(ref)


def output_elements(params: dict) -> int:
    return int(params["n"])

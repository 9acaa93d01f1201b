"""GEMM parameters, the default tiling a careful Ascend C author would pick, and the
capacity checks that refuse a tiling the buffers cannot hold (saying what would fit)."""
from __future__ import annotations

from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.common.budget import default_instruction_cap, instruction_limit_text
from kernels.common.formats import BYTES
from kernels.common.params import ParamSpec, validate_params
from kernels.common.sizes import ceil_div
from kernels.gemm.grid import BALANCES, POLICIES

#: the input and output precisions (widget order), bytes per element from the formats table
IN_BYTES = {name: BYTES[name] for name in ("fp16", "bf16", "fp32", "hf32", "int8")}
OUT_BYTES = {name: BYTES[name] for name in ("fp16", "bf16", "fp32", "int32", "int8")}
ACC_BYTES = BYTES["fp32"]  # L0C accumulates in fp32 / int32 (the same width); bias is fp32
SPARSITY = ("dense", "4:2", "2:4")

PARAMS = (
    ParamSpec("M", int, 4096, 1, 65536, unit="rows"),
    ParamSpec("N", int, 4096, 1, 65536, unit="columns"),
    ParamSpec("K", int, 4096, 1, 65536, unit="elements"),
    ParamSpec("dtype_in", str, "fp16", choices=tuple(IN_BYTES)),
    ParamSpec("dtype_out", str, "fp16", choices=tuple(OUT_BYTES)),
    ParamSpec("bias", bool, False),
    ParamSpec("quant_scale", float, 0.01, 1e-6, 1e6),
    ParamSpec("base_m", int, 128, 16, 1024, unit="rows"),
    ParamSpec("base_n", int, 256, 16, 1024, unit="columns"),
    ParamSpec("base_k", int, 64, 16, 1024, unit="elements"),
    ParamSpec("depth_k", int, 4, 1, 64, unit="K steps per L1 load"),
    ParamSpec("db_l1", bool, True),
    ParamSpec("db_l0", bool, True),
    ParamSpec("db_l0c", bool, False),
    ParamSpec("grid_x", int, 0, 0, 65536, unit="tasks (0 = one per base tile)"),
    ParamSpec("grid_y", int, 0, 0, 65536, unit="tasks (0 = one per base tile)"),
    ParamSpec("grid_z", int, 1, 1, 64, unit="split-K factor"),
    ParamSpec("split_k_mode", str, "workspace", choices=("workspace", "atomic")),
    ParamSpec("policy", str, "swizzle", choices=POLICIES),
    ParamSpec("group", int, 4, 1, 64, unit="panels"),
    ParamSpec("balance", str, "round_robin", choices=BALANCES),
    ParamSpec("block_dim", int, 24, 1, 256, unit="cube cores"),
    ParamSpec("sparsity", str, "dense", choices=SPARSITY),
)


def default_base_k(dtype_in: str) -> int:
    """base_k that keeps L0B double-buffered with base_n = 256: 64 for 2-byte inputs,
    32 for fp32/hf32, 128 for int8 (one 32 KiB L0B buffer each)."""
    return 32 * 1024 // (256 * IN_BYTES[dtype_in])



def l1_bytes_needed(p: dict) -> int:
    """A and B chunks of depth_k K steps (B compressed when sparse) per L1 buffer, + bias."""
    chunk_k = p["depth_k"] * p["base_k"]
    b_bytes = b_tile_bytes(p, chunk_k, p["base_n"])
    per_slot = p["base_m"] * chunk_k * IN_BYTES[p["dtype_in"]] + b_bytes
    return per_slot * (2 if p["db_l1"] else 1) + (p["base_n"] * ACC_BYTES if p["bias"] else 0)


def b_tile_bytes(p: dict, k: int, n: int) -> int:
    """Bytes of a k x n block of B as stored: dense, or half the values plus 2-bit indices."""
    if p["sparsity"] == "dense":
        return k * n * IN_BYTES[p["dtype_in"]]
    kept = ceil_div(k, 2) * n
    return kept * IN_BYTES[p["dtype_in"]] + ceil_div(kept * 2, 8)


def _check_support(chip: Chip, p: dict) -> None:
    if p["dtype_in"] not in chip.cube_precisions:
        raise InputError("params.dtype_in", p["dtype_in"], "one of "
                         f"{', '.join(chip.cube_precisions)} (the {chip.display_name} cube)")
    if p["dtype_out"] == "int32" and p["dtype_in"] != "int8":
        raise InputError("params.dtype_out", "int32", "int32 output needs int8 inputs")
    if p["dtype_out"] == "bf16" and "bf16" not in chip.cube_precisions:
        raise InputError("params.dtype_out", "bf16", f"fp16, fp32 or int8 on {chip.display_name}")
    if p["sparsity"] == "4:2" and (p["dtype_in"] != "int8" or chip.architecture != "split"):
        raise InputError("params.sparsity", "4:2", "MmadWithSparse exists for int8 x int8 on "
                         "910B (split) chips only; use dense, or the 2:4 what-if for fp16/bf16")
    if p["sparsity"] == "2:4" and p["dtype_in"] not in ("fp16", "bf16"):
        raise InputError("params.sparsity", "2:4", "the 2:4 what-if takes fp16 or bf16 inputs")
    if p["grid_z"] > 1 and p["split_k_mode"] == "atomic" and p["dtype_out"] in ("int8",):
        raise InputError("params.split_k_mode", "atomic", "workspace for int8 outputs "
                         "(quantised partials cannot be added)")


def _check_shapes(chip: Chip, p: dict) -> None:
    k0 = _k_step(chip, p)
    for key, step in (("base_m", chip.cube_m0), ("base_n", chip.cube_n0), ("base_k", k0)):
        if p[key] % step:
            sparse = ", sparse" if k0 > chip.cube_k0(p["dtype_in"]) else ""
            raise InputError(f"params.{key}", p[key], f"a multiple of {step} (cube fractal "
                             f"for {p['dtype_in']}{sparse})")
    cores = len(chip.cube_core_ids())
    if p["block_dim"] > cores:
        raise InputError("params.block_dim", p["block_dim"], f"1 to {cores} (cube cores of "
                         f"{chip.display_name})")
    for key, dim, base in (("grid_x", "M", "base_m"), ("grid_y", "N", "base_n")):
        most = ceil_div(p[dim], p[base])
        if p[key] > most:
            raise InputError(f"params.{key}", p[key], f"0 (auto) to {most}: {dim} / {base}")
    if p["grid_z"] > ceil_div(p["K"], p["base_k"]):
        raise InputError("params.grid_z", p["grid_z"], f"1 to {ceil_div(p['K'], p['base_k'])}: "
                         "each split needs at least one K step (K / base_k)")


def buffer_use(chip: Chip, p: dict) -> dict[str, tuple[int, int, str, int]]:
    """Per on-chip buffer: (bytes this tiling needs, bytes the chip has, the knob that
    sizes it, buffer count). The capacity check and the page's occupancy bars both use it."""
    ib = IN_BYTES[p["dtype_in"]]
    l0, l0c, l1 = (2 if p[name] else 1 for name in ("db_l0", "db_l0c", "db_l1"))
    use = {
        "L0A": (p["base_m"] * p["base_k"] * ib * l0, chip.l0a_bytes, "base_k", l0),
        "L0B": (b_tile_bytes(p, p["base_k"], p["base_n"]) * l0, chip.l0b_bytes, "base_k", l0),
        "L0C": (p["base_m"] * p["base_n"] * ACC_BYTES * l0c, chip.l0c_bytes, "base_n", l0c),
        "L1": (l1_bytes_needed(p), chip.l1_bytes, "depth_k", l1),
    }
    if chip.architecture == "coupled":  # L0C -> UB (fp32) -> GM: one C tile in UB
        use["UB"] = (p["base_m"] * p["base_n"] * ACC_BYTES, chip.ub_bytes, "base_n", 1)
    return use


def instruction_count(p: dict) -> int:
    """Instructions of the K loop and the output path, counted without building anything:
    a huge shape is refused before per-step arrays are allocated."""
    tiles = ceil_div(p["M"], p["base_m"]) * ceil_div(p["N"], p["base_n"])
    bk, depth = p["base_k"], p["depth_k"]
    kz = ceil_div(ceil_div(p["K"], p["grid_z"]), bk) * bk
    layers = ceil_div(p["K"], kz)
    last = p["K"] - (layers - 1) * kz
    steps = (layers - 1) * (kz // bk) + ceil_div(last, bk)
    chunks = (layers - 1) * ceil_div(kz // bk, depth) + ceil_div(ceil_div(last, bk), depth)
    return 3 * tiles * (steps + chunks + layers)


def check_size(p: dict) -> None:
    """Refuse, before any per-step array exists, a shape whose program exceeds the cap (a
    per-run setting, so it is not part of `check`: a valid scenario stays valid)."""
    count, cap = instruction_count(p), default_instruction_cap()
    if count > cap:
        raise InputError("instructions", count, instruction_limit_text(cap),
                         f"M x N x K = {p['M']} x {p['N']} x {p['K']} in {p['base_m']} x "
                         f"{p['base_n']} x {p['base_k']} base tiles; use larger base tiles "
                         "or a smaller problem")


def _overflow(chip: Chip, p: dict) -> tuple[str, int, int, str] | None:
    """The first buffer the tiling overflows, or None when everything fits."""
    for buffer, (used, limit, knob, _) in buffer_use(chip, p).items():
        if used > limit:
            return buffer, used, limit, knob
    return None


def _largest_fit(chip: Chip, p: dict, knob: str) -> int | None:
    """The largest value of ``knob`` (on its fractal step, at most the requested one) with
    which every buffer fits, all other parameters unchanged; None if even the smallest fails."""
    step = 1 if knob == "depth_k" else (_k_step(chip, p) if knob == "base_k" else 16)
    lowest = -(-int(next(s.min for s in PARAMS if s.name == knob)) // step) * step
    for value in range(p[knob] // step * step, lowest - 1, -step):
        if _overflow(chip, {**p, knob: value}) is None:
            return value
    return None


def _k_step(chip: Chip, p: dict) -> int:
    return chip.cube_k0(p["dtype_in"]) * (2 if p["sparsity"] != "dense" else 1)


def _check_capacity(chip: Chip, p: dict) -> None:
    """Each buffer holds its tiles times its buffer count, or the tiling is refused with
    the largest value of the knob that would fit (checked against every buffer)."""
    over = _overflow(chip, p)
    if over is None:
        return
    buffer, used, limit, knob = over
    fit = _largest_fit(chip, p, knob)
    allowed = f"at most {fit} here" if fit else "no value fits with the other settings"
    raise InputError(f"params.{knob}", p[knob], f"{allowed}: {buffer} holds {limit} bytes, "
                     f"this tiling needs {used}", "turn off double buffering or use a smaller "
                     "tile")


def check(chip: Chip, params: dict) -> dict:
    """Validated parameters with chip-dependent defaults (block_dim = all cube cores,
    base_k from the input precision) filled in; refuses what the chip cannot run."""
    dtype_in = params.get("dtype_in", "fp16")  # not validated yet: may be any value
    defaults = {"block_dim": len(chip.cube_core_ids()),
                "base_k": default_base_k(dtype_in) if isinstance(dtype_in, str) and
                dtype_in in IN_BYTES else 64}
    p = validate_params(PARAMS, {**defaults, **params})
    _check_support(chip, p)
    _check_shapes(chip, p)
    _check_capacity(chip, p)
    if p["grid_z"] > 1 and p["split_k_mode"] == "atomic" and p["balance"] != "round_robin":
        raise InputError("params.balance", p["balance"], "round_robin with atomic split-K: "
                         "the atomic adds to a tile are ordered by partial, which is only "
                         "safe when its partials run in the same wave",
                         hint="Use the workspace split-K, or round_robin")
    return p

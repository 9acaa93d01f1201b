"""The chip record: `Provenance` and the frozen, hashable `Chip` with its derived figures.

A `Chip` stores only what a preset file states (every number with its provenance). Peak
TFLOPS, ridge points, core lists and byte sizes are computed from those numbers on demand,
never stored twice, so an override of one field can never leave a stale derived figure.
Validation lives in `validate.py`; every `Chip` in circulation has passed it.
"""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field, fields

from .errors import InputError, Phrase
from .fields import CUBE_PRECISIONS, FIELDS, PRECISION_BYTES, STATUSES


@dataclass(frozen=True)
class Provenance:
    """Where one number comes from: source document, status, confidence H/M/L and a note.

    ``note_zh`` is the note in Simplified Chinese. It is optional (a user's own chip file or
    an override has none), so readers ask `note_in` and get the English note instead. The
    source stays as written in every language: it is a document's title.
    """

    source: str
    status: str  # published | announced | derived | estimated | override
    confidence: str  # H | M | L
    note: str = ""
    note_zh: str = ""

    def note_in(self, lang: str) -> str:
        """The note in ``lang`` ("en" or "zh"): ``note_zh`` in Chinese when the file gives
        one, else the English note."""
        return in_language(self.note, self.note_zh, lang)


def in_language(english: str, chinese: str, lang: str) -> str:
    """``chinese`` for ``lang == "zh"`` when it is given (not blank), else ``english``.

    The one fallback rule for every text a data file states in both languages."""
    return chinese if lang == "zh" and chinese.strip() else english


@dataclass(frozen=True)
class Chip:
    """One Ascend chip: identity, every numeric field of `FIELDS`, and their provenance."""

    name: str
    display_name: str
    architecture: str  # "split" (910B: AIC + AIV) or "coupled" (910, 310P: AI cores)
    vector_dtypes: tuple[str, ...]
    description: str
    description_zh: str  # "" when the file gives none; see `description_in`
    # cores
    ai_cores: int
    vector_cores: int
    clock_MHz: int
    vector_clock_MHz: int
    cluster_size: int
    # memory
    l1_KiB: int
    l0a_KiB: int
    l0b_KiB: int
    l0c_KiB: int
    ub_KiB: int
    ub_reserved_bytes: int
    l2_MiB: int
    hbm_GiB: int
    hbm_bandwidth_GBps: float
    l2_bandwidth_GBps: float
    ub_align_bytes: int
    l1_align_bytes: int
    l0ab_align_bytes: int
    l0c_align_bytes: int
    # cube
    cube_m0: int
    cube_n0: int
    cube_k0_fp16: int
    cube_k0_bf16: int
    cube_k0_int8: int
    cube_k0_int4: int
    cube_k0_fp32: int
    cube_k0_hf32: int
    cube_k0_fp8_e4m3: int
    cube_k0_fp8_e5m2: int
    cube_k0_hif8: int
    cube_k0_mxfp8: int
    cube_k0_mxfp4: int
    cube_sparse_42: int
    cube_fixed_cycles: int
    # vector
    vector_bytes_per_cycle: float
    vector_fixed_cycles: int
    vector_special_elems_per_cycle: float
    vector_sort_cycles_per_repeat: float
    # transfer (bytes per cycle of the core's own clock)
    mte1_l0a_bytes_per_cycle: float
    mte1_l0b_bytes_per_cycle: float
    mte1_fixed_cycles: int
    fixpipe_l1_bytes_per_cycle: float
    fixpipe_gm_bytes_per_cycle: float
    fixpipe_fixed_cycles: int
    gm_read_hbm_bytes_per_cycle: float
    gm_read_l2_bytes_per_cycle: float
    gm_read_l1_bytes_per_cycle: float
    gm_write_bytes_per_cycle: float
    dma_burst_bytes: int
    gm_read_issue_cycles: float
    gm_read_burst_cycles: float
    gm_read_latency_cycles: int
    gm_read_max_outstanding: int
    gm_write_issue_cycles: float
    gm_write_burst_cycles: float
    gm_write_latency_cycles: int
    gm_write_max_outstanding: int
    fixpipe_gm_issue_cycles: float
    fixpipe_gm_burst_cycles: float
    fixpipe_gm_latency_cycles: int
    fixpipe_gm_max_outstanding: int
    ub_copy_bytes_per_cycle: float
    sync_all_cycles: int
    # package
    package_devices: int
    package_dies: int
    die_to_die_GBps: float
    # (key, Provenance) for every key of FIELDS, in FIELDS order
    provenance: tuple[tuple[str, Provenance], ...]
    # where the numbers were read from ("910B2.toml", "my_chip.toml"); names error messages
    origin: str = field(default="", compare=False)

    # ---- plain access -------------------------------------------------------------------
    def description_in(self, lang: str) -> str:
        """The description in ``lang``, falling back to English (see `in_language`)."""
        return in_language(self.description, self.description_zh, lang)

    def values(self) -> dict[str, int | float]:
        """Every numeric field as {key: value}, in FIELDS order."""
        return {k: getattr(self, k) for k in FIELDS}

    def provenance_of(self, key: str) -> Provenance:
        """The provenance of one numeric field."""
        return dict(self.provenance)[_known_key(key, self.name)]

    def status_counts(self) -> dict[str, int]:
        """How many fields have each provenance status, in STATUSES order (absent ones left
        out): the one-line answer to "how much of this chip is published?"."""
        counts = Counter(p.status for _, p in self.provenance)
        return {s: counts[s] for s in STATUSES if counts[s]}

    @property
    def overridden(self) -> dict[str, int | float]:
        """The fields whose value is a user override, as {key: value}."""
        return {k: getattr(self, k) for k, p in self.provenance if p.status == "override"}

    def with_overrides(self, **overrides: int | float) -> Chip:
        """A new validated chip with some fields changed; their provenance becomes "override".

        On a split chip, overriding ``ai_cores`` alone sets ``vector_cores`` to twice it;
        ``vector_clock_MHz`` follows ``clock_MHz`` when the two were equal.
        """
        from .validate import apply_overrides  # validate imports this module

        return apply_overrides(self, overrides)

    def to_toml(self) -> str:
        """This chip as a TOML document in the preset schema (loads back to an equal chip)."""
        from .loader import dump_toml

        return dump_toml(self)

    # ---- compute peaks ------------------------------------------------------------------
    @property
    def cube_precisions(self) -> tuple[str, ...]:
        """Cube precisions this chip offers (k0 > 0), in CUBE_PRECISIONS order."""
        return tuple(p for p in CUBE_PRECISIONS if getattr(self, f"cube_k0_{p}") > 0)

    def cube_k0(self, precision: str) -> int:
        """The cube's k0 (elements of K per fractal) for a precision this chip offers."""
        if precision not in self.cube_precisions:
            raise InputError(f"{self.display_name}: cube precision", precision,
                             Phrase("refusal.one_of", options=", ".join(self.cube_precisions)),
                             hint=Phrase("refusal.chip.no_cube_mode", chip=self.display_name,
                                         precision=precision))
        return getattr(self, f"cube_k0_{precision}")

    def cube_macs_per_cycle(self, precision: str) -> int:
        """Multiply-accumulates one cube core does per cycle (m0 x n0 x k0)."""
        return self.cube_m0 * self.cube_n0 * self.cube_k0(precision)

    def peak_tflops(self, precision: str = "fp16") -> float:
        """Whole-chip cube peak: ai_cores x m0 x n0 x k0 x 2 flop x clock, in TFLOPS."""
        macs = self.cube_macs_per_cycle(precision)
        return self.ai_cores * macs * 2 * self.clock_MHz * 1e6 / 1e12

    def peak_tflops_table(self) -> dict[str, float]:
        """{precision: peak TFLOPS} for every cube precision of the chip."""
        return {p: self.peak_tflops(p) for p in self.cube_precisions}

    def vector_units(self) -> tuple[tuple[int, int], ...]:
        """(count, clock MHz) groups of vector units that run elementwise work."""
        if self.architecture == "split":
            return ((self.vector_cores, self.vector_clock_MHz),)
        units = [(self.ai_cores, self.clock_MHz)]
        if self.vector_cores:
            units.append((self.vector_cores, self.vector_clock_MHz))
        return tuple(units)

    def vector_peak_gops(self, dtype: str = "fp16") -> float:
        """Whole-chip elementwise peak for simple ops (add, mul, max...) in G elements/s."""
        if dtype not in self.vector_dtypes:
            raise InputError(f"{self.display_name}: vector dtype", dtype,
                             Phrase("refusal.one_of", options=", ".join(self.vector_dtypes)))
        per_cycle = self.vector_bytes_per_cycle / PRECISION_BYTES[dtype]
        return sum(n * per_cycle * mhz / 1e3 for n, mhz in self.vector_units())

    # ---- bandwidths ---------------------------------------------------------------------
    @property
    def hbm_bytes_per_ns(self) -> float:
        """HBM bandwidth in bytes per ns (numerically equal to GB/s)."""
        return float(self.hbm_bandwidth_GBps)

    @property
    def l2_bytes_per_ns(self) -> float:
        """Whole-chip L2 hit bandwidth in bytes per ns."""
        return float(self.l2_bandwidth_GBps)

    def ridge_point(self, precision: str = "fp16", level: str = "hbm") -> float:
        """Roofline ridge point in flop/byte: cube peak over HBM (or L2) bandwidth."""
        if level not in ("hbm", "l2"):
            raise InputError(f"{self.display_name}: ridge_point level", level,
                             Phrase("refusal.either", first="'hbm'", second="'l2'"))
        bw = self.hbm_bytes_per_ns if level == "hbm" else self.l2_bytes_per_ns
        return self.peak_tflops(precision) * 1e3 / bw

    # ---- cores --------------------------------------------------------------------------
    @property
    def num_cores(self) -> int:
        """All cores of the chip (cube/AI cores plus vector cores)."""
        return self.ai_cores + self.vector_cores

    @property
    def has_fixpipe(self) -> bool:
        """Only split (910B) cube cores have the fixpipe L0C -> GM/L1 path."""
        return self.architecture == "split"

    def core_kinds(self) -> tuple[str, ...]:
        """Kind of every global core id: AIC/AIV on split chips, AICORE/VECTOR on coupled."""
        return _core_layout(self.architecture, self.ai_cores, self.vector_cores)[0]

    def core_names(self) -> tuple[str, ...]:
        """Display name of every global core id ("AIC0", "AIV3", "AICore2", "VecCore0")."""
        return _core_layout(self.architecture, self.ai_cores, self.vector_cores)[1]

    def core_clocks_MHz(self) -> tuple[int, ...]:
        """Clock of every global core id in MHz."""
        return tuple(self.clock_MHz if i < self.ai_cores else self.vector_clock_MHz
                     for i in range(self.num_cores))

    def cube_core_ids(self) -> tuple[int, ...]:
        """Global ids of the cores with a cube unit (AICs, or the AI cores)."""
        return tuple(range(self.ai_cores))

    def vector_core_ids(self) -> tuple[int, ...]:
        """Global ids where a vector kernel runs: the AIVs on split, the AI cores on coupled."""
        if self.architecture == "split":
            return tuple(range(self.ai_cores, self.num_cores))
        return tuple(range(self.ai_cores))

    # ---- byte sizes used by kernels -----------------------------------------------------
    @property
    def ub_bytes(self) -> int:
        """Usable UB bytes per vector core: ub_KiB x 1024 minus the runtime's reserve."""
        return self.ub_KiB * 1024 - self.ub_reserved_bytes

    @property
    def l1_bytes(self) -> int:
        return self.l1_KiB * 1024

    @property
    def l0a_bytes(self) -> int:
        return self.l0a_KiB * 1024

    @property
    def l0b_bytes(self) -> int:
        return self.l0b_KiB * 1024

    @property
    def l0c_bytes(self) -> int:
        return self.l0c_KiB * 1024

    @property
    def l2_bytes(self) -> int:
        return self.l2_MiB * 1024 * 1024

    @property
    def hbm_bytes(self) -> int:
        return self.hbm_GiB * 1024 ** 3

    # ---- the package: devices x what one kernel sees -----------------------------------
    def package_total(self, key: str) -> int | float:
        """A per-device count or rate (ai_cores, vector_cores, hbm_GiB, hbm_bandwidth_GBps)
        summed over the package's devices; never stored, so never out of step."""
        if key not in PACKAGE_TOTALS:
            raise InputError(f"{self.name}: package total", key,
                             Phrase("refusal.one_of", options=", ".join(PACKAGE_TOTALS)))
        return self.package_devices * getattr(self, key)

    def package_peak_tflops(self, precision: str = "fp16") -> float:
        """The package's cube peak: its devices' peaks summed (a kernel gets one of them)."""
        return self.package_devices * self.peak_tflops(precision)


@functools.lru_cache(maxsize=64)
def _core_layout(arch: str, ai: int, vec: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if arch == "split":
        kinds, prefixes = ("AIC", "AIV"), ("AIC", "AIV")
    else:
        kinds, prefixes = ("AICORE", "VECTOR"), ("AICore", "VecCore")
    kind = (kinds[0],) * ai + (kinds[1],) * vec
    names = tuple(f"{prefixes[0]}{i}" for i in range(ai)) + tuple(
        f"{prefixes[1]}{i}" for i in range(vec))
    return kind, names


def _known_key(key: str, chip_name: str) -> str:
    if key not in FIELDS:
        raise InputError(f"{chip_name}: field", key,
                         Phrase("refusal.chip.fields_key", names=", ".join(FIELDS)))
    return key


NUMERIC_ATTRS = tuple(f.name for f in fields(Chip) if f.name in FIELDS)
#: the per-device figures `Chip.package_total` sums over a package's devices
PACKAGE_TOTALS = ("ai_cores", "vector_cores", "hbm_GiB", "hbm_bandwidth_GBps")

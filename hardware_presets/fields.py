"""The table of numeric chip fields: key, section, unit, type, range and widget step.

Every preset TOML key, every `Chip` attribute and every UI widget for a chip number comes
from this one ordered table, so that the three can never disagree. Ranges are sanity
bounds for what-if tuning, not claims about real hardware; 0 is allowed only where it
means "the chip lacks this" (say, a cube precision or the fixpipe of a coupled core).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import Phrase

SECTIONS = ("cores", "memory", "cube", "vector", "transfer", "package")
META_KEYS = ("name", "display_name", "architecture", "vector_dtypes", "description",
             "description_zh")
#: texts a file may give in Simplified Chinese too; without them the English stands in
OPTIONAL_META_KEYS = ("description_zh",)
ARCHITECTURES = ("split", "coupled")
#: "announced": stated by the vendor at a launch event or on a roadmap, in no product
#: document or file; a value derived from announced inputs is "derived" and says so
STATUSES = ("published", "announced", "derived", "estimated", "override")
FILE_STATUSES = STATUSES  # a user's file saved after overrides keeps "override"
CONFIDENCES = ("H", "M", "L")
PROVENANCE_PARTS = ("value", "source", "status", "confidence", "note", "note_zh")

# Bytes per element of every precision name used across the project. The microscaling
# formats (OCP MX: one E8M0 scale byte shared by a block of 32 elements) count their
# element plus its 1/32 share of the scale: mxfp8 = E4M3 + 1/32 B, mxfp4 = E2M1 + 1/32 B.
MX_BLOCK = 32
PRECISION_BYTES: dict[str, float] = {
    "fp16": 2, "bf16": 2, "fp32": 4, "hf32": 4, "int8": 1, "int4": 0.5, "int16": 2, "int32": 4,
    "fp8_e4m3": 1, "fp8_e5m2": 1, "hif8": 1, "mxfp8": 1 + 1 / MX_BLOCK,
    "mxfp4": 0.5 + 1 / MX_BLOCK,
}
# Cube precisions in display order; each has a `cube_k0_<name>` field.
CUBE_PRECISIONS = ("fp16", "bf16", "int8", "int4", "fp32", "hf32",
                   "fp8_e4m3", "fp8_e5m2", "hif8", "mxfp8", "mxfp4")
#: cube precisions added after the schema's first files: a chip file of one's own written
#: before them may leave their k0 out, which reads as 0 (the cube lacks the precision)
LATER_CUBE_PRECISIONS = ("fp8_e4m3", "fp8_e5m2", "hif8", "mxfp8", "mxfp4")
# Element types a vector unit may list in `vector_dtypes`.
VECTOR_DTYPES = ("fp16", "bf16", "fp32", "int8", "int16", "int32")
#: a unit in words -> the message id of its name in a refusal (units such as KiB stay)
UNIT_IDS = {"bytes": "refusal.unit.bytes", "columns": "refusal.unit.columns",
            "copies": "refusal.unit.copies", "cores": "refusal.unit.cores",
            "cycles": "refusal.unit.cycles", "cycles/burst": "refusal.unit.cycles_burst",
            "cycles/repeat": "refusal.unit.cycles_repeat", "elements": "refusal.unit.elements",
            "elements/cycle": "refusal.unit.elements_cycle", "rows": "refusal.unit.rows",
            "layers": "refusal.unit.layers", "heads": "refusal.unit.heads",
            "tokens": "refusal.unit.tokens", "billion parameters": "refusal.unit.billion_params",
            "dies": "refusal.unit.dies", "devices": "refusal.unit.devices",
            "flag": "refusal.unit.flag"}
#: what 0 stands for (FieldSpec.zero_means) -> the message id of its words in a refusal
ZERO_IDS = {"no fixpipe (coupled cores)": "refusal.zero.no_fixpipe",
            "the cube lacks this precision": "refusal.zero.no_precision",
            "no standalone vector cores": "refusal.zero.no_vector_cores",
            "not given": "refusal.zero.not_given",
            "no 4:2 sparse MMAD (MmadWithSparse)": "refusal.zero.no_sparse_mmad"}


def unit_words(unit: str) -> str:
    """A unit as a refusal says it: a `Phrase` for a unit in words, else the unit."""
    return Phrase(UNIT_IDS[unit]) if unit in UNIT_IDS else unit


@dataclass(frozen=True)
class FieldSpec:
    """One numeric chip field: where it lives, its unit, its type and its allowed range."""

    key: str
    section: str
    unit: str
    kind: type  # int or float
    min: float
    max: float
    tunable: bool
    step: float
    zero_means: str = ""  # what 0 stands for where 0 is allowed ("" = 0 is just a number)
    #: where 0 means "absent", the smallest value that means "present" (a bandwidth of
    #: 1e-227 B/cycle is not a chip, and its copies would end after 10^230 ns)
    min_present: float = 0.0

    @property
    def label_id(self) -> str:
        """Message id of the field's label in the translation catalogues."""
        return f"field.{self.key}.label"

    @property
    def help_id(self) -> str:
        """Message id of the field's one-line help in the translation catalogues."""
        return f"field.{self.key}.help"

    def allowed(self) -> Phrase:
        """The allowed range in words, as error messages print it (a `Phrase`)."""
        whole = self.kind is int
        unit = unit_words(self.unit)
        zero = Phrase(ZERO_IDS[self.zero_means]) if self.zero_means in ZERO_IDS else \
            self.zero_means
        if self.min_present:
            return Phrase("refusal.field.int_present" if whole else
                          "refusal.field.number_present", zero=zero,
                          low=f"{self.min_present:g}", high=f"{self.max:g}", unit=unit)
        text = Phrase("refusal.field.int_range" if whole else "refusal.field.number_range",
                      low=f"{self.min:g}", high=f"{self.max:g}", unit=unit)
        return Phrase("refusal.field.zero_means", range=text, zero=zero) if self.zero_means \
            else text


def _f(key, section, unit, kind, lo, hi, tunable, step, zero_means="", min_present=0.0):
    return FieldSpec(key, section, unit, kind, lo, hi, tunable, step, zero_means, min_present)


_NO_FIXPIPE = "no fixpipe (coupled cores)"
_NO_PRECISION = "the cube lacks this precision"
_NO_SPARSE = "no 4:2 sparse MMAD (MmadWithSparse)"


def _dma_path(prefix: str, zero_means: str = "") -> tuple[FieldSpec, ...]:
    """The four numbers of one DMA path's queue (DESIGN.md §4 rule 1)."""
    lo = 0 if zero_means else 1  # 0 only where the chip lacks the path
    return (_f(f"{prefix}_issue_cycles", "transfer", "cycles", float, 0, 10_000, True, 1,
               zero_means),
            _f(f"{prefix}_burst_cycles", "transfer", "cycles/burst", float, 0, 1000, True,
               0.25, zero_means),
            _f(f"{prefix}_latency_cycles", "transfer", "cycles", int, 0, 100_000, True, 10,
               zero_means),
            _f(f"{prefix}_max_outstanding", "transfer", "copies", int, lo, 256, True, 1,
               zero_means))

FIELDS: dict[str, FieldSpec] = {s.key: s for s in (
    # cores
    _f("ai_cores", "cores", "cores", int, 1, 64, True, 1),
    _f("vector_cores", "cores", "cores", int, 0, 128, True, 1, "no standalone vector cores"),
    _f("clock_MHz", "cores", "MHz", int, 100, 3000, True, 10),
    _f("vector_clock_MHz", "cores", "MHz", int, 100, 3000, True, 10),
    _f("cluster_size", "cores", "cores", int, 1, 64, True, 1),
    # memory
    _f("l1_KiB", "memory", "KiB", int, 1, 8192, True, 32),
    _f("l0a_KiB", "memory", "KiB", int, 1, 1024, True, 16),
    _f("l0b_KiB", "memory", "KiB", int, 1, 1024, True, 16),
    _f("l0c_KiB", "memory", "KiB", int, 1, 2048, True, 16),
    _f("ub_KiB", "memory", "KiB", int, 1, 4096, True, 16),
    _f("ub_reserved_bytes", "memory", "bytes", int, 0, 65536, False, 32),
    _f("l2_MiB", "memory", "MiB", int, 1, 1024, True, 8),
    _f("hbm_GiB", "memory", "GiB", int, 1, 1024, True, 8),
    _f("hbm_bandwidth_GBps", "memory", "GB/s", float, 1, 100_000, True, 50),
    _f("l2_bandwidth_GBps", "memory", "GB/s", float, 1, 1_000_000, True, 100),
    _f("ub_align_bytes", "memory", "bytes", int, 1, 4096, False, 1),
    _f("l1_align_bytes", "memory", "bytes", int, 1, 4096, False, 1),
    _f("l0ab_align_bytes", "memory", "bytes", int, 1, 4096, False, 1),
    _f("l0c_align_bytes", "memory", "bytes", int, 1, 4096, False, 1),
    # cube
    _f("cube_m0", "cube", "rows", int, 1, 64, False, 1),
    _f("cube_n0", "cube", "columns", int, 1, 64, False, 1),
    *(_f(f"cube_k0_{p}", "cube", "elements", int, 0, 256, False, 4, _NO_PRECISION)
      for p in CUBE_PRECISIONS),
    # a feature, not a precision: 1 where the cube runs MmadWithSparse (int8, 4:2 on B)
    _f("cube_sparse_42", "cube", "flag", int, 0, 1, False, 1, _NO_SPARSE),
    _f("cube_fixed_cycles", "cube", "cycles", int, 0, 10_000, True, 1),
    # vector
    _f("vector_bytes_per_cycle", "vector", "B/cycle", float, 1, 65536, True, 32),
    _f("vector_fixed_cycles", "vector", "cycles", int, 0, 10_000, True, 1),
    _f("vector_special_elems_per_cycle", "vector", "elements/cycle", float, 1, 65536, True, 1),
    _f("vector_sort_cycles_per_repeat", "vector", "cycles/repeat", float, 1, 1024, True, 1),
    # transfer (bytes per cycle of the core's own clock)
    _f("mte1_l0a_bytes_per_cycle", "transfer", "B/cycle", float, 1, 65536, True, 16),
    _f("mte1_l0b_bytes_per_cycle", "transfer", "B/cycle", float, 1, 65536, True, 16),
    _f("mte1_fixed_cycles", "transfer", "cycles", int, 0, 10_000, True, 1),
    _f("fixpipe_l1_bytes_per_cycle", "transfer", "B/cycle", float, 0, 65536, True, 8, _NO_FIXPIPE,
       1),
    _f("fixpipe_gm_bytes_per_cycle", "transfer", "B/cycle", float, 0, 65536, True, 8, _NO_FIXPIPE,
       1),
    _f("fixpipe_fixed_cycles", "transfer", "cycles", int, 0, 100_000, True, 1, _NO_FIXPIPE),
    _f("gm_read_hbm_bytes_per_cycle", "transfer", "B/cycle", float, 1, 65536, True, 8),
    _f("gm_read_l2_bytes_per_cycle", "transfer", "B/cycle", float, 1, 65536, True, 8),
    _f("gm_read_l1_bytes_per_cycle", "transfer", "B/cycle", float, 1, 65536, True, 8),
    _f("gm_write_bytes_per_cycle", "transfer", "B/cycle", float, 1, 65536, True, 8),
    # DMA queues (MTE2 reads, MTE3 writes, fixpipe L0C -> GM): a copy holds its pipe for
    # issue_cycles + burst_cycles per dma_burst_bytes, then is in flight for latency_cycles
    # before its bytes stream; at most max_outstanding copies per pipe are in flight.
    _f("dma_burst_bytes", "transfer", "bytes", int, 1, 65536, False, 32),
    *_dma_path("gm_read"),
    *_dma_path("gm_write"),
    *_dma_path("fixpipe_gm", _NO_FIXPIPE),
    _f("ub_copy_bytes_per_cycle", "transfer", "B/cycle", float, 1, 65536, True, 16),
    _f("sync_all_cycles", "transfer", "cycles", int, 0, 1_000_000, True, 10),
    # package: what one package holds. A kernel runs on one device; the package's totals
    # (cores, HBM, peaks) are devices x the device's figures, computed by `Chip`
    _f("package_devices", "package", "devices", int, 1, 8, False, 1),
    _f("package_dies", "package", "dies", int, 1, 8, False, 1),
    _f("die_to_die_GBps", "package", "GB/s", float, 0, 100_000, False, 50, "not given"),
)}

#: must be > 0 on split chips (they have a fixpipe) and 0 on coupled ones
FIXPIPE_KEYS = ("fixpipe_l1_bytes_per_cycle", "fixpipe_gm_bytes_per_cycle", "fixpipe_fixed_cycles",
                "fixpipe_gm_latency_cycles", "fixpipe_gm_max_outstanding")
#: must be 0 on coupled chips; a split chip's may be 0 (an issue cost that is negligible)
FIXPIPE_COST_KEYS = ("fixpipe_gm_issue_cycles", "fixpipe_gm_burst_cycles")
#: the DMA paths of DESIGN.md §4 rule 1, by field prefix
DMA_PATHS = ("gm_read", "gm_write", "fixpipe_gm")
ALIGN_KEYS = ("ub_align_bytes", "l1_align_bytes", "l0ab_align_bytes", "l0c_align_bytes")
#: fields a chip file may leave out (files written before the field existed) -> the value
#: they then take: the cube lacks the later precisions and the sparse MMAD, and the package
#: is one die seen as one device (a section whose keys are all optional may be left out)
OPTIONAL_FIELDS = {**{f"cube_k0_{p}": 0 for p in LATER_CUBE_PRECISIONS}, "cube_sparse_42": 0,
                   "package_devices": 1, "package_dies": 1, "die_to_die_GBps": 0.0}
#: fields an override changes without naming them -> what each follows, as notes word it
#: (a split chip's AIVs follow its AICs; the vector clock follows an equal core clock)
FOLLOWS = {"vector_cores": "ai_cores (AIC:AIV = 1:2)", "vector_clock_MHz": "clock_MHz"}


def section_keys(section: str) -> tuple[str, ...]:
    """The field keys of one TOML section, in table order."""
    return tuple(k for k, s in FIELDS.items() if s.section == section)

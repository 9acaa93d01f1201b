"""The program model: per-core instruction streams held as arrays (struct of arrays).

A kernel's ``build`` emits work, never time: each instruction names its core, its pipe (as
Ascend C names them), what it does (bytes moved between two levels, an MMAD shape, a
vector element count, scalar cycles or a SyncAll), its program-order key within its
(core, pipe) lane and its explicit dependencies. The builder is vectorised: every call adds
a whole array of instructions, so a program of millions of instructions costs a few numpy
operations and no Python loop per instruction.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from hardware_presets.errors import InputError, Phrase
from kernels.common.budget import default_instruction_cap, instruction_limit_text
from kernels.common.formats import FORMATS
from kernels.common.memory import return_freed_memory


class Pipe(IntEnum):
    """Ascend C pipe names (PIPE_MTE2, PIPE_MTE1, PIPE_M, PIPE_FIX, PIPE_V, PIPE_MTE3, PIPE_S)."""

    MTE2 = 0
    MTE1 = 1
    M = 2
    FIX = 3
    V = 4
    MTE3 = 5
    S = 6


#: Trace-lane names as Ascend's own profiler and simulator show them, indexed by Pipe.
LANE_NAMES = ("MTE2", "MTE1", "CUBE", "FIXP", "VECTOR", "MTE3", "SCALAR")
N_PIPES = len(Pipe)


class Level(IntEnum):
    """Storage levels a transfer moves between (GM is HBM, possibly served by L2)."""

    GM = 0
    L1 = 1
    L0A = 2
    L0B = 3
    L0C = 4
    UB = 5


class Kind(IntEnum):
    """What an instruction's work is; decides which cost rule times it."""

    TRANSFER = 0
    MMAD = 1
    VECTOR = 2
    SCALAR = 3
    BARRIER = 4


class VClass(IntEnum):
    """Vector op classes with different throughputs (perf-tables)."""

    SIMPLE = 0  # add/mul/max/min/cast: one 256-byte repeat per cycle
    SPECIAL = 1  # exp/ln/sqrt/div: a fixed number of elements per cycle
    SORT = 2  # Sort32 / MrgSort: several cycles per 256-byte repeat


#: Precision codes shared by MMAD and vector instructions (the order is the code; the
#: 8- and 4-bit float formats came later and are appended, so older codes keep theirs).
DTYPES = ("fp16", "bf16", "fp32", "hf32", "int8", "int4", "int16", "int32",
          "fp8_e4m3", "fp8_e5m2", "hif8", "mxfp8", "mxfp4")
#: bytes per element of each code, read from the one table of formats (MX: the element
#: plus its share of the block's E8M0 scale, so not a whole number)
DTYPE_BYTES = {name: FORMATS[name].bytes for name in DTYPES}


def stored_bytes(count, dtype: str) -> np.ndarray:
    """Whole bytes that ``count`` elements of ``dtype`` take in memory (int64): count x
    bytes per element, rounded up (int4 / MX elements are not whole bytes each)."""
    return np.ceil(np.asarray(count, np.float64) * DTYPE_BYTES[dtype] - 1e-9).astype(np.int64)


def dtype_code(name: str) -> int:
    """The integer code of a precision name (for the arrays)."""
    return DTYPES.index(name)


#: programs at least this long give their build's freed pages back (a trim costs ~1 ms)
TRIM_ABOVE = 100_000
# column name -> (dtype, default used when a call does not give it)
#: as narrow as their values allow (a 10^7-instruction program is about 60 bytes an
#: instruction); ``_add`` refuses a value that does not fit rather than wrapping it (a
#: lane's order ``seq`` counts its instructions: int32 holds any program under the cap)
COLUMNS: dict[str, tuple[type, object]] = {
    "core": (np.int16, None), "pipe": (np.int8, None), "op": (np.int16, None),
    "seq": (np.int32, None), "kind": (np.int8, None), "task": (np.int32, -1),
    "region": (np.int32, -1), "src": (np.int8, -1), "dst": (np.int8, -1),
    "nbytes": (np.int64, 0), "m": (np.int32, 0), "n": (np.int32, 0), "k": (np.int32, 0),
    "elems": (np.int32, 0), "dtype": (np.int8, -1), "vclass": (np.int8, -1),
    "cycles": (np.float32, 0.0), "barrier": (np.int32, -1),
}


@dataclass(frozen=True, eq=False)
class Program:
    """An emitted kernel: instruction columns, dependencies (CSR) and GM regions."""

    name: str
    cols: dict[str, np.ndarray]
    dep_ptr: np.ndarray  # int64, n + 1: deps of instruction i are dep_idx[dep_ptr[i]:dep_ptr[i+1]]
    dep_idx: np.ndarray  # int32
    region_bytes: np.ndarray  # int64, one entry per GM region
    op_names: tuple[str, ...]
    barrier_size: np.ndarray  # int32, participants per SyncAll group
    #: named kernel launches in program order, (name, first instruction id): a program of
    #: several kernels (a decode layer) says where each begins; () for a single kernel
    launches: tuple[tuple[str, int], ...] = ()

    def __len__(self) -> int:
        return len(self.cols["core"])

    def __getattr__(self, name: str) -> np.ndarray:
        cols = self.__dict__.get("cols")
        if cols is not None and name in cols:
            return cols[name]
        raise AttributeError(name)

    def launch_of(self) -> np.ndarray:
        """Per instruction, the index of the launch it belongs to (all 0 without launches)."""
        starts = np.asarray([first for _, first in self.launches], np.int64)
        if len(starts) == 0:
            return np.zeros(len(self), np.int64)
        return np.maximum(np.searchsorted(starts, np.arange(len(self)), "right") - 1, 0)

    def flops(self) -> np.ndarray:
        """Useful arithmetic per instruction: 2mnk for MMAD, one op per element for vector."""
        c = self.cols
        mmad = np.where(c["kind"] == Kind.MMAD, 2.0 * c["m"] * c["n"] * c["k"], 0.0)
        return mmad + np.where(c["kind"] == Kind.VECTOR, c["elems"].astype(float), 0.0)


class ProgramBuilder:
    """Collects instructions in vectorised batches and freezes them into a Program."""

    def __init__(self, name: str, *, max_instructions: int | None = None) -> None:
        self.name = name
        self.max_instructions = max_instructions or default_instruction_cap()
        self._chunks: list[dict[str, np.ndarray]] = []
        self._count = 0
        self._dep_after: list[np.ndarray] = []
        self._dep_before: list[np.ndarray] = []
        self._regions: list[np.ndarray] = []
        self._n_regions = 0
        self._named: dict[str, tuple[int, np.ndarray]] = {}
        self._ops: dict[str, int] = {}
        self._barrier_size: list[int] = []
        self._launches: list[tuple[str, int]] = []

    def reserve(self, count: int, hint: str) -> None:
        """Refuse, before any allocation, a program that would exceed the instruction cap."""
        if self._count + count > self.max_instructions:
            raise InputError("instructions", int(self._count + count),
                             instruction_limit_text(self.max_instructions), hint)

    def regions(self, nbytes) -> np.ndarray:
        """Declare GM regions (the unit of L2 residency and multicast); returns their ids."""
        sizes = np.atleast_1d(np.asarray(nbytes, dtype=np.int64))
        ids = np.arange(self._n_regions, self._n_regions + len(sizes), dtype=np.int64)
        self._regions.append(sizes)
        self._n_regions += len(sizes)
        return ids

    def named_regions(self, name: str, nbytes) -> np.ndarray:
        """Regions that every op of the program asking for ``name`` shares (a workspace the
        framework hands each launch from one pool); each is as large as its largest
        request. The same name must always ask for the same number of regions."""
        sizes = np.atleast_1d(np.asarray(nbytes, dtype=np.int64))
        if name not in self._named:
            self._named[name] = (len(self._regions), self.regions(sizes))
            return self._named[name][1]
        chunk, ids = self._named[name]
        if len(ids) != len(sizes):
            raise ValueError(f"{name!r}: {len(sizes)} regions asked, {len(ids)} named")
        self._regions[chunk] = np.maximum(self._regions[chunk], sizes)
        return ids

    def regions_by_key(self, keys, nbytes) -> np.ndarray:
        """One region per distinct key (e.g. a panel chunk that many tiles read), sized by
        its first occurrence; returns the region id of every entry."""
        keys, nbytes = np.asarray(keys), np.asarray(nbytes)
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        return self.regions(nbytes[first])[inverse]

    def _add(self, **fields) -> np.ndarray:
        """Add one instruction per element of the broadcast fields (none when an array
        field is empty, e.g. a concat with nothing cached yet)."""
        shape = np.broadcast_shapes(*(np.shape(v) for v in fields.values()))
        size = int(np.prod(shape))
        self.reserve(size, Phrase("refusal.hint.larger_tiles"))
        chunk = {}
        for name, (dtype, default) in COLUMNS.items():
            value = fields.get(name, default)
            if value is None:
                raise TypeError(f"instruction column {name!r} is required")
            chunk[name] = np.broadcast_to(_narrow(name, value, dtype), (size,))
        self._chunks.append(chunk)
        ids = np.arange(self._count, self._count + size, dtype=np.int64)
        self._count += size
        return ids

    def op(self, label: str) -> int:
        """Intern an op label such as "CopyIn x" (kept once, referenced by index)."""
        if label not in self._ops and len(self._ops) > np.iinfo(np.int16).max:
            raise InputError("op labels", len(self._ops) + 1,
                             Phrase("refusal.op_labels", n=np.iinfo(np.int16).max + 1))
        return self._ops.setdefault(label, len(self._ops))

    def transfer(self, core, pipe: Pipe, label: str, src: Level, dst: Level, nbytes, seq,
                 *, region=-1, task=-1) -> np.ndarray:
        """Data moves (DataCopy, LoadData, Fixpipe): bytes from one level to another."""
        return self._add(core=core, pipe=int(pipe), op=self.op(label), seq=seq,
                         kind=int(Kind.TRANSFER), src=int(src), dst=int(dst), nbytes=nbytes,
                         region=region, task=task)

    def mmad(self, core, label: str, m, n, k, dtype: str, seq, *, task=-1) -> np.ndarray:
        """Cube matrix multiply-accumulate of an (m x k) by (k x n) tile into L0C."""
        return self._add(core=core, pipe=int(Pipe.M), op=self.op(label), seq=seq,
                         kind=int(Kind.MMAD), m=m, n=n, k=k, dtype=dtype_code(dtype), task=task)

    def vector(self, core, label: str, elems, dtype: str, seq, *, vclass=VClass.SIMPLE,
               task=-1) -> np.ndarray:
        """A vector instruction over ``elems`` elements of ``dtype`` in UB."""
        return self._add(core=core, pipe=int(Pipe.V), op=self.op(label), seq=seq,
                         kind=int(Kind.VECTOR), elems=elems, dtype=dtype_code(dtype),
                         vclass=int(vclass), task=task)

    def scalar(self, core, label: str, cycles, seq, *, task=-1) -> np.ndarray:
        """Scalar-unit work (address arithmetic, loop control) of a given cycle count."""
        return self._add(core=core, pipe=int(Pipe.S), op=self.op(label), seq=seq,
                         kind=int(Kind.SCALAR), cycles=cycles, task=task)

    def sync_all(self, cores, seq) -> np.ndarray:
        """SyncAll: a barrier across ``cores``; every pipe of each core drains before it and
        waits for it afterwards (the dependencies are added when the program is built)."""
        cores = np.unique(np.atleast_1d(np.asarray(cores)))
        group = len(self._barrier_size)
        self._barrier_size.append(len(cores))
        return self._add(core=cores, pipe=int(Pipe.S), op=self.op("SyncAll"), seq=seq,
                         kind=int(Kind.BARRIER), barrier=group)

    def launch(self, name: str) -> None:
        """Start the kernel launch ``name``: the instructions added from now on belong to it
        (``Program.launches``); the caller separates launches with a SyncAll."""
        if self._launches and self._launches[-1][1] == self._count:
            raise ValueError(f"launch {self._launches[-1][0]!r} holds no instruction")
        self._launches.append((name, self._count))

    def depend(self, after, before) -> None:
        """``after[i]`` may not start before ``before[i]`` ends; pairs with a negative id
        (no such instruction, e.g. the first iterations of a queue) are ignored."""
        after, before = np.broadcast_arrays(np.asarray(after, np.int64),
                                            np.asarray(before, np.int64))
        keep = (after >= 0) & (before >= 0)
        self._dep_after.append(after[keep].ravel())
        self._dep_before.append(before[keep].ravel())

    def build(self) -> Program:
        """Freeze into a Program: concatenate columns, add SyncAll edges, make the CSR. The
        builder is spent: its pieces are released as they are joined, so a large program is
        never held twice."""
        cols = {}
        for name, (dtype, _) in COLUMNS.items():
            parts = [chunk.pop(name) for chunk in self._chunks]
            cols[name] = np.concatenate(parts) if parts else np.zeros(0, dtype)
            del parts
        self._chunks = []
        n = len(cols["core"])
        extra_after, extra_before = _barrier_edges(cols)
        after = np.concatenate([_concat(self._dep_after), extra_after])
        self._dep_after = []
        before = np.concatenate([_concat(self._dep_before), extra_before])
        self._dep_before = []
        if len(after) and (after.max() >= n or before.max() >= n):
            raise ValueError("dependency on an instruction that does not exist")
        keys = after * max(n, 1) + before  # grouped by after, then before, once sorted
        del after, before
        dep_ptr, dep_idx = _csr(keys, n)
        del keys
        program = Program(self.name, cols, dep_ptr, dep_idx, _concat(self._regions),
                          tuple(self._ops), np.asarray(self._barrier_size, dtype=np.int32),
                          tuple(self._launches))
        if n >= TRIM_ABOVE:
            return_freed_memory()  # the joined chunks' pages
        return program


def _narrow(name: str, value, dtype) -> np.ndarray:
    """``value`` as the column's dtype, refused when an integer would not fit."""
    arr = np.asarray(value)
    if arr.dtype.kind in "iu" and arr.size and np.dtype(dtype).kind == "i" \
            and np.dtype(dtype).itemsize < arr.dtype.itemsize:
        limits = np.iinfo(dtype)
        low, high = int(arr.min()), int(arr.max())
        if low < limits.min or high > limits.max:
            raise InputError(f"instruction {name}", high if high > limits.max else low,
                             Phrase("refusal.range", low=limits.min, high=limits.max),
                             Phrase("refusal.hint.larger_tiles"))
    return np.asarray(arr, dtype=dtype)


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


def lane_order(cols: dict[str, np.ndarray]) -> np.ndarray:
    """Instruction ids sorted by (core, pipe, seq, id): the order pipes execute them in."""
    seq, lane = cols["seq"], cols["core"].astype(np.int64) * N_PIPES + cols["pipe"]
    if len(seq) == 0:
        return np.zeros(0, np.int64)
    lo, span = int(seq.min()), int(seq.max()) - int(seq.min()) + 1
    if (int(lane.max()) + 1) * span < 2**62:  # one int64 key; a stable sort keeps id order
        return np.argsort(lane * span + (seq - lo), kind="stable")
    return np.lexsort((np.arange(len(seq)), seq, cols["pipe"], cols["core"]))


def _barrier_edges(cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """SyncAll drains every pipe of its core and holds them until released: it depends on
    the last earlier instruction of each lane, and the next one of each lane depends on it.
    "Earlier" is program order (seq, then id), the order lanes execute in, so an
    instruction sharing the barrier's seq but emitted before it stays before it."""
    barriers = np.flatnonzero(cols["kind"] == Kind.BARRIER)
    if len(barriers) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = lane_order(cols)
    lane = cols["core"][order].astype(np.int64) * N_PIPES + cols["pipe"][order]
    seq = cols["seq"][order]
    after, before = [], []
    for b in barriers:
        for pipe in range(N_PIPES):
            key = int(cols["core"][b]) * N_PIPES + pipe
            lo, hi = np.searchsorted(lane, key, "left"), np.searchsorted(lane, key, "right")
            pos = lo + np.searchsorted(seq[lo:hi], cols["seq"][b], "left")
            tie = lo + np.searchsorted(seq[lo:hi], cols["seq"][b], "right")
            pos += np.searchsorted(order[pos:tie], b, "left")  # equal seq: ids ascend
            if pos > lo and order[pos - 1] != b:
                after.append(b), before.append(order[pos - 1])
            nxt = pos + 1 if pos < hi and order[pos] == b else pos
            if nxt < hi:
                after.append(order[nxt]), before.append(b)
    return np.asarray(after, np.int64), np.asarray(before, np.int64)


def _csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Dependencies grouped per instruction, sorted and without duplicates, from the keys
    ``after * n + before`` (sorted here, in place)."""
    keys.sort()
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if len(keys) else keys
    counts = np.bincount(keys // max(n, 1), minlength=n)
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, (keys % max(n, 1)).astype(np.int32)

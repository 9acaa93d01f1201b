"""Attention inputs for the sparse-attention study: synthetic ones with the structure that
decides which KV-compression rule works, and a user's own dump loaded as data only.

Synthetic construction (per KV head, independent draws; ``synthetic`` documents the knobs).
Every token t gets a designed logit l_t, in softmax units (after the 1/sqrt(d) scaling):

    l_t = logit_noise * eps_t + sink_strength * [t < sink_tokens]
          + heavy_strength * [t a heavy hitter] + locality * exp(-(n - 1 - t) / local_span)

with eps_t ~ N(0, 1) (0 for the sinks: a sink stays a sink) and the heavy hitters uniform
among the non-sink tokens. Key norms follow ``norm_relation`` rho: with r_t the
standardized l_t and e_t ~ N(0, 1),

    N_t = sqrt(d) * exp(norm_spread * (rho * r_t + sqrt(1 - rho^2) * e_t)),

so rho = -1 makes the norm a decreasing function of the logit (Devoto et al. 2024: low
key norm, high attention), 0 makes it independent, +1 increasing (the blog's assumption).
Channels (placed by a random permutation per head): ``query_channels`` hold alpha_t a with
a a random unit vector and alpha_t = l_t sqrt(d) / c; up to HEAD_CHANNELS "head" channels
hold zeta z_t, z_t ~ N(0, I); filler channels hold beta_t w_t, w_t a random unit vector,
with beta_t making the norm of these three parts exactly N_t. Queries are c a on the query
channels and (head_spread sqrt(d) / (zeta sqrt(h))) xi on the h head channels (xi ~ N(0, I)
fresh per head and step), zero elsewhere; so query head i sees the logit
q_i.k_t / sqrt(d) = l_t + head_spread xi_i.z_t / sqrt(h): the designed one plus about
N(0, head_spread^2) of its own. c and zeta are set per head so that alpha_t and
zeta ||z_t|| never exceed N_t / 2 (beta_t stays real). ``outlier_channels`` channels (as
in LLM keys; KIVI, Liu et al. 2024) add sign_j * outlier_scale * (1 + 0.2 g_tj),
g ~ N(0, 1), to every key; queries put no weight there, so they leave the logits alone but
add norm unrelated to attention (they blur norm-based rules as real outliers do). Values
are N(0, 1). Past queries are built like the current one with fresh head variation.
"""
from __future__ import annotations

import io
import math
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from hardware_presets.errors import InputError, Phrase
from kernels.common.budget import check_array_bytes

MAX_FILE_BYTES = 64 << 20
MAX_TOKENS = 131_072
MAX_HEADS = 128
MAX_HEAD_DIM = 512
MAX_PAST_STEPS = 1024
#: elements of all arrays together (128 MiB once converted to float64)
MAX_ELEMENTS = 1 << 24
#: zip members a dump may list (only the four ARRAYS are read; more are refused by name)
MAX_MEMBERS = 16
ARRAYS = {"q": 2, "k": 3, "v": 3, "q_past": 3}  # name -> number of dimensions
OUTLIER_JITTER = 0.2
#: channels that carry the per-head variation of the queries (fewer if head_dim is small)
HEAD_CHANNELS = 8


@dataclass(frozen=True, eq=False)
class SparseInputs:
    """One decode step's attention inputs, float64: q [q_heads, d] (current step),
    k, v [kv_heads, tokens, d] and q_past [steps, q_heads, d] or None. Query head i
    belongs to KV head i // group (group = q_heads / kv_heads)."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    q_past: np.ndarray | None = None

    @property
    def kv_heads(self) -> int:
        return self.k.shape[0]

    @property
    def tokens(self) -> int:
        return self.k.shape[1]

    @property
    def group(self) -> int:
        return self.q.shape[0] // self.k.shape[0]

    def head(self, h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """(q [group, d], k [n, d], v [n, d], q_past [steps, group, d] or None) of KV
        head h."""
        rows = slice(h * self.group, (h + 1) * self.group)
        past = None if self.q_past is None else self.q_past[:, rows]
        return self.q[rows], self.k[h], self.v[h], past


def check_shapes(shapes: dict[str, tuple[int, ...]], where: str = "") -> None:
    """Refuse shapes that are inconsistent or over the caps, naming the array; used on the
    npz headers before anything is loaded, and on synthetic inputs."""
    def refuse(array, value, allowed, hint=""):
        raise InputError(f"{array}{where}", value, allowed, hint)

    for array, shape in shapes.items():
        if len(shape) != ARRAYS[array] or min(shape, default=0) < 1:
            refuse(array, shape, Phrase("refusal.sparse.dims", n=ARRAYS[array]))
    kv, n, d = shapes["k"]
    qh = shapes["q"][0]
    if shapes["v"] != shapes["k"]:
        refuse("v", shapes["v"], Phrase("refusal.sparse.v_shape", shape=shapes["k"]))
    if shapes["q"][1] != d or qh % kv or qh > MAX_HEADS:
        refuse("q", shapes["q"], Phrase("refusal.sparse.q_shape", d=d, kv=kv, most=MAX_HEADS))
    if n > MAX_TOKENS or d > MAX_HEAD_DIM:
        refuse("k", shapes["k"], Phrase("refusal.sparse.k_shape", tokens=MAX_TOKENS,
                                        head_dim=MAX_HEAD_DIM))
    past = shapes.get("q_past")
    if past is not None and (past[1:] != shapes["q"] or past[0] >= n
                             or past[0] > MAX_PAST_STEPS):
        refuse("q_past", past, Phrase("refusal.sparse.past_shape", heads=qh, d=d, n=n,
                                      most=MAX_PAST_STEPS))
    total = sum(math.prod(s) for s in shapes.values())
    if total > MAX_ELEMENTS:
        refuse("arrays", Phrase("refusal.value.elements", n=total),
               Phrase("refusal.sparse.elements", n=MAX_ELEMENTS))


# ---- synthetic inputs ---------------------------------------------------------------

@dataclass(frozen=True)
class Structure:
    """Knobs of ``synthetic`` (see the module docstring for the formulas).

    sink_tokens / sink_strength: the first tokens and their logit bonus (attention sinks);
    heavy_hitters / heavy_strength: how many other tokens draw extra attention, and how much;
    locality / local_span: logit bonus of the newest token and its decay length in tokens;
    logit_noise: spread of every token's logit; head_spread: how much the query heads of a
    group (and successive steps) differ; query_channels: channels the queries use (real
    queries concentrate on few; the fewer, the tighter Quest's per-channel bounds);
    outlier_channels / outlier_scale: key channels with
    large values, in units of an ordinary channel; norm_relation: -1 (low key norm = high
    attention, Devoto et al.) .. 0 (unrelated) .. +1 (the blog's assumption);
    norm_spread: standard deviation of log key norms.
    """

    tokens: int = 1024
    head_dim: int = 64
    kv_heads: int = 2
    group: int = 4
    past_queries: int = 16
    sink_tokens: int = 1
    sink_strength: float = 6.0
    heavy_hitters: int = 8
    heavy_strength: float = 3.0
    locality: float = 2.0
    local_span: float = 32.0
    logit_noise: float = 1.0
    head_spread: float = 0.3
    query_channels: int = 8
    outlier_channels: int = 4
    outlier_scale: float = 4.0
    norm_relation: float = -1.0
    norm_spread: float = 0.3

    def __post_init__(self) -> None:
        for knob, (low, high) in _RANGES.items():
            value = getattr(self, knob)
            kinds = (int, np.integer) if isinstance(low, int) else (int, float, np.number)
            if isinstance(value, bool) or not isinstance(value, kinds) or not (
                    low <= value <= high):
                raise InputError(knob, value, Phrase("refusal.sparse.range", low=low, high=high))
        if self.query_channels + self.outlier_channels > self.head_dim - 2:
            raise InputError("query_channels + outlier_channels",
                             self.query_channels + self.outlier_channels,
                             Phrase("refusal.sparse.channels", n=self.head_dim - 2),
                             Phrase("refusal.hint.channels"))
        check_shapes({"q": (self.kv_heads * self.group, self.head_dim),
                      "k": (self.kv_heads, self.tokens, self.head_dim),
                      "v": (self.kv_heads, self.tokens, self.head_dim),
                      **({"q_past": (self.past_queries, self.kv_heads * self.group,
                                     self.head_dim)} if self.past_queries else {})})


_RANGES = {"tokens": (2, MAX_TOKENS), "head_dim": (4, MAX_HEAD_DIM),
           "kv_heads": (1, MAX_HEADS), "group": (1, MAX_HEADS),
           "past_queries": (0, MAX_PAST_STEPS), "sink_tokens": (0, MAX_TOKENS),
           "sink_strength": (0.0, 30.0), "heavy_hitters": (0, MAX_TOKENS),
           "heavy_strength": (0.0, 30.0), "locality": (0.0, 30.0),
           "local_span": (1.0, float(MAX_TOKENS)), "logit_noise": (0.0, 10.0),
           "head_spread": (0.0, 10.0), "query_channels": (1, MAX_HEAD_DIM),
           "outlier_channels": (0, MAX_HEAD_DIM),
           "outlier_scale": (0.0, 1000.0), "norm_relation": (-1.0, 1.0),
           "norm_spread": (0.0, 3.0)}


def designed_logits(rng: np.random.Generator, s: Structure) -> np.ndarray:
    """l_t [tokens] of one KV head: noise, sinks, heavy hitters and locality."""
    n = s.tokens
    sinks = min(s.sink_tokens, n)
    logits = s.logit_noise * rng.standard_normal(n)
    logits[:sinks] = 0.0  # a sink is a sink: no noise that could bury it
    logits[:sinks] += s.sink_strength
    heavy = rng.choice(np.arange(sinks, n), size=min(s.heavy_hitters, n - sinks),
                       replace=False)
    logits[heavy] += s.heavy_strength
    return logits + s.locality * np.exp(-(n - 1 - np.arange(n)) / s.local_span)


def key_norms(rng: np.random.Generator, s: Structure, logits: np.ndarray) -> np.ndarray:
    """N_t: log-normal norms whose correlation with the logits is norm_relation."""
    spread = logits.std()
    r = (logits - logits.mean()) / spread if spread > 0 else np.zeros_like(logits)
    rho = s.norm_relation
    mixed = rho * r + math.sqrt(1 - rho * rho) * rng.standard_normal(logits.size)
    return math.sqrt(s.head_dim) * np.exp(s.norm_spread * mixed)


def _layout(rng: np.random.Generator, s: Structure) -> dict[str, np.ndarray]:
    """Channel positions (a random permutation of d) of the query, head-variation,
    filler and outlier channels."""
    qc, m = s.query_channels, s.outlier_channels
    h = min(HEAD_CHANNELS, s.head_dim - m - qc - 1)
    spots = np.split(rng.permutation(s.head_dim), np.cumsum([qc, h, m]))
    return dict(zip(("query", "head", "outlier", "filler"), spots))


def synthetic_head(rng: np.random.Generator, s: Structure) -> tuple[np.ndarray, ...]:
    """(q [group, d], q_past [steps, group, d], k [n, d], v [n, d]) of one KV head."""
    n, d = s.tokens, s.head_dim
    logits = designed_logits(rng, s)
    norms = key_norms(rng, s, logits)
    at = _layout(rng, s)
    a = rng.standard_normal(s.query_channels)
    a /= np.linalg.norm(a)
    z = rng.standard_normal((n, at["head"].size))
    w = rng.standard_normal((n, at["filler"].size))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    zeta = 0.5 * norms.min() / np.linalg.norm(z, axis=1).max()
    c = math.sqrt(d) * max(np.abs(logits).max(), 1e-12) / (0.5 * norms.min())
    alpha = logits * math.sqrt(d) / c
    k = np.zeros((n, d))
    k[:, at["query"]] = alpha[:, None] * a
    k[:, at["head"]] = zeta * z
    k[:, at["filler"]] = np.sqrt(norms ** 2 - alpha ** 2 - zeta ** 2 * (z * z).sum(axis=1)
                                 )[:, None] * w
    signs = rng.choice([-1.0, 1.0], size=s.outlier_channels)
    k[:, at["outlier"]] = signs * s.outlier_scale * (
        1 + OUTLIER_JITTER * rng.standard_normal((n, s.outlier_channels)))
    count = s.group * (1 + s.past_queries)
    qs = np.zeros((count, d))
    qs[:, at["query"]] = c * a
    qs[:, at["head"]] = (s.head_spread * math.sqrt(d) / (zeta * math.sqrt(at["head"].size))
                         * rng.standard_normal((count, at["head"].size)))
    v = rng.standard_normal((n, d))
    return qs[:s.group], qs[s.group:].reshape(s.past_queries, s.group, d), k, v


def synthetic(rng: np.random.Generator, **knobs) -> SparseInputs:
    """Synthetic inputs with the structure of ``Structure(**knobs)``, drawn from ``rng``
    (the caller's np.random.default_rng(seed)); q_past is None when past_queries is 0."""
    s = Structure(**knobs)
    heads = [synthetic_head(rng, s) for _ in range(s.kv_heads)]
    q = np.concatenate([hd[0] for hd in heads])
    past = np.concatenate([hd[1] for hd in heads], axis=1) if s.past_queries else None
    return SparseInputs(q, np.stack([hd[2] for hd in heads]),
                        np.stack([hd[3] for hd in heads]), past)


# ---- a user's dump ----------------------------------------------------------------------

#: what a malformed member raises while it is read (zipfile raises NotImplementedError for
#: methods and flags it lacks, RuntimeError for a password; zlib.error for a bad stream)
_READ_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error,
                NotImplementedError, RuntimeError)
#: zip flag bits zipfile cannot read: encrypted (0), patched data (5), strong encryption (6)
_UNREADABLE_FLAGS = 0x1 | 0x20 | 0x40
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)  # what np.savez(_compressed) writes
_HEADER_BYTES = 4096  # room for one .npy header


_EOCD = b"PK\x05\x06"  # end of central directory record; its entry count at offset 10
_EOCD_SEARCH = (1 << 16) + 22  # the record and the longest comment


def _stated_entries(tail: bytes) -> int | None:
    """The member count the zip's end record states (None when there is none), read before
    zipfile parses the directory: a 64 MiB file could state a million empty members."""
    at = tail.rfind(_EOCD)
    if at < 0 or at + 12 > len(tail):
        return None
    return int.from_bytes(tail[at + 10:at + 12], "little")


def _check_member(info: zipfile.ZipInfo, array: str, where: str) -> None:
    """Refuse, from the zip directory alone, a member that cannot or must not be inflated:
    an encryption flag, a compression method np.savez never writes, or a stated
    uncompressed size over the caps (zipfile stops at the stated size, so this bounds it)."""
    if info.flag_bits & _UNREADABLE_FLAGS:
        raise InputError(f"{array}{where}", Phrase("refusal.value.encrypted"),
                         Phrase("refusal.sparse.plain_member"))
    if info.compress_type not in _METHODS:
        raise InputError(f"{array}{where}", Phrase("refusal.value.zip_method",
                                                   method=info.compress_type),
                         Phrase("refusal.sparse.method"))
    if info.file_size > MAX_ELEMENTS * 8 + _HEADER_BYTES:
        raise InputError(f"{array}{where}", Phrase("refusal.value.uncompressed",
                                                   n=info.file_size),
                         Phrase("refusal.sparse.member_elements", n=MAX_ELEMENTS))


def _header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str):
    """(shape, dtype) of one .npy member read from its header alone, after checking that
    it can be read and its uncompressed size is within the caps (so nothing big is
    inflated)."""
    array = info.filename[:-4]
    _check_member(info, array, where)
    try:
        with archive.open(info) as f:
            version = np.lib.format.read_magic(f)
            read = {(1, 0): np.lib.format.read_array_header_1_0,
                    (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read is None:
                raise ValueError(f"npy format version {version}")
            shape, _, dtype = read(f)
    except _READ_ERRORS as err:
        raise InputError(f"{array}{where}", Phrase("refusal.value.npy_header"),
                         Phrase("refusal.sparse.npy"), str(err)) from None
    if dtype.kind != "f" or dtype.itemsize not in (2, 4, 8):
        raise InputError(f"{array}{where}", str(dtype), Phrase("refusal.sparse.float"))
    return tuple(int(x) for x in shape), dtype


def _members(archive: zipfile.ZipFile, where: str) -> dict[str, tuple]:
    """{array name: (shape, dtype)} of every member, refusing unknown or missing names."""
    found = {}
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:  # a zip64 end record escapes _stated_entries
        raise InputError(f"members{where}", len(members), Phrase("refusal.sparse.members",
                                                                        n=MAX_MEMBERS))
    stated = sum(info.file_size for info in members)
    check_array_bytes(stated, f"arrays{where}", Phrase("refusal.value.uncompressed",
                                                       n=f"{stated:,}"),
                      Phrase("refusal.sparse.what_members"))
    for info in members:
        array = info.filename[:-4] if info.filename.endswith(".npy") else None
        if array not in ARRAYS or array in found:
            raise InputError(f"array name{where}", info.filename, Phrase("refusal.sparse.names"))
        found[array] = _header(archive, info, where)
    for array in ("q", "k", "v"):
        if array not in found:
            raise InputError(f"{array}{where}", Phrase("refusal.value.missing"),
                             Phrase("refusal.sparse.required"))
    return found


def load_npz(data: bytes, name: str = "upload.npz") -> SparseInputs:
    """A user's dump as float64 SparseInputs. Arrays (np.savez names): ``q`` [q_heads, d],
    ``k`` and ``v`` [kv_heads, tokens, d], optional ``q_past`` [steps, q_heads, d] (H2O's
    past queries; without it H2O scores with q alone). q_heads is a multiple of kv_heads;
    float16/32/64 only, finite; caps: MAX_FILE_BYTES, MAX_TOKENS, MAX_HEADS query heads,
    MAX_HEAD_DIM, MAX_PAST_STEPS, MAX_ELEMENTS. Names, dtypes and shapes are checked from
    the npy headers before any array is read; nothing is unpickled."""
    where = f" in {name}"
    if not isinstance(data, (bytes, bytearray)) or len(data) > MAX_FILE_BYTES:
        size = len(data) if isinstance(data, (bytes, bytearray)) else type(data).__name__
        raise InputError(name, size, Phrase("refusal.sparse.file_bytes", limit=MAX_FILE_BYTES))
    entries = _stated_entries(bytes(data[-_EOCD_SEARCH:]))
    if entries is not None and entries > MAX_MEMBERS:
        raise InputError(f"members{where}", entries, Phrase("refusal.sparse.members",
                                                                        n=MAX_MEMBERS))
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise InputError(name, Phrase("refusal.value.not_zip"), Phrase("refusal.sparse.npz")) \
            from None
    with archive:
        found = _members(archive, where)
    shapes = {array: shape for array, (shape, _) in found.items()}
    check_shapes(shapes, where)
    elements = sum(math.prod(shape) for shape in shapes.values())
    check_array_bytes(elements * 8, f"arrays{where}", Phrase("refusal.value.elements",
                                                             n=f"{elements:,}"),
                      Phrase("refusal.sparse.what_float64"))
    arrays = {}
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            for array in found:
                arrays[array] = np.asarray(npz[array], dtype=np.float64)
    except _READ_ERRORS as err:
        raise InputError(f"{array}{where}", Phrase("refusal.value.unreadable"),
                         Phrase("refusal.sparse.complete"), str(err)) from None
    for array, values in arrays.items():
        if not np.isfinite(values).all():
            raise InputError(f"{array}{where}", Phrase("refusal.value.non_finite"),
                             Phrase("refusal.sparse.finite"))
    return SparseInputs(arrays["q"], arrays["k"], arrays["v"], arrays.get("q_past"))

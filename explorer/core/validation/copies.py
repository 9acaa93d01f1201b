"""Single-core DataCopy curves: msKPP's published tables, the harness that produced them
rebuilt as a program, and the least-squares fit of a DMA path's latency and cap to them.

msKPP times 1024 copies of one size on one core, each copy waiting for the previous one
(its times per copy are latency-bound), with the data in L2. So a copy there costs
``issue + bursts x burst + latency + bytes / cap`` cycles: the DMA queue's depth cannot
show, and issue and latency only appear as their sum. The fit takes issue and burst costs
as given (the preset's, from the CANN data_copy sample) and solves for latency and cap.
"""
from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hardware_presets import Chip
from kernels.common.program import Level, Pipe, Program, ProgramBuilder

from ..emulator.engine import run

TABLES = Path(__file__).with_name("mskpp_copies.toml")
KIB = 1024
#: path -> (core kind, pipe, src, dst, cap field) of the copy msKPP timed
PATHS = {
    "gm_read_l1": ("AIC", Pipe.MTE2, Level.GM, Level.L1, "gm_read_l1_bytes_per_cycle"),
    "gm_read_ub": ("AIV", Pipe.MTE2, Level.GM, Level.UB, "gm_read_l2_bytes_per_cycle"),
    "gm_write": ("AIV", Pipe.MTE3, Level.UB, Level.GM, "gm_write_bytes_per_cycle"),
    "fixpipe_gm": ("AIC", Pipe.FIX, Level.L0C, Level.GM, "fixpipe_gm_bytes_per_cycle"),
}
#: the preset prefix of each path's queue fields (both reads share MTE2's)
QUEUE_OF = {"gm_read_l1": "gm_read", "gm_read_ub": "gm_read", "gm_write": "gm_write",
            "fixpipe_gm": "fixpipe_gm"}


@dataclass(frozen=True)
class Curve:
    """One published curve: bytes per copy and cycles per copy (msKPP's 1800 MHz)."""

    path: str
    title: str
    table: str
    nbytes: np.ndarray
    cycles: np.ndarray
    note: str = ""



def gib_per_s(nbytes, cycles, clock: float) -> np.ndarray:
    """GiB/s, as msKPP publishes them, of copies of ``nbytes`` taking ``cycles`` each."""
    return np.asarray(nbytes) / (np.asarray(cycles) / (clock * 1e6)) / 2 ** 30


@functools.lru_cache(maxsize=1)
def curves() -> tuple[Curve, ...]:
    """The published curves, converted from (KiB, GiB/s) to (bytes, cycles per copy)."""
    doc = tomllib.loads(TABLES.read_text(encoding="utf-8"))
    out = []
    for path, entry in doc["paths"].items():
        kib, gib_s = np.asarray(entry["points"], float).T
        nbytes = kib * KIB
        cycles = nbytes / (gib_s * 2 ** 30) * doc["clock_MHz"] * 1e6
        out.append(Curve(path, entry["title"], entry["table"], nbytes, cycles,
                         entry.get("note", "")))
    return tuple(out)


def descriptions() -> dict[str, str]:
    """How the validation table describes every point: ``chip_note`` and ``method`` in
    English, with ``_zh`` translations (``{title}`` is the curve's title)."""
    doc = tomllib.loads(TABLES.read_text(encoding="utf-8"))
    return {key: doc["describe"][key] for key in ("chip_note", "chip_note_zh", "method",
                                                  "method_zh")}


def clock_mhz() -> float:
    """The clock msKPP converts its cycles at (fixed, whatever the chip)."""
    return float(tomllib.loads(TABLES.read_text(encoding="utf-8"))["clock_MHz"])


def serial_copies(chip: Chip, path: str, nbytes: int, copies: int) -> Program:
    """msKPP's harness: ``copies`` copies of one size on one core, each waiting for the
    previous, all of one region (resident in L2 after the first)."""
    kind, pipe, src, dst, _ = PATHS[path]
    core = chip.core_kinds().index(kind)
    b = ProgramBuilder(f"serial {path}")
    region = int(b.regions(nbytes)[0]) if Level.GM in (src, dst) else -1
    previous = None
    for seq in range(copies):
        ids = b.transfer(core, pipe, "DataCopy", src, dst, nbytes, seq, region=region)
        if previous is not None:
            b.depend(ids, previous)
        previous = ids
    return b.build()


def emulated_cycles(chip: Chip, path: str, nbytes: float, copies: int = 8) -> float:
    """Cycles per copy (at msKPP's clock) in the emulator, after the first (a miss)."""
    schedule = run(serial_copies(chip, path, int(nbytes), copies), chip)
    end = np.sort(schedule.end_ns)
    return float((end[-1] - end[0]) / (copies - 1) * clock_mhz() / 1e3)


@dataclass(frozen=True)
class Fit:
    """Fitted numbers of the DMA paths and the relative residual of every point."""

    latency: dict[str, float]  # queue prefix -> latency cycles
    cap: dict[str, float]  # path -> bytes per cycle
    residuals: dict[str, np.ndarray]  # path -> (model - published) / published


def fit(chip: Chip) -> Fit:
    """Least squares, in relative error, of every curve's cycles per copy:
    ``issue + bytes / burst_bytes x burst + latency + bytes / cap``, with one latency per
    DMA queue (both MTE2 paths share one) and one cap per path."""
    data = curves()
    queues = sorted({QUEUE_OF[c.path] for c in data})
    n_cols = len(queues) + len(data)
    rows, rhs = [], []
    for k, c in enumerate(data):
        q = QUEUE_OF[c.path]
        issue = getattr(chip, f"{q}_issue_cycles") + \
            np.ceil(c.nbytes / chip.dma_burst_bytes) * getattr(chip, f"{q}_burst_cycles")
        a = np.zeros((len(c.nbytes), n_cols))
        a[:, queues.index(q)] = 1.0
        a[:, len(queues) + k] = c.nbytes
        rows.append(a / c.cycles[:, None])
        rhs.append((c.cycles - issue) / c.cycles)
    x, *_ = np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=None)
    latency = {q: float(x[i]) for i, q in enumerate(queues)}
    cap = {c.path: float(1.0 / x[len(queues) + k]) for k, c in enumerate(data)}
    residuals = {}
    for k, c in enumerate(data):
        model = rows[k] @ x * c.cycles + (c.cycles - rhs[k] * c.cycles)
        residuals[c.path] = model / c.cycles - 1.0
    return Fit(latency, cap, residuals)


#: Ascend C guide: "16 KB or more per DataCopy reaches the best bandwidth" (best practices,
#: "transferring a large data block at a time"); "best" read as 95% of the path's peak
GUIDE_FULL_RATE_BYTES, FULL_RATE_SHARE = 16 * KIB, 0.95


def depth_for_full_rate(issue: float, burst: float, burst_bytes: int, latency: float,
                        cap: float, nbytes: int = GUIDE_FULL_RATE_BYTES) -> int:
    """Copies in flight one pipe needs to stream ``nbytes``-copies at FULL_RATE_SHARE of
    its peak (Little's law): a copy occupies the queue for issue + latency + streaming,
    and the pipe can start one per max(issue, streaming)."""
    issue_cycles = issue + np.ceil(nbytes / burst_bytes) * burst
    per_copy = max(issue_cycles, nbytes / cap)
    return int(np.ceil(FULL_RATE_SHARE * (issue_cycles + latency + nbytes / cap) / per_copy))


def streaming_gbps(chip: Chip, nbytes: int, cores: int, copies: int = 64) -> float:
    """GB/s of ``cores`` AIVs each issuing ``copies`` independent GM -> UB copies of
    ``nbytes`` (distinct regions, so all from HBM): what the DMA queues sustain."""
    b = ProgramBuilder("streaming copies")
    aivs = [k for k, kind in enumerate(chip.core_kinds()) if kind == "AIV"][:cores]
    regions = b.regions([nbytes] * copies * len(aivs))
    for c, core in enumerate(aivs):
        for seq in range(copies):
            b.transfer(core, Pipe.MTE2, "DataCopy", Level.GM, Level.UB, nbytes, seq,
                       region=int(regions[c * copies + seq]))
    schedule = run(b.build(), chip)
    return nbytes * copies * len(aivs) / schedule.makespan_ns

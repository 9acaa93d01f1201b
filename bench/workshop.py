"""A workshop's load on one app server: ``python -m bench.workshop [--burst] [--same] ...``.

Issue 16 asks whether one ``streamlit run app.py`` can serve a room: 30 students arriving
within 15 s on the vector add, GEMM and decode pages, answered within 2 s (p95) with no
error and at most 2 GB for the server and its workers; and, when all click at once, more
sessions per second with more emulation workers. For each worker count asked for
(``EXPLORER_WORKERS``) this starts the app, opens every page once (the server's cold
start, reported), then each page alone, then the load, and prints latency per page
(p50 / p95 / max, nearest rank, errored sessions included), errors, throughput (sessions
finished without error per second, first arrival to last answer) and the peak RSS of the
server's process tree, sampled throughout. Sessions speak Streamlit's websocket
protocol (``bench.st_client``), each asking for a distinct scenario of the default size
(its own seed in the URL) so that no cache answers for the work; ``--same`` gives them
one scenario per page, to show the cross-session cache.

The client runs on the machine it measures: its CPU (small beside the server's) is in the
figures, as is anything else the machine runs. Never used as a test assertion.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from bench.st_client import DEADLINE_S, PageRun, open_page
from explorer.core.worker_pool import WORKERS_ENV
from tests.app_server import OUTPUT_DIR, REPO_ROOT, start_streamlit, stop_process_group

PAGES = ("vector_add", "gemm", "decode")
GOAL_P95_S, GOAL_RSS_BYTES = 2.0, 2 * 2**30
WARM_SEED, ALONE_SEED, SAME_SEED, LOAD_SEED = 0, 100, 999, 1000  # disjoint scenario seeds
RSS_INTERVAL_S = 0.2


# ---- the server's memory -----------------------------------------------------------------
def _rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:  # the process ended meanwhile
        pass
    return 0


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(child) for child in task.read_text().split()]
        except OSError:
            continue
    return found


def tree_rss_bytes(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (Linux ``/proc``). Pages shared
    between processes count once per process, so this overstates, never understates."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += _rss_bytes(current)
        todo += _children(current)
    return total


class PeakRss:
    """The largest ``tree_rss_bytes(pid)`` seen while the ``with`` block runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, tree_rss_bytes(self.pid))
            if self._stop.wait(RSS_INTERVAL_S):
                return

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# ---- sessions ----------------------------------------------------------------------------
def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: the smallest value with ``fraction`` of them at or below."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


async def _arrive(port: int, delay_s: float, page: str, seed: int,
                  deadline_s: float) -> PageRun:
    await asyncio.sleep(delay_s)
    return await open_page(port, page, f"seed={seed}", deadline_s)


async def _load(port: int, sessions: int, window_s: float, same: bool,
                deadline_s: float) -> tuple[list[PageRun], float]:
    """``sessions`` arrivals spread evenly over ``window_s`` (0: all at once), pages in
    rotation; the runs and the seconds from the first arrival to the last answer."""
    start = time.perf_counter()
    runs = await asyncio.gather(*(
        _arrive(port, window_s * i / sessions, PAGES[i % len(PAGES)],
                SAME_SEED if same else LOAD_SEED + i, deadline_s)
        for i in range(sessions)))
    return list(runs), time.perf_counter() - start


def _one_by_one(port: int, seed: int, deadline_s: float) -> list[PageRun]:
    """Every page opened alone, one after the other, each in a new session."""
    return [asyncio.run(open_page(port, page, f"seed={seed}", deadline_s)) for page in PAGES]


# ---- report ------------------------------------------------------------------------------
def _row(name: str, runs: Sequence[PageRun]) -> str:
    latencies = [run.latency_s for run in runs]
    errors = sum(run.error is not None for run in runs)
    return (f"  {name:<11} {len(runs):>4} {percentile(latencies, 0.5):>8.2f} "
            f"{percentile(latencies, 0.95):>8.2f} {max(latencies):>8.2f} {errors:>7}")


def _print_runs(title: str, runs: Sequence[PageRun]) -> None:
    print(title)
    print(f"  {'page':<11} {'n':>4} {'p50 s':>8} {'p95 s':>8} {'max s':>8} {'errors':>7}")
    for page in PAGES:
        mine = [run for run in runs if run.page == page]
        if mine:
            print(_row(page, mine))
    if len({run.page for run in runs}) > 1:
        print(_row("all", runs))
    for error in sorted({run.error for run in runs if run.error})[:5]:
        print(f"  error: {error[:300]}")


def _print_alone(title: str, runs: Sequence[PageRun]) -> None:
    cells = ", ".join(f"{run.page} {run.latency_s:.2f} s" + (" (error)" if run.error else "")
                      for run in runs)
    print(f"{title}: {cells}")


# ---- one server --------------------------------------------------------------------------
def measure(workers: int, args: argparse.Namespace) -> dict[str, float]:
    """Start the app with ``workers`` emulation workers, measure it, print, stop it."""
    os.environ[WORKERS_ENV] = str(workers)  # inherited by the server started next
    log = OUTPUT_DIR / f"workshop-server-{workers}.log"
    started = time.perf_counter()
    url, pid = start_streamlit(REPO_ROOT / "app.py", log)
    port = int(url.rsplit(":", 1)[1])
    print(f"\n== {WORKERS_ENV}={workers}: server healthy after "
          f"{time.perf_counter() - started:.1f} s ({url}, log {log})")
    try:
        with PeakRss(pid) as rss:
            _print_alone("first visits (cold server)", _one_by_one(port, WARM_SEED,
                                                                   args.deadline))
            _print_alone("one session alone", _one_by_one(port, ALONE_SEED, args.deadline))
            window = 0.0 if args.burst else args.window
            runs, wall_s = asyncio.run(_load(port, args.sessions, window, args.same,
                                             args.deadline))
    finally:
        stop_process_group(pid)
    how = "all at once" if args.burst else f"arriving over {window:g} s"
    same = ", one scenario per page" if args.same else ", distinct scenarios"
    _print_runs(f"{args.sessions} sessions {how}{same}:", runs)
    finished = sum(run.error is None for run in runs)
    throughput = finished / wall_s
    print(f"  wall {wall_s:.1f} s, throughput {throughput:.2f} sessions/s ({finished} "
          f"finished without error); "
          f"peak RSS of the server tree {rss.peak / 2**20:.0f} MiB")
    return {"p95": percentile([run.latency_s for run in runs], 0.95),
            "errors": sum(run.error is not None for run in runs),
            "rss": rss.peak, "throughput": throughput}


def _verdict(args: argparse.Namespace, figures: dict[int, dict[str, float]]) -> None:
    """The issue's goals against what was measured."""
    print(f"\nmachine: {os.cpu_count()} cores")
    if args.burst:
        counts = sorted(figures)
        rates = [figures[w]["throughput"] for w in counts]
        line = ", ".join(f"{w} workers {rate:.2f}/s" for w, rate in zip(counts, rates))
        grows = all(b > a for a, b in zip(rates, rates[1:]))
        verdict = f"; grows with the workers: {'yes' if grows else 'NO'}" * (len(rates) > 1)
        print(f"throughput: {line}{verdict}")
        return
    for workers, f in figures.items():
        met = f["p95"] <= GOAL_P95_S and f["errors"] == 0 and f["rss"] <= GOAL_RSS_BYTES
        print(f"{workers} workers: p95 {f['p95']:.2f} s (goal <= {GOAL_P95_S:g}), "
              f"errors {f['errors']:.0f} (goal 0), RSS {f['rss'] / 2**30:.2f} GiB "
              f"(goal <= {GOAL_RSS_BYTES / 2**30:g}): {'met' if met else 'NOT met'}")


def _worker_counts(text: str | None, burst: bool) -> list[int]:
    cores = os.cpu_count() or 1
    if text is None:
        return sorted({1, 2, cores}) if burst else [cores]
    return [int(part) for part in text.split(",")]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.workshop", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=30, help="sessions (default 30)")
    parser.add_argument("--window", type=float, default=15.0,
                        help="seconds over which the sessions arrive (default 15)")
    parser.add_argument("--burst", action="store_true",
                        help="all sessions at once; throughput per worker count")
    parser.add_argument("--same", action="store_true",
                        help="a page's sessions all ask for one scenario (shared result)")
    parser.add_argument("--workers", help="comma-separated EXPLORER_WORKERS values, one "
                        "server each (default: the cores; with --burst 1, 2 and the cores; "
                        "0 emulates in the server's own process)")
    parser.add_argument("--deadline", type=float, default=DEADLINE_S,
                        help=f"seconds after which a session counts as an error "
                             f"(default {DEADLINE_S:g})")
    args = parser.parse_args(argv)
    figures = {w: measure(w, args) for w in _worker_counts(args.workers, args.burst)}
    _verdict(args, figures)


if __name__ == "__main__":
    main()

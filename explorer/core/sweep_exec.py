"""Where the points of a sweep run: one executor interface, two implementations.

``Executor.map(fn, items, progress, cancelled)`` runs ``fn`` on every item and returns
``{index: result}`` of those that finished. It keeps a small window of items in flight,
calls ``progress(done, total)`` after each completion, and polls ``cancelled()`` while it
waits: once it returns True nothing more is submitted, what has not started is cancelled
and what already finished is returned.

* ``LocalExecutor(workers=2)``: worker processes on this machine, fresh interpreters that
  read one JSON request per line (see :func:`serve`). They start on first use and are
  kept for the next sweep; an ``instruction_cap`` sets the workers'
  ``EXPLORER_MAX_INSTRUCTIONS`` so that an interactive sweep refuses huge points instead
  of emulating them for minutes.
* ``DaskExecutor(address)``: a Dask scheduler (``distributed`` is an optional extra,
  imported here only); its workers must be able to import this project.

Items and results are plain data: a scenario travels as ``Scenario.to_dict()`` and comes
back as a small dict of metrics (see :func:`run_point`); the local workers exchange them
as JSON, never as pickles. Each result names the worker that ran it and its seconds, so an
executor's ``throughput`` (of its last ``map``) tells how the points spread over the
workers: how a sweep scales from one worker to a cluster.
"""
from __future__ import annotations

import concurrent.futures as cf
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hardware_presets.errors import InputError, Phrase

from .emulator.engine import DeadlockError
from .scenario import Scenario
from .simulate import simulate

Progress = Callable[[int, int], None]
Cancelled = Callable[[], bool]
POLL_S = 0.2  # how often a waiting map looks at ``cancelled``
DASK_TIMEOUT_S = 5.0
DASK_POLL_S = 0.01
DASK_HINT = "install the optional extra: pip install -r requirements-dask.txt"
MAX_WORKERS = 64
STOP_S = 5.0  # how long a closing worker may take to finish its point
ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding explorer/, kernels/
WORKER_MAIN = "from explorer.core.sweep_exec import serve; serve()"
WORKER_MODULES = ("explorer.", "kernels.")  # what a worker agrees to run
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class Executor(Protocol):
    """Runs a function over items somewhere; see the module docstring for the contract."""

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any],
            progress: Progress | None = None,
            cancelled: Cancelled | None = None) -> dict[int, Any]: ...


# ---- the work of one point ---------------------------------------------------------------
def error_parts(exc: Exception) -> dict[str, object]:
    """A refusal as plain data: the message, and for an InputError its parts (so that the
    UI can translate the sentence around them)."""
    if isinstance(exc, InputError):
        value = exc.value if isinstance(exc.value, (int, float, str, bool)) else str(exc.value)
        return {"message": str(exc), "field": exc.field, "value": value,
                "allowed": exc.allowed, "hint": exc.hint}
    name = "" if isinstance(exc, DeadlockError) else f"{type(exc).__name__}: "
    return {"message": f"{name}{exc}"}


def run_point(payload: dict) -> dict[str, object]:
    """Simulate one scenario given as plain data; its metrics and numerical verdict, or
    ``{"error": error_parts(...)}`` when the scenario is refused or cannot run; and which
    worker ran it (host:pid) in how many seconds."""
    started = time.perf_counter()
    try:
        result = simulate(Scenario.from_dict(payload))
    except Exception as exc:  # a refused point is a row with its reason, never a crash
        out = {"error": error_parts(exc)}
    else:
        check = result.numerics
        out = {"metrics": dict(result.metrics), "numerics_passed": bool(check.passed),
               "bound_ratio": float(check.bound_ratio),
               "norm_rel_error": float(check.norm_rel_error)}
    return {**out, "worker": f"{socket.gethostname()}:{os.getpid()}",
            "seconds": time.perf_counter() - started}


@dataclass
class Throughput:
    """Per worker of one ``map``: points it finished and seconds it spent in them, beside
    the map's wall time."""

    wall_s: float = 0.0
    points: dict[str, int] = field(default_factory=dict)
    busy_s: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, results: Iterable[object], wall_s: float) -> Throughput:
        out = cls(wall_s)
        for result in results:
            if isinstance(result, dict) and "worker" in result:
                worker = str(result["worker"])
                out.points[worker] = out.points.get(worker, 0) + 1
                out.busy_s[worker] = out.busy_s.get(worker, 0.0) + float(result["seconds"])
        return out

    def rows(self) -> list[tuple[str, int, float, float]]:
        """(worker, points, points per second of wall time, share of the wall time busy)."""
        wall = max(self.wall_s, 1e-9)
        return [(w, n, n / wall, self.busy_s[w] / wall) for w, n in sorted(self.points.items())]

    def lines(self) -> list[str]:
        """The rows as text, then the total (points per second over all workers)."""
        total = sum(self.points.values())
        return [f"worker {w}: {n} points, {rate:.2f} points/s, busy {busy:.0%}"
                for w, n, rate, busy in self.rows()] + [
            f"{len(self.points)} workers: {total} points in {self.wall_s:.2f} s, "
            f"{total / max(self.wall_s, 1e-9):.2f} points/s"]


def timed(executor, run: Callable[[], dict[int, Any]]) -> dict[int, Any]:
    """``run()`` (a ``drive``), its results' per-worker throughput kept on ``executor``."""
    started = time.monotonic()
    results = run()
    executor.throughput = Throughput.of(results.values(), time.monotonic() - started)
    return results


# ---- the shared loop ---------------------------------------------------------------------
def drive(items: Sequence[Any], submit: Callable, wait_some: Callable, cancel: Callable,
          window: int, progress: Progress | None, cancelled: Cancelled | None) -> dict:
    """Submit at most ``window`` items at a time, collect results as they finish.

    ``submit(item) -> future``; ``wait_some(futures) -> finished futures`` (possibly none
    after ``POLL_S``); ``cancel(futures)`` drops those not finished when cancelled."""
    results: dict[int, Any] = {}
    pending: dict[Any, int] = {}
    stop = cancelled or (lambda: False)
    queued = iter(range(len(items)))

    def fill() -> None:
        while len(pending) < window:
            index = next(queued, None)
            if index is None:
                return
            pending[submit(items[index])] = index

    if not stop():
        fill()
    while pending:
        for future in wait_some(list(pending)):
            results[pending.pop(future)] = future.result()
            if progress:
                progress(len(results), len(items))
        if stop():
            cancel(list(pending))
            break
        fill()
    return results


# ---- local worker processes --------------------------------------------------------------
def _plain(value: object) -> object:
    """numpy scalars as Python numbers, for JSON."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not plain data")


def serve(requests=None, replies=None) -> None:
    """A worker's loop: one JSON request per line (``{"fn": "module:name", "item": ...}``)
    in, one JSON reply per line (``{"result": ...}`` or ``{"raise": "..."}``) out.

    Anything the work prints goes to stderr, so stdout carries only replies; Ctrl-C is
    left to the parent, which decides what stops."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if replies is None:
        replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    for line in requests or sys.stdin:
        request = json.loads(line)
        module, _, name = request["fn"].partition(":")
        try:
            if not module.startswith(WORKER_MODULES):
                raise ValueError(f"{module} is not a module of this project")
            reply = {"result": getattr(importlib.import_module(module), name)(request["item"])}
        except Exception as exc:
            reply = {"raise": f"{type(exc).__name__}: {exc}"}
        replies.write(json.dumps(reply, default=_plain) + "\n")
        replies.flush()


class LocalExecutor:
    """Worker processes on this machine, started on first use and kept until ``close``.

    Each is a fresh interpreter (``python -c "...serve()"``) fed one JSON line per point
    by a thread of its own: no fork of a multi-threaded server, no re-run of the parent's
    ``__main__`` (a Streamlit script) as multiprocessing's spawn would do, no pickle.
    ``fn`` travels by name, so it must be a module-level function of this project
    (``run_point``); a worker that dies fails the run with its exit code."""

    def __init__(self, workers: int = 2, instruction_cap: int | None = None) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or \
                not 1 <= workers <= MAX_WORKERS:
            raise InputError("workers", workers, Phrase("refusal.int_range", low=1,
                                                        high=MAX_WORKERS))
        self.workers, self.instruction_cap = workers, instruction_cap
        self.throughput = Throughput()
        self._threads: cf.ThreadPoolExecutor | None = None
        self._procs: list[subprocess.Popen] = []
        self._local = threading.local()
        self._lock = threading.Lock()

    def _environment(self) -> dict[str, str]:
        """The parent's environment (NUMBA_CACHE_DIR included), this project on the path,
        one BLAS thread per worker (the workers are the parallelism: two workers with two
        OpenBLAS threads each on two cores made GEMM points 2.4x slower) and the cap."""
        env = {**os.environ, **{name: "1" for name in BLAS_THREADS}}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (ROOT, env.get("PYTHONPATH"))))
        if self.instruction_cap:
            env["EXPLORER_MAX_INSTRUCTIONS"] = str(int(self.instruction_cap))
        return env

    def _worker(self) -> subprocess.Popen:
        """This thread's worker process (a new one if it has none or it died)."""
        proc = getattr(self._local, "proc", None)
        if proc is None or proc.poll() is not None:
            proc = subprocess.Popen([sys.executable, "-c", WORKER_MAIN], env=self._environment(),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    text=True, encoding="utf-8")
            with self._lock:
                self._procs.append(proc)
            self._local.proc = proc
        return proc

    def _call(self, fn: Callable, item: Any) -> Any:
        proc = self._worker()
        request = {"fn": f"{fn.__module__}:{fn.__qualname__}", "item": item}
        proc.stdin.write(json.dumps(request, default=_plain) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"a sweep worker process ended (exit code {proc.wait()})")
        reply = json.loads(line)
        if "raise" in reply:
            raise RuntimeError(reply["raise"])
        return reply["result"]

    def _pool(self) -> cf.ThreadPoolExecutor:
        with self._lock:
            if self._threads is None:
                self._threads = cf.ThreadPoolExecutor(self.workers, "sweep-worker")
            return self._threads

    def map(self, fn, items, progress=None, cancelled=None) -> dict[int, Any]:
        pool = self._pool()
        return timed(self, lambda: drive(
            items, lambda item: pool.submit(self._call, fn, item), _wait_local,
            _cancel_local, 2 * self.workers, progress, cancelled))

    def close(self) -> None:
        """Stop the workers (each ends when its input closes)."""
        with self._lock:
            threads, self._threads = self._threads, None
            procs, self._procs = self._procs, []
        if threads is not None:
            threads.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            _stop(proc)

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _stop(proc: subprocess.Popen) -> None:
    try:
        proc.stdin.close()
        proc.wait(timeout=STOP_S)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()


def _wait_local(futures: list) -> set:
    return cf.wait(futures, timeout=POLL_S, return_when=cf.FIRST_COMPLETED).done


def _cancel_local(futures: list) -> None:
    for future in futures:
        future.cancel()


# ---- a Dask scheduler --------------------------------------------------------------------
def _connect(address: str, timeout: float):
    """A ``distributed.Client`` on ``address``, or an InputError saying what is wrong."""
    allowed = Phrase("refusal.dask.address")
    try:
        import distributed  # the optional extra: imported only when asked for
    except ImportError:
        raise InputError("dask", address, allowed,
                         Phrase("refusal.hint.dask_missing", hint=DASK_HINT)) from None
    if not isinstance(address, str) or not address.strip():
        raise InputError("dask", address, allowed)
    try:
        return distributed.Client(address.strip(), timeout=timeout, set_as_default=False)
    except (OSError, ValueError, TypeError, TimeoutError) as exc:
        raise InputError("dask", address, allowed,
                         Phrase("refusal.hint.dask_connect", error=exc)) from None


class DaskExecutor:
    """The points run on a Dask cluster; connects at once so a bad address fails early."""

    def __init__(self, address: str, timeout: float = DASK_TIMEOUT_S) -> None:
        self.address = address
        self._client = _connect(address, timeout)
        self.workers = max(1, sum(self._client.nthreads().values()))
        self.throughput = Throughput()

    @staticmethod
    def _wait(futures: list) -> set:
        """The finished futures, looking every few ms for up to ``POLL_S``."""
        deadline = time.monotonic() + POLL_S
        while True:
            done = {future for future in futures if future.done()}
            if done or time.monotonic() >= deadline:
                return done
            time.sleep(DASK_POLL_S)

    def map(self, fn, items, progress=None, cancelled=None) -> dict[int, Any]:
        client = self._client
        return timed(self, lambda: drive(
            items, lambda item: client.submit(fn, item, pure=False), self._wait,
            client.cancel, 2 * self.workers, progress, cancelled))

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

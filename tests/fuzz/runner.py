"""A pool of worker processes that runs fuzz cases under a memory and a time limit.

Each worker (forked from a forkserver, so starting one costs milliseconds, not an
interpreter start) warms up, then caps its address space at what it uses after warm-up
plus ``memory_bytes`` (RLIMIT_AS: numba and LLVM reserve far more address space than they
touch, so a fixed cap would refuse the warm-up itself). A case that runs past ``timeout``
of CPU time (or three times that of wall-clock time, for a case that blocks) is a
``hang``: counting CPU time keeps a loaded machine from turning slow cases into hangs.
Workers run with one BLAS thread each (the workers are the parallelism). A worker that
dies is an ``oom`` (the limit's usual way of killing). Either way the worker is replaced.
Before a hung worker is killed, faulthandler dumps its stack, so a hang is reported with
the line it was stuck on.
"""
from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing as mp
import os
import re
import resource
import signal
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path

from explorer.core.sweep_exec import BLAS_THREADS
from tests.waiting import poll_until

from . import targets

MEMORY_BYTES = 1 << 30
TIMEOUT_S = 10.0
WALL_FACTOR = 3.0
_DUMP_WAIT_S = 5.0
_CONTEXT = mp.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["tests.fuzz.targets"])


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _one_blas_thread():
    """The environment the forkserver (started by the first worker) and so every worker
    inherits: one BLAS thread each."""
    saved = {name: os.environ.get(name) for name in BLAS_THREADS}
    os.environ.update({name: "1" for name in BLAS_THREADS})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value


def _address_space() -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmSize:\s+(\d+) kB", status).group(1)) * 1024


def _serve(conn, target, warm_up, memory_bytes: int, dump_path: str) -> None:
    """Worker loop: warm up, set the limit, then answer one case per message."""
    dump = open(dump_path, "w")  # noqa: SIM115 - faulthandler writes here until exit
    faulthandler.enable(dump)
    faulthandler.register(signal.SIGUSR1, dump)
    warm_up()
    limit = _address_space() + memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    conn.send("ready")
    while True:
        try:
            case = conn.recv()
        except EOFError:
            return
        conn.send(target(case))


@dataclass
class _Worker:
    process: mp.Process
    conn: object
    dump: Path
    case: int | None = None
    started: float = 0.0
    cpu_at_start: float = 0.0

    def begin(self, case: int) -> None:
        self.case, self.started = case, time.monotonic()
        self.cpu_at_start = _cpu_seconds(self.process.pid)

    def out_of_time(self, timeout: float) -> bool:
        wall = time.monotonic() - self.started
        return wall >= timeout and (wall >= WALL_FACTOR * timeout or
                                    _cpu_seconds(self.process.pid) - self.cpu_at_start >= timeout)

    def stack_where(self) -> str:
        """The deepest project frame of the stack faulthandler wrote (the innermost frame
        when a deep recursion in a library pushed the project's out of the dump)."""
        lines = self.dump.read_text(errors="replace").splitlines()
        frames = [m for m in (re.match(r'\s*File "(.+)", line (\d+) in (\S+)', line)
                              for line in lines) if m]
        own = [m for m in frames if targets.own_code(m[1])] or frames  # innermost first;
        return targets.frame_text(*own[0].groups()) if own else "?"  # 100 frames at most


@dataclass
class Pool:
    """``run(cases)`` -> one outcome dict per case (see ``targets.run_case``). ``target``
    and ``warm_up`` are module-level functions (the workers import them by name)."""

    workers: int = 2
    timeout: float = TIMEOUT_S
    memory_bytes: int = MEMORY_BYTES
    target: Callable[[object], dict] = targets.run_case
    warm_up: Callable[[], None] = targets.warm_up
    _folder: tempfile.TemporaryDirectory = field(default_factory=tempfile.TemporaryDirectory)
    _started: int = 0

    def _start(self) -> _Worker:
        self._started += 1
        dump = Path(self._folder.name, f"stack-{self._started}.txt")
        parent, child = _CONTEXT.Pipe()
        process = _CONTEXT.Process(target=_serve, args=(child, self.target, self.warm_up,
                                                       self.memory_bytes, str(dump)),
                                   daemon=True)
        with _one_blas_thread():
            process.start()
        child.close()
        if parent.recv() != "ready":
            raise RuntimeError("fuzz worker failed to start")
        return _Worker(process, parent, dump)

    def _end(self, worker: _Worker, dump_stack: bool) -> str:
        """Stop a worker (its stack dumped first when asked); where it was, if known."""
        if dump_stack and worker.process.is_alive():
            os.kill(worker.process.pid, signal.SIGUSR1)
            with contextlib.suppress(AssertionError):  # no stack in time: its place is "?"
                poll_until(lambda: worker.dump.read_text(errors="replace"),
                           lambda text: "File" in text, "the hung worker's stack",
                           _DUMP_WAIT_S)
        worker.process.kill()
        worker.process.join()
        worker.conn.close()
        return worker.stack_where()

    def run(self, cases: list, progress=None) -> list[dict]:
        outcomes: list[dict | None] = [None] * len(cases)
        todo = deque(range(len(cases)))
        pool = [self._start() for _ in range(min(self.workers, len(cases)))]
        try:
            while todo or any(w.case is not None for w in pool):
                for w in pool:
                    if w.case is None and todo:
                        w.begin(todo.popleft())
                        w.conn.send(cases[w.case])
                busy = [w for w in pool if w.case is not None]
                ready = wait([w.conn for w in busy], self._next_look(busy))
                for i, w in enumerate(pool):
                    if w.case is None:
                        continue
                    outcome = self._collect(w, w.conn in ready)
                    if outcome is None:
                        continue
                    outcome["seconds"] = time.monotonic() - w.started
                    if outcome["kind"] in ("hang", "oom"):  # the stack and exit code first
                        pool[i] = self._replace(w, outcome)
                    outcomes[w.case] = outcome
                    if progress:
                        progress(w.case, outcome)
                    w.case = None
        finally:
            for w in pool:
                self._end(w, dump_stack=False)
        return outcomes

    def _next_look(self, busy: list[_Worker]) -> float:
        """Seconds until the first busy worker may be out of time (its CPU time is checked
        then, and every quarter second after while it is over on the clock only)."""
        return max(0.25, min(w.started for w in busy) + self.timeout - time.monotonic())

    def _collect(self, w: _Worker, ready: bool) -> dict | None:
        """The worker's outcome if it answered, died or ran out of time; else None."""
        if ready:
            try:
                return w.conn.recv()
            except EOFError:
                return {"kind": "oom", "type": "worker died", "message": "", "where": "?"}
        if w.out_of_time(self.timeout):
            return {"kind": "hang", "type": "timeout", "message": f"over {self.timeout:g} s",
                    "where": "?"}
        return None

    def _replace(self, w: _Worker, outcome: dict) -> _Worker:
        """Kill a hung or dead (or MemoryError-shaken) worker and start a fresh one."""
        where = self._end(w, dump_stack=outcome["kind"] == "hang")
        if outcome["where"] == "?":
            outcome["where"] = where
        if outcome["type"] == "worker died":
            outcome["message"] = f"exit code {w.process.exitcode}"
        return self._start()

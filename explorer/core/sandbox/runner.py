"""The server's half of a sandbox run: check, wait for a slot, start a fresh child process,
enforce the wall clock, read the answer, say what happened.

* **A fresh interpreter per run.** ``python -I -B -c BOOT``: isolated mode (no
  ``PYTHON*`` variables, no user site, no current directory on the path), a minimal
  environment (no secrets of the server's), its own session (so that the whole process
  group can be killed), ``/`` as working directory, and the user of
  ``EXPLORER_SANDBOX_USER`` if set (a server running as root should set it). Never a fork
  of the multi-threaded server. The packages ``explorer`` and ``explorer.core`` are bare
  namespaces in the child (their ``__init__`` imports the emulator and numba), so the
  child holds only numpy, the scope's modules and the task's; import tasks by their full
  module name.
* **Limits.** The child sets its own rlimits before the code runs (``worker.py``); the
  server kills the process group after ``wall_seconds`` whatever the child does, and stops
  reading (and kills) if the answer grows past its cap.
* **Answers as JSON only.** The request goes to the child as a pickle (server to child);
  the answer comes back as JSON lines on a pipe of its own, never unpickled.
* **Slots.** At most ``EXPLORER_SANDBOX_SLOTS`` runs at once (default two per core): the
  others wait for a slot (``Gate``), so that thirty students pressing "run" together start
  a few processes at a time, not thirty.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pickle
import re
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from hardware_presets.errors import InputError

from .checker import Refusal, check
from .limits import Limits, Scope, slots_setting, user_setting
from .outcome import KINDS, LIMIT_KINDS, Outcome, StudentError

_EXPLORER = Path(__file__).resolve().parents[2]
_ROOT = _EXPLORER.parent
#: packages that are bare namespaces in the child (no ``__init__`` run)
_STUBS = (("explorer", str(_EXPLORER)), ("explorer.core", str(_EXPLORER / "core")))
_TASK = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_DIAGNOSTIC_BYTES = 8_192
_CHUNK = 65_536

BOOT = """\
import pickle, sys, types
head = pickle.load(sys.stdin.buffer)
sys.path[:0] = head["path"]
for name, folder in head["stubs"]:
    if name not in sys.modules:
        stub = types.ModuleType(name)
        stub.__path__ = [folder]
        sys.modules[name] = stub
from explorer.core.sandbox import worker
worker.boot()
"""


# ---- slots -------------------------------------------------------------------------------
class Gate:
    """At most ``slots`` holders at once; the others wait (in about arrival order)."""

    def __init__(self, slots: int) -> None:
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise InputError("slots", slots, "an integer of at least 1")
        self.slots = slots
        self._cond = threading.Condition()
        self._running = 0
        self._waiting = 0
        self.most = 0  # the most holders ever at once (for tests and the server's log)

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            try:
                self._cond.wait_for(lambda: self._running < self.slots)
            finally:
                self._waiting -= 1
            self._running += 1
            self.most = max(self.most, self._running)
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify()

    def load(self) -> tuple[int, int]:
        """(waiting, running) runs right now."""
        with self._cond:
            return self._waiting, self._running


_gate: Gate | None = None
_gate_lock = threading.Lock()


def default_gate() -> Gate:
    """The process's gate, made on first use with ``EXPLORER_SANDBOX_SLOTS`` slots."""
    global _gate
    with _gate_lock:
        if _gate is None:
            _gate = Gate(slots_setting())
        return _gate


def set_default_gate(gate: Gate) -> Gate | None:
    """Make ``gate`` the process's gate (tests); returns the one it replaces."""
    global _gate
    with _gate_lock:
        previous, _gate = _gate, gate
        return previous


# ---- one run -----------------------------------------------------------------------------
def run(source: str, task: str, payload: object = None, limits: Limits | None = None,
        scope: Scope | None = None) -> Outcome:
    """Check ``source``, then run it in a sandbox child and call ``task`` there.

    ``task`` is ``"package.module:function"`` of trusted code, called in the child as
    ``function(namespace, payload)`` after the student's code has run in ``namespace``; it
    returns JSON data (the outcome's ``value``). Refused code never starts a process."""
    limits = Limits() if limits is None else limits
    scope = Scope() if scope is None else scope
    if not isinstance(task, str) or not _TASK.fullmatch(task):
        raise InputError("task", task, "'package.module:function'")
    refusals = check(source, scope.modules)
    if refusals:
        return Outcome("refused", limits, refusals=tuple(refusals))
    with default_gate().slot():
        start = time.monotonic()
        outcome = _Child(source, task, payload, limits, scope).run()
    return dataclasses.replace(outcome, seconds=round(time.monotonic() - start, 3))


def _environment() -> dict[str, str]:
    env = {"PATH": os.defpath, "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1"}
    env.update({k: v for k, v in os.environ.items() if k.startswith("EXPLORER_")})
    return env


def _path() -> list[str]:
    paths = [str(_ROOT)] + [os.path.abspath(p) for p in sys.path if p]
    return list(dict.fromkeys(paths))


class _Child:
    def __init__(self, source: str, task: str, payload: object, limits: Limits,
                 scope: Scope) -> None:
        self.limits = limits
        self.head = {"path": _path(), "stubs": _STUBS}
        self.request = {"source": source, "task": task, "payload": payload,
                        "limits": limits.as_dict(), "scope": scope.as_dict()}
        self.answer_cap = limits.result_bytes + 6 * limits.output_chars + _CHUNK
        self._lock = threading.Lock()
        self._reaped = False
        self.killed_for = ""  # "wall" or "result" once the server killed the child

    def run(self) -> Outcome:
        try:
            data = pickle.dumps(self.head) + pickle.dumps(self.request)
        except Exception as exc:  # noqa: BLE001 - a payload that cannot travel
            raise InputError("payload", type(self.request["payload"]).__name__,
                             "data that pickle can send to the child") from exc
        user = user_setting()
        as_user = {} if user is None else {"user": user[0], "group": user[1],
                                           "extra_groups": []}
        read_end, write_end = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", BOOT, str(write_end)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(write_end,), start_new_session=True, cwd="/", env=_environment(),
                **as_user)
        except OSError as exc:
            os.close(read_end)
            return Outcome("crashed", self.limits, detail=f"could not start: {exc}")
        finally:
            os.close(write_end)
        self.proc = proc
        timer = threading.Timer(self.limits.wall_seconds, self._kill, ("wall",))
        timer.daemon = True
        timer.start()
        try:
            with contextlib.suppress(BrokenPipeError):  # a child that died at once
                view = memoryview(data)
                while view:
                    view = view[os.write(proc.stdin.fileno(), view):]
            proc.stdin.close()
            answer, stdout, stderr = self._read(read_end)
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # a zombie keeps the pgid
            with self._lock:
                self._signal_group(signal.SIGKILL)  # anything the child left behind
                self._reaped = True
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        finally:
            timer.cancel()
            timer.join()
            os.close(read_end)
            for stream in (proc.stdout, proc.stderr):
                stream.close()
        return self._outcome(answer, stdout + stderr, proc.returncode,
                             usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def _kill(self, reason: str) -> None:
        with self._lock:
            if not self._reaped:
                self.killed_for = self.killed_for or reason
                self._signal_group(signal.SIGKILL)

    def _read(self, answer_fd: int) -> tuple[bytes, bytes, bytes]:
        """Everything the child writes until it closes its pipes: the answer (up to its
        cap, past which the child is killed) and the start of stdout and stderr."""
        kept = {answer_fd: bytearray(), "out": bytearray(), "err": bytearray()}
        with selectors.DefaultSelector() as sel:
            sel.register(answer_fd, selectors.EVENT_READ, answer_fd)
            sel.register(self.proc.stdout, selectors.EVENT_READ, "out")
            sel.register(self.proc.stderr, selectors.EVENT_READ, "err")
            while sel.get_map():
                for key, _ in sel.select():
                    chunk = os.read(key.fd, _CHUNK)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    buffer = kept[key.data]
                    if key.data == answer_fd:
                        buffer += chunk
                        if len(buffer) > self.answer_cap:
                            self._kill("result")
                            sel.unregister(key.fileobj)
                    elif len(buffer) < _DIAGNOSTIC_BYTES:
                        buffer += chunk[:_DIAGNOSTIC_BYTES - len(buffer)]
        return bytes(kept[answer_fd]), bytes(kept["out"]), bytes(kept["err"])

    def _outcome(self, answer: bytes, diagnostics: bytes, code: int, cpu: float,
                 rss: int) -> Outcome:
        limits = self.limits
        armed, record = None, None
        if self.killed_for != "result":
            for line in answer.splitlines():
                try:
                    item = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(item, dict) and "armed" in item:
                    armed = item["armed"]
                elif isinstance(item, dict) and item.get("kind") in KINDS:
                    record = item
        if record is not None:
            return self._from_record(record)
        if self.killed_for:
            return Outcome("limit", limits, limit=self.killed_for)
        tail = diagnostics.decode("utf-8", "replace").strip()[-2000:]
        if code < 0:
            sig = -code
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = str(sig)
            if isinstance(armed, (int, float)) and (
                    sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= armed)):
                return Outcome("limit", limits, limit="cpu")
            if armed is not None and rss >= 0.9 * (limits.memory_mb << 20) \
                    and rss > _own_peak_rss():
                return Outcome("limit", limits, limit="memory")
            how = f"signal {name}"
        else:
            how = f"exit code {code}"
        return Outcome("crashed", limits, detail=f"{how}\n{tail}".strip())

    def _from_record(self, record: dict) -> Outcome:
        limits, kind = self.limits, record["kind"]
        output = str(record.get("output") or "")
        if kind == "ok":
            return Outcome("ok", limits, value=record.get("value"), output=output)
        if kind == "limit" and record.get("limit") in LIMIT_KINDS:
            return Outcome("limit", limits, limit=record["limit"], output=output)
        if kind == "error" and isinstance(record.get("error"), dict):
            return Outcome("error", limits, error=StudentError.from_dict(record["error"]),
                           output=output)
        if kind == "refused" and isinstance(record.get("refusals"), list):
            refusals = tuple(Refusal(int(r.get("line") or 0), str(r.get("msg_id")),
                                     dict(r.get("values") or {}))
                             for r in record["refusals"] if isinstance(r, dict))
            if refusals:
                return Outcome("refused", limits, refusals=refusals)
        return Outcome("crashed", limits, output=output,
                       detail=str(record.get("detail") or "an answer of no known kind")[:2000])


def _own_peak_rss() -> int:
    """This process's peak resident size (bytes). Linux hands a child the peak of the
    process that started it, so a child's ``ru_maxrss`` below this says nothing about the
    child's own use: a large server would make every crash read as a memory limit."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

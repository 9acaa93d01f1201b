"""The child process of a sandbox run (started by ``runner.py``, never imported by the
server for anything else).

In order: lower the priority; import the trusted modules (the scope's, the task's); check
and instrument the student's source again and compile it as ``<student>`` (the DSL's
``STUDENT_FILENAME`` too); set the limits (RLIMIT_CPU from the CPU used so far, RLIMIT_AS,
RLIMIT_NOFILE 16, RLIMIT_FSIZE 0, RLIMIT_CORE 0, a low recursion limit, 4 MiB thread
stacks); tell the server it is armed; run the code in its namespace, then
``task(namespace, payload)``; write the outcome as one JSON line to the result pipe and
leave with ``os._exit`` (no atexit hooks, no finalizers).

A student's exception keeps its message id when it has one (``msg_id``, or the DSL's
``message_id``), with its ``values``, ``line`` and ``core`` (the DSL's block).

The server reads only JSON from this process, never a pickle: a child that the student
took over could forge an answer, never run code in the server.
"""
from __future__ import annotations

import importlib
import json
import math
import os
import resource
import sys
import threading
import traceback

from . import guards
from .checker import check, instrument, parse
from .guards import STUDENT_MODULE, SandboxLimit
from .limits import Limits, Scope

#: a little memory set aside, freed on MemoryError so that the answer can still be written
_RESERVE_BYTES = 1 << 20
_MESSAGE_CHARS = 500
#: the stack of each thread the DSL starts (the default, 8 MiB, would spend RLIMIT_AS
#: on 48 blocks' stacks); Python frames hardly use the C stack in 3.11
_THREAD_STACK_BYTES = 4 << 20


def _write(fd: int, record: dict) -> None:
    data = (json.dumps(record, default=_plain) + "\n").encode("ascii")
    while data:
        data = data[os.write(fd, data):]


def _plain(value: object) -> object:
    """JSON for numpy scalars and arrays (``tolist``); anything else is refused."""
    tolist = getattr(type(value), "tolist", None)
    if tolist is not None and type(value).__module__.startswith("numpy"):
        return tolist(value)
    raise TypeError(f"a {type(value).__name__} is not JSON data")


def _load(path: str) -> object:
    """``package.module:function`` -> the function."""
    module, _, name = path.partition(":")
    target = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    return target


def _student_line(exc: BaseException) -> int | None:
    line = getattr(exc, "line", None)
    if isinstance(line, int) and not isinstance(line, bool):
        return line
    found = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == STUDENT_MODULE:
            found = lineno
    if found is None and isinstance(exc, SyntaxError) and exc.filename == STUDENT_MODULE:
        found = exc.lineno
    return found


def _text(value: object) -> str:
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - a message that cannot be shown is still an error
        text = "?"
    return _clean(text[:_MESSAGE_CHARS])


def _clean(text: str) -> str:
    """``text`` as valid UTF-8 (a lone surrogate becomes "?")."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _json_value(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float)):
        return value if not isinstance(value, int) or value.bit_length() < 64 else _text(value)
    return _text(value)


def _error(exc: BaseException) -> dict:
    error = {"type": type(exc).__name__[:80], "message": _text(exc),
             "line": _student_line(exc)}
    msg_id = getattr(exc, "msg_id", None) or getattr(exc, "message_id", None)
    values = getattr(exc, "values", None)
    if isinstance(msg_id, str) and msg_id and len(msg_id) < 200:
        error["msg_id"] = msg_id
        values = dict(values) if isinstance(values, dict) else {}
        core = getattr(exc, "core", None)  # the DSL's block, when it says
        if isinstance(core, int) and "core" not in values:
            values["core"] = core
        error["values"] = {str(k)[:80]: _json_value(v) for k, v in list(values.items())[:20]}
    return error


def _set_limits(limits: Limits) -> int:
    """The process limits; returns the CPU seconds (soft limit) the child may reach."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = math.ceil(usage.ru_utime + usage.ru_stime) + limits.cpu_seconds
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = limits.memory_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
    # No RLIMIT_NPROC: Linux counts threads against it per user, and the DSL runs a thread
    # per block, so any value would depend on what else the user runs. The code cannot
    # reach os, subprocess or threading; the DSL bounds its threads by the chip's cores.
    return cpu


def main(fd: int, request: dict) -> None:
    os.nice(10)  # the server's pages come first
    limits = Limits.from_dict(request["limits"])
    scope = Scope.from_dict(request["scope"])
    exported = {}
    for name, target in scope.modules.items():
        path, _, names = target.partition(":")
        exported[name] = guards.export(name, importlib.import_module(path), names)
    task = _load(request["task"])
    refusals = check(request["source"], scope.modules)
    if refusals:  # the server checked already; this is the second look
        _write(fd, {"kind": "refused", "refusals": [
            {"line": r.line, "msg_id": r.msg_id, "values": r.values} for r in refusals]})
        return
    tree, _ = parse(request["source"])
    code = compile(instrument(tree), STUDENT_MODULE, "exec", dont_inherit=True)
    output = guards.Output(limits.output_chars)
    steps = guards.Steps(limits.steps)
    namespace = guards.namespace(exported, scope.preload,
                                 guards.Guards(scope.trusted_prefixes(), exported),
                                 output, steps)
    payload = request["payload"]
    del request
    reserve = bytearray(_RESERVE_BYTES)
    threading.stack_size(_THREAD_STACK_BYTES)  # address space for a DSL thread per block
    cpu = _set_limits(limits)
    _write(fd, {"armed": cpu})
    sys.setrecursionlimit(len(traceback.extract_stack()) + 50 + limits.recursion)
    record: dict
    try:
        exec(code, namespace)  # noqa: S102 - checked, instrumented, limited: the sandbox
        value = task(namespace, payload)
        record = {"kind": "ok", "value": value}
    except SandboxLimit as exc:
        record = {"kind": "limit", "limit": exc.kind}
    except RecursionError:
        record = {"kind": "limit", "limit": "recursion"}
    except MemoryError:
        del reserve
        record = {"kind": "limit", "limit": "memory"}
    except BaseException as exc:  # noqa: BLE001 - the student's error, whatever it is
        record = {"kind": "error", "error": _error(exc)}
    sys.setrecursionlimit(1000)
    if steps.exceeded:
        record = {"kind": "limit", "limit": "steps"}
    elif output.exceeded:
        record = {"kind": "limit", "limit": "output"}
    namespace.clear()
    record["output"] = _clean(output.text())
    if record["kind"] == "ok":
        try:
            size = len(json.dumps(record["value"], default=_plain))
        except (TypeError, ValueError, RecursionError) as exc:
            record = {"kind": "error", "output": record["output"],
                      "error": {"type": "TypeError", "message": _text(exc), "line": None,
                                "msg_id": "sandbox.outcome.not_data",
                                "values": {"kind": type(record["value"]).__name__[:60]}}}
        else:
            if size > limits.result_bytes:
                record = {"kind": "limit", "limit": "result", "output": record["output"]}
    _write(fd, record)


def boot() -> None:
    """The child's entry: the request comes pickled on stdin from the server (trusted),
    the answer goes as JSON lines to the file descriptor given as the first argument."""
    import pickle

    fd = int(sys.argv[1])
    request = pickle.load(sys.stdin.buffer)
    sys.stdin.close()
    try:
        main(fd, request)
    except BaseException as exc:  # noqa: BLE001 - a failure before the code ran
        try:
            _write(fd, {"kind": "crashed", "detail": "".join(
                traceback.format_exception_only(exc))[:2000]})
        finally:
            os._exit(3)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)

"""Trusted code for the sandbox tests (tests/test_sandbox*.py): tasks the child calls as
``task(namespace, payload)`` after the student's code ran, and a stand-in DSL (``__all__``)
that a test scope maps to the name ``dsl``.

Imports only numpy and the standard library, as a real DSL and grader should.
"""
from __future__ import annotations

import os
import signal
import time

import numpy as np

__all__ = ["DslError", "Tensor", "raise_message_id", "raise_unknown", "scale", "launch"]
#: what a scope ``"tests.sandbox_tasks:STUDENT_NAMES"`` exports: the DSL without its host side
STUDENT_NAMES = ("Tensor", "scale", "raise_message_id")


# ---- a stand-in DSL ----------------------------------------------------------------------
class DslError(Exception):
    """A DSL error that carries its own message id and values, as the Ascend C DSL's do."""

    def __init__(self, msg_id: str, line: int | None = None, **values: object) -> None:
        super().__init__(f"{msg_id} {values}")
        self.msg_id = msg_id
        self.values = values
        if line is not None:
            self.line = line


class Tensor:
    """A DSL object whose public attribute ``data`` is a numpy array (which the sandbox
    must not let the student explore)."""

    def __init__(self, n: int) -> None:
        if n > 1 << 20:
            raise DslError("sandbox.limit.memory", memory_mb=n)
        self.data = np.zeros(n, dtype=np.float32)
        self.size = n

    def fill(self, value: float) -> Tensor:
        self.data[:] = value
        return self

    def total(self) -> float:
        return float(self.data.sum())


def scale(t: Tensor, factor: float) -> Tensor:
    t.data *= factor
    return t


def raise_unknown() -> None:
    """A DSL error whose message id no catalogue has."""
    raise DslError("no.such.id", detail=1)


class ModelError(Exception):
    """An error shaped like the Ascend C DSL's: ``message_id``, ``values``, ``line``,
    ``core``."""

    def __init__(self, message_id: str, values: dict, core: int) -> None:
        super().__init__(message_id)
        self.message_id, self.values, self.core = message_id, values, core


def raise_message_id() -> None:
    raise ModelError("sandbox.limit.memory", {"memory_mb": 7}, core=3)


def launch(source: str) -> None:
    """Host side that must never reach the student (it would run code unchecked)."""
    exec(source)  # noqa: S102


# ---- tasks -------------------------------------------------------------------------------
def nothing(namespace: dict, payload: object) -> None:
    """The student's top-level code is the whole test."""


def value(namespace: dict, payload: dict) -> object:
    """The value of one name the student's code defined."""
    return namespace[payload["name"]]


def call(namespace: dict, payload: dict) -> object:
    """Call the student's function ``payload["name"]`` with ``payload["args"]``."""
    return namespace[payload["name"]](*payload.get("args", ()))


def allocate(namespace: dict, payload: dict) -> float:
    """Allocate what the student asked for, as a DSL would for a tensor."""
    return float(np.ones(int(namespace["n"]), dtype=np.float64).sum())


def in_threads(namespace: dict, payload: dict) -> list:
    """Call the student's function once per block on a thread each, as the DSL's launch."""
    import threading

    results = [None] * payload["blocks"]

    def block(i: int) -> None:
        results[i] = namespace[payload["name"]](i)

    threads = [threading.Thread(target=block, args=(i,)) for i in range(payload["blocks"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def tiled(namespace: dict, payload: dict) -> object:
    """Call the student's ``kernel`` with a host tiling struct, as a puzzle's grader does."""
    import types

    return namespace["kernel"](types.SimpleNamespace(**payload))


def sleep(namespace: dict, payload: dict) -> None:
    """Block without using CPU (only the wall clock can stop it)."""
    time.sleep(payload["seconds"])


def crash(namespace: dict, payload: object) -> None:
    """Die the way a broken C extension would."""
    os.kill(os.getpid(), signal.SIGSEGV)


def unserializable(namespace: dict, payload: object) -> object:
    return {1, 2, 3}


def big(namespace: dict, payload: dict) -> str:
    return "x" * payload["size"]


def environment(namespace: dict, payload: object) -> dict:
    """What the child sees of its process (the tests check its isolation)."""
    import resource
    import sys

    return {
        "env": sorted(os.environ),
        "cwd": os.getcwd(),
        "uid": os.getuid(),
        "nofile": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        "fsize": resource.getrlimit(resource.RLIMIT_FSIZE)[0],
        "numba": "numba" in sys.modules,
        "explorer_init_ran": hasattr(sys.modules.get("explorer.core"), "simulate"),
    }

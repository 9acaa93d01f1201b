"""A sandbox for untrusted code (the students' puzzle solutions on a shared workshop server).

Two walls, either of which alone would not do:

1. **Before it runs** (``checker.py``): an AST allow-list refuses imports beyond the
   scope's modules, dunder names, private and internal attributes, string formatting that
   reads attributes, generators, ``global``, ``with``, ``async`` ...; each refusal names its
   line and comes as a message id with values (``sandbox.refuse.*``).
2. **While it runs** (``runner.py``, ``worker.py``, ``guards.py``): a fresh child process
   per run with CPU-time, address-space, file and process limits, a wall clock the server
   enforces, an instruction cap, a low recursion limit, capped output; the code sees only
   safe builtins and the public names of its scope's modules, and attribute access is
   checked again at run time by the kind of object touched.

``run(source, task, payload, limits, scope)`` returns an ``Outcome``: ``ok``, ``refused``,
``error``, ``limit`` or ``crashed``, with ``message()`` for the page to translate. At most
``EXPLORER_SANDBOX_SLOTS`` runs go at once per server process; the others wait.
"""
from __future__ import annotations

from .checker import MAX_DEPTH, MAX_SOURCE_CHARS, Refusal, check
from .limits import Limits, Scope, slots_setting
from .outcome import LIMIT_IDS, LIMIT_KINDS, Outcome, StudentError
from .runner import Gate, default_gate, run, set_default_gate

__all__ = [
    "LIMIT_IDS", "LIMIT_KINDS", "MAX_DEPTH", "MAX_SOURCE_CHARS", "Gate", "Limits", "Outcome",
    "Refusal", "Scope", "StudentError", "check", "default_gate", "run", "set_default_gate",
    "slots_setting",
]

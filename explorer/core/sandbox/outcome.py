"""What a sandbox run came to, as data the pages translate (``Outcome.message``).

Kinds:

* ``ok``: the task returned ``value`` (JSON data);
* ``refused``: the checker refused the code before it ran (``refusals``);
* ``error``: the code (or the DSL on its behalf) raised ``error``;
* ``limit``: a limit stopped the run (``limit``: one of ``LIMIT_KINDS``);
* ``crashed``: the child process ended without an answer (``detail`` says how, in English,
  for the server's log).

``output`` is what the code printed, up to ``Limits.output_chars``, whatever the kind;
``seconds`` the run's wall time in the server's view (start-up of the child included).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .checker import Refusal
from .limits import Limits

KINDS = ("ok", "refused", "error", "limit", "crashed")
LIMIT_KINDS = ("cpu", "wall", "memory", "steps", "recursion", "output", "result")

#: the message of each limit; its values are the run's ``Limits`` fields
LIMIT_IDS = {
    "cpu": "sandbox.limit.cpu",
    "wall": "sandbox.limit.wall",
    "memory": "sandbox.limit.memory",
    "steps": "sandbox.limit.steps",
    "recursion": "sandbox.limit.recursion",
    "output": "sandbox.limit.output",
    "result": "sandbox.limit.result",
}


@dataclass(frozen=True)
class StudentError:
    """An exception of the student's code: its type, text and line in the student's source.

    ``msg_id`` and ``values`` are the exception's own when it carries them (a DSL error, a
    refusal of the run-time guards), so that the page translates it."""

    type: str
    message: str
    line: int | None = None
    msg_id: str = ""
    values: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict) -> StudentError:
        return cls(str(data.get("type", "")), str(data.get("message", "")),
                   data.get("line") if isinstance(data.get("line"), int) else None,
                   str(data.get("msg_id") or ""), dict(data.get("values") or {}))


@dataclass(frozen=True)
class Outcome:
    kind: str
    limits: Limits
    value: Any = None
    refusals: tuple[Refusal, ...] = ()
    error: StudentError | None = None
    limit: str = ""
    output: str = ""
    detail: str = ""
    seconds: float = 0.0  # the run's wall time, waiting for a slot excluded

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    def message(self) -> tuple[str, dict]:
        """The message id and values that say what happened (the first refusal's for
        ``refused``; ``messages`` lists them all)."""
        if self.kind == "refused":
            return _known(self.refusals[0].message())
        if self.kind == "limit":
            return LIMIT_IDS[self.limit], self.limits.as_dict()
        if self.kind == "crashed":
            return "sandbox.outcome.crashed", {"reason": self.detail.splitlines()[0]
                                               if self.detail else "?"}
        if self.kind == "error" and self.error is not None:
            error = self.error
            if error.msg_id and _has(error.msg_id):
                return error.msg_id, {"line": error.line, **error.values}
            values = {"kind": error.type, "message": error.message}
            if error.line is None:
                return "sandbox.outcome.error_noline", values
            return "sandbox.outcome.error", {**values, "line": error.line}
        return "sandbox.outcome.ok", {}

    def messages(self) -> list[tuple[str, dict]]:
        """Every message of the outcome: one per refusal, else the one of ``message``."""
        if self.kind == "refused":
            return [_known(r.message()) for r in self.refusals]
        return [self.message()]


def _has(msg_id: str) -> bool:
    """Whether the catalogue has ``msg_id`` (imported here: the child never needs it)."""
    from ..i18n import has

    return has(msg_id)


def _known(message: tuple[str, dict]) -> tuple[str, dict]:
    """A refusal's message, or a generic one if its id is unknown (a forged answer)."""
    msg_id, values = message
    if _has(msg_id):
        return message
    return "sandbox.outcome.crashed", {"reason": str(msg_id)[:80]}

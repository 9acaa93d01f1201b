"""What a sandbox run may use (``Limits``) and what its code may import (``Scope``).

Both are plain frozen dataclasses that travel to the child process as dicts
(``as_dict``/``from_dict``), so that the child never unpickles a project class.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields

from hardware_presets.errors import InputError

#: environment variable: how many sandbox runs may go at once in this server process
SLOTS_ENV = "EXPLORER_SANDBOX_SLOTS"
MAX_SLOTS = 256
#: environment variable: the user the children run as (a server started as root should
#: set it, to "nobody" for one; that user must be able to read Python and the checkout)
USER_ENV = "EXPLORER_SANDBOX_USER"

_TARGET = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*)?")

#: (lowest, highest) of each limit
RANGES: dict[str, tuple[float, float]] = {
    "cpu_seconds": (1, 600),
    "wall_seconds": (0.5, 3600),
    "memory_mb": (256, 65_536),
    "output_chars": (0, 10_000_000),
    "result_bytes": (1_024, 10_000_000),
    "steps": (1_000, 10_000_000_000),
    "recursion": (20, 5_000),
}


@dataclass(frozen=True)
class Limits:
    """Limits of one run of student code.

    * ``cpu_seconds``: CPU time of the student's code and the task (RLIMIT_CPU, counted
      from the moment the child has imported its modules), whole seconds;
    * ``wall_seconds``: the whole run as the server sees it, start-up included; the server
      kills the child's process group when it is over;
    * ``memory_mb``: the child's address space (RLIMIT_AS), imports included;
    * ``output_chars``: what ``print`` may write;
    * ``result_bytes``: the task's result, as JSON;
    * ``steps``: the instruction cap, loop iterations plus calls plus comprehension elements;
    * ``recursion``: nested calls the code may make (Python frames above the task's).
    """

    cpu_seconds: int = 5
    wall_seconds: float = 15.0
    memory_mb: int = 1024
    output_chars: int = 65_536
    result_bytes: int = 262_144
    steps: int = 20_000_000
    recursion: int = 200

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            low, high = RANGES[f.name]
            whole = f.name != "wall_seconds"
            kinds = (int,) if whole else (int, float)
            if isinstance(value, bool) or not isinstance(value, kinds) or \
                    not low <= value <= high:
                kind = "an integer" if whole else "a number"
                raise InputError(f"limits.{f.name}", value,
                                 f"{kind} from {low:g} to {high:g}")

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> Limits:
        return cls(**data)


@dataclass(frozen=True)
class Scope:
    """What the student's code can see besides the safe builtins.

    * ``modules``: the name the student imports -> the trusted module behind it, as
      ``"package.module"`` (the student gets the names of its ``__all__``, else those
      without a leading underscore) or ``"package.module:NAMES"`` (the names listed in the
      module's attribute ``NAMES``). The Ascend C DSL's ``__all__`` holds its host side too
      (``launch``, ``compile_student``, which runs code unchecked), so a puzzle maps
      ``{"ascendc": "kernels.ascendc:DSL_NAMES", "math": "math"}``;
    * ``preload``: modules whose public names are in scope without an import, as after
      ``from ascendc import *``;
    * ``trusted``: extra module prefixes whose objects' attributes the code may read
      (the modules of ``modules`` are trusted already).
    """

    modules: Mapping[str, str] = field(default_factory=lambda: {"math": "math"})
    preload: tuple[str, ...] = ()
    trusted: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "modules", dict(self.modules))
        object.__setattr__(self, "preload", tuple(self.preload))
        object.__setattr__(self, "trusted", tuple(self.trusted))
        for name, target in self.modules.items():
            if not (isinstance(name, str) and name.isidentifier() and not name.startswith("_")
                    and isinstance(target, str) and _TARGET.fullmatch(target)):
                raise InputError("scope.modules", name, "a public identifier mapped to "
                                 "'package.module' or 'package.module:NAMES'")
        unknown = [p for p in self.preload if p not in self.modules]
        if unknown:
            raise InputError("scope.preload", unknown, "names of the scope's modules")

    def trusted_prefixes(self) -> tuple[str, ...]:
        """Module prefixes whose classes are trusted: the modules behind the names, and
        ``trusted``."""
        paths = (target.partition(":")[0] for target in self.modules.values())
        return tuple(dict.fromkeys((*paths, *self.trusted)))

    def as_dict(self) -> dict:
        return {"modules": dict(self.modules), "preload": list(self.preload),
                "trusted": list(self.trusted)}

    @classmethod
    def from_dict(cls, data: Mapping) -> Scope:
        return cls(data["modules"], tuple(data["preload"]), tuple(data["trusted"]))


def slots_setting(environ: Mapping[str, str] | None = None) -> int:
    """How many sandbox runs at once (``EXPLORER_SANDBOX_SLOTS``; unset: two per core)."""
    text = (os.environ if environ is None else environ).get(SLOTS_ENV, "").strip()
    if not text:
        return 2 * (os.cpu_count() or 1)
    if not text.isdigit() or not 1 <= int(text) <= MAX_SLOTS:
        raise InputError(SLOTS_ENV, text, f"an integer from 1 to {MAX_SLOTS}")
    return int(text)


def user_setting(environ: Mapping[str, str] | None = None) -> tuple[int, int] | None:
    """(uid, gid) the children run as (``EXPLORER_SANDBOX_USER``, a name or a number), or
    None to run them as the server's own user."""
    import pwd

    text = (os.environ if environ is None else environ).get(USER_ENV, "").strip()
    if not text:
        return None
    try:
        entry = pwd.getpwuid(int(text)) if text.isdigit() else pwd.getpwnam(text)
    except (KeyError, OverflowError):
        raise InputError(USER_ENV, text, "a user name or id that exists on this machine",
                         "for example nobody") from None
    return entry.pw_uid, entry.pw_gid

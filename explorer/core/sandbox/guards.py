"""The run-time half of the sandbox, used inside the child process only: the namespace the
student's code runs in, its builtins, and the guards that ``checker.instrument`` calls.

* **Builtins.** ``SAFE_BUILTINS`` (plain values, containers, iteration, a few exceptions),
  ``print`` into a capped buffer, an ``__import__`` that hands out only the run's
  ``Scope`` modules, and ``__build_class__`` for ``class`` statements. No ``type``,
  ``object``, ``getattr``, ``open``, ``eval``, ``globals`` ...
* **Exported modules.** An allowed module is never given to the student as itself: an
  ``ExportedModule`` holds only its public names (``__all__``, or the names without a
  leading underscore), and never a module (``np.ctypeslib``, ``os``), so that no chain of
  attributes leaves it.
* **Attribute reads** are allowed on plain values (``int``, ``str``, ``list``, ``dict`` ...
  and their types), exceptions, exported modules, objects whose class comes from a trusted
  module (the DSL's) and objects of the student's own classes: never on functions,
  generators, frames or foreign objects (a numpy array behind a DSL tensor, for one).
  **Attribute writes** only on objects (and classes) of the student's own classes.
* **The instruction cap.** Every loop iteration, function call and comprehension element
  ticks; past ``Limits.steps`` ticks ``StepLimit`` stops the run.

The limits of the process (CPU, memory, files) are set in ``worker.py``.
"""
from __future__ import annotations

import builtins
import itertools
import types
from collections.abc import Iterable, Mapping

from .checker import DENIED_ATTRIBUTES, READ_GUARD, TICK, WRITE_GUARD

#: ``__name__`` of the student's namespace, hence ``__module__`` of the classes it defines
STUDENT_MODULE = "<student>"

SAFE_BUILTIN_NAMES = (
    "abs", "all", "any", "bool", "callable", "chr", "dict", "divmod", "enumerate", "filter",
    "float", "frozenset", "int", "isinstance", "issubclass", "iter", "len", "list", "map",
    "max", "min", "next", "ord", "pow", "range", "repr", "reversed", "round", "set",
    "slice", "sorted", "str", "sum", "tuple", "zip",
    "ArithmeticError", "AssertionError", "Exception", "IndexError", "KeyError",
    "LookupError", "NotImplementedError", "OverflowError", "RuntimeError", "StopIteration",
    "TypeError", "ValueError", "ZeroDivisionError",
)

#: plain value types: their instances' (and their own) public attributes are methods on
#: data, or data (a host's ``SimpleNamespace`` tiling struct)
SAFE_VALUE_TYPES = frozenset({
    int, float, complex, bool, str, bytes, list, tuple, dict, set, frozenset, range, slice,
    type(None), types.SimpleNamespace,
})


class SandboxLimit(BaseException):
    """A limit of the sandbox (not an ``Exception``: ``except Exception`` does not stop it)."""

    kind = ""


class StepLimit(SandboxLimit):
    kind = "steps"


class OutputLimit(SandboxLimit):
    kind = "output"


class SandboxRefusal(AttributeError):
    """An attribute or import refused at run time; carries a message id and values (and an
    English text, for code that shows ``str(exc)``)."""

    TEXTS = {
        "sandbox.runtime.read": "reading .{name} of a {kind} object is not allowed in the "
                                "sandbox",
        "sandbox.runtime.write": "setting .{name} on a {kind} object is not allowed in the "
                                 "sandbox",
        "sandbox.runtime.import": "{module} cannot be imported in the sandbox",
    }

    def __init__(self, msg_id: str, **values: object) -> None:
        super().__init__(self.TEXTS[msg_id].format(**values))
        self.msg_id = msg_id
        self.values = values


class ExportedModule(types.ModuleType):
    """The public names of an allowed module, and nothing that leads out of it."""


def export(name: str, module: types.ModuleType, names: str = "") -> ExportedModule:
    """The student's view of ``module``: the names listed in its attribute ``names`` if
    given, else in its ``__all__``, else those without a leading underscore; never a
    module, never a private name."""
    public = getattr(module, names or "__all__", None)
    if public is None:
        if names:
            raise AttributeError(f"{module.__name__} has no list of names {names!r}")
        public = [n for n in vars(module) if not n.startswith("_")]
    exported = ExportedModule(name)
    kept = []
    for attr in public:
        value = getattr(module, attr, None)
        if attr.startswith("_") or isinstance(value, types.ModuleType) or value is None:
            continue
        setattr(exported, attr, value)
        kept.append(attr)
    exported.__all__ = kept
    return exported


class Output:
    """What the student's ``print`` wrote, up to ``cap`` characters."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.exceeded = False

    def print(self, *args: object, sep: str | None = " ", end: str | None = "\n") -> None:
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        if not isinstance(sep, str) or not isinstance(end, str):
            raise TypeError("print: sep and end must be text")
        text = sep.join(str(a) for a in args) + end
        room = self.cap - self.size
        if len(text) > room:
            self.parts.append(text[:max(room, 0)])
            self.size = self.cap
            self.exceeded = True
            raise OutputLimit
        self.parts.append(text)
        self.size += len(text)

    def text(self) -> str:
        return "".join(self.parts)


class Steps:
    """The instruction cap: ``tick`` once per loop iteration, call and element."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.exceeded = False

    def make_tick(self):  # noqa: ANN201 - a closure, called once per loop iteration
        cap, counter = self.cap, itertools.count(1)

        def tick() -> bool:
            if next(counter) > cap:
                self.exceeded = True
                raise StepLimit
            return True

        return tick


class Guards:
    """The attribute guards of one run, trusting classes from ``trusted`` module prefixes
    and the classes the exported modules hand out."""

    def __init__(self, trusted: Iterable[str], modules: Mapping[str, ExportedModule]) -> None:
        self.trusted = tuple(trusted)
        self.trusted_classes = frozenset(
            v for m in modules.values() for v in vars(m).values() if isinstance(v, type))

    def _trusted_module(self, name: object) -> bool:
        return isinstance(name, str) and any(
            name == p or name.startswith(p + ".") for p in self.trusted)

    def _trusted_class(self, cls: type) -> bool:
        if cls in SAFE_VALUE_TYPES or cls in self.trusted_classes:
            return True
        module = cls.__dict__.get("__module__")
        return module == STUDENT_MODULE or self._trusted_module(module)

    def readable(self, obj: object) -> bool:
        if type(obj) is ExportedModule or type(obj) in SAFE_VALUE_TYPES:
            return True
        if isinstance(obj, type):
            return self._trusted_class(obj)
        if isinstance(obj, BaseException):
            return True
        return self._trusted_class(type(obj))

    def read(self, obj: object, name: str) -> object:
        if name.startswith("_") or name in DENIED_ATTRIBUTES or not self.readable(obj):
            raise SandboxRefusal("sandbox.runtime.read", name=name, kind=_kind(obj))
        return obj

    def write(self, obj: object, name: str) -> object:
        cls = obj if isinstance(obj, type) else type(obj)
        own = cls.__dict__.get("__module__") == STUDENT_MODULE
        if name.startswith("_") or name in DENIED_ATTRIBUTES or not own:
            raise SandboxRefusal("sandbox.runtime.write", name=name, kind=_kind(obj))
        return obj


def _kind(obj: object) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return str(getattr(cls, "__name__", "?"))[:60]


def make_importer(modules: Mapping[str, ExportedModule]):  # noqa: ANN201
    def importer(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
        if level or name not in modules:
            raise SandboxRefusal("sandbox.runtime.import", module=str(name)[:60])
        return modules[name]

    return importer


def namespace(modules: Mapping[str, ExportedModule], preload: Iterable[str],
              guards: Guards, output: Output, steps: Steps) -> dict:
    """The globals the student's code runs in."""
    safe = {name: getattr(builtins, name) for name in SAFE_BUILTIN_NAMES}
    safe.update(print=output.print, __import__=make_importer(modules),
                __build_class__=builtins.__build_class__)
    scope: dict = {"__builtins__": safe, "__name__": STUDENT_MODULE,
                   READ_GUARD: guards.read, WRITE_GUARD: guards.write,
                   TICK: steps.make_tick()}
    for name in preload:
        module = modules[name]
        scope.update({attr: getattr(module, attr) for attr in module.__all__})
    return scope

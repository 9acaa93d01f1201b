"""Every message id the code uses exists in both catalogues (English and Chinese).

The ids are found in the source of explorer/, kernels/, hardware_presets/ (the words of
refusals, ``Phrase("refusal....")``) and app.py with ``ast``, not by matching text:

* **Translation calls.** The sinks are ``explorer.core.i18n.t`` and ``has``. A function
  becomes a sink too, until nothing new is found, when it passes one of its parameters on
  as the id (``state.tr(msg_id)``), or passes it with a constant prefix
  (``plots.style.msg`` does ``t(f"plots.{msg_id}")``, and ``plots.precision._p`` builds on
  it).
* **Resolvable ids.** The id given to a sink must be *resolvable*:
  * a string literal, or a choice of literals (``a if c else b``);
  * a lookup in a module-level table of literals (``IDS[key]``, ``IDS.get(key, "x.y")``),
    or a loop over one;
  * a name bound only to such values;
  * what a function, method or property returns, resolved the same way.

  An id that arrives as data is accepted at the call, because its literals are checked
  where they are written (next point). Data here means a loop variable over notes, a
  record's field, or a parameter. Data given to a wrapper with a prefix is not data: it is
  an id built at run time.
* **Literals shaped like ids.** Every other string literal ``ns.word[.word...]`` whose first
  word is a namespace of the catalogues (``ui``, ``note``, ``advisor``, ...) is an id:
  notes ``("note.x", {...})``, advisor tips, ``title_key=``, table values. It must be in
  both catalogues. It may instead be the prefix of ids that are: a prefix such as
  ``"ui.decode.param"``, or the argument of ``startswith``. These literals are not ids:
  InputError's field (``"precision.shape"``), widget keys (``key=``), docstrings, file
  names (``report.html``) and ``""`` (no message).
* **Ids built at run time fail.** This means an f-string or ``+``/``%``/``format`` whose text
  starts with a namespace, any built string given to a sink, and the template of a prefix
  wrapper that is never called by name (a method, a callback). Two exceptions:
  * Genuinely data-driven ids, listed in ``DATA_DRIVEN`` with a resolver that imports the
    data and returns every id they can make. These are claim cards, gallery lessons and
    kernel parameters' labels. Kernel records' ids and chip fields' labels are always
    resolved from the data.
  * Ids in files other engineers own right now, listed in ``PENDING_DYNAMIC``.

``python tests/test_message_ids.py`` prints the inventory: how many ids are checked, the
pending sites, and the catalogue ids no code uses (a warning, not a failure).
"""
from __future__ import annotations

import ast
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from explorer.core.i18n import LANGUAGES, catalogue  # noqa: E402

# ---- ids built at run time in files other engineers own now (fix there, then delete) ------
#: (file, line when listed, the expression) of every id still built at run time, for the
#: owners of these files to make static (a table of literal ids, as the rest of explorer/
#: does). Matched on file and expression text, so that edits elsewhere in those files do not
#: break the test; a new dynamic id fails, and so does an entry whose site is gone.
PENDING_DYNAMIC: frozenset[tuple[str, int, str]] = frozenset()

# ---- where the code scanned, what counts as an id ---------------------------------------
SCANNED = ("explorer", "kernels", "hardware_presets", "app.py")
ID_SHAPE = re.compile(r"[a-z][a-z0-9_]*(?:\.[A-Za-z0-9_]+)+")
BASE_SINKS = {("explorer.core.i18n", "t"): 0, ("explorer.core.i18n", "has"): 0}


def namespaces() -> frozenset[str]:
    return frozenset(k.split(".", 1)[0] for lang in LANGUAGES for k in catalogue(lang))


# ---- the modules ------------------------------------------------------------------------
@dataclass
class Module:
    path: Path
    name: str
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    top: dict[str, list[ast.expr]] = field(default_factory=dict)  # module-level bindings
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    functions: dict[str, list[ast.AST]] = field(default_factory=dict)  # name -> def/lambda

    @property
    def rel(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    def where(self, node: ast.AST) -> str:
        return f"{self.rel}:{node.lineno}"

    def chain(self, node: ast.AST) -> list[ast.AST]:
        """The functions (def or lambda) around ``node``, innermost first."""
        found = []
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                found.append(node)
        return found

    def qualname(self, node: ast.AST) -> str:
        """``Class.method`` / ``function`` around ``node`` (``<module>`` at top level)."""
        names = []
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.append(node.name)
        return ".".join(reversed(names)) or "<module>"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            yield from _targets(elt)


def _parse(path: Path) -> Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    mod = Module(path, _module_name(path), tree)
    package = mod.name if path.name == "__init__.py" else mod.name.rpartition(".")[0]
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            mod.parents[child] = node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mod.functions.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
            for name in (n for target in node.targets for n in _targets(target)):
                mod.functions.setdefault(name, []).append(node.value)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                mod.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                mod.imports[local] = alias.name if alias.asname else local
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    mod.top.setdefault(target.id, []).append(node.value)
    return mod


@cache
def modules() -> dict[str, Module]:
    paths = []
    for entry in SCANNED:
        path = ROOT / entry
        paths += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return {m.name: m for m in map(_parse, paths)}


# ---- resolving expressions --------------------------------------------------------------
@dataclass
class Res:
    """What an id expression can be: literal ids (with the literal nodes they came from),
    ids built at run time (nodes), and whether some of it arrives as data."""

    ids: set[str] = field(default_factory=set)
    literals: set[int] = field(default_factory=set)  # id() of the Constant nodes used
    built: list[tuple[Module, ast.AST]] = field(default_factory=list)  # where, node
    data: bool = False

    def merge(self, other: Res) -> Res:
        self.ids |= other.ids
        self.literals |= other.literals
        self.built += other.built
        self.data |= other.data
        return self

    def prefixed(self, prefix: str) -> Res:
        return Res({prefix + i for i in self.ids}, self.literals, self.built, self.data)


def _is_str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _builds_text(node: ast.AST) -> bool:
    """An f-string, ``"..." + x``, ``"..." % x`` or ``"...".format(...)``/``join``."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return any(_is_str(side) or _builds_text(side) for side in (node.left, node.right))
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("format", "join") and _is_str(node.func.value))


def _is_property(fn: ast.AST) -> bool:
    return any(isinstance(d, ast.Name) and d.id in ("property", "cached_property")
               for d in getattr(fn, "decorator_list", ()))


def _returns(fn: ast.AST) -> Iterator[ast.expr]:
    """The values a function returns (not those of functions nested in it)."""
    if isinstance(fn, ast.Lambda):
        yield fn.body
        return
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            yield node.value
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                   ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


class Resolver:
    def __init__(self) -> None:
        self.mods = modules()

    def lookup(self, qualified: str) -> tuple[Module, str] | None:
        """The module and name of a qualified name ``pkg.mod.NAME`` among those scanned."""
        mod_name, _, name = qualified.rpartition(".")
        mod = self.mods.get(mod_name)
        return (mod, name) if mod else None

    def bindings(self, mod: Module, node: ast.AST, name: str) -> tuple[Module, list] | None:
        """Where ``name`` (used at ``node``) is bound: ("local", values) in the functions
        around it, else the module's or an imported module's top level; None for a
        parameter or anything unknown."""
        for fn in mod.chain(node):
            args = fn.args
            params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            if name in params or name in (args.vararg and args.vararg.arg,
                                          args.kwarg and args.kwarg.arg):
                return None
            values = []
            body = fn.body if isinstance(fn.body, list) else [fn.body]
            for sub in (n for stmt in body for n in ast.walk(stmt)):
                if isinstance(sub, ast.Assign) and name in [
                        n for t in sub.targets for n in _targets(t)]:
                    values.append(sub.value)  # (unpacked: any string the value holds)
                elif isinstance(sub, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and \
                        isinstance(sub.target, ast.Name) and sub.target.id == name:
                    values.append(sub.value if not isinstance(sub, ast.AugAssign) else None)
                elif isinstance(sub, (ast.For, ast.comprehension)) and name in _targets(
                        sub.target):
                    target = sub.target
                    if isinstance(target, ast.Name):
                        values.append(("each", sub.iter, None))
                    elif isinstance(target, ast.Tuple) and all(
                            isinstance(e, ast.Name) for e in target.elts):
                        index = [e.id for e in target.elts].index(name)
                        values.append(("each", sub.iter, index))  # for a, b in ((.., ..),)
                    else:
                        values.append(None)
            if values:
                return mod, values
        if name in mod.top:
            return mod, mod.top[name]
        if name in mod.imports:
            found = self.lookup(mod.imports[name])
            if found and found[1] in found[0].top:
                return found[0], found[0].top[found[1]]
        return None

    def table(self, mod: Module, node: ast.AST) -> tuple[Module, list[ast.AST]] | None:
        """The literal container(s) (dict, tuple, list, set) ``node`` names, if any."""
        if isinstance(node, (ast.Dict, ast.Tuple, ast.List, ast.Set)):
            return mod, [node]
        if isinstance(node, ast.Subscript):
            return self.table(mod, node.value)
        bound = None
        if isinstance(node, ast.Name):
            bound = self.bindings(mod, node, node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in mod.imports:
            found = self.lookup(f"{mod.imports[node.value.id]}.{node.attr}")
            if found and found[1] in found[0].top:
                bound = found[0], found[0].top[found[1]]
        if not bound:
            return None
        where, values = bound
        tables = [v for v in values
                  if isinstance(v, (ast.Dict, ast.Tuple, ast.List, ast.Set))]
        return (where, tables) if tables and len(tables) == len(values) else None

    def each(self, mod: Module, iterable: ast.AST, index: int | None) -> Res:
        """The strings a loop variable takes over a literal table (``index``: its place in
        each row of ``for a, b in ((..., ...), ...)``, None for the whole item)."""
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and \
                iterable.func.attr in ("items", "values", "keys") and not iterable.args:
            found = self.table(mod, iterable.func.value)
            if not found:
                return Res(data=True)
            where, tables = found
            if iterable.func.attr == "keys" or (iterable.func.attr == "items" and index == 0):
                return Res(data=True)  # dict keys are data (names), not ids
            return self.elements(where, tables)
        found = self.table(mod, iterable)
        if not found:
            return Res(data=True)
        where, tables = found
        if index is None:
            return self.elements(where, tables)
        res = Res()
        for table in tables:
            for row in (table.values if isinstance(table, ast.Dict) else table.elts):
                if isinstance(row, (ast.Tuple, ast.List)) and len(row.elts) > index:
                    res.merge(self.resolve(where, row.elts[index]))
                else:
                    res.data = True
        return res

    def elements(self, mod: Module, tables: list[ast.AST]) -> Res:
        """Every string a lookup in these tables can give (dict values, items), nested."""
        res = Res()
        for table in tables:
            items = table.values if isinstance(table, ast.Dict) else table.elts
            for item in items:
                if isinstance(item, (ast.Dict, ast.Tuple, ast.List, ast.Set)):
                    res.merge(self.elements(mod, [item]))
                else:
                    res.merge(self.resolve(mod, item))
        return res

    def resolve(self, mod: Module, node: ast.AST, depth: int = 0) -> Res:
        if depth > 12:
            return Res(data=True)
        if _is_str(node):  # "" stands for no message (``has("")`` is False)
            return Res({node.value} if node.value else set(), {id(node)})
        if _builds_text(node):
            return Res(built=[(mod, node)])
        if isinstance(node, (ast.Tuple, ast.List)):  # unpacked into names
            res = Res()
            for elt in node.elts:
                res.merge(self.resolve(mod, elt, depth + 1))
            return res
        if isinstance(node, ast.IfExp):
            return self.resolve(mod, node.body, depth + 1).merge(
                self.resolve(mod, node.orelse, depth + 1))
        if isinstance(node, ast.BoolOp):
            res = Res()
            for value in node.values:
                res.merge(self.resolve(mod, value, depth + 1))
            return res
        if isinstance(node, ast.Subscript) or (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"):
            target = node.value if isinstance(node, ast.Subscript) else node.func.value
            found = self.table(mod, target)
            if not found:
                return Res(data=True)
            res = self.elements(*found)
            if isinstance(node, ast.Call) and len(node.args) > 1:
                res.merge(self.resolve(mod, node.args[1], depth + 1))
            return res
        if isinstance(node, ast.Name):
            bound = self.bindings(mod, node, node.id)
            if not bound:
                return Res(data=True)
            where, values = bound
            res = Res()
            for value in values:
                if value is None:
                    res.data = True
                elif isinstance(value, tuple):  # for name in <iterable>
                    res.merge(self.each(where, value[1], value[2]))
                else:
                    res.merge(self.resolve(where, value, depth + 1))
            return res
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in mod.imports:
            found = self.lookup(f"{mod.imports[node.value.id]}.{node.attr}")
            if found and found[1] in found[0].top:
                res = Res()
                for value in found[0].top[found[1]]:
                    res.merge(self.resolve(found[0], value, depth + 1))
                return res
        if isinstance(node, (ast.Call, ast.Attribute)):
            functions = self.functions_of(mod, node)
            if functions:  # what the function (method, property) returns
                res = Res()
                for where, fn in functions:
                    for value in _returns(fn):
                        res.merge(self.resolve(where, value, depth + 1))
                return res
        return Res(data=True)

    def functions_of(self, mod: Module, node: ast.AST) -> list[tuple[Module, ast.AST]]:
        """The scanned functions a call (or a property read) may run: the function a name
        or module attribute names, else every method (property) of that name."""
        if isinstance(node, ast.Call):
            key = _callee(mod, node)
            if key and key[0] in self.mods:
                where = self.mods[key[0]]
                return [(where, fn) for fn in where.functions.get(key[1], [])
                        if not isinstance(where.parents.get(fn), ast.ClassDef)]
            if not isinstance(node.func, ast.Attribute):
                return []
            name, want_property = node.func.attr, False
        else:
            name, want_property = node.attr, True
        return [(m, fn) for m in self.mods.values() for fn in m.functions.get(name, [])
                if isinstance(m.parents.get(fn), ast.ClassDef)
                and _is_property(fn) == want_property]


# ---- the sinks and what reaches them ---------------------------------------------------
@dataclass(frozen=True)
class Sink:
    position: int  # of the id among the positional arguments
    keyword: str  # the same argument by name
    prefix: str  # added in front of the id given


def _callee(mod: Module, call: ast.Call) -> tuple[str, str] | None:
    func = call.func
    if isinstance(func, ast.Name):
        if func.id in mod.imports:
            qualified = mod.imports[func.id]
            return tuple(qualified.rpartition(".")[::2])
        if func.id in mod.functions:
            return mod.name, func.id
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
            func.value.id in mod.imports:
        return mod.imports[func.value.id], func.attr
    return None


def _id_argument(call: ast.Call, sink: Sink) -> ast.expr | None:
    if len(call.args) > sink.position and not any(
            isinstance(a, ast.Starred) for a in call.args[:sink.position + 1]):
        return call.args[sink.position]
    return next((k.value for k in call.keywords if k.arg == sink.keyword), None)


def _function_name(mod: Module, fn: ast.AST) -> str | None:
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return fn.name
    parent = mod.parents.get(fn)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and \
            isinstance(parent.targets[0], ast.Name):
        return parent.targets[0].id
    return None


def _params(fn: ast.AST) -> list[str]:
    return [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]


@dataclass
class Scan:
    sinks: dict[tuple[str, str], Sink]
    calls: list[tuple[Module, ast.Call, Sink, Res]]  # every call of a sink, its id
    relays: set[int]  # id() of the calls inside wrappers that pass their parameter on
    templates: set[int]  # id() of the f-strings of constant-prefix wrappers
    escaped: list[tuple[Module, ast.AST]]  # ... of those also passed around as values


def _referenced(mods: dict[str, Module], module: str, name: str) -> bool:
    """Whether function ``name`` of ``module`` is used other than by calling it (put in a
    table, passed as a callback): then what it is given cannot be checked at its calls."""
    for mod in mods.values():
        local = name if mod.name == module else None
        aliases = {k for k, v in mod.imports.items() if v == f"{module}.{name}"}
        modules_as = {k for k, v in mod.imports.items() if v == module}
        for node in ast.walk(mod.tree):
            parent = mod.parents.get(node)
            if isinstance(parent, ast.Call) and parent.func is node:
                continue
            if isinstance(node, ast.Name) and (node.id == local or node.id in aliases) \
                    and isinstance(node.ctx, ast.Load):
                return True
            if isinstance(node, ast.Attribute) and node.attr == name and \
                    isinstance(node.value, ast.Name) and node.value.id in modules_as:
                return True
    return False


@cache
def scan() -> Scan:
    mods = modules()
    sinks = {key: Sink(pos, "msg_id", "") for key, pos in BASE_SINKS.items()}
    calls_of = [(mod, node) for mod in mods.values() for node in ast.walk(mod.tree)
                if isinstance(node, ast.Call)]
    relays: set[int] = set()
    templates: set[int] = set()
    ambiguous: set[tuple[str, str]] = set()
    relayed: dict[tuple[str, str], set[int]] = {}
    relayed_templates: dict[tuple[str, str], set[int]] = {}
    changed = True
    while changed:  # a function passing its parameter on to a sink is a sink
        changed = False
        for mod, call in calls_of:
            sink = sinks.get(_callee(mod, call))
            arg = sink and _id_argument(call, sink)
            chain = mod.chain(call)
            if arg is None or not chain:
                continue
            fn, prefix, param = chain[0], sink.prefix, None
            if isinstance(arg, ast.Name):
                param = arg.id
            elif (isinstance(arg, ast.JoinedStr) and len(arg.values) == 2
                  and _is_str(arg.values[0])
                  and isinstance(arg.values[1], ast.FormattedValue)
                  and isinstance(arg.values[1].value, ast.Name)
                  and arg.values[1].conversion == -1 and arg.values[1].format_spec is None):
                prefix, param = prefix + arg.values[0].value, arg.values[1].value.id
            name = _function_name(mod, fn)
            if name is None or param not in _params(fn):
                continue
            position = _params(fn).index(param)
            if isinstance(mod.parents.get(fn), ast.ClassDef):
                position -= 1  # called as a bound method
            key, new = (mod.name, name), Sink(position, param, prefix)
            if key in ambiguous:
                continue
            if key in sinks and sinks[key] != new:  # two meanings: no translation function
                ambiguous.add(key)
                del sinks[key]
                relays -= relayed.pop(key, set())
                templates -= relayed_templates.pop(key, set())
                changed = True
                continue
            relays.add(id(call))
            relayed.setdefault(key, set()).add(id(call))
            if isinstance(arg, ast.JoinedStr):
                templates.add(id(arg))
                relayed_templates.setdefault(key, set()).add(id(arg))
            if key not in sinks:
                sinks[key] = new
                changed = True
    resolver = Resolver()
    calls, called = [], set()
    for mod, call in calls_of:
        sink = sinks.get(_callee(mod, call))
        arg = sink and _id_argument(call, sink)
        if arg is None or id(call) in relays:
            continue
        called.add(_callee(mod, call))
        res = resolver.resolve(mod, arg).prefixed(sink.prefix)
        if sink.prefix and res.data:  # data completing a prefix: an id built at run time
            res.built.append((mod, call))
            res.data = False
        calls.append((mod, call, sink, res))
    # A constant-prefix wrapper is only checked through its calls: one that is never
    # called by name (a method called on an object, a function put in a table or passed
    # as a callback) builds ids from what it is given, unseen.
    escaped = []
    for key, nodes in relayed_templates.items():
        if key in sinks and sinks[key].prefix and (key not in called or _referenced(mods, *key)):
            mod = mods[key[0]]
            escaped += [(mod, n) for n in ast.walk(mod.tree) if id(n) in nodes]
            templates -= nodes
    return Scan(sinks, calls, relays, templates, escaped)


# ---- ids built at run time ---------------------------------------------------------------
@dataclass(frozen=True, order=True)
class Built:
    file: str
    line: int
    function: str
    expr: str
    head: str = field(default="", compare=False)  # the ids it builds start so ("": unknown)


def _head(node: ast.AST, prefix: str = "") -> str:
    """The literal beginning of the ids a built text makes, with its sink's prefix."""
    if isinstance(node, ast.JoinedStr) and node.values and _is_str(node.values[0]):
        return prefix + node.values[0].value
    if isinstance(node, ast.BinOp) and _is_str(node.left):
        return prefix + node.left.value
    return prefix if isinstance(node, ast.Call) else ""


def _ns_head(node: ast.AST, spaces: frozenset[str]) -> bool:
    """A built text that starts with ``<namespace>.``."""
    head = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else (
        node.left if isinstance(node, ast.BinOp) else None)
    if not _is_str(head) or "." not in head.value:
        return False
    return head.value.split(".", 1)[0] in spaces


@cache
def built_ids() -> tuple[Built, ...]:
    """Every id built at run time: built texts given to a sink, and f-strings or sums
    anywhere whose text starts with a namespace of the catalogues."""
    spaces, found = namespaces(), {}
    result = scan()
    for _, _, sink, res in result.calls:
        for mod, node in res.built:
            found[id(node)] = (mod, node, sink.prefix)
    for mod, node in result.escaped:
        key = (mod.name, mod.qualname(node).rsplit(".", 1)[-1])
        found[id(node)] = (mod, node, result.sinks[key].prefix if key in result.sinks else "")
    for mod in modules().values():
        fields = _input_error_fields(mod.tree) | _widget_keys(mod.tree)
        for node in ast.walk(mod.tree):
            if isinstance(node, (ast.JoinedStr, ast.BinOp)) and id(node) not in \
                    result.templates and id(node) not in fields and \
                    _ns_head(node, spaces) and \
                    not isinstance(mod.parents.get(node), (ast.JoinedStr, ast.BinOp)):
                found.setdefault(id(node), (mod, node, ""))
    return tuple(sorted(Built(mod.rel, node.lineno, mod.qualname(node), ast.unparse(node),
                              _head(node, prefix)) for mod, node, prefix in found.values()))


# ---- literals shaped like ids ------------------------------------------------------------
#: a literal ending so is a file name ("report.html"), not an id
FILE_SUFFIXES = frozenset({"html", "csv", "json", "toml", "txt", "md", "png", "svg", "py"})


def _docstrings(tree: ast.Module) -> set[int]:
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and _is_str(node.value)}


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _input_error_fields(tree: ast.Module) -> set[int]:
    """The nodes of InputError's ``field`` argument: a technical name ("precision.shape",
    "params.tile") that errors print as it is, not a message id."""
    fields = set()
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and _call_name(call) == "InputError":
            arg = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg == "field"), None)
            fields |= {id(n) for n in ast.walk(arg)} if arg is not None else set()
    return fields


def _widget_keys(tree: ast.Module) -> set[int]:
    """The nodes of ``key=`` arguments: a widget's session key ("advisor.try.0"), not an id."""
    return {id(n) for call in ast.walk(tree) if isinstance(call, ast.Call)
            for k in call.keywords if k.arg == "key" for n in ast.walk(k.value)}


def _prefix_tests(tree: ast.Module) -> set[int]:
    """Literals given to ``startswith``: the beginning of ids, not an id."""
    return {id(arg) for call in ast.walk(tree) if isinstance(call, ast.Call)
            and _call_name(call) in ("startswith", "removeprefix") for arg in call.args}


@cache
def literal_ids() -> tuple[tuple[str, str, bool], ...]:
    """(id, file:line, only a prefix) of every string literal shaped like an id outside
    the sinks' own arguments: notes, tips, record fields, tables given to helpers."""
    spaces = namespaces()
    used = set().union(*(res.literals for *_, res in scan().calls))
    found = []
    for mod in modules().values():
        skip = used | _docstrings(mod.tree) | _input_error_fields(mod.tree) | \
            _widget_keys(mod.tree)
        prefixes = _prefix_tests(mod.tree)
        for node in ast.walk(mod.tree):
            if _is_str(node) and id(node) not in skip and ID_SHAPE.fullmatch(node.value) \
                    and node.value.split(".", 1)[0] in spaces \
                    and node.value.rsplit(".", 1)[1] not in FILE_SUFFIXES \
                    and not isinstance(mod.parents.get(node), ast.JoinedStr):
                found.append((node.value, mod.where(node), id(node) in prefixes))
    return tuple(found)


# ---- genuinely data-driven ids: the data imported ----------------------------------------
def _chip():
    import hardware_presets as hp
    return hp.load(hp.DEFAULT_PRESET) if hasattr(hp, "DEFAULT_PRESET") else hp.load(
        hp.list_presets()[0])


@cache
def _claims() -> tuple:
    from explorer.core.claims import claims
    from tests.preset_helpers import one_preset_per_architecture
    return tuple(card for preset in one_preset_per_architecture() for card in claims(preset))


def _card_ids(which: str) -> Callable[[], set[str]]:
    return lambda: {getattr(card, which) for card in _claims()}


def _figure_labels() -> set[str]:
    return {f.label_id for card in _claims() for f in card.figures}


def _chip_field_ids(which: str) -> Callable[[], set[str]]:
    def resolve() -> set[str]:
        from hardware_presets import FIELDS
        return {getattr(spec, which) for spec in FIELDS.values()}
    return resolve


def _gallery_titles() -> set[str]:
    from explorer.core import gallery
    return {e.title_id for e in gallery.entries()}


def _gallery_lessons() -> set[str]:
    from explorer.core import gallery
    return {i for lesson in gallery.lessons() for i in gallery.lesson_ids(lesson)}


def _param_pages() -> dict[str, tuple[dict, Callable[[str], str]]]:
    """Every page module that draws parameter widgets (``widgets.param_widget``,
    ``param_label``, ``param_help``): its specs and the label prefix of each parameter."""
    from explorer.ui import (
        balance_controls,
        decode_controls,
        gemm_controls,
        kernel_pages,
        multicard_view,
        playground,
        precision_controls,
        sparse_controls,
    )
    gemm_prefixes = kernel_pages.PAGES["gemm"].label_prefixes
    return {
        "explorer.ui.playground": (playground.SPECS, lambda n: "ui.param"),
        "explorer.ui.gemm_controls": (gemm_controls.SPECS,
                                      lambda n: gemm_prefixes.get(n, "ui.param")),
        # the decode kernel's sparse-policy parameters are drawn by the sparse page only
        "explorer.ui.decode_controls": ({n: s for n, s in decode_controls.SPECS.items()
                                         if n not in sparse_controls.POLICY},
                                        lambda n: decode_controls.LABELS),
        "explorer.ui.multicard_view": (multicard_view.SPECS, lambda n: multicard_view.LABELS),
        "explorer.ui.precision_controls": (precision_controls.SPECS,
                                           lambda n: precision_controls.LABEL_PREFIX),
        "explorer.ui.balance_controls": (balance_controls.SPECS, balance_controls.label_prefix),
        "explorer.ui.sparse_controls": (sparse_controls.SPECS, sparse_controls._prefix),
    }


def _param_ids(which: str) -> Callable[[], set[str]]:
    def resolve() -> set[str]:
        from explorer.core import i18n
        make = getattr(i18n, f"param_{which}_id")
        return {make(name, prefix(name)) for specs, prefix in _param_pages().values()
                for name in specs}
    return resolve


def _page_labels() -> set[str]:
    """KernelPage.label_id: every parameter of every kernel with a page (the sweep's knob
    labels; a page whose record cannot build them is left to its own test below)."""
    import kernels
    from explorer.ui.kernel_pages import PAGES
    return {page.label_id(spec.name) for page in PAGES.values() if page.kernel not in
            _broken_pages() for spec in kernels.get(page.kernel).params}


@cache
def _broken_pages() -> dict[str, str]:
    """Kernel pages whose ``label_id`` raises (kernel -> the error)."""
    import kernels
    from explorer.ui.kernel_pages import PAGES
    broken = {}
    for page in PAGES.values():
        try:
            [page.label_id(spec.name) for spec in kernels.get(page.kernel).params]
        except Exception as exc:  # noqa: BLE001 - reported by the test below
            broken[page.kernel] = f"{type(exc).__name__}: {exc}"
    return broken


def _sparse_labels() -> set[str]:
    from explorer.ui import sparse_controls
    return {sparse_controls.label_id(name) for name in sparse_controls.SPECS}


def _example_rows() -> dict[str, object]:
    """Every row of example buttons: its message prefix and the names of its examples."""
    from explorer.core import gallery
    from explorer.ui import balance_controls, decode_controls, gemm_controls, sparse_controls
    return {"ui.gemm.example": gemm_controls.EXAMPLES,
            "ui.decode.example": decode_controls.PAGE.examples,
            "ui.balance.example": balance_controls.PAGE.examples,
            "ui.sparse.example": sparse_controls.PAGE.examples,
            "gallery": [lesson for lesson, _, _ in gallery.pairs()]}


def _example_buttons() -> set[str]:
    return {i for prefix, names in _example_rows().items() for name in names
            for i in (f"{prefix}.{name}", f"{prefix}.{name}_help")}


#: (file, function) of an id built from data -> every id it can build, from the data.
#: Each is checked against the code: a site that builds ids and has no resolver fails,
#: and so does a resolver whose site is gone.
DATA_DRIVEN: dict[tuple[str, str], Callable[[], set[str]]] = {
    ("explorer/core/claims_data.py", "Card.claim_id"): _card_ids("claim_id"),
    ("explorer/core/claims_data.py", "Card.rule_id"): _card_ids("rule_id"),
    ("explorer/core/claims_data.py", "Card.explain_id"): _card_ids("explain_id"),
    ("explorer/core/claims_data.py", "Figure.label_id"): _figure_labels,
    ("explorer/core/gallery.py", "Entry.title_id"): _gallery_titles,
    ("hardware_presets/fields.py", "FieldSpec.label_id"): _chip_field_ids("label_id"),
    ("hardware_presets/fields.py", "FieldSpec.help_id"): _chip_field_ids("help_id"),
    ("explorer/core/gallery.py", "lesson_ids"): _gallery_lessons,
    ("explorer/core/i18n.py", "param_label_id"): _param_ids("label"),
    ("explorer/core/i18n.py", "param_help_id"): _param_ids("help"),
    ("explorer/ui/kernel_pages.py", "KernelPage.label_id"): _page_labels,
    ("explorer/ui/sparse_controls.py", "label_id"): _sparse_labels,
    ("explorer/ui/widgets.py", "example_buttons"): _example_buttons,
}


def data_ids() -> set[str]:
    """Ids that only exist as data: kernel records and chip fields (built outside the
    scanned code) plus everything ``DATA_DRIVEN`` builds."""
    import kernels
    from hardware_presets import FIELDS

    ids = {i for spec in FIELDS.values() for i in (spec.label_id, spec.help_id)}
    chip = _chip()
    for record in kernels.KERNELS.values():
        ids.add(record.title_key)
        ids.update(record.explanation)
        ids.add(record.roofline_label(record.check(chip, {}))[0])
        if record.advice.double_buffer:
            ids.add(record.advice.double_buffer[0])
    for resolve in DATA_DRIVEN.values():
        ids |= resolve()
    return ids


# ---- the inventory -----------------------------------------------------------------------
@dataclass
class Inventory:
    checked: dict[str, str]  # id -> where first seen
    prefixes: set[str]  # literals that are only the prefix of ids (tables of labels)
    unknown: list[tuple[str, str]]  # (literal id shaped, where) in no catalogue
    dynamic: list[Built]  # built at run time, neither data-driven nor pending
    pending: list[Built]
    data_calls: int  # sink calls whose id arrives as data


def inventory() -> Inventory:
    en = catalogue("en")
    known = set(en) | set(catalogue("zh"))
    checked: dict[str, str] = {}
    for mod, call, _, res in scan().calls:
        for msg_id in res.ids:
            checked.setdefault(msg_id, mod.where(call))
    unknown, prefixes = [], set()
    for msg_id, where, prefix in literal_ids():
        if msg_id in known:
            checked.setdefault(msg_id, where)
        elif any(k.startswith(msg_id if prefix else msg_id + ".") for k in known):
            prefixes.add(msg_id)
        else:
            unknown.append((msg_id, where))
    for msg_id in data_ids():
        checked.setdefault(msg_id, "data")
    pending_keys = {(f, e) for f, _, e in PENDING_DYNAMIC}
    dynamic, pending = [], []
    for built in built_ids():
        if (built.file, built.function) in DATA_DRIVEN:
            continue
        (pending if (built.file, built.expr) in pending_keys else dynamic).append(built)
    data_calls = sum(res.data and not res.ids for *_, res in scan().calls)
    return Inventory(checked, prefixes, unknown, dynamic, pending, data_calls)


def unused_ids(inv: Inventory) -> tuple[list[str], list[str]]:
    """Catalogue ids no code uses: (unused, those a pending dynamic id may be building)."""
    heads = [b.head for b in inv.pending if b.head]
    unused, maybe = [], []
    used_prefixes = tuple(p + "." for p in inv.prefixes)
    for msg_id in sorted(catalogue("en")):
        if msg_id in inv.checked:
            continue
        if msg_id.startswith(tuple(heads) + used_prefixes):
            maybe.append(msg_id)
        else:
            unused.append(msg_id)
    return unused, maybe


# ---- the tests ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def inv() -> Inventory:
    return inventory()


def test_the_scan_sees_the_translation_layer(inv):
    sinks = scan().sinks
    for key in (("explorer.ui.state", "tr"), ("explorer.plots.style", "msg"),
                ("explorer.plots.precision", "_p")):
        assert key in sinks, f"{key} is not seen as a translation function"
    assert sinks[("explorer.plots.precision", "_p")].prefix == "plots.precision."
    assert len(inv.checked) > 1000, len(inv.checked)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_used_id_is_in_the_catalogue(inv, lang):
    have = catalogue(lang)
    missing = sorted(f"{msg_id}  ({where})" for msg_id, where in inv.checked.items()
                     if msg_id not in have)
    assert not missing, f"ids used but missing from the {lang} catalogue:\n" + "\n".join(
        missing)


def test_literals_shaped_like_ids_are_ids(inv):
    assert not inv.unknown, "literals shaped like message ids in no catalogue:\n" + "\n".join(
        f"{msg_id}  ({where})" for msg_id, where in inv.unknown)


def test_no_id_is_built_at_run_time(inv):
    assert not inv.dynamic, (
        "message ids built at run time: use a table of literal ids instead (or, for ids "
        "made from data, a DATA_DRIVEN resolver in this file):\n" + "\n".join(
            f"{b.file}:{b.line} ({b.function}): {b.expr}" for b in inv.dynamic))


def test_pending_dynamic_ids_are_still_there(inv):
    """A pending site fixed by its owner must leave the list (it is not an allow-list)."""
    seen = {(b.file, b.expr) for b in inv.pending}
    gone = sorted(f"{f}:{line}: {e}" for f, line, e in PENDING_DYNAMIC if (f, e) not in seen)
    assert not gone, "fixed (or moved): remove from PENDING_DYNAMIC:\n" + "\n".join(gone)


def test_data_driven_resolvers_match_the_code():
    sites = {(b.file, b.function) for b in built_ids()}
    stale = sorted(f"{f} {fn}" for f, fn in DATA_DRIVEN if (f, fn) not in sites)
    assert not stale, "DATA_DRIVEN names code that builds no id any more:\n" + "\n".join(stale)
    for key, resolve in DATA_DRIVEN.items():
        assert resolve(), f"{key}: the resolver found no ids"


def test_unused_ids_are_reported(inv):
    """Catalogue ids no code uses are a warning (a message may be kept on purpose)."""
    unused, _ = unused_ids(inv)
    if unused:
        warnings.warn(f"{len(unused)} catalogue ids used nowhere: {', '.join(unused)}",
                      stacklevel=1)


def _calls_of(function: str, method: bool = False) -> Iterator[tuple[Module, ast.Call]]:
    """Calls of ``function`` of explorer.ui.widgets (``method``: of any ``x.<function>``,
    such as a PageParams' ``example_row``)."""
    for mod in modules().values():
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Call) and (
                    _callee(mod, node) == ("explorer.ui.widgets", function) or method and
                    isinstance(node.func, ast.Attribute) and node.func.attr == function):
                yield mod, node


def test_every_page_with_parameter_widgets_is_resolved():
    """A page that draws parameter widgets must be in ``_param_pages`` (its labels are
    made from its parameters' names, so only its specs can say which ids it needs)."""
    drawing = {mod.name for name in ("param_widget", "param_label", "param_help")
               for mod, _ in _calls_of(name) if mod.name != "explorer.ui.widgets"}
    assert drawing == set(_param_pages()), drawing ^ set(_param_pages())


def test_every_row_of_example_buttons_is_resolved():
    """Each row of example buttons names its catalogue prefix literally, and
    ``_example_rows`` knows its examples."""
    prefixes = set()
    for function, position in (("example_buttons", 1), ("example_row", 0)):
        for mod, call in _calls_of(function, method=function == "example_row"):
            if mod.name in ("explorer.ui.widgets", "explorer.ui.page_params"):
                continue  # the row itself, handing its caller's prefix on
            arg = call.args[position]
            assert _is_str(arg), f"{mod.where(call)}: the message prefix must be a literal"
            prefixes.add(arg.value)
    assert prefixes == set(_example_rows()), prefixes ^ set(_example_rows())


def test_kernel_pages_build_their_parameter_labels():
    assert not _broken_pages(), _broken_pages()


if __name__ == "__main__":
    found = inventory()
    print(f"sinks: {len(scan().sinks)}; sink calls: {len(scan().calls)} "
          f"({found.data_calls} with data ids); ids checked: {len(found.checked)}")
    print(f"\nunknown literals ({len(found.unknown)}):")
    for item in found.unknown:
        print("  ", *item)
    print(f"\ndynamic ({len(found.dynamic)}):")
    for b in found.dynamic:
        print(f"   {b.file}:{b.line} ({b.function}): {b.expr}")
    print(f"\npending ({len(found.pending)}):")
    for b in found.pending:
        print(f"   {b.file}:{b.line}: {b.expr}")
    unused, maybe = unused_ids(found)
    print(f"\nunused ({len(unused)}), maybe used by pending ({len(maybe)}):")
    for msg_id in unused:
        print("  ", msg_id)

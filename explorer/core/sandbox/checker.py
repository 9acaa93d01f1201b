"""The static half of the sandbox: an AST allow-list that student code must pass before it
runs, and the instrumentation that the child process compiles instead of the plain tree.

Why an own allow-list and not RestrictedPython (9.0 is on PyPI and would work): puzzle
code needs a small slice of Python (functions, plain classes, loops, arithmetic, the DSL's
calls), and a list of about sixty node types that says exactly that is short enough to
audit in one sitting. RestrictedPython accepts most of the language and makes it safe
through guard functions (``_getattr_``, ``_write_``, ``_getiter_`` ...) that the host must
still write and get right, so the policy would live in our code either way, plus a
dependency to pin and follow. Here the policy is this file and ``guards.py``; the process
around it (``runner.py``, ``worker.py``) holds the limits, which no checker can replace.

``check(source, modules)`` returns the refusals, each with its line and a message id with
values (``sandbox.refuse.*``); an empty list means the code may run. Refused, among
others: every import but ``import m`` / ``from m import ...`` of an allowed module name;
``global``/``nonlocal``; ``yield``, ``async``/``await``, ``with``, ``match``; names starting
with ``__`` (``__builtins__``, ``__import__``, ``__class__``); attributes starting with
``_``; attributes that reach frames, code, the type system or files (``gi_frame``,
``f_globals``, ``mro``, ``tofile`` ...); ``.format``/``.format_map`` (format fields read
attributes: ``'{0.__class__}'.format(x)``); the introspection builtins by name (``eval``,
``getattr``, ``type`` ...); classes with bases, keywords or decorators; double-underscore
methods other than ``__init__``; a bare ``except:`` (it would catch the sandbox's limits);
more than ``MAX_SOURCE_CHARS`` characters or ``MAX_DEPTH`` levels of nesting.

``instrument(tree)`` rewrites a checked tree for the run: every attribute read
``x.a`` becomes ``__sb_read__(x, 'a').a`` and every attribute write target
``__sb_write__(x, 'a').a``, which check at run time what kind of object is touched
(``guards.py``); every loop body, function body and comprehension ticks ``__sb_tick__()``,
the instruction cap. Line numbers stay those of the student's source.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

#: the most characters of source the sandbox accepts
MAX_SOURCE_CHARS = 20_000
#: the deepest nesting of the syntax tree (statements and expressions together)
MAX_DEPTH = 100
#: double-underscore method names a class may define
ALLOWED_DUNDER_METHODS = frozenset({"__init__"})

#: the names the instrumentation adds (students cannot write them: they start with "__")
READ_GUARD, WRITE_GUARD, TICK = "__sb_read__", "__sb_write__", "__sb_tick__"

#: attribute names refused wherever they appear: frames, code objects, generator and
#: coroutine internals, tracebacks, the type system, string formatting and numpy's file and
#: pointer access.
DENIED_ATTRIBUTES = frozenset({
    # frames, code, generators, coroutines, tracebacks
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "gi_suspended",
    "cr_frame", "cr_code", "cr_await", "cr_origin", "cr_running",
    "ag_frame", "ag_code", "ag_await", "ag_running",
    "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "f_trace", "f_lasti",
    "tb_frame", "tb_next", "tb_lasti", "tb_lineno", "with_traceback",
    "co_code", "co_consts", "co_names", "co_varnames", "co_filename",
    "func_globals", "func_code", "func_closure", "im_func", "im_self",
    # the type system
    "mro", "subclasses", "bases", "base",
    # string formatting that reads attributes ('{0.__class__}'.format(x))
    "format", "format_map", "vformat", "Formatter",
    # files, pointers and pickles (numpy arrays, should one be reachable)
    "tofile", "fromfile", "dump", "dumps", "load", "loads", "save", "savez",
    "savez_compressed", "savetxt", "loadtxt", "genfromtxt", "fromregex", "memmap",
    "DataSource", "ctypes", "ctypeslib", "data_as", "open", "system", "popen",
})

#: builtins refused by name, with a clear refusal rather than a NameError at run time
DENIED_NAMES = frozenset({
    "eval", "exec", "compile", "open", "getattr", "setattr", "delattr", "hasattr",
    "globals", "locals", "vars", "dir", "type", "object", "super", "breakpoint",
    "memoryview", "help", "exit", "quit", "classmethod", "staticmethod", "property",
})

#: node types that need no rule of their own (containers, operators, contexts)
_PLAIN = (
    ast.Module, ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While,
    ast.If, ast.Break, ast.Continue, ast.Pass, ast.Return, ast.Raise, ast.Assert,
    ast.Try, ast.Delete,
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
    ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Slice, ast.Starred,
    ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp,
    ast.GeneratorExp, ast.comprehension, ast.JoinedStr, ast.FormattedValue,
    ast.NamedExpr, ast.Lambda, ast.arguments, ast.arg, ast.ExceptHandler,
    ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.alias,
    ast.Load, ast.Store, ast.Del,
    ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.MatMult,
    ast.UAdd, ast.USub, ast.Not, ast.Invert,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In,
    ast.NotIn,
)

#: refused node types, by the construct named in the refusal (Python's own keywords)
_CONSTRUCTS: dict[type, str] = {
    ast.With: "with", ast.AsyncWith: "async with", ast.AsyncFor: "async for",
    ast.AsyncFunctionDef: "async def", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield from", ast.Global: "global", ast.Nonlocal: "nonlocal",
    ast.Match: "match", ast.TryStar: "except*",
}


@dataclass(frozen=True)
class Refusal:
    """One reason the code may not run: its line and a message id with values."""

    line: int
    msg_id: str
    values: dict = field(default_factory=dict, compare=False)

    def message(self) -> tuple[str, dict]:
        return self.msg_id, {"line": self.line, **self.values}


def parse(source: str) -> tuple[ast.Module | None, list[Refusal]]:
    """The syntax tree of ``source``, or the refusal of its size or syntax."""
    if not isinstance(source, str):
        return None, [Refusal(0, "sandbox.refuse.not_text", {"kind": type(source).__name__})]
    if len(source) > MAX_SOURCE_CHARS:
        return None, [Refusal(0, "sandbox.refuse.too_long",
                              {"size": len(source), "limit": MAX_SOURCE_CHARS})]
    try:
        return ast.parse(source, "<student>"), []
    except SyntaxError as exc:
        return None, [Refusal(exc.lineno or 0, "sandbox.refuse.syntax",
                              {"message": str(exc.msg)[:200]})]
    except (RecursionError, MemoryError):  # nesting the parser itself cannot hold
        return None, [Refusal(0, "sandbox.refuse.too_deep", {"limit": MAX_DEPTH})]
    except ValueError as exc:  # a null byte, an integer literal of too many digits
        return None, [Refusal(0, "sandbox.refuse.syntax", {"message": str(exc)[:200]})]


def check(source: str, modules: Iterable[str] = ("math",)) -> list[Refusal]:
    """Every refusal of ``source`` (empty: it may run). ``modules`` are the module names
    it may import (the DSL's and ``math``, as the run's ``Scope`` maps them)."""
    tree, refusals = parse(source)
    if tree is None:
        return refusals
    return _Checker(frozenset(modules)).run(tree)


class _Checker:
    def __init__(self, modules: frozenset[str]) -> None:
        self.modules = modules
        self.refusals: list[Refusal] = []

    def refuse(self, node: ast.AST, msg_id: str, **values: object) -> None:
        self.refusals.append(Refusal(getattr(node, "lineno", 0), msg_id, values))

    def run(self, tree: ast.Module) -> list[Refusal]:
        # iterative, so that a deep tree is refused, never a RecursionError in the server
        stack: list[tuple[ast.AST, int, bool]] = [(tree, 0, False)]
        while stack:
            node, depth, in_class = stack.pop()
            if depth > MAX_DEPTH:
                self.refuse(node, "sandbox.refuse.too_deep", limit=MAX_DEPTH)
                return self.refusals  # once is enough
            if not self.visit(node, in_class):
                continue
            is_class = isinstance(node, ast.ClassDef)
            for child in reversed(list(ast.iter_child_nodes(node))):
                stack.append((child, depth + 1, is_class and child in node.body))
        self.refusals.sort(key=lambda r: r.line)
        return self.refusals

    def visit(self, node: ast.AST, in_class: bool) -> bool:
        """Check one node; False: do not look inside (already refused as a whole)."""
        construct = _CONSTRUCTS.get(type(node))
        if construct is not None:
            self.refuse(node, "sandbox.refuse.construct", construct=construct)
            return False
        if not isinstance(node, _PLAIN):
            self.refuse(node, "sandbox.refuse.construct", construct=type(node).__name__)
            return False
        rule = getattr(self, "visit_" + type(node).__name__, None)
        return True if rule is None else rule(node, in_class)

    # ---- names --------------------------------------------------------------------------
    def name(self, node: ast.AST, name: str | None) -> None:
        if not name:
            return
        if name.startswith("__"):
            self.refuse(node, "sandbox.refuse.dunder_name", name=name)
        elif name in DENIED_NAMES:
            self.refuse(node, "sandbox.refuse.denied_name", name=name)

    def visit_Name(self, node: ast.Name, in_class: bool) -> bool:
        self.name(node, node.id)
        return True

    def visit_arg(self, node: ast.arg, in_class: bool) -> bool:
        self.name(node, node.arg)
        return True

    def visit_keyword(self, node: ast.keyword, in_class: bool) -> bool:
        self.name(node, node.arg)
        return True

    def visit_ExceptHandler(self, node: ast.ExceptHandler, in_class: bool) -> bool:
        if node.type is None:
            self.refuse(node, "sandbox.refuse.bare_except")
        self.name(node, node.name)
        return True

    # ---- attributes ---------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute, in_class: bool) -> bool:
        attr = node.attr
        if attr.startswith("_"):
            self.refuse(node, "sandbox.refuse.private_attribute", name=attr)
        elif attr in ("format", "format_map", "vformat"):
            self.refuse(node, "sandbox.refuse.format", name=attr)
        elif attr in DENIED_ATTRIBUTES:
            self.refuse(node, "sandbox.refuse.denied_attribute", name=attr)
        if isinstance(node.ctx, ast.Del):
            self.refuse(node, "sandbox.refuse.delete_attribute", name=attr)
        return True

    # ---- definitions --------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef, in_class: bool) -> bool:
        if node.decorator_list:
            self.refuse(node, "sandbox.refuse.decorator", name=node.name)
        if node.name.startswith("__"):
            if not (in_class and node.name in ALLOWED_DUNDER_METHODS):
                self.refuse(node, "sandbox.refuse.dunder_method", name=node.name)
        else:
            self.name(node, node.name)
        return True

    def visit_ClassDef(self, node: ast.ClassDef, in_class: bool) -> bool:
        if node.bases or node.keywords or node.decorator_list:
            self.refuse(node, "sandbox.refuse.class_bases", name=node.name)
        self.name(node, node.name)
        return True

    # ---- imports ------------------------------------------------------------------------
    def allowed_module(self, node: ast.AST, module: str) -> None:
        if module not in self.modules:
            self.refuse(node, "sandbox.refuse.import", module=module,
                        allowed=", ".join(sorted(self.modules)) or "-")

    def visit_Import(self, node: ast.Import, in_class: bool) -> bool:
        for alias in node.names:
            self.allowed_module(node, alias.name)
            self.name(node, alias.asname)
        return False

    def visit_ImportFrom(self, node: ast.ImportFrom, in_class: bool) -> bool:
        module = "." * node.level + (node.module or "")
        self.allowed_module(node, module)
        for alias in node.names:
            if alias.name != "*":
                self.name(node, alias.name)
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    self.refuse(node, "sandbox.refuse.private_attribute", name=alias.name)
            self.name(node, alias.asname)
        return False


# ---- instrumentation ---------------------------------------------------------------------
def _tick(node: ast.AST) -> ast.Call:
    return ast.copy_location(ast.Call(ast.Name(TICK, ast.Load()), [], []), node)


def _guarded(guard: str, node: ast.Attribute) -> ast.Call:
    call = ast.Call(ast.Name(guard, ast.Load()), [node.value, ast.Constant(node.attr)], [])
    return ast.copy_location(call, node.value)


def _ticked(body: list[ast.stmt], node: ast.AST) -> list[ast.stmt]:
    tick = ast.copy_location(ast.Expr(_tick(node)), body[0] if body else node)
    return [tick, *body]


class _Instrument(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        guard = WRITE_GUARD if isinstance(node.ctx, ast.Store) else READ_GUARD
        node.value = _guarded(guard, node)
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        node.body = _ticked(node.body, node)
        return node

    visit_While = visit_For

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        node.body = _ticked(node.body, node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.generic_visit(node)
        node.body = ast.copy_location(ast.BoolOp(ast.And(), [_tick(node), node.body]), node)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.ifs = [_tick(node.target), *node.ifs]
        return node


def instrument(tree: ast.Module) -> ast.Module:
    """The checked tree with its run-time guards and ticks (see the module docstring)."""
    return ast.fix_missing_locations(_Instrument().visit(tree))

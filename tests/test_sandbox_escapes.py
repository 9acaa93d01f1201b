"""The classic escapes from a Python sandbox, each refused before it runs or stopped while
it runs with the right outcome and message, and the server unharmed afterwards.

Refused by the checker (no process started): the subclass walk from ``().__class__``,
``__builtins__``, ``__import__``, imports, ``open``/``eval``/``exec``/``getattr``/
``globals``/``vars``/``type``, generator and frame attributes, format-string attribute
access, ``global``, ``with``, classes with bases or metaclasses, dunder methods, decorators.

Stopped at run time (a child process each): huge allocations, infinite loops (the
instruction cap and the CPU limit), a blocking task (the wall clock), recursion, 100 MB of
print, attribute walks the checker cannot see (a numpy array behind a DSL object, a
generator), writes into the DSL's classes, the internals of an imported module, a crash.
"""
from __future__ import annotations

import os
import threading

import pytest

from explorer.core.i18n import LANGUAGES, t
from explorer.core.sandbox import MAX_DEPTH, MAX_SOURCE_CHARS, Limits, Scope, check, run

TASKS = "tests.sandbox_tasks"
DSL = Scope(modules={"dsl": TASKS, "math": "math"}, preload=("dsl",))
LIMITS = Limits(cpu_seconds=2, wall_seconds=20.0, memory_mb=512, steps=1_000_000)


def said(message: tuple[str, dict], lang: str = "en") -> str:
    msg_id, values = message
    return t(msg_id, lang, **values)


# ---- refused before running ---------------------------------------------------------------
REFUSED = [
    ("().__class__.__bases__[0].__subclasses__()", "sandbox.refuse.private_attribute"),
    ("x = __builtins__", "sandbox.refuse.dunder_name"),
    ("__builtins__['open']('/etc/passwd')", "sandbox.refuse.dunder_name"),
    ("__import__('os').system('id')", "sandbox.refuse.dunder_name"),
    ("import os", "sandbox.refuse.import"),
    ("import os.path", "sandbox.refuse.import"),
    ("import math.os", "sandbox.refuse.import"),
    ("from os import system", "sandbox.refuse.import"),
    ("from . import secrets", "sandbox.refuse.import"),
    ("import subprocess as math", "sandbox.refuse.import"),
    ("open('/etc/passwd').read()", "sandbox.refuse.denied_name"),
    ("eval('1')", "sandbox.refuse.denied_name"),
    ("exec('x = 1')", "sandbox.refuse.denied_name"),
    ("compile('1', 'f', 'eval')", "sandbox.refuse.denied_name"),
    ("getattr(x, '__cl' + 'ass__')", "sandbox.refuse.denied_name"),
    ("g = getattr", "sandbox.refuse.denied_name"),
    ("globals()['x'] = 1", "sandbox.refuse.denied_name"),
    ("vars()", "sandbox.refuse.denied_name"),
    ("locals()", "sandbox.refuse.denied_name"),
    ("dir(1)", "sandbox.refuse.denied_name"),
    ("type(x).mro()", "sandbox.refuse.denied_name"),
    ("type('A', (), {})", "sandbox.refuse.denied_name"),
    ("object.__subclasses__()", "sandbox.refuse.denied_name"),
    ("breakpoint()", "sandbox.refuse.denied_name"),
    ("(lambda: (yield))().gi_frame", "sandbox.refuse.construct"),
    ("(i for i in []).gi_frame.f_back.f_globals", "sandbox.refuse.denied_attribute"),
    ("g = (i for i in [])\nf = g.gi_frame", "sandbox.refuse.denied_attribute"),
    ("e.tb_frame", "sandbox.refuse.denied_attribute"),
    ("int.mro()", "sandbox.refuse.denied_attribute"),
    ("e.__traceback__.tb_frame.f_back", "sandbox.refuse.private_attribute"),
    ("f.__globals__['__builtins__']", "sandbox.refuse.private_attribute"),
    ("t = Tensor(4)\nt.data.ctypes.data_as(1)", "sandbox.refuse.denied_attribute"),
    ("Tensor(4).data.tofile('/tmp/x')", "sandbox.refuse.denied_attribute"),
    ("'{0.__class__}'.format(1)", "sandbox.refuse.format"),
    ("'{0.x}'.format_map({})", "sandbox.refuse.format"),
    ("f = str.format\nf('{0.__class__.__base__}', 1)", "sandbox.refuse.format"),
    ("f'{x.__class__}'", "sandbox.refuse.private_attribute"),
    ("f'{x._secret!r:>10}'", "sandbox.refuse.private_attribute"),
    ("def f():\n    global x\n    x = 1", "sandbox.refuse.construct"),
    ("def f():\n    x = 1\n    def g():\n        nonlocal x", "sandbox.refuse.construct"),
    ("def f():\n    yield 1", "sandbox.refuse.construct"),
    ("async def f():\n    await g()", "sandbox.refuse.construct"),
    ("with x:\n    pass", "sandbox.refuse.construct"),
    ("match x:\n    case 1:\n        pass", "sandbox.refuse.construct"),
    ("class A(Exception):\n    pass", "sandbox.refuse.class_bases"),
    ("class A(metaclass=M):\n    pass", "sandbox.refuse.class_bases"),
    ("class A:\n    def __getattr__(self, name):\n        pass",
     "sandbox.refuse.dunder_method"),
    ("class A:\n    def __del__(self):\n        pass", "sandbox.refuse.dunder_method"),
    ("def __init__(self):\n    pass", "sandbox.refuse.dunder_method"),
    ("@print\ndef f():\n    pass", "sandbox.refuse.decorator"),
    ("try:\n    pass\nexcept:\n    pass", "sandbox.refuse.bare_except"),
    ("del x.a", "sandbox.refuse.delete_attribute"),
    ("x._private = 1", "sandbox.refuse.private_attribute"),
    ("from math import _private", "sandbox.refuse.private_attribute"),
    ("from math import sqrt as __s", "sandbox.refuse.dunder_name"),
    ("def f(__a):\n    pass", "sandbox.refuse.dunder_name"),
    ("f(__x=1)", "sandbox.refuse.dunder_name"),
    ("__sb_read__ = None", "sandbox.refuse.dunder_name"),
    ("__sb_tick__ = lambda: True", "sandbox.refuse.dunder_name"),
    ("x" * (MAX_SOURCE_CHARS + 1), "sandbox.refuse.too_long"),
    ("-" * (MAX_DEPTH + 50) + "1", "sandbox.refuse.too_deep"),
    ("x = " + "1 + " * 20_00 + "1", "sandbox.refuse.too_deep"),
    ("[" * 300 + "]" * 300, "sandbox.refuse.syntax"),
    ("x = 1" + "0" * 5000, "sandbox.refuse.syntax"),
    ("def f(:\n", "sandbox.refuse.syntax"),
    ("x = '\0'", "sandbox.refuse.syntax"),
]


@pytest.mark.parametrize(("source", "msg_id"), REFUSED, ids=[s[:40] for s, _ in REFUSED])
def test_refused_before_running(source, msg_id):
    refusals = check(source, DSL.modules)
    assert msg_id in {r.msg_id for r in refusals}, refusals
    for lang in LANGUAGES:  # each refusal reads as a clear sentence in both languages
        for refusal in refusals:
            assert "{" not in t(refusal.msg_id, lang, **refusal.message()[1])


def test_a_refusal_names_its_line_and_construct():
    source = "x = 1\n\ny = x.__class__\nimport os\n"
    refusals = check(source)
    assert [(r.line, r.msg_id) for r in refusals] == [
        (3, "sandbox.refuse.private_attribute"), (4, "sandbox.refuse.import")]
    text = said(refusals[0].message())
    assert "3" in text and "__class__" in text
    assert "os" in said(refusals[1].message()) and "math" in said(refusals[1].message())


def test_refused_code_never_starts_a_process():
    threads = threading.active_count()
    outcome = run("import os\nos.system('id')", f"{TASKS}:nothing", None, LIMITS)
    assert outcome.kind == "refused"
    assert outcome.seconds == 0  # no child was started: the run's clock never started
    assert outcome.message()[0] == "sandbox.refuse.import"
    assert threading.active_count() == threads


def test_harmless_code_of_similar_shape_passes():
    source = ("x = '%s and %r' % (1, 'a')\ny = f'{x!r:>20}'\nz = 'a-b'.split('-')\n"
              "w = str(3).join(['a', 'b'])\nclass A:\n    def __init__(self):\n"
              "        self.v = 1\n")
    assert check(source) == []
    outcome = run(source, f"{TASKS}:value", {"name": "x"}, LIMITS)
    assert (outcome.kind, outcome.value) == ("ok", "1 and 'a'")


# ---- stopped while running ----------------------------------------------------------------
def _stopped(source: str, task: str = "nothing", payload: object = None,
             limits: Limits = LIMITS, scope: Scope = DSL):
    outcome = run(source, f"{TASKS}:{task}", payload, limits, scope)
    for lang in LANGUAGES:
        msg_id, values = outcome.message()
        assert "{" not in t(msg_id, lang, **values), outcome
    return outcome


@pytest.mark.parametrize("source", [
    "x = [0] * 10 ** 10",
    "x = 'x' * 10 ** 10",
    "x = []\nwhile True:\n    x.append([0] * 10 ** 6)",
], ids=["list", "text", "growing"])
def test_huge_allocations_hit_the_memory_limit(source):
    limits = Limits(cpu_seconds=5, wall_seconds=30.0, memory_mb=512)
    outcome = _stopped(source, limits=limits)
    assert (outcome.kind, outcome.limit) == ("limit", "memory"), outcome
    assert "512" in said(outcome.message())


@pytest.mark.parametrize("n", [10 ** 11, 200_000_000], ids=["absurd", "over-the-limit"])
def test_a_huge_numpy_allocation_on_the_students_behalf_hits_the_memory_limit(n):
    outcome = _stopped(f"n = {n}", task="allocate")
    assert (outcome.kind, outcome.limit) == ("limit", "memory"), outcome


def test_allocation_builtins_are_not_in_scope():
    outcome = _stopped("x = bytearray(10 ** 10)")
    assert (outcome.kind, outcome.error.type, outcome.error.line) == ("error", "NameError", 1)


def test_an_infinite_loop_hits_the_instruction_cap():
    outcome = _stopped("n = 0\nwhile True:\n    n += 1")
    assert (outcome.kind, outcome.limit) == ("limit", "steps")
    assert "1000000" in said(outcome.message())


def test_an_infinite_comprehension_hits_the_instruction_cap():
    outcome = _stopped("import math\nx = [i for i in range(10 ** 9) if i < 0]")
    assert (outcome.kind, outcome.limit) == ("limit", "steps")


def test_an_infinite_loop_in_c_hits_the_cpu_limit():
    outcome = _stopped("x = sum(range(10 ** 13))", limits=Limits(cpu_seconds=1,
                                                                  wall_seconds=30.0))
    assert (outcome.kind, outcome.limit) == ("limit", "cpu"), outcome


def test_a_blocked_run_hits_the_wall_clock():
    outcome = _stopped("", task="sleep", payload={"seconds": 600},
                       limits=Limits(cpu_seconds=5, wall_seconds=1.0))
    assert (outcome.kind, outcome.limit) == ("limit", "wall"), outcome
    assert outcome.seconds < 10


@pytest.mark.parametrize("source", [
    "def f(n):\n    return f(n + 1)\nf(0)",
    "f = lambda n: f(n + 1)\nf(0)",
    "def a(n):\n    return b(n)\ndef b(n):\n    return a(n)\na(0)",
], ids=["function", "lambda", "mutual"])
def test_deep_recursion_hits_the_recursion_limit(source):
    outcome = _stopped(source)
    assert (outcome.kind, outcome.limit) == ("limit", "recursion"), outcome


@pytest.mark.parametrize("source", [
    "print('x' * 10 ** 8)",
    "while True:\n    print('x' * 1000)",
    "for i in range(10 ** 6):\n    try:\n        print('y' * 1000)\n"
    "    except Exception:\n        pass",
], ids=["one-line", "loop", "caught"])
def test_printing_100_mb_hits_the_output_cap(source):
    outcome = _stopped(source)
    assert (outcome.kind, outcome.limit) == ("limit", "output"), outcome
    assert len(outcome.output) == LIMITS.output_chars


def test_the_percent_operator_is_harmless():
    source = "class A:\n    def __init__(self):\n        self.v = 1\nx = '%s' % A()\n"
    outcome = _stopped(source, task="value", payload={"name": "x"})
    assert outcome.kind == "ok" and outcome.value.startswith("<")
    assert "__globals__" not in outcome.value


@pytest.mark.parametrize(("source", "msg_id", "name", "line"), [
    ("t = Tensor(4)\nx = t.data.T", "sandbox.runtime.read", "T", 2),
    ("t = Tensor(4)\nd = t.data\nb = d.shape", "sandbox.runtime.read", "shape", 3),
    ("g = (i for i in range(3))\ns = g.send", "sandbox.runtime.read", "send", 2),
    ("def f():\n    pass\nx = f.attribute", "sandbox.runtime.read", "attribute", 3),
    ("m = Tensor.fill\nx = m.attribute", "sandbox.runtime.read", "attribute", 2),
    ("Tensor.total = lambda self: 42.0", "sandbox.runtime.write", "total", 1),
    ("t = Tensor(2)\nt.size = 10 ** 12", "sandbox.runtime.write", "size", 2),
    ("def f():\n    pass\nf.x = 1", "sandbox.runtime.write", "x", 3),
    ("import math\nmath.pi = 3", "sandbox.runtime.write", "pi", 2),
])
def test_attribute_walks_the_checker_cannot_see_are_refused_at_run_time(
        source, msg_id, name, line):
    outcome = _stopped(source)
    assert outcome.kind == "error", outcome
    assert (outcome.error.msg_id, outcome.error.values["name"], outcome.error.line) == (
        msg_id, name, line)
    assert name in said(outcome.message()) and str(line) in said(outcome.message())


def test_base_is_refused_statically_too():
    assert {r.msg_id for r in check("d.base")} == {"sandbox.refuse.denied_attribute"}


@pytest.mark.parametrize("source", [
    "import dsl\nx = dsl.np",
    "from dsl import np",
    "from dsl import os",
    "import math\nx = math.sys",
], ids=["module-attribute", "from-import", "os", "math-sys"])
def test_an_imported_module_shows_only_its_public_names(source):
    outcome = _stopped(source)
    assert outcome.kind == "error", outcome
    assert outcome.error.type in ("AttributeError", "ImportError")


@pytest.mark.parametrize("source", [
    "os.fork()",
    "while True:\n    os.fork()",
    "s = sys.modules['os']",
], ids=["fork", "bomb", "sys"])
def test_a_fork_bomb_is_impossible(source):
    assert check("import os\n" + source) != []
    outcome = _stopped(source)
    assert (outcome.kind, outcome.error.type) == ("error", "NameError"), outcome


def test_a_crash_of_the_child_is_reported():
    outcome = _stopped("", task="crash")
    assert outcome.kind == "crashed"
    assert "SIGSEGV" in outcome.detail
    assert "SIGSEGV" in said(outcome.message())


# ---- the server unharmed ------------------------------------------------------------------
def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_the_server_is_unharmed_by_hostile_runs():
    run("", f"{TASKS}:nothing", None, LIMITS)  # warm: the first run loads what it needs
    fds, threads, rss = _fds(), threading.active_count(), _rss_bytes()
    hostile = [
        ("x = [0] * 10 ** 10", "nothing", "memory"),
        ("n = 10 ** 11", "allocate", "memory"),
        ("while True:\n    pass", "nothing", "steps"),
        ("def f():\n    return f()\nf()", "nothing", "recursion"),
        ("while True:\n    print('x' * 10000)", "nothing", "output"),
        ("", "crash", ""),
    ]
    for source, task, limit in hostile:
        outcome = run(source, f"{TASKS}:{task}", None, LIMITS, DSL)
        assert outcome.limit == limit, outcome
    assert _fds() == fds, "a hostile run leaked file descriptors in the server"
    assert threading.active_count() == threads, "a hostile run left a thread in the server"
    assert _rss_bytes() - rss < 64 << 20, "a hostile run grew the server's memory"
    after = run("def f(x):\n    return x + 1\n", f"{TASKS}:call",
                {"name": "f", "args": [41]}, LIMITS)
    assert (after.kind, after.value) == ("ok", 42)

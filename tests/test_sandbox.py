"""The sandbox for students' code (explorer/core/sandbox/) doing its ordinary work: code
that passes the checker runs in a child process and the task's value comes back; errors
name the student's line; DSL errors keep their message id; limits, scopes and slots are
validated; every outcome's message exists in both languages.

The escapes are in tests/test_sandbox_escapes.py. Trusted code for both: tests/sandbox_tasks.py.
"""
from __future__ import annotations

import threading

import pytest

from explorer.core import sandbox
from explorer.core.i18n import LANGUAGES, t
from explorer.core.sandbox import Gate, Limits, Outcome, Scope, check, run
from hardware_presets.errors import InputError

TASKS = "tests.sandbox_tasks"
DSL = Scope(modules={"dsl": TASKS, "math": "math"}, preload=("dsl",))
FAST = Limits(cpu_seconds=2, wall_seconds=20.0)

KERNEL = '''\
import math
from dsl import Tensor, scale


class KernelScale:
    """A kernel in the Ascend C shape: a class with init and process."""

    def __init__(self, n, factor):
        self.n = n
        self.factor = factor
        self.done = []

    def process(self):
        t = Tensor(self.n).fill(1.5)
        for i in range(2):
            scale(t, self.factor)
            self.done.append(f"step {i}: {t.total():.1f}")
        return t.total()


def run_kernel(n):
    k = KernelScale(n, factor=math.sqrt(4))
    total = k.process()
    squares = [i * i for i in range(n) if i % 2 == 0]
    pairs = {k: v for k, v in zip("ab", (1, 2))}
    try:
        int("x")
    except ValueError as e:
        caught = len(e.args)
    label = "%s=%d" % ("n", n)
    return [total, sum(squares), pairs, caught, label, k.done, (lambda x: x + 1)(n)]
'''


def test_a_trivial_task_runs_and_returns_its_value():
    outcome = run("def f(a, b):\n    print('adding', a, b)\n    return a + b\n",
                  f"{TASKS}:call", {"name": "f", "args": [2, 3]}, FAST)
    assert outcome.kind == "ok", outcome
    assert outcome.value == 5
    assert outcome.output == "adding 2 3\n"
    assert outcome.seconds > 0
    assert outcome.message() == ("sandbox.outcome.ok", {})


def test_dsl_style_code_passes_the_checker_and_runs():
    assert check(KERNEL, DSL.modules) == []
    outcome = run(KERNEL, f"{TASKS}:call", {"name": "run_kernel", "args": [4]}, FAST, DSL)
    assert outcome.kind == "ok", outcome
    total, squares, pairs, caught, label, done, plus_one = outcome.value
    assert total == pytest.approx(1.5 * 4 * 2 * 2)
    assert (squares, pairs, caught, label, plus_one) == (0 + 4, {"a": 1, "b": 2}, 1, "n=4", 5)
    assert done == ["step 0: 12.0", "step 1: 24.0"]


def test_preloaded_names_need_no_import():
    source = "t = Tensor(3).fill(2.0)\nsize = t.size\nresult = scale(t, 2.0).total()\n"
    outcome = run(source, f"{TASKS}:value", {"name": "result"}, FAST, DSL)
    assert outcome.kind == "ok", outcome
    assert outcome.value == 12.0


def test_a_student_error_names_its_type_and_line():
    outcome = run("x = 1\n\ny = x / 0\n", f"{TASKS}:nothing", None, FAST)
    assert outcome.kind == "error"
    assert (outcome.error.type, outcome.error.line) == ("ZeroDivisionError", 3)
    msg_id, values = outcome.message()
    assert msg_id == "sandbox.outcome.error"
    assert values["line"] == 3 and "division" in values["message"]


def test_an_error_inside_a_called_function_names_the_students_line():
    source = "def f(items):\n    return items[10]\n"
    outcome = run(source, f"{TASKS}:call", {"name": "f", "args": [[1, 2]]}, FAST)
    assert (outcome.kind, outcome.error.type, outcome.error.line) == ("error", "IndexError", 2)


def test_a_dsl_error_keeps_its_message_id_and_values():
    source = "x = 1\nt = Tensor(10 ** 7)\n"
    outcome = run(source, f"{TASKS}:nothing", None, FAST, DSL)
    assert outcome.kind == "error"
    assert outcome.error.type == "DslError"
    assert outcome.error.msg_id == "sandbox.limit.memory"
    assert outcome.error.values == {"memory_mb": 10 ** 7}
    assert outcome.error.line == 2
    assert outcome.message() == ("sandbox.limit.memory", {"line": 2, "memory_mb": 10 ** 7})


def test_a_result_that_is_not_data_is_an_error():
    outcome = run("", f"{TASKS}:unserializable", None, FAST)
    assert outcome.kind == "error"
    assert outcome.message()[0] == "sandbox.outcome.not_data"


def test_a_result_over_its_cap_is_a_limit():
    limits = Limits(cpu_seconds=2, wall_seconds=20.0, result_bytes=10_000)
    assert run("", f"{TASKS}:big", {"size": 9_000}, limits).kind == "ok"
    outcome = run("", f"{TASKS}:big", {"size": 20_000}, limits)
    assert (outcome.kind, outcome.limit) == ("limit", "result")


def test_the_child_is_isolated_from_the_server():
    outcome = run("", f"{TASKS}:environment", None, FAST)
    assert outcome.kind == "ok", outcome
    seen = outcome.value
    assert set(seen["env"]) <= {"PATH", "LANG", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"} | {
        name for name in seen["env"] if name.startswith("EXPLORER_")}
    assert seen["cwd"] == "/"
    assert (seen["nofile"], seen["fsize"]) == (16, 0)
    assert not seen["numba"], "the child must not load the emulator's numba"
    assert not seen["explorer_init_ran"]


# ---- every outcome says what happened, in both languages --------------------------------
def _outcomes() -> list[Outcome]:
    limits = Limits()
    refusals = tuple(check("import os\nx.__class__\neval('1')\n"))
    made = [Outcome("ok", limits), Outcome("refused", limits, refusals=refusals),
            Outcome("crashed", limits, detail="signal SIGSEGV\ntraceback")]
    made += [Outcome("limit", limits, limit=kind) for kind in sandbox.LIMIT_KINDS]
    made += [Outcome("error", limits, error=sandbox.StudentError("ValueError", "bad", line))
             for line in (3, None)]
    made.append(Outcome("error", limits, error=sandbox.StudentError(
        "SandboxRefusal", "", 4, "sandbox.runtime.read", {"name": "T", "kind": "ndarray"})))
    return made


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_outcome_message_is_translated(lang):
    for outcome in _outcomes():
        for msg_id, values in outcome.messages():
            text = t(msg_id, lang, **values)
            assert "{" not in text, (msg_id, text)
            for key in ("line", "name", "module", "cpu_seconds"):
                if f"{{{key}}}" in t(msg_id, lang):
                    assert str(values[key]) in text


def test_every_message_id_of_the_sandbox_is_in_the_catalogue():
    ids = set(sandbox.LIMIT_IDS.values())
    ids |= {r.msg_id for r in check(
        "import os\nfrom x import y\n__a\nx._b\n'{}'.format(1)\nx.gi_frame\neval\n"
        "try:\n    pass\nexcept:\n    pass\ndel x.a\n@d\ndef f():\n    yield\n"
        "class A(B):\n    def __eq__(self):\n        pass\nwith a:\n    pass\n")}
    ids |= {r.msg_id for r in check("x" * 30_000)} | {r.msg_id for r in check("x = (")}
    ids |= {r.msg_id for r in check("-" * 500 + "1")} | {r.msg_id for r in check(b"x")}
    for lang in LANGUAGES:
        for msg_id in ids:
            assert t(msg_id, lang), msg_id


# ---- validation ---------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [
    {"cpu_seconds": 0}, {"cpu_seconds": 1.5}, {"cpu_seconds": True}, {"memory_mb": 10},
    {"wall_seconds": "5"}, {"steps": 10 ** 12}, {"recursion": 5},
])
def test_limits_refuse_bad_values(bad):
    field = next(iter(bad))
    with pytest.raises(InputError) as info:
        Limits(**bad)
    assert info.value.field == f"limits.{field}"


def test_scope_and_task_are_validated():
    with pytest.raises(InputError):
        Scope(modules={"_x": "os"})
    with pytest.raises(InputError):
        Scope(modules={"dsl": TASKS}, preload=("math",))
    with pytest.raises(InputError):
        run("", "no colon", None, FAST)
    with pytest.raises(InputError):
        run("", "os:system; rm", None, FAST)


def test_slots_setting():
    assert sandbox.slots_setting({"EXPLORER_SANDBOX_SLOTS": "3"}) == 3
    assert sandbox.slots_setting({}) >= 2
    for bad in ("0", "-1", "many", "1000"):
        with pytest.raises(InputError):
            sandbox.slots_setting({"EXPLORER_SANDBOX_SLOTS": bad})


# ---- slots: queue, do not fail ------------------------------------------------------------
def _wait_until(predicate, timeout: float = 10.0) -> None:
    done = threading.Event()
    deadline = threading.Timer(timeout, done.set)
    deadline.start()
    try:
        while not predicate():
            assert not done.is_set(), "timed out"
            done.wait(0.005)
    finally:
        deadline.cancel()


def test_the_gate_queues_runs_beyond_its_slots():
    gate = Gate(2)
    release = threading.Event()
    finished = []

    def hold(i: int) -> None:
        with gate.slot():
            release.wait()
        finished.append(i)

    threads = [threading.Thread(target=hold, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    _wait_until(lambda: gate.load() == (4, 2))
    release.set()
    for thread in threads:
        thread.join(10)
    assert sorted(finished) == list(range(6))
    assert gate.most == 2 and gate.load() == (0, 0)


def test_concurrent_runs_wait_for_a_slot_and_all_succeed():
    previous = sandbox.set_default_gate(Gate(1))
    try:
        results: list[Outcome] = []
        threads = [threading.Thread(target=lambda i=i: results.append(run(
            "def f(x):\n    return x * 2\n", f"{TASKS}:call", {"name": "f", "args": [i]},
            FAST))) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(o.value for o in results) == [0, 2, 4]
        assert sandbox.default_gate().most == 1
    finally:
        sandbox.set_default_gate(previous)


def test_a_dsl_error_with_an_unknown_message_id_falls_back_to_its_text():
    outcome = run("x = 1\nraise_unknown()\n", f"{TASKS}:nothing", None, FAST, DSL)
    assert (outcome.kind, outcome.error.msg_id, outcome.error.line) == ("error", "no.such.id", 2)
    assert outcome.message() == ("sandbox.outcome.error", {
        "kind": "DslError", "message": outcome.error.message, "line": 2})
    forged = Outcome("error", FAST, error=sandbox.StudentError("X", "text", 2, "no.such.id"))
    assert forged.message() == ("sandbox.outcome.error",
                                {"kind": "X", "message": "text", "line": 2})
    refused = Outcome("refused", FAST, refusals=(sandbox.Refusal(1, "no.such.id"),))
    assert refused.message()[0] == "sandbox.outcome.crashed"


def test_any_text_survives_the_trip():
    source = "print('你好', '\\ud800', 'é')\nx = '\\udfff' + '张'\n"
    outcome = run(source, f"{TASKS}:value", {"name": "x"}, FAST)
    assert outcome.kind == "ok", outcome
    assert outcome.output == "你好 ? é\n"
    assert outcome.value == "\udfff张"


def test_a_task_that_cannot_be_loaded_is_a_crash_with_its_cause():
    outcome = run("x = 1", f"{TASKS}:no_such_task", None, FAST)
    assert outcome.kind == "crashed"
    assert "no_such_task" in outcome.detail


def test_the_sandbox_user_setting(monkeypatch):
    assert sandbox.limits.user_setting({}) is None
    assert sandbox.limits.user_setting({"EXPLORER_SANDBOX_USER": "0"}) == (0, 0)
    with pytest.raises(InputError):
        sandbox.limits.user_setting({"EXPLORER_SANDBOX_USER": "no-such-user-xyz"})
    # the child runs as that user; or, if the user cannot start the interpreter (here:
    # a Python under /root), the run is a crash that says so, never an exception
    monkeypatch.setattr(sandbox.runner, "user_setting", lambda: (65534, 65534))
    outcome = run("", f"{TASKS}:environment", None, FAST)
    if outcome.kind == "ok":
        assert outcome.value["uid"] == 65534
    else:
        assert outcome.kind == "crashed"
        assert "could not start" in outcome.detail


def test_a_scope_can_export_a_named_list_instead_of_all():
    scope = Scope(modules={"dsl": f"{TASKS}:STUDENT_NAMES"}, preload=("dsl",))
    assert run("t = Tensor(2)", f"{TASKS}:nothing", None, FAST, scope).kind == "ok"
    for source in ("launch('import os')", "from dsl import launch", "DslError"):
        outcome = run(source, f"{TASKS}:nothing", None, FAST, scope)
        assert outcome.kind == "error", (source, outcome)
        assert outcome.error.type in ("NameError", "ImportError")
    with pytest.raises(InputError):
        Scope(modules={"dsl": "tests.sandbox_tasks:not a name"})


def test_an_error_with_the_dsls_message_id_and_block_passes_through():
    outcome = run("x = 1\nraise_message_id()\n", f"{TASKS}:nothing", None, FAST, DSL)
    assert outcome.kind == "error"
    assert (outcome.error.msg_id, outcome.error.line) == ("sandbox.limit.memory", 2)
    assert outcome.error.values == {"memory_mb": 7, "core": 3}


def test_the_dsl_may_run_a_thread_per_block():
    source = "def kernel(block):\n    return sum(range(block + 1))\n"
    outcome = run(source, f"{TASKS}:in_threads", {"name": "kernel", "blocks": 48}, FAST)
    assert outcome.kind == "ok", outcome
    assert outcome.value == [b * (b + 1) // 2 for b in range(48)]


def test_a_host_tiling_struct_can_be_read_not_changed():
    read = "def kernel(tiling):\n    return tiling.blockLength // tiling.tile\n"
    outcome = run(read, f"{TASKS}:tiled", {"blockLength": 1024, "tile": 256}, FAST)
    assert (outcome.kind, outcome.value) == ("ok", 4)
    write = "def kernel(tiling):\n    tiling.tile = 1\n"
    outcome = run(write, f"{TASKS}:tiled", {"tile": 256}, FAST)
    assert (outcome.kind, outcome.error.msg_id) == ("error", "sandbox.runtime.write")
    assert "not allowed" in outcome.error.message

"""A fixed slice of the fuzz suite (``python -m bench.fuzz`` runs 10,000 cases): the known
findings of issue 16 and about 110 generated cases over every surface must all end as ok
or refused, never as a crash, hang or out-of-memory. And the harness itself must tell
those five apart, or a green slice would mean nothing."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from hardware_presets.errors import InputError
from tests.apptest_helpers import open_page
from tests.fuzz import cases, report, runner, targets

SLICE_CASES, SLICE_SEED = 120, 20260
_BEHAVIOURS = ("ok", "refused", "crash", "hang", "oom", "die")


def _misbehave(kind: str) -> str:
    if kind == "refused":
        raise InputError("x", 1, "nothing")
    if kind == "crash":
        raise KeyError("planted")
    if kind == "hang":
        while True:
            pass
    if kind == "oom":
        bytearray(4 << 30)
    if kind == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    return "ok"


def misbehaving_target(case: str) -> dict:
    """A worker target that does what its case names (module level: workers import it)."""
    return targets.outcome_of(_misbehave, case)


def no_warm_up() -> None:
    """The planted cases need nothing compiled."""


@pytest.fixture(scope="module")
def planted() -> dict[str, dict]:
    pool = runner.Pool(workers=2, timeout=3.0, target=misbehaving_target, warm_up=no_warm_up)
    cases_ = list(_BEHAVIOURS) + ["ok"]  # one more after the replaced workers
    return dict(zip(cases_, pool.run(cases_)))


@pytest.mark.parametrize("kind", _BEHAVIOURS)
def test_the_pool_tells_every_ending_apart(planted, kind):
    expected = {"die": "oom"}.get(kind, kind)
    assert planted[kind]["kind"] == expected


def test_failures_name_their_line(planted):
    assert planted["crash"]["type"] == "KeyError"
    assert "tests/test_fuzz_slice.py" in planted["crash"]["where"]
    assert "_misbehave" in planted["hang"]["where"]  # from the stack dumped before the kill
    assert planted["die"]["message"] == f"exit code {-signal.SIGKILL}"


def test_cases_are_the_same_for_a_seed_and_cover_every_surface():
    first, again = cases.drawn(40, 7), cases.drawn(40, 7)
    assert [report.describe(c) for c in first] == [report.describe(c) for c in again]
    assert {c[0] for c in cases.drawn(200, 7)} == set(cases.SURFACES)


def test_fixed_slice_has_no_crash_hang_or_oom():
    todo = cases.all_cases(SLICE_CASES, SLICE_SEED)
    counts, groups = report.summarize(todo, runner.Pool(workers=2).run(todo))
    assert not groups, "\n".join(report.lines(counts, groups))


# The harness runs the CLI in-process (an interpreter start per call would cost more than
# most cases); these files check that the real ``python -m explorer`` answers as it does.
REAL_CLI_FILES = {"latin1.toml": 'name = "caf\u00e9"\n'.encode("latin-1"),
                  "deep.json": b'{"params": {"n": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"}


@pytest.mark.parametrize("name", sorted(REAL_CLI_FILES))
def test_real_cli_refuses_a_malformed_file_in_one_line(tmp_path, name):
    (tmp_path / name).write_bytes(REAL_CLI_FILES[name])
    done = subprocess.run([sys.executable, "-m", "explorer", "validate", name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(targets.ROOT)})
    assert (done.returncode, len(done.stderr.splitlines())) == (2, 1), done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    in_process = targets.run_case(("cli", (("validate", name), {name: REAL_CLI_FILES[name]})))
    assert in_process["kind"] == "refused", in_process


def _url_cases(count: int) -> list[tuple[str, dict[str, str]]]:
    """The first ``count`` generated URL cases of the slice's seed (pages run as a whole)."""
    found = (c[1] for i in range(10_000) if (c := cases.case_at(i, SLICE_SEED))[0] == "url")
    return [next(found) for _ in range(count)]


@pytest.mark.parametrize("page, query", _url_cases(2))
def test_a_page_shows_hostile_url_parameters_as_messages(page, query):
    """The pure URL parsing is fuzzed above; two links also open their page for real."""
    at = open_page(f"explorer/ui/pages/{page}.py", query)
    assert not at.exception

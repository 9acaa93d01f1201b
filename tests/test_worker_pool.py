"""The emulation worker pool and the cross-session results: a run in a worker is the run
in this process, identical requests compute once, a killed worker is replaced, refusals
cross the process boundary whole, the queue is reported, and a page renders through it.

One pool of one worker serves the module (warm-up is paid once). Jobs that must stay
queued wait behind a *gate*: a job that reads a FIFO, so it runs until the test writes to
it (a condition, not a sleep)."""
from __future__ import annotations

import os
import signal
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from explorer.core import Scenario, shared_results, simulate, worker_pool
from explorer.core.shared_results import SharedResults
from explorer.core.worker_pool import WorkerDied, WorkerPool, workers_setting
from explorer.ui.worker_status import status_text
from hardware_presets.errors import InputError
from tests.apptest_helpers import APP, open_page
from tests.waiting import DEADLINE_S, poll_until

SMALL = {"kernel": "vector_add", "params": {"n": 1 << 16}}
GEMM = {"kernel": "gemm", "params": {"M": 256, "N": 512, "K": 256}}
BAD = {"kernel": "vector_add", "params": {"n": -5}}


@pytest.fixture(scope="module")
def pool():
    pool = WorkerPool(1)
    yield pool
    pool.close()


# ---- functions the worker runs (module level: they travel by name) -----------------------
def _gate(fifo: str) -> str:
    """Runs until the test writes to ``fifo``."""
    with open(fifo, encoding="utf-8") as pipe:
        return pipe.read()


def _record(log: str, value: int) -> int:
    """``value``, after noting the call in ``log`` (calls counted across processes)."""
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"{value}\n")
    return value


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _simulate_dict(data: dict):
    return simulate(Scenario.from_dict(data))


@pytest.fixture
def gate(tmp_path: Path):
    """``(path, open_it)``: a FIFO for ``_gate``; ``open_it()`` lets the gate job end."""
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)

    def open_it() -> None:
        with open(fifo, "w", encoding="utf-8") as pipe:  # blocks until the gate job reads
            pipe.write("open")
    return str(fifo), open_it


# ---- the same result ---------------------------------------------------------------------
@pytest.mark.parametrize("data", [SMALL, GEMM], ids=["vector_add", "gemm"])
def test_a_run_in_a_worker_is_the_run_in_this_process(pool, data):
    scenario = Scenario.from_dict(data)
    here, there = simulate(scenario), pool.submit(simulate, scenario).result(DEADLINE_S)
    assert there.scenario == here.scenario and there.metrics == here.metrics
    assert there.numerics == here.numerics and there.notes == here.notes
    for table in ("timeline", "per_core", "traffic", "bandwidth"):
        pd.testing.assert_frame_equal(getattr(there, table), getattr(here, table))


def test_an_input_error_crosses_the_process_boundary_whole(pool):
    with pytest.raises(InputError) as here:
        _simulate_dict(BAD)
    with pytest.raises(InputError) as there:
        pool.submit(_simulate_dict, BAD).result(DEADLINE_S)
    mine, theirs = here.value, there.value
    assert (theirs.field, theirs.value, theirs.allowed, theirs.hint) == \
        (mine.field, mine.value, mine.allowed, mine.hint) == ("params.n", -5, mine.allowed, "")
    assert str(theirs) == str(mine)
    assert "_simulate_dict" in str(theirs.__cause__)  # the worker's traceback


# ---- the queue ---------------------------------------------------------------------------
def test_the_queue_says_how_many_requests_are_ahead(pool, gate, tmp_path):
    fifo, open_gate = gate
    log = str(tmp_path / "calls")
    blocker = pool.submit(_gate, fifo)
    first, second = pool.submit(_record, log, 1), pool.submit(_record, log, 2)
    poll_until(pool.load, lambda load: load == (2, 1), "two queued behind the gate")
    assert pool.ahead(blocker) is None and blocker.running()
    assert (pool.ahead(first), pool.ahead(second)) == (0, 1)
    assert "ahead of yours: 1; workers busy: 1 of 1" in status_text(second, pool, "en")
    assert "前面还有 1 个请求" in status_text(second, pool, "zh")
    assert status_text(blocker, pool, "en") == "Emulating…"
    open_gate()
    assert (blocker.result(DEADLINE_S), first.result(DEADLINE_S), second.result(DEADLINE_S)) \
        == ("open", 1, 2)
    assert pool.load() == (0, 0)


def test_identical_concurrent_requests_compute_once(pool, gate, tmp_path):
    fifo, open_gate = gate
    log = tmp_path / "calls"
    shared = SharedResults(pool, max_entries=4, max_bytes=1 << 20, sizeof=lambda _: 1)
    blocker = pool.submit(_gate, fifo)
    one, two = (shared.get("same", _record, str(log), 7) for _ in range(2))
    assert one is two and not one.done()  # the second waits on the first's future
    open_gate()
    assert blocker.result(DEADLINE_S) == "open"
    assert (one.result(DEADLINE_S), shared.get("same", _record, str(log), 7).result()) == (7, 7)
    assert log.read_text(encoding="utf-8").split() == ["7"]


# ---- a dying worker ----------------------------------------------------------------------
def test_a_killed_worker_is_replaced_and_the_queue_goes_on(pool, tmp_path):
    killed = pool.submit(_die)
    queued = pool.submit(_record, str(tmp_path / "calls"), 3)
    with pytest.raises(WorkerDied, match="stopped"):
        killed.result(DEADLINE_S)
    assert queued.result(DEADLINE_S) == 3
    assert pool.submit(_simulate_dict, SMALL).result(DEADLINE_S).metrics


@pytest.mark.parametrize("script", [APP, APP.parent / "explorer" / "ui" / "app_main.py"],
                         ids=["app.py", "app_main.py"])
def test_new_workers_started_under_the_app_script_as_main_serve(pool, monkeypatch, script):
    """While a session's script runs, Streamlit makes the main script (app.py, or
    app_main.py for ``ascend-explorer app``) ``__main__``; a worker started then re-imports
    it as ``__mp_main__``, which must draw nothing and start no pool of its own (it would
    fail multiprocessing's bootstrapping check and the worker would die)."""
    main = types.ModuleType("__main__")
    main.__file__, main.__spec__ = str(script), None
    monkeypatch.setitem(sys.modules, "__main__", main)
    with pytest.raises(WorkerDied):
        pool.submit(_die).result(DEADLINE_S)  # its replacement starts with this __main__
    assert pool.submit(_simulate_dict, SMALL).result(DEADLINE_S).makespan_ns > 0


# ---- the shared table, in this process ---------------------------------------------------
def test_the_shared_table_keeps_the_most_recent_results_within_its_bounds(tmp_path):
    log = str(tmp_path / "calls")
    shared = SharedResults(WorkerPool(0), max_entries=2, max_bytes=25, sizeof=lambda v: v)
    for value in (1, 2, 3):
        shared.get(str(value), _record, log, value)
    assert (len(shared), shared.nbytes()) == (2, 5)  # "1" went: two entries at most
    shared.get("2", _record, log, 2)  # a hit: "2" is now the most recent
    shared.get("21", _record, log, 21)
    assert (len(shared), shared.nbytes()) == (2, 23)  # "3" went, not "2"
    shared.get("24", _record, log, 24)
    assert (len(shared), shared.nbytes()) == (1, 24)  # 21 + 24 bytes is over the budget
    assert Path(log).read_text(encoding="utf-8").split() == ["1", "2", "3", "21", "24"]


def test_a_failed_request_is_not_kept(tmp_path):
    shared = SharedResults(WorkerPool(0), max_entries=4, max_bytes=1 << 20)
    with pytest.raises(InputError):
        shared.get("bad", _simulate_dict, BAD).result()
    assert len(shared) == 0


def test_the_pool_size_comes_from_the_environment():
    assert workers_setting({}) == os.cpu_count()
    assert workers_setting({"EXPLORER_WORKERS": "0"}) == 0
    with pytest.raises(InputError, match="EXPLORER_WORKERS"):
        workers_setting({"EXPLORER_WORKERS": "many"})


# ---- a page ------------------------------------------------------------------------------
def test_a_page_renders_through_the_pool(pool):
    previous = worker_pool.set_default_pool(pool)
    try:
        at = open_page("explorer/ui/pages/vector_add.py")
        assert at.get("plotly_chart")
        assert not [e for e in at.info if "worker" in str(e.value)]  # the status is cleared
        assert shared_results.default_results().pool is pool
        assert len(shared_results.default_results()) >= 1
    finally:
        worker_pool.set_default_pool(previous)

"""Suite-wide setup: where numba caches, the run's shared folder, and how Hypothesis searches.

NUMBA_CACHE_DIR must be set before numba is first imported (numba reads it once), so it is
set here, at import of the root conftest, before any test module is collected. The Makefile
sets the same default; an explicit value from the environment wins. pytest-xdist's workers
inherit the controller's environment, so the setting is idempotent.

The controller of a run (the process that starts the xdist workers, or the only process
without xdist) compiles the jit engine once before any worker starts, so that the workers,
the app server and the sweep worker processes all load numba's cache instead of each
compiling the engine again (about 10 s of CPU each on a fresh clone), and it opens the
folder through which the workers share one app server (`tests.app_server`).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# Tests run the jit engine with bounds checks: an out-of-range index becomes an IndexError
# naming the test instead of silent corruption or a segfault. Numba's cache does not tell
# a bounds-checked build from a plain one, so the checked builds go to a folder of their
# own; otherwise the app and benchmarks would load the slower code after a test run.
os.environ.setdefault("NUMBA_BOUNDSCHECK", "1")
_checked = f"boundscheck-{os.environ['NUMBA_BOUNDSCHECK']}"
_cache = Path(os.environ.get("NUMBA_CACHE_DIR", str(REPO_ROOT / ".numba_cache")))
os.environ["NUMBA_CACHE_DIR"] = str(_cache if _cache.name == _checked else _cache / _checked)
# Pages emulate through the worker pool as on a server, but with one worker per pytest
# process (and the app server of the browser tests): every xdist worker starts its own pool,
# and one worker per core each would crowd a 2-core CI machine.
os.environ.setdefault("EXPLORER_WORKERS", "1")

from hypothesis import HealthCheck, settings  # noqa: E402  (after the environment is set)

from tests import app_server  # noqa: E402

# "ci": reproducible (the same examples every run, no example database) and bounded, so the
# whole suite stays well inside CI's time; no per-example deadline (a loaded machine must
# not fail an example for being slow). "thorough" is for hunting bugs by hand:
# HYPOTHESIS_PROFILE=thorough make test
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    database=None,
    max_examples=50,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", deadline=None, max_examples=1000, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def fresh_numerics():
    """For a test that patches or counts a kernel's numerics: no numerical check remembered
    from an earlier test is reused, and none computed under the patch outlives the test."""
    from explorer.core.simulate import remembered_check

    remembered_check.cache_clear()
    yield
    remembered_check.cache_clear()


def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def _compile_engine() -> None:
    """Run a tiny scenario: compiles the event loop into numba's cache (or loads it)."""
    from explorer.core import Scenario, simulate

    simulate(Scenario.make(kernel="vector_add", params={"n": 4096, "tile": 1024,
                                                        "block_dim": 2}))


def pytest_collection_modifyitems(config, items):
    """Browser tests first (a stable sort keeps the rest in collection order). They are the
    longest files, so starting them first leaves short files for the end of the run (make
    test hands whole files to the workers in this order: --no-loadscope-reorder), and the
    app server and chromium work beside the other worker's tests instead of after them."""
    browser = REPO_ROOT / "tests" / "browser"
    items.sort(key=lambda item: browser not in Path(item.path).parents)


def pytest_configure(config):
    if _is_controller(config):
        app_server.open_run()
        _compile_engine()


def pytest_unconfigure(config):
    if _is_controller(config):
        app_server.close_run()

"""Suite-wide setup: where numba caches, and how Hypothesis searches.

NUMBA_CACHE_DIR must be set before numba is first imported (numba reads it once), so it is
set here, at import of the root conftest, before any test module is collected. The Makefile
sets the same default; an explicit value from the environment wins.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

# Tests run the jit engine with bounds checks: an out-of-range index becomes an IndexError
# naming the test instead of silent corruption or a segfault. Numba's cache does not tell
# a bounds-checked build from a plain one, so the checked builds go to a folder of their
# own; otherwise the app and benchmarks would load the slower code after a test run.
os.environ.setdefault("NUMBA_BOUNDSCHECK", "1")
_cache = Path(os.environ.get("NUMBA_CACHE_DIR", str(REPO_ROOT / ".numba_cache")))
os.environ["NUMBA_CACHE_DIR"] = str(_cache / f"boundscheck-{os.environ['NUMBA_BOUNDSCHECK']}")

from hypothesis import HealthCheck, settings  # noqa: E402  (after the environment is set)

# "ci": reproducible (the same examples every run, no example database) and bounded, so the
# whole suite stays well inside CI's time. "thorough" is for hunting bugs by hand:
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

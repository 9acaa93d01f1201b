"""The emulator: a program's cost model (``cost``), its lowering to flat arrays
(``lowering``), the numba event loop (``_jit``) and its readable twin (``reference``), and
``engine.run``, the one entry point.

Numba caches what it compiles in ``NUMBA_CACHE_DIR``; unless that is set, in the checkout's
``.numba_cache`` (git ignores it), the folder ``make venv`` fills once through
``python -m explorer warmup``, so the CLI, the app and the tests all find the compiled engine
there whichever way they were started. An installed package (no checkout around it, and
site-packages may be read-only or shared) caches in the user's cache folder instead
(``ascend-explorer warmup`` fills it).
"""
import os
from pathlib import Path


def _cache_dir() -> Path:
    """The checkout's .numba_cache (the folder with pyproject.toml above explorer/), else
    the per-user cache folder of the installed package."""
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file():
        return root / ".numba_cache"
    import platformdirs
    return Path(platformdirs.user_cache_dir("ascend-explorer")) / "numba"


if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = str(_cache_dir())

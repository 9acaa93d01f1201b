"""The emulator: a program's cost model (``cost``), its lowering to flat arrays
(``lowering``), the numba event loop (``_jit``) and its readable twin (``reference``), and
``engine.run``, the one entry point.

Numba caches what it compiles in ``NUMBA_CACHE_DIR``; unless that is set, in the checkout's
``.numba_cache`` (git ignores it), the folder ``make venv`` fills once through
``python -m explorer warmup``, so the CLI, the app and the tests all find the compiled engine
there whichever way they were started.
"""
import os
from pathlib import Path

os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parents[3] / ".numba_cache"))

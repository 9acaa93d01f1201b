"""Everything compiled with numba, and nothing else imports numba: the event loop
(``events``), its data structures (``parts``), the cost model's passes (``costing``), the
lowering of a program's lanes and dependency graph (``graph``), the mapping of results
back to program ids (``scatter``) and how the loop tells another thread which blocks of
them are done (``progress``). Every function is compiled once (``config.JIT_OPTIONS``:
cached; a cache left by older code is compiled over, never an error: ``cache_guard``); the
event loop's readable twin is ``reference.py``."""
from . import cache_guard  # noqa: F401  (before anything loads from the cache)

"""Everything compiled with numba, and nothing else imports numba: the event loop
(``events``), its data structures (``parts``), the cost model's passes (``costing``), the
lowering of a program's lanes and dependency graph (``graph``) and the mapping of results
back to program ids (``scatter``). Every function is compiled once (``config.JIT_OPTIONS``:
cached); the event loop's readable twin is ``reference.py``."""

"""Everything compiled with numba, and nothing else imports numba: the event loop
(``events``), its data structures (``parts``) and the lowering of a program's dependency
graph (``graph``). Every function is compiled once (``config.JIT_OPTIONS``: cached) and has a
readable twin: the event loop's is ``reference.py``."""

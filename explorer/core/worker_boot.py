"""Imported first in the forkserver that starts the emulation workers (its preload).

multiprocessing makes each new worker re-run the parent's ``__main__`` module. In a
Streamlit server ``__main__`` is, while a session's script runs, the app script itself: every
worker would run app.py (and try to start a pool of its own). The workers need no main
module (they run functions of this project by name), so in the forkserver, whose forked
children inherit it, re-running it is switched off; the server process is not touched.
"""
import multiprocessing.spawn as _spawn

import explorer.core.worker_pool  # noqa: F401  (what every worker imports, loaded once)

_spawn._fixup_main_from_path = lambda path: None
_spawn._fixup_main_from_name = lambda name: None

"""numba's on-disk cache, kept usable across code changes.

A cached function's index lists every signature it was compiled for, pickled with its
argument types. When one of those types is later renamed or removed (a ``git pull``, a
branch switched), the index no longer unpickles and numba raises instead of compiling
afresh (numba issue #6018): the CLI and the app fail until the cache folder is deleted.
An index that does not unpickle is read here as an empty one, so the function is compiled
again and the index rewritten."""
from __future__ import annotations

import pickle

from numba.core.caching import IndexDataCacheFile

_load_index = IndexDataCacheFile._load_index


def _load_index_or_nothing(self):
    try:
        return _load_index(self)
    except (AttributeError, ImportError, EOFError, pickle.UnpicklingError):
        return {}


IndexDataCacheFile._load_index = _load_index_or_nothing

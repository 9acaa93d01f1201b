"""Numba flags, in one place: cached compilation, no fast-math (the jit engine must give the
same floating-point schedule as its pure-Python twin)."""
JIT_OPTIONS = dict(cache=True, nogil=True, fastmath=False, boundscheck=False)

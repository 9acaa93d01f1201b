"""Giving freed memory back to the system after a large build.

glibc's malloc serves arrays below its mmap threshold (which grows to 32 MiB as large arrays
are freed) from its heap, and keeps the pages of the ones freed. A program is built from many
chunks that are joined and dropped, which leaves about 40 bytes an instruction of such free
pages: resident memory nothing uses, counted against a shared server until the process
ends. ``malloc_trim`` hands them back. Elsewhere than glibc this does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _trim():
    """glibc's malloc_trim, or None."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def return_freed_memory() -> None:
    """Give the heap's free pages back to the system (glibc only)."""
    trim = _trim()
    if trim is not None:
        trim(0)

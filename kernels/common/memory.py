"""Giving freed memory back to the system: after a large build, and dead stretches of a
long run's arrays.

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
import mmap
import sys

import numpy as np

#: madvise's advice to drop a range's pages (Linux)
MADV_DONTNEED = 4


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


@functools.cache
def _madvise():
    """libc's madvise (Linux), or None."""
    name = ctypes.util.find_library("c")
    if not sys.platform.startswith("linux") or not name:
        return None
    try:
        fn = ctypes.CDLL(name, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int), ctypes.c_int
    return fn


def drop_pages(array: np.ndarray, lo: int, hi: int) -> None:
    """Hand back the pages wholly inside ``array[lo:hi]`` (1-D, contiguous) whose values are
    no longer needed: they read 0 if touched again. A long run's dead stretches so stop
    counting against the server while the rest is still in use. Linux only; elsewhere (or
    if refused) the pages simply stay."""
    advise = _madvise()
    if advise is None or hi <= lo:
        return
    page = mmap.PAGESIZE
    first = array.ctypes.data + lo * array.itemsize
    start = -(-first // page) * page
    stop = (array.ctypes.data + hi * array.itemsize) // page * page
    if stop > start:
        advise(start, stop - start, MADV_DONTNEED)

"""A second thread for the passes around the event loop that do not need each other.

The compiled passes release the GIL, so lowering and mapping a large program back run
about twice as fast on two cores (the event loop itself is one sequential pass). A
program below ``SIDE_THREAD_FROM`` instructions does everything on the calling thread:
starting a thread would cost more than it saves. One thread per call, never a shared pool,
so that one user's run never waits behind another's on a shared server."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

#: programs of at least this many instructions get a side thread
SIDE_THREAD_FROM = 100_000


class _Now:
    """The side "thread" of a small program: each call runs when it is submitted."""

    threaded = False  # whether calls run beside the caller (worth sharing a pass with)

    def __enter__(self) -> _Now:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def submit(self, fn, *args) -> Future:
        done = Future()
        try:
            done.set_result(fn(*args))
        except Exception as error:  # handed over as a thread's would be: at .result()
            done.set_exception(error)
        return done


class _Thread(_Now):
    """One worker thread; a call it cannot start a thread for (a sandbox's address-space
    limit, a process out of threads) runs at once instead: slower, never a failure."""

    threaded = True

    def __enter__(self) -> _Thread:
        self.pool = ThreadPoolExecutor(1)
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(wait=True)

    def submit(self, fn, *args) -> Future:
        try:
            return self.pool.submit(fn, *args)
        except RuntimeError:  # "can't start new thread"
            return super().submit(fn, *args)


def side_thread(instructions: int):
    """An executor (a context manager with ``submit``) for a program of this size."""
    return _Thread() if instructions >= SIDE_THREAD_FROM else _Now()

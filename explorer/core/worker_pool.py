"""A bounded pool of emulation worker processes, so that sessions do not queue on one
interpreter's lock.

A Streamlit server runs every session's script on a thread of one interpreter: thirty
students who click "run" together emulate one after the other. ``WorkerPool`` sends the
work to ``workers`` processes instead (``EXPLORER_WORKERS``, default one per core; 0 runs
it in the calling thread, as tests and the CLI may). Processes come from a "forkserver"
(never a fork of the multi-threaded server) that has imported the project once. Like every
spawned process, a worker re-imports the server's main module (under Streamlit, app.py
while a script runs) as ``__mp_main__``; app.py follows multiprocessing's idiom and does
nothing then. Each worker warms the numba cache with a tiny run before it takes work, so
the first request does not pay it.

The pool keeps its own queue and sends at most ``workers`` jobs to the processes, so it
knows which jobs wait and which run: ``ahead(future)`` says how many requests are ahead of
a waiting one. A worker that dies (killed, out of memory) breaks the process pool: the pool
is recreated, the jobs that were running on it fail with ``WorkerDied`` and the queued ones
go on. Exceptions come back whole: an ``InputError`` keeps its field, value and allowed
range (see ``_Raised``).
"""
from __future__ import annotations

import collections
import concurrent.futures as cf
import multiprocessing
import os
import pickle
import signal
import threading
import traceback
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from hardware_presets.errors import InputError, Phrase

from .sweep_exec import BLAS_THREADS

WORKERS_ENV = "EXPLORER_WORKERS"
MAX_WORKERS = 64
WARM_SCENARIO = {"kernel": "vector_add", "params": {"n": 1024}}  # loads every jit function


class WorkerDied(RuntimeError):
    """The worker process running a request ended before answering."""

    def __init__(self) -> None:
        super().__init__("the emulation worker running this request stopped (killed or out "
                         "of memory); a new worker has taken its place, run it again or "
                         "choose a smaller scenario")


def workers_setting(environ: dict[str, str] | None = None) -> int:
    """The pool size from ``EXPLORER_WORKERS``: unset means one worker per core."""
    text = (os.environ if environ is None else environ).get(WORKERS_ENV, "").strip()
    if not text:
        return os.cpu_count() or 1
    if not text.isdigit() or int(text) > MAX_WORKERS:
        raise InputError(WORKERS_ENV, text, Phrase("refusal.workers.env", n=MAX_WORKERS))
    return int(text)


# ---- what runs in a worker ---------------------------------------------------------------
class RemoteTraceback(Exception):
    """The worker's traceback text, attached as the ``__cause__`` of a re-raised error."""

    def __str__(self) -> str:
        return self.args[0]


class _Raised(Exception):
    """An exception on its way out of a worker, as (class, args, attributes).

    Plain pickling rebuilds an exception by calling its class with ``args``, which for
    ``InputError(field, value, allowed)`` (args: the message) fails in the server and breaks
    the whole process pool; this carrier rebuilds it without calling ``__init__``."""

    @classmethod
    def of(cls, exc: Exception) -> _Raised:
        payload = (type(exc), exc.args, dict(vars(exc)))
        try:
            pickle.loads(pickle.dumps(payload))
        except Exception:  # an attribute that cannot travel: keep the type name and text
            payload = (RuntimeError, (f"{type(exc).__name__}: {exc}",), {})
        return cls(*payload, "".join(traceback.format_exception(exc)))

    def rebuild(self) -> BaseException:
        kind, args, state, text = self.args
        exc = kind.__new__(kind)
        exc.args = args
        exc.__dict__.update(state)
        exc.__cause__ = RemoteTraceback(text)
        return exc


def _call(fn: Callable, args: tuple) -> Any:
    try:
        return fn(*args)
    except Exception as exc:
        raise _Raised.of(exc) from None


def _warm() -> None:
    """A new worker: leave Ctrl-C to the server, then load the jit functions once.

    Warming only saves time: should it fail, the worker still serves, and the first real
    request meets (and reports) the cause, instead of a broken pool refusing them all."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .scenario import Scenario
    from .simulate import simulate
    try:
        simulate(Scenario.from_dict(WARM_SCENARIO))
    except Exception:
        return


def _ready() -> None:
    """A no-op sent to each new worker so that all start (and warm) at once."""


# ---- the pool ----------------------------------------------------------------------------
@dataclass
class _Job:
    fn: Callable
    args: tuple
    future: cf.Future


class WorkerPool:
    """Runs ``fn(*args)`` on a bounded set of worker processes, in arrival order."""

    def __init__(self, workers: int) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or \
                not 0 <= workers <= MAX_WORKERS:
            raise InputError("workers", workers, Phrase("refusal.int_range", low=0,
                                                        high=MAX_WORKERS))
        self.workers = workers
        self._cond = threading.Condition()
        self._queue: collections.deque[_Job] = collections.deque()
        self._running = 0
        self._closed = False
        self._executor: cf.ProcessPoolExecutor | None = None
        if workers:
            self._executor = self._start()
            threading.Thread(target=self._dispatch, name="worker-pool", daemon=True).start()

    def _start(self) -> cf.ProcessPoolExecutor:
        """A process pool whose workers all start now and warm up before taking work.

        Workers inherit the environment: one BLAS thread each (the workers are the
        parallelism), the server's NUMBA_CACHE_DIR and EXPLORER_MAX_INSTRUCTIONS."""
        for name in BLAS_THREADS:
            os.environ.setdefault(name, "1")
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        executor = cf.ProcessPoolExecutor(self.workers, context, initializer=_warm)
        for _ in range(self.workers):
            executor.submit(_ready)
        return executor

    def submit(self, fn: Callable, *args: Any, future: cf.Future | None = None) -> cf.Future:
        """Queue ``fn(*args)``; its future (``future`` if given) gets the result or the
        exception ``fn`` raised. ``fn`` and ``args`` travel by pickle (module-level)."""
        future = cf.Future() if future is None else future
        if not self.workers:
            self._run_here(fn, args, future)
            return future
        with self._cond:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            self._queue.append(_Job(fn, args, future))
            self._cond.notify_all()
        return future

    @staticmethod
    def _run_here(fn: Callable, args: tuple, future: cf.Future) -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # whatever it is, the waiters on this future hear it
            future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    def ahead(self, future: cf.Future) -> int | None:
        """How many queued requests are ahead of this one; None once it runs (or is done)."""
        with self._cond:
            for index, job in enumerate(self._queue):
                if job.future is future:
                    return index
        return None

    def load(self) -> tuple[int, int]:
        """(queued, running) requests right now."""
        with self._cond:
            return len(self._queue), self._running

    def _dispatch(self) -> None:
        """The pool's thread: hand the oldest queued job to a free worker."""
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or
                                    (self._queue and self._running < self.workers))
                if self._closed:
                    return
                job = self._queue.popleft()
                if not job.future.set_running_or_notify_cancel():
                    continue
                self._running += 1
            self._send(job)

    def _send(self, job: _Job) -> None:
        executor = self._executor
        try:
            try:
                inner = executor.submit(_call, job.fn, job.args)
            except BrokenProcessPool:  # broken before this job ran: it goes to the new pool
                executor = self._replace(executor)
                inner = executor.submit(_call, job.fn, job.args)
        except Exception as exc:  # closed meanwhile, or broken again at once
            self._release()
            job.future.set_exception(exc)
            return
        inner.add_done_callback(lambda done: self._finish(job, done, executor))

    def _release(self) -> None:
        with self._cond:
            self._running -= 1
            self._cond.notify_all()

    def _finish(self, job: _Job, inner: cf.Future, executor: cf.ProcessPoolExecutor) -> None:
        self._release()
        try:
            job.future.set_result(inner.result())
        except BrokenProcessPool:
            self._replace(executor)
            job.future.set_exception(WorkerDied())
        except _Raised as raised:
            job.future.set_exception(raised.rebuild())
        except BaseException as exc:  # the pickling of fn, args or the result failed
            job.future.set_exception(exc)

    def _replace(self, broken: cf.ProcessPoolExecutor) -> cf.ProcessPoolExecutor:
        """A fresh process pool instead of ``broken`` (once, however many jobs saw it)."""
        with self._cond:
            if self._executor is broken and not self._closed:
                broken.shutdown(wait=False, cancel_futures=True)
                self._executor = self._start()
            return self._executor

    def close(self) -> None:
        """Stop the workers; queued requests are cancelled."""
        with self._cond:
            self._closed = True
            queued, self._queue = list(self._queue), collections.deque()
            self._cond.notify_all()
        for job in queued:
            job.future.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)


_default: WorkerPool | None = None
_default_lock = threading.Lock()


def default_pool() -> WorkerPool:
    """The process's pool, created on first use with ``EXPLORER_WORKERS`` workers."""
    global _default
    with _default_lock:
        if _default is None:
            _default = WorkerPool(workers_setting())
        return _default


def set_default_pool(pool: WorkerPool) -> WorkerPool | None:
    """Make ``pool`` the process's pool (tests, a CLI); returns the one it replaces."""
    global _default
    with _default_lock:
        previous, _default = _default, pool
        return previous

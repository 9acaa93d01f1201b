"""What a page shows while its emulation waits for a worker or runs.

In a full room the pool's workers are all busy and a request queues; without a word the
page would look frozen. ``wait`` shows "Waiting for a free emulation worker (requests
ahead of yours: k)" and then "Emulating…" in one placeholder, updated as the queue moves
and cleared when the result is there (or when the session moves on: the run goes on in
its worker and its result is shared, see ``explorer.core.shared_results``). A request
answered within ``QUIET_S`` (a shared result, a short run) shows nothing, so pages do not
flicker.
"""
from __future__ import annotations

import concurrent.futures as cf

import streamlit as st

from explorer.core.i18n import t
from explorer.core.worker_pool import WorkerPool

QUIET_S = 0.15  # a request finished within this shows no status at all
POLL_S = 0.25  # how often the status looks at the queue again


def status_text(future: cf.Future, pool: WorkerPool, lang: str) -> str:
    """Where a request stands: queued (with the number ahead) or running."""
    ahead = pool.ahead(future)
    if ahead is None:
        return t("ui.workers.emulating", lang)
    busy = pool.load()[1]
    return t("ui.workers.waiting", lang, ahead=ahead, busy=busy, workers=pool.workers)


def wait(future: cf.Future, pool: WorkerPool, lang: str) -> None:
    """Block until ``future`` is done, showing where it stands meanwhile."""
    if cf.wait([future], timeout=QUIET_S).done:
        return
    slot = st.empty()
    try:
        while not future.done():
            # drawn again on every look, even unchanged: each st call is where Streamlit
            # stops a script whose session reran or left, so the wait stays interruptible
            slot.info(status_text(future, pool, lang), icon=":material/hourglass_top:")
            cf.wait([future], timeout=POLL_S)
    finally:
        slot.empty()

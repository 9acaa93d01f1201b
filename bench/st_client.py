"""A minimal Streamlit client: one session, one page run, over the app's websocket.

The load benchmark (``bench.workshop``) needs thirty sessions on a 2-core machine; thirty
browsers would take the cores the server is measured on, so this speaks Streamlit's own
protocol instead: connect to ``/_stcore/stream``, send the ``rerun_script`` BackMsg a
browser sends when it opens ``/<page>?<query>`` (under ``st.navigation`` the page is named
by its url path), then read ForwardMsgs until the run's ``script_finished``. Nothing is
rendered, only inspected: an exception element on the page, a run that did not finish
successfully, a run without the app's end-of-run marker (``explorer.ui.run_marker``) or a
run past its deadline is an error.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from explorer.ui.run_marker import TEST_ID

#: seconds a page run may take before it counts as an error
DEADLINE_S = 120.0


@dataclass(frozen=True)
class PageRun:
    """One session's run of one page: what was asked, how long it took, what went wrong."""

    page: str
    query: str
    latency_s: float  # rerun request sent -> script_finished received (or the error)
    error: str | None = None  # None when the run ended well


def _rerun_request(page: str, query: str) -> bytes:
    """The BackMsg a browser sends on opening ``/<page>?<query>``."""
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = page
    return msg.SerializeToString()


class RunWatch:
    """What the ForwardMsgs of one run said: its end, its exceptions, its marker (fed one
    message at a time by ``read``; ``error`` once the run is over)."""

    def __init__(self) -> None:
        self.exceptions: list[str] = []
        self.marked = False
        self.finished: int | None = None  # the ScriptFinishedStatus, once received
        self.sent: float | None = None  # perf_counter when the rerun request went out

    def read(self, data: bytes) -> None:
        msg = ForwardMsg()
        msg.ParseFromString(data)
        kind = msg.WhichOneof("type")
        if kind == "script_finished":
            self.finished = msg.script_finished
        elif kind == "page_not_found":
            self.exceptions.append(f"page not found: {msg.page_not_found.page_name!r}")
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            which = element.WhichOneof("type")
            if which == "exception":
                exc = element.exception
                self.exceptions.append(f"{exc.type}: {exc.message}")
            elif which == "html" and f'data-testid="{TEST_ID}"' in element.html.body:
                self.marked = True

    def error(self) -> str | None:
        if self.exceptions:
            return "; ".join(self.exceptions)
        if self.finished != ForwardMsg.FINISHED_SUCCESSFULLY:
            name = ForwardMsg.ScriptFinishedStatus.Name(self.finished)
            return f"script finished with {name}"
        if not self.marked:
            return "the run ended without the app's end-of-run marker"
        return None


async def _run(url: str, page: str, query: str, watch: RunWatch) -> None:
    async with connect(url, subprotocols=["streamlit"], max_size=None, proxy=None,
                       ping_interval=None, compression=None) as ws:
        watch.sent = time.perf_counter()
        await ws.send(_rerun_request(page, query))
        while watch.finished is None:
            watch.read(await ws.recv())


async def open_page(port: int, page: str, query: str = "",
                    deadline_s: float = DEADLINE_S) -> PageRun:
    """Open ``page`` with ``query`` in a new session of the app on ``port``; its PageRun.

    Never raises for what the server does (refused connection, closed socket, deadline):
    that is the run's error."""
    watch = RunWatch()
    start = time.perf_counter()
    try:
        await asyncio.wait_for(_run(f"ws://127.0.0.1:{port}/_stcore/stream", page, query,
                                    watch), deadline_s)
        error = watch.error()
    except TimeoutError:
        error = f"no script end within {deadline_s:.0f} s"
    except (OSError, WebSocketException) as exc:  # refused, handshake, closed socket
        error = f"{type(exc).__name__}: {exc}"
    return PageRun(page, query, time.perf_counter() - (watch.sent or start), error)

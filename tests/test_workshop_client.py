"""The load benchmark's Streamlit client (``bench.st_client``): a session opened over the
websocket protocol against the run's app server sees its run end well, and what makes a
run an error (an exception on the page, an unsuccessful end, no end-of-run marker, a
deadline, no server) is told from the ForwardMsgs alone."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.st_client import RunWatch, open_page
from explorer.ui.run_marker import TEST_ID
from tests import app_server
from tests.waiting import DEADLINE_S


def _open(page: str, query: str = "", deadline_s: float = DEADLINE_S,
          port: int | None = None):
    """One session on its own thread: this worker's thread may already run an event loop
    (Playwright's, when a browser test ran here first), and asyncio.run needs none."""
    port = port or urlparse(app_server.shared_url()).port
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, open_page(port, page, query, deadline_s)).result()


def _watched(*messages: ForwardMsg) -> RunWatch:
    watch = RunWatch()
    for msg in messages:
        watch.read(msg.SerializeToString())
    return watch


def _marker() -> ForwardMsg:
    msg = ForwardMsg()
    msg.delta.new_element.html.body = f'<div data-testid="{TEST_ID}" data-run="1"></div>'
    return msg


def _finished(status: int = ForwardMsg.FINISHED_SUCCESSFULLY) -> ForwardMsg:
    msg = ForwardMsg()
    msg.script_finished = status
    return msg


def test_a_session_opens_vector_add_and_its_run_ends_well():
    run = _open("vector_add", "seed=11")
    assert (run.page, run.query, run.error) == ("vector_add", "seed=11", None)
    assert run.latency_s > 0


def test_an_unknown_page_is_an_error():
    assert "page not found" in _open("no_such_page").error


def test_a_run_past_its_deadline_is_an_error():
    assert "no script end within" in _open("decode", "seed=12", deadline_s=0.001).error


def test_no_server_is_an_error():
    assert "Connection" in _open("vector_add", port=app_server.free_port()).error


def test_a_marked_successful_run_has_no_error():
    assert _watched(_marker(), _finished()).error() is None


def test_an_exception_on_the_page_is_an_error():
    boom = ForwardMsg()
    boom.delta.new_element.exception.type = "ValueError"
    boom.delta.new_element.exception.message = "boom"
    assert _watched(boom, _marker(), _finished()).error() == "ValueError: boom"


def test_an_unsuccessful_end_is_an_error():
    watch = _watched(_marker(), _finished(ForwardMsg.FINISHED_WITH_COMPILE_ERROR))
    assert watch.error() == "script finished with FINISHED_WITH_COMPILE_ERROR"


def test_a_run_without_the_end_marker_is_an_error():
    assert "end-of-run marker" in _watched(_finished()).error()

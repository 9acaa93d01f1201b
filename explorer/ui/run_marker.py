"""A hidden element every script run leaves at its end, numbered per session.

A client driving the app (the browser tests, a load benchmark) cannot tell from the page
alone whether the rerun its last click caused has ended: right after the click the page
still shows the previous run's "not running" state, and how long the rerun takes to
begin depends on the machine. Each run therefore ends with
``<div data-testid="explorer-run-end" data-run="N" hidden>``, N counting the session's
ended runs: read N, act, then wait for a larger N with the app idle. It is written even
when the page raised (the exception box is then on the page to be seen), so a failing
page fails a test at once rather than at its deadline.
"""
from __future__ import annotations

import streamlit as st

TEST_ID = "explorer-run-end"
_COUNT = "_run_marker.count"


def mark_run_end() -> None:
    """Count this run as ended and leave its number on the page."""
    count = st.session_state.get(_COUNT, 0) + 1
    st.session_state[_COUNT] = count
    st.html(f'<div data-testid="{TEST_ID}" data-run="{count}" hidden></div>')

"""Helpers for real-browser tests: Debian's chromium driven by Playwright for Python.

The fixtures (``browser``, ``page``, ``app_url``) live in ``conftest.py`` beside this file;
the helpers here are plain functions a test imports::

    from tests.browser import wait_for_app, wait_for_chart, screenshot

Playwright never downloads a browser here (``playwright install`` fails without internet):
it launches ``/usr/bin/chromium``, which CI installs with apt.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
OUTPUT_DIR = REPO_ROOT / "test-output"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_MISSING = f"chromium not found at {CHROMIUM}; CI installs it with apt"
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
VIEWPORT = {"width": 1400, "height": 1000}
DEFAULT_TIMEOUT_MS = 30_000
HEALTH_TIMEOUT_S = 60.0

CHART = '[data-testid="stPlotlyChart"] .main-svg'
EXCEPTION = '[data-testid="stException"]'
# Streamlit marks its root with the script's run state; "notRunning" means the rerun ended.
_IDLE = (
    '[data-testid="stApp"]:is([data-test-script-state="notRunning"],'
    ' [data-test-script-state="compilationError"])'
)


def wait_for_app(page, timeout_ms: float | None = None) -> None:
    """Wait until the app's script has finished its current run (after load or a widget change).

    A short pause first lets a rerun triggered by the last interaction begin, so that the
    idle state seen is the one after it, not the one before.
    """
    page.wait_for_timeout(150)
    page.locator(_IDLE).wait_for(state="attached", timeout=timeout_ms)


def wait_for_chart(page, timeout_ms: float | None = None):
    """Wait until a Plotly chart has drawn its SVG; returns the locator of all charts' SVGs."""
    charts = page.locator(CHART)
    charts.first.wait_for(state="visible", timeout=timeout_ms)
    return charts


def exception_texts(page) -> list[str]:
    """The text of every exception box Streamlit shows (an empty list on a healthy page)."""
    return page.locator(EXCEPTION).all_inner_texts()


def screenshot(page, name: str, full_page: bool = True) -> Path:
    """Save a PNG of the page under test-output/ (gitignored) and return its path."""
    OUTPUT_DIR.mkdir(exist_ok=True)
    path = OUTPUT_DIR / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_streamlit(script: Path, log_path: Path) -> tuple[str, subprocess.Popen]:
    """Start ``streamlit run script`` on a free loopback port and wait for its health check.

    Runs from the repository root with this interpreter (the venv's), in its own process
    group so that ``stop_process_group`` ends Streamlit and anything it started. Output goes
    to ``log_path``; its tail is in the error when the server dies or never gets healthy.
    """
    port = free_port()
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(script),
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
    ]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("NUMBA_CACHE_DIR", str(REPO_ROOT / ".numba_cache"))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log_path)
    except BaseException:
        stop_process_group(proc)
        raise
    return url, proc


def _wait_healthy(url: str, proc: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{_tail(log_path)}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"streamlit not healthy after {HEALTH_TIMEOUT_S:.0f} s:\n{_tail(log_path)}")


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_process_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Terminate the process group of ``proc`` (SIGTERM, then SIGKILL after ``grace_s``)."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def wait_for_change(read, before: str, timeout_s: float = 30.0) -> str:
    """Poll ``read()`` (e.g. a locator's inner_text) until it differs from ``before``:
    a rerun has redrawn it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = read()
        if now != before:
            return now
        time.sleep(0.2)
    raise AssertionError(f"{before!r} stayed the same for {timeout_s:.0f} s")


def microseconds(text: str) -> float:
    """A metric such as "1,234.5 µs" as a number."""
    return float(text.split()[0].replace(",", ""))


def open_rendered(page, url: str, title: str) -> None:
    """Open ``url``, wait for the script and a chart, and check the page's title text."""
    page.goto(url)
    wait_for_app(page)
    wait_for_chart(page)
    assert page.get_by_text(title).count() >= 1


def assert_clean(page, name: str) -> None:
    """No exception on the page; keep a screenshot under test-output/ as ``name``."""
    assert exception_texts(page) == []
    screenshot(page, name)

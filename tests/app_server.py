"""The app served by Streamlit for the browser tests: one server per test run, shared by
every pytest-xdist worker.

Starting a server costs its imports, and every page's first visit costs its emulation
(then cached in the server); paying that once per worker would double it on a 2-core
machine. So the test run's controller (the process that starts the xdist workers, or the
only process without xdist) opens a run folder (`open_run`) whose path its workers
inherit through the environment; the first process that needs the app starts it under a
file lock and records its URL and process id there (`shared_url`); the others read the
record; the controller stops the server's whole process group at the end (`close_run`).
The server is started lazily, so a run that selects no browser test starts none.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from tests.waiting import DEADLINE_S, poll_until

REPO_ROOT = Path(__file__).resolve().parents[1]
OUTPUT_DIR = REPO_ROOT / "test-output"
RUN_DIR_ENV = "EXPLORER_TEST_RUN_DIR"
_RECORD, _LOCK = "app.json", "app.lock"


# ---- the run folder (controller) ---------------------------------------------------------
def open_run() -> None:
    """Make this run's folder and export its path to the workers about to start."""
    os.environ[RUN_DIR_ENV] = tempfile.mkdtemp(prefix="explorer-tests-")


def close_run() -> None:
    """Stop the shared server, if one was started, and remove the run's folder."""
    run_dir = os.environ.pop(RUN_DIR_ENV, None)
    if run_dir is None:
        return
    record = Path(run_dir) / _RECORD
    if record.exists():
        stop_process_group(json.loads(record.read_text())["pid"])
    shutil.rmtree(run_dir, ignore_errors=True)


def _run_dir() -> Path:
    run_dir = os.environ.get(RUN_DIR_ENV)
    if run_dir is None:
        raise RuntimeError(f"{RUN_DIR_ENV} is not set: tests/conftest.py opens the run folder")
    return Path(run_dir)


# ---- the shared server (any process) -----------------------------------------------------
def shared_url() -> str:
    """Base URL (no trailing slash) of this run's app server, started on first use."""
    run_dir = _run_dir()
    record = run_dir / _RECORD
    with open(run_dir / _LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            url, pid = start_streamlit(REPO_ROOT / "app.py", OUTPUT_DIR / "streamlit-app.log")
            record.write_text(json.dumps({"url": url, "pid": pid}))
        return json.loads(record.read_text())["url"]


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_streamlit(script: Path, log_path: Path) -> tuple[str, int]:
    """Start ``streamlit run script`` on a free loopback port and wait for its health
    check; returns (URL, process id).

    Runs from the repository root with this interpreter (the venv's) and this environment
    (numba's cache folder and bounds checks as the tests set them), in a process group of
    its own so that ``stop_process_group`` ends it and anything it started. Output goes to
    ``log_path``; its tail is in the error when the server dies or never gets healthy.
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
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        poll_until(lambda: _health(url, proc, log_path), bool, f"{url} to be healthy")
    except BaseException:
        stop_process_group(proc.pid)
        raise
    return url, proc.pid


def _health(url: str, proc: subprocess.Popen, log_path: Path) -> bool:
    """Whether the server answers its health check (an error if it has exited)."""
    if proc.poll() is not None:
        raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{_tail(log_path)}")
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# ---- stopping ----------------------------------------------------------------------------
def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies do not count: the
    process that stops the group need not be their parent)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def stop_process_group(pgid: int, grace_s: float = 10.0) -> None:
    """End process group ``pgid``: SIGTERM, then SIGKILL if it outlives ``grace_s``."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, DEADLINE_S)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        try:
            poll_until(lambda: _group_alive(pgid), lambda alive: not alive,
                       f"process group {pgid} to end", deadline_s=wait_s)
            return
        except AssertionError:
            if sig == signal.SIGKILL:
                raise

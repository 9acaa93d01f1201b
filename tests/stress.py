"""The browser tests under stress: ``make test-stress`` (``python -m tests.stress``).

Runs the real-browser tests several rounds in a row (3 by default) while hog processes,
one per core, keep every core busy, so the app, chromium and the tests get a fraction of
the machine, as on a loaded CI runner. A test that paces itself by the clock instead of
waiting for what the app signals fails here first. Prints each round's outcome and wall
time; exits 1 unless every round passed. The rounds run as CI runs them (``CI`` set, so
a missing browser fails rather than skips; the same pytest-xdist workers as make test).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
HOG = "while True: pass"


def start_hogs(count: int) -> list[subprocess.Popen]:
    """``count`` processes that spin a core each until killed."""
    return [subprocess.Popen([sys.executable, "-c", HOG], stdin=subprocess.DEVNULL)
            for _ in range(count)]


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


def run_round(jobs: str, extra: list[str]) -> tuple[int, float]:
    """One run of the browser tests: (pytest's exit code, wall seconds)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", jobs, "--dist", "loadfile",
           "--no-loadscope-reorder",
           "tests/browser", *extra]
    started = time.monotonic()
    code = subprocess.run(cmd, cwd=REPO_ROOT, env={**os.environ, "CI": "true"}).returncode
    return code, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.stress", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="rounds in a row (3)")
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 1,
                        help="busy processes (one per core)")
    parser.add_argument("--jobs", default="auto", help="pytest-xdist workers, as make test")
    args, extra = parser.parse_known_args(argv)
    if args.rounds < 1 or args.hogs < 0:
        parser.error(f"--rounds {args.rounds} must be at least 1, --hogs {args.hogs} "
                     "at least 0")
    hogs = start_hogs(args.hogs)
    outcomes = []
    try:
        for number in range(1, args.rounds + 1):
            print(f"== stress round {number}/{args.rounds}: browser tests with {args.hogs} "
                  f"busy processes on {os.cpu_count()} cores", flush=True)
            code, wall = run_round(args.jobs, extra)
            outcomes.append(code)
            print(f"== round {number}: {'passed' if code == 0 else f'FAILED (exit {code})'}"
                  f" in {wall:.0f} s", flush=True)
    finally:
        stop(hogs)
    passed = outcomes.count(0)
    print(f"== stress: {passed}/{args.rounds} rounds passed")
    return 0 if passed == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())

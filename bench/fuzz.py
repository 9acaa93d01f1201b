"""``python -m bench.fuzz [--cases N] [--seed S] [--workers W]``: hostile scenarios, CLI
calls, uploads and URL parameters (tests/fuzz), each in a memory- and time-limited worker.

Prints the counts crash / hang / oom / refused / ok and one repro per distinct failure;
exits 1 when any case crashed, hung or ran out of memory (issue 16's goal is 0 / 0 / 0).
``--replay I`` runs case I of the seed in this process, uncaught, for its full traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from tests.fuzz import cases, report, runner, targets


def _progress(total: int):
    """A line on stderr every 500 cases, so a long run shows it is alive."""
    done = [0]

    def tick(_index: int, _outcome: dict) -> None:
        done[0] += 1
        if done[0] % 500 == 0 or done[0] == total:
            print(f"  {done[0]}/{total}", file=sys.stderr, flush=True)
    return tick


def replay(index: int, seed: int) -> int:
    """Run one case in this process without the harness's catch-all (no limits)."""
    surface, payload = cases.case_at(index, seed)
    print(f"case {index}: {report.describe((surface, payload))}", file=sys.stderr)
    print(targets.SURFACES[surface](payload))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__)
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=runner.TIMEOUT_S, help="seconds per case")
    ap.add_argument("--memory-mib", type=int, default=runner.MEMORY_BYTES >> 20,
                    help="address space a case may add to a warm worker")
    ap.add_argument("--replay", type=int, metavar="I", help="run case I here, uncaught")
    args = ap.parse_args(argv)
    if args.replay is not None:
        return replay(args.replay, args.seed)
    start = time.monotonic()
    todo = cases.all_cases(args.cases, args.seed)
    drawn = time.monotonic()
    pool = runner.Pool(args.workers, args.timeout, args.memory_mib << 20)
    outcomes = pool.run(todo, _progress(len(todo)))
    counts, groups = report.summarize(todo, outcomes)
    print("\n".join(report.lines(counts, groups)))
    print("\nslowest cases:\n" + "\n".join(report.slowest(todo, outcomes)))
    print(f"\n{len(todo)} cases (seed {args.seed}, {args.workers} workers, "
          f"{args.timeout:g} s and {args.memory_mib} MiB per case): generated in "
          f"{drawn - start:.0f} s, run in {time.monotonic() - drawn:.0f} s")
    return 1 if any(counts.get(k) for k in report.FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Command line sweep: ``python -m explorer sweep SCENARIO.toml --param n=1024:65536:*2
[--param chip.ub_KiB=96,192] -o results.csv [--workers N] [--dask ADDRESS]``.

Every combination of the values is simulated from the scenario file (worker processes on
this machine, or a Dask scheduler) and written as CSV: one row per scenario with the swept
values, every metric, the numerical verdict and, for a refused point, its reason. A
progress line goes to stderr when stderr is a terminal; Ctrl-C stops the sweep and writes
what finished. Exit codes as ``run``: 0 ok (refused points are rows, not failures),
2 bad input (a bad --param, file or address).
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from hardware_presets.errors import InputError

from . import cli
from .core.metrics import METRICS
from .core.sweep import MAX_AXES, MAX_SCENARIOS, SYNTAX, Sweep, SweepResult, run_sweep
from .core.sweep_exec import DaskExecutor, LocalExecutor
from .plots.other_reports import sweep_report

BAR_WIDTH = 30


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``sweep`` on the CLI's subparsers (``explorer.cli.parser``)."""
    sweep = subparsers.add_parser(
        "sweep", help="simulate a grid of scenarios and write one CSV row per scenario",
        description=f"Sweep one or two parameters over a scenario (at most "
                    f"{MAX_SCENARIOS:,} scenarios).")
    sweep.add_argument("scenario", help="base scenario .toml or .json, or a gallery id")
    sweep.add_argument("--param", action="append", required=True, metavar="NAME=VALUES",
                       help=f"{SYNTAX}; NAME is a kernel parameter (params. optional) or "
                            f"chip.FIELD; STOP is included; at most {MAX_AXES} times")
    sweep.add_argument("-o", "--output", metavar="OUT.csv", default="-",
                       help="CSV file to write (default: standard output)")
    sweep.add_argument("--workers", type=int, default=2, help="local worker processes")
    sweep.add_argument("--report", metavar="OUT.html",
                       help="also write the sweep as one offline HTML report")
    sweep.add_argument("--metric", default="makespan_us",
                       help="the metric the report charts (default makespan_us)")
    sweep.add_argument("--dask", metavar="ADDRESS",
                       help="run on this Dask scheduler (e.g. tcp://127.0.0.1:8786) instead")
    sweep.set_defaults(func=cmd_sweep)
    return sweep


class ProgressLine:
    """``[#####.....] 12/40 scenarios`` rewritten in place on a terminal, silent elsewhere."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        filled = BAR_WIDTH * done // max(1, total)
        self.stream.write(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] "
                          f"{done}/{total} scenarios")
        self.stream.flush()

    def end(self) -> None:
        if self.enabled:
            self.stream.write("\n")


def _summary(result: SweepResult) -> str:
    text = (f"{len(result.table)} of {result.total} scenarios: {result.refused} refused, "
            f"{result.failed} failed the numerical check")
    return text + (" (stopped early)" if result.cancelled else "")


def _write(result: SweepResult, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(result.to_csv())
    else:
        cli.write_output(output, result.to_csv(), "--output")


@contextmanager
def _ctrl_c_stops(stopped: list[bool]):
    """While the sweep runs, a first Ctrl-C asks it to stop (what finished is written), a
    second one interrupts as usual. Only the main thread may handle signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if stopped:
            raise KeyboardInterrupt
        stopped.append(True)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _execute(sweep: Sweep, args: argparse.Namespace) -> SweepResult:
    """Run on the chosen executor with a progress line; Ctrl-C keeps what finished."""
    executor = DaskExecutor(args.dask) if args.dask else LocalExecutor(args.workers)
    stopped: list[bool] = []
    bar = ProgressLine()
    try:
        with _ctrl_c_stops(stopped):
            result = run_sweep(sweep, executor, bar, lambda: bool(stopped))
    finally:
        bar.end()
        executor.close()
    for line in executor.throughput.lines():  # how the points spread over the workers
        print(line, file=sys.stderr)
    return result


@cli.refusing
def cmd_sweep(args: argparse.Namespace) -> int:
    """The ``sweep`` subcommand; every output and the metric are checked before it runs."""
    if args.metric not in METRICS:
        raise InputError("--metric", args.metric, "one of " + ", ".join(METRICS))
    output = cli.output_file(None if args.output == "-" else args.output, "--output")
    report = cli.output_file(args.report, "--report")
    sweep = Sweep.parse(cli._read_scenario(args.scenario), args.param)  # noqa: SLF001
    result = _execute(sweep, args)
    _write(result, output)
    if report:
        cli.write_output(report, sweep_report(sweep.to_toml(), result, args.metric, kind=(
            "heatmap" if len(result.names) == 2 else "line")), "--report")
    print(_summary(result), file=sys.stderr)
    return cli.EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """``python -m explorer.cli_sweep SCENARIO --param ...``: the subcommand on its own."""
    return cli.main(["sweep", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())

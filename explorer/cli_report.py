"""``python -m explorer report SCENARIO -o out.html [--markdown DIR] [--lang en|zh]``.

Writes a scenario report (``explorer.plots.report``): one HTML file that works offline
and embeds its scenario, and/or a Markdown folder (report.md, PNG figures, metrics.csv,
the Chrome trace, the scenario file). SCENARIO is a .toml or .json scenario, or a report
.html made earlier (its embedded scenario is run again, e.g. in another language).
Exit codes as for ``run``: 0 ok, 2 bad input (or an output that cannot be written),
3 the numerical check failed (the report is written and says so), 4 deadlock.

The command is registered by :func:`add_parser`; ``explorer/cli.py`` calls it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hardware_presets.errors import InputError

from . import cli  # attributes read at call time: cli.py may import this module at its top
from .core import Scenario, simulate
from .core.emulator.engine import ENGINES
from .core.i18n import DEFAULT_LANGUAGE, LANGUAGES, t
from .plots.report import html_report, markdown_report, scenario_from_report

#: a report holds Plotly's JavaScript (about 5 MB): a larger file is not ours
MAX_REPORT_BYTES = 32 << 20


def read_input(path: str) -> Scenario:
    """The scenario of a .toml / .json file, or the one embedded in a report .html."""
    file = Path(path)
    if file.suffix.lower() not in (".html", ".htm"):
        return cli._read_scenario(path)  # noqa: SLF001  (one reader for every command)
    if not file.is_file() or file.stat().st_size > MAX_REPORT_BYTES:
        raise InputError("SCENARIO", path, f"an existing report of at most {MAX_REPORT_BYTES} "
                                           "bytes, or a .toml / .json scenario file")
    return scenario_from_report(file.read_text(encoding="utf-8", errors="replace"), file.name)


def _write(args: argparse.Namespace, result) -> None:
    """The HTML (when -o is given or nothing else is asked for) and the Markdown folder."""
    if args.output or not args.markdown:
        out = Path(args.output or "report.html")
        out.write_text(html_report(result, args.lang), encoding="utf-8")
        print(t("report.cli.wrote", args.lang, path=out))
    if args.markdown:
        print(t("report.cli.wrote", args.lang, path=markdown_report(result, args.markdown,
                                                                    args.lang)))


def cmd_report(args: argparse.Namespace) -> int:
    """Simulate the scenario and write its report(s); bad input exits with 2."""
    try:
        result = simulate(read_input(args.scenario), engine=args.engine)
        _write(args, result)
    except (InputError, OSError) as exc:  # OSError: an output that cannot be written
        print(f"error: {exc}", file=sys.stderr)
        return cli.EXIT_INPUT
    return cli.EXIT_OK if result.numerics.passed else cli.EXIT_NUMERICS


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``report`` on the ``add_subparsers()`` object of the explorer's CLI."""
    report = subparsers.add_parser("report", help=t("report.cli.help"),
                                   description=t("report.cli.help"))
    report.add_argument("scenario", help="scenario .toml / .json, or a report .html")
    report.add_argument("-o", "--output", metavar="OUT.html",
                        help="the HTML report (default report.html unless --markdown)")
    report.add_argument("--markdown", metavar="DIR",
                        help="also (or only) write report.md with PNG figures into DIR")
    report.add_argument("--lang", choices=LANGUAGES, default=DEFAULT_LANGUAGE)
    report.add_argument("--engine", choices=ENGINES, default="jit")
    report.set_defaults(func=cmd_report)
    return report

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
from pathlib import Path

from hardware_presets.errors import InputError

from . import cli  # attributes read at call time: cli.py may import this module at its top
from .core import simulate
from .core.emulator.engine import ENGINES
from .core.i18n import DEFAULT_LANGUAGE, LANGUAGES, t
from .plots.report import html_report, markdown_report


def _write(args: argparse.Namespace, result, html_out: Path | None) -> None:
    """The HTML (when -o is given or nothing else is asked for) and the Markdown folder."""
    if html_out:
        cli.write_output(html_out, html_report(result, args.lang), "--output")
        print(t("report.cli.wrote", args.lang, path=html_out))
    if args.markdown:
        try:
            folder = markdown_report(result, args.markdown, args.lang)
        except OSError as exc:  # a folder that cannot be made or written
            raise InputError("--markdown", args.markdown, "a folder that can be written",
                             exc.strerror or "") from None
        print(t("report.cli.wrote", args.lang, path=folder))


@cli.refusing
def cmd_report(args: argparse.Namespace) -> int:
    """Simulate the scenario and write its report(s); bad input exits with 2, a failed
    numerical check with 3 after writing the report."""
    html_out = cli.output_file(args.output or (None if args.markdown else "report.html"),
                               "--output")
    result = simulate(cli._read_scenario(args.scenario), engine=args.engine)  # noqa: SLF001
    _write(args, result, html_out)
    return cli.EXIT_OK if result.numerics.passed else cli.EXIT_NUMERICS


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``report`` on the ``add_subparsers()`` object of the explorer's CLI."""
    report = subparsers.add_parser("report", help=t("report.cli.help"),
                                   description=t("report.cli.help"))
    report.add_argument("scenario", help="scenario .toml / .json, a report .html, or a gallery id")
    report.add_argument("-o", "--output", metavar="OUT.html",
                        help="the HTML report (default report.html unless --markdown)")
    report.add_argument("--markdown", metavar="DIR",
                        help="also (or only) write report.md with PNG figures into DIR")
    report.add_argument("--lang", choices=LANGUAGES, default=DEFAULT_LANGUAGE)
    report.add_argument("--engine", choices=ENGINES, default="jit")
    report.set_defaults(func=cmd_report)
    return report

"""Command line ``python -m explorer compare A.toml B.toml [--json]``: simulate two scenario
files and print what differs between them, every metric of A and B (B − A, B / A) and the
sentences of ``explorer.core.compare`` (English). Exit codes as ``explorer.cli``: 0 ok,
2 bad input (a missing, oversized or invalid scenario file).

``explorer.cli`` registers the command with ``add_parser``; this module refers to it as a
module (``cli._read_scenario``, ``cli.EXIT_OK``) so either may be imported first.
"""
from __future__ import annotations

import argparse
import json

from . import cli
from .core import simulate
from .core.compare import Comparison, compare, say, sentences
from .core.i18n import t
from .core.metrics import METRIC_LABEL_IDS
from .plots.other_reports import compare_report

LANG = "en"


def _cell(value: object) -> str:
    """A table cell: numbers to four significant digits, text as it is, NaN as '-'."""
    if isinstance(value, float):
        return "-" if value != value else f"{value:,.4g}"
    return str(value)


def text_lines(c: Comparison) -> list[str]:
    """The diff, the metric table and the sentences as plain text lines."""
    lines = [t("cli.compare.diff", LANG)]
    lines += [f"  {field:<28} {cli._format(a, '')} → {cli._format(b, '')}"
              for field, a, b in c.diff] or [t("cli.compare.no_diff", LANG)]
    lines += ["", t("cli.compare.table", LANG),
              f"  {'':<28} {'A':>14} {'B':>14} {'B − A':>14} {'B / A':>8}  unit"]
    for row in c.table.itertuples(index=False):
        label = t(METRIC_LABEL_IDS[row.metric], LANG)
        lines.append(f"  {label:<28} {_cell(row.a):>14} {_cell(row.b):>14} "
                     f"{_cell(row.delta):>14} {_cell(row.ratio):>8}  {row.unit}")
    found = [f"  - {say(s, LANG).replace('**', '')}" for s in sentences(c)]
    return lines + ["", t("cli.compare.sentences", LANG)] + \
        (found or [t("cli.compare.no_sentences", LANG)])


def as_json(c: Comparison) -> str:
    """The comparison as JSON: both scenarios, the diff, the table and the sentences."""
    table = c.table.assign(definition=[t(d, LANG) for d in c.table["definition"]])
    table = table.astype(object).where(table.notna(), None)
    return json.dumps({
        "a": c.a.scenario.to_dict(), "b": c.b.scenario.to_dict(),
        "diff": [{"field": f, "a": a, "b": b} for f, a, b in c.diff],
        "metrics": table.to_dict(orient="records"),
        "sentences": [{"id": msg_id, "values": values, "text": say((msg_id, values), LANG)}
                      for msg_id, values in sentences(c)],
    }, indent=2, default=float)


def cmd_compare(args: argparse.Namespace) -> int:
    report = cli.output_file(args.report, "--report")
    a, b = cli._read_scenario(args.a), cli._read_scenario(args.b)
    comparison = compare(simulate(a), simulate(b))
    print(as_json(comparison) if args.json else "\n".join(text_lines(comparison)))
    if report:
        cli.write_output(report, compare_report(comparison, LANG), "--report")
    return cli.EXIT_OK


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``compare A B [--json]`` on the CLI's subparsers."""
    sub = subparsers.add_parser("compare", help=t("cli.compare.help", LANG))
    for side, help_id in (("a", "cli.compare.a_help"), ("b", "cli.compare.b_help")):
        sub.add_argument(side, metavar=side.upper(), help=t(help_id, LANG))
    sub.add_argument("--json", action="store_true", help=t("cli.compare.json_help", LANG))
    sub.add_argument("--report", metavar="OUT.html",
                     help="also write the comparison as one offline HTML report")
    sub.set_defaults(func=cmd_compare)
    return sub

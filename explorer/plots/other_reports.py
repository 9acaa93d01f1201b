"""Reports of a comparison and of a sweep, built from the same blocks as a run's report
(`report.html_document`): one offline HTML file each, the scenarios embedded.

* `compare_report(comparison, lang)`: the scenario diff, the sentences, the metric table
  with definitions, the timelines on a shared time axis, traffic and B / A; both
  scenario files embedded.
* `sweep_report(sweep_toml, result, metric, lang, kind, labels)`: what was swept, the
  chart, the table; the sweep's grid and the results CSV embedded.

Both open with the time model's line (`report.time_model_line`), as a run's report does.
"""
from __future__ import annotations

import pandas as pd

from explorer.core import compare as cmp
from explorer.core.i18n import t

from . import compare as compare_plots
from .report import html_document, time_model_line
from .sweep import sweep_figure
from .text import format_table


def _diff_table(c: cmp.Comparison, lang: str) -> pd.DataFrame:
    return pd.DataFrame([(f, str(a), str(b)) for f, a, b in c.diff],
                        columns=[t("report.other.field", lang), "A", "B"])


def _metric_table(c: cmp.Comparison, lang: str) -> pd.DataFrame:
    """The comparison's metrics with formatted numbers and translated definitions."""
    return format_table(c.table.assign(definition=[t(d, lang) for d in c.table["definition"]]))


def compare_report(c: cmp.Comparison, lang: str = "en") -> str:
    """A comparison as one HTML file that works offline."""
    tr = lambda msg_id, **v: t(f"report.other.{msg_id}", lang, **v)  # noqa: E731
    said = [cmp.say(s, lang) for s in cmp.sentences(c)] or [tr("no_difference")]
    sections = [
        (tr("diff"), _diff_table(c, lang) if c.diff else tr("no_diff")),
        (tr("findings"), "\n".join(f"- {line}" for line in said)),
        (tr("metrics"), _metric_table(c, lang)),
        (tr("timelines"), compare_plots.timelines_figure(c.a, c.b, lang)),
        (tr("traffic"), [compare_plots.traffic_figure(c.a, c.b, lang),
                         compare_plots.ratio_figure(c, lang)]),
    ]
    return html_document(tr("compare_title"), sections,
                         {"scenario_a.toml": c.a.scenario.to_toml(),
                          "scenario_b.toml": c.b.scenario.to_toml()}, lang=lang,
                         intro=time_model_line(lang))


def sweep_report(sweep_toml: str, result, metric: str, lang: str = "en", *,
                 kind: str = "line", labels: dict[str, str] | None = None) -> str:
    """A sweep's outcome as one HTML file that works offline."""
    tr = lambda msg_id, **v: t(f"report.other.{msg_id}", lang, **v)  # noqa: E731
    figure = sweep_figure(result.table, result.names, metric, lang, kind=kind, labels=labels)
    status = tr("sweep_status", done=len(result.table), total=result.total,
                refused=result.refused, failed=result.failed)
    sections = [(tr("swept"), status), (tr("chart"), figure),
                (tr("table"), format_table(result.table))]
    return html_document(tr("sweep_title"), sections,
                         {"sweep.toml": sweep_toml, "results.csv": result.to_csv()}, lang=lang,
                         intro=time_model_line(lang))

"""The Python API for notebooks (docs/notebook.md): ``from explorer import Scenario, simulate``.

``simulate`` runs ``explorer.core.simulate`` and returns a :class:`Run`: the core's
``Result`` (every field, so anything that takes a Result takes it) plus what a notebook
user asks of it: tidy tables (``to_frame``), the app's figures (``figure``), a summary
Jupyter draws under the cell (``_repr_html_``), the CLI's report (``save_report``) and
the Chrome trace (``save_trace``). Nothing here draws, formats or exports on its own: the
figures are ``explorer.plots.report_figures``'s, the values ``explorer.plots.values``'s,
the report ``explorer.plots.report``'s, the trace ``explorer.core.trace``'s. This module
sits beside the CLI, above ``explorer.plots``; ``explorer/__init__.py`` loads it on first
use, so that ``import explorer.core`` stays free of plotly.
"""
from __future__ import annotations

import dataclasses
import functools
import html
import json
import os
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

import hardware_presets as hp
import kernels as kernel_records
from explorer import cli
from explorer.core import Result, Scenario, extensions
from explorer.core import simulate as simulate_result
from explorer.core.i18n import LANGUAGES, render, t
from explorer.core.metrics import KEY_METRICS
from explorer.core.quantization import input_quantization, quantization_frame
from explorer.core.trace import chrome_trace
from explorer.plots import report, report_figures
from explorer.plots.values import format_metric
from hardware_presets.errors import InputError, Phrase

#: the tables every run has (a kernel's extensions, e.g. decode's whole-model step, add theirs)
TABLES = ("metrics", "timeline", "per_core", "traffic", "bandwidth", "numerics")
REPORT_SUFFIXES = (".html", ".htm", ".md")


def _one_of(field: str, value: object, allowed) -> InputError:
    return InputError(field, value, Phrase("refusal.one_of", options=", ".join(allowed)))


def _language(lang: str) -> str:
    if lang not in LANGUAGES:
        raise _one_of("lang", lang, LANGUAGES)
    return lang


def _output(path: str | os.PathLike) -> Path:
    """Where a file will go, checked before any work as the CLI checks its outputs."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputError("path", path, "a file in an existing folder")
    return cli.output_file(os.fspath(path), "path")


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Run(Result):
    """One simulated scenario: a ``Result`` with tables, figures, a summary and exports.

    ``lang`` ("en" or "zh") is the default language of its figures, tables and report."""

    lang: str = "en"

    @classmethod
    def of(cls, result: Result, lang: str = "en") -> Run:
        fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(Result)}
        return cls(**fields, lang=_language(lang))

    # -- tables --------------------------------------------------------------------------
    def tables(self) -> tuple[str, ...]:
        """The names ``to_frame`` takes for this run ("quantization" when its inputs are
        stored in a quantised format)."""
        lost = ("quantization",) if self._quantization is not None else ()
        return TABLES + lost + extensions.names(self.scenario.kernel)

    @functools.cached_property
    def _quantization(self) -> dict[str, dict] | None:
        """What the run's quantised inputs lost to their format (None: nothing stored so)."""
        return input_quantization(self.scenario)

    def to_frame(self, name: str = "metrics", lang: str | None = None) -> pd.DataFrame:
        """A tidy table of the run, as a copy (docs/notebook.md lists the columns)."""
        lang = _language(lang or self.lang)
        if name not in self.tables():
            raise _one_of("table", name, self.tables())
        if name == "metrics":
            return report.metrics_frame(self, lang)
        if name == "numerics":
            return pd.DataFrame([dataclasses.asdict(self.numerics)])
        if name in TABLES:
            return getattr(self, name).copy()
        if name == "quantization":
            return quantization_frame(self._quantization)
        summary = extensions.summaries({name: self._extensions[name]})[name]
        return pd.DataFrame(list(summary.items()), columns=["quantity", "value"])

    # -- figures -------------------------------------------------------------------------
    @functools.cached_property
    def _extensions(self) -> dict[str, object]:
        """The kernel's core extensions, computed once (decode's whole-model step)."""
        return extensions.of(self)

    def _figures(self, lang: str) -> dict[str, go.Figure]:
        """Every figure the report draws, by name, drawn once per language."""
        drawn = self.__dict__.setdefault("_drawn", {})
        if lang not in drawn:
            drawn[lang] = dict(report_figures.figures(self, lang, self._extensions))
        return drawn[lang]

    def figures(self) -> tuple[str, ...]:
        """The names ``figure`` takes for this run, in the report's reading order."""
        return tuple(self._figures(self.lang))

    def figure(self, name: str, lang: str | None = None) -> go.Figure:
        """The Plotly figure the app and the report show under ``name`` (a copy)."""
        drawn = self._figures(_language(lang or self.lang))
        if name not in drawn:
            raise _one_of("figure", name, drawn)
        return go.Figure(drawn[name])

    # -- summary -------------------------------------------------------------------------
    def _key_values(self, lang: str) -> list[tuple[str, str]]:
        return [(report_figures.metric_label(n, lang), format_metric(n, self.metrics[n], lang))
                for n in KEY_METRICS if n in self.metrics]

    def _verdict(self, lang: str) -> str:
        return t("notebook.passed" if self.numerics.passed else "notebook.failed", lang)

    def __repr__(self) -> str:
        values = ", ".join(f"{label} {value}" for label, value in self._key_values(self.lang))
        return (f"<Run {report.report_title(self, self.lang)}: {values}; "
                f"{self._verdict(self.lang)}>")

    def _repr_html_(self) -> str:
        """The summary Jupyter shows: title, key metrics, the numerical check, notes and
        what else the run offers. Every text is escaped (a scenario's name is typed)."""
        lang = self.lang
        labels, values = zip(*self._key_values(lang))
        table = pd.DataFrame([values], columns=list(labels))
        texts = [report_figures.numerics_text(self, lang),
                 *report_figures.notes_text(self.notes, lang),
                 t("notebook.hint", lang, tables=", ".join(self.tables()))]
        return ('<div class="ascend-explorer-run">'
                f"<p><strong>{html.escape(report.report_title(self, lang))}</strong></p>"
                + table.to_html(index=False, escape=True, border=0)
                + "".join(report.prose_html(text) for text in texts) + "</div>")

    # -- files ---------------------------------------------------------------------------
    def save_report(self, path: str | os.PathLike, lang: str | None = None) -> Path:
        """The CLI's report: one self-contained HTML file, or for a path ending in .md
        the Markdown report (its figures, metrics.csv, trace.json and scenario.toml go
        beside it, so give each Markdown report a folder of its own)."""
        lang, file = _language(lang or self.lang), _output(path)
        if file.suffix.lower() not in REPORT_SUFFIXES:
            raise InputError("path", os.fspath(path), Phrase("refusal.notebook.report_path"))
        if file.suffix.lower() != ".md":
            cli.write_output(file, report.html_report(self, lang), "path")
            return file
        try:
            written = report.markdown_report(self, file.parent, lang)
            return written if written == file else written.replace(file)
        except OSError as exc:
            raise InputError("path", os.fspath(path), "a folder that can be written",
                             exc.strerror or "") from None

    def save_trace(self, path: str | os.PathLike) -> Path:
        """The run's Chrome trace (open it in Perfetto, chrome://tracing or MindStudio
        Insight): one process per core, one thread per pipe, times in µs."""
        file = _output(path)
        cli.write_output(file, json.dumps(chrome_trace(self)), "path")
        return file


def simulate(scenario: Scenario | str | os.PathLike, *, lang: str = "en",
             engine: str = "jit") -> Run:
    """Run a scenario (a ``Scenario``, or the path of a scenario .toml / .json or of a
    report .html, read as the CLI reads it) in time and in value."""
    lang = _language(lang)
    if isinstance(scenario, (str, os.PathLike)):
        scenario = cli._read_scenario(os.fspath(scenario))  # noqa: SLF001
    elif not isinstance(scenario, Scenario):
        raise InputError("scenario", scenario, Phrase("refusal.notebook.scenario"))
    return Run.of(simulate_result(scenario, engine=engine), lang)


def presets() -> tuple[str, ...]:
    """The chip presets a scenario may name (``Scenario.make(preset=...)``)."""
    return tuple(hp.list_presets())


def kernels() -> tuple[str, ...]:
    """The kernels a scenario may name (``Scenario.make(kernel=...)``)."""
    return tuple(kernel_records.KERNELS)


def parameters(kernel: str, lang: str = "en") -> pd.DataFrame:
    """A kernel's parameters: name, type, default, what is allowed and the unit."""
    record, lang = kernel_records.get(kernel), _language(lang)
    return pd.DataFrame([(s.name, s.kind.__name__, s.default, render(s.allowed(), lang),
                          s.unit) for s in record.params],
                        columns=["name", "type", "default", "allowed", "unit"])

"""Scenario reports to share: one self-contained HTML file, or a Markdown folder with PNGs.

Reports of one run::

    html_report(result, lang="en", explanation="") -> str     # one file, works offline
    markdown_report(result, out_dir, lang="en") -> Path       # report.md + figures/*.png,
                                                              # metrics.csv, trace.json,
                                                              # scenario.toml
    markdown_zip(result, lang="en") -> bytes                  # that folder as a zip
    scenario_from_report(html_text) -> Scenario               # the scenario back

The generic building blocks, for reports of other shapes (compare, sweep)::

    html_document(title, sections, embedded=None, *, lang="en", intro="") -> str
    markdown_document(title, sections, out_dir, embedded=None, *, lang="en",
                      intro="") -> Path
    embedded_text(html_text, name) -> str | None
    time_model_line(lang="en") -> str       # the model version and its validation errors
    made_with(lang="en") -> str             # the footer: the explorer's version

``sections`` is a list of ``(heading, content)``; a content is a ``str`` (prose from the
catalogues in a small Markdown subset: paragraphs, "- " lists, ``**bold**``, ``*italics*``,
```code```), a plotly ``Figure`` (interactive in HTML, a PNG in Markdown), a pandas
``DataFrame`` (a table) or a list of these. Headings, titles and table cells are escaped
in both formats, so anything a user typed (a scenario name, a list of lengths) belongs
in a table, never in prose. ``embedded`` maps file names to text: HTML carries each file
in an inert ``<script type="application/toml" id="scenario.toml">`` (HTML-escaped, so
it can never close the tag) with a link that saves it; Markdown writes it next to
report.md. The HTML holds Plotly's JavaScript once, inline, and fetches nothing.
"""
from __future__ import annotations

import functools
import html
import io
import itertools
import json
import re
import tempfile
import urllib.parse
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import plotly.offline

from explorer.core import Scenario, advisor
from explorer.core.i18n import LANGUAGES, t
from explorer.core.metrics import METRIC_DEF_IDS, METRICS
from explorer.core.trace import chrome_trace
from explorer.core.validation import model_card
from explorer.plots.report_figures import result_sections
from explorer.version import __version__
from hardware_presets.errors import InputError, Phrase

SCENARIO_FILE = "scenario.toml"
FIGURE_CONFIG = {"displaylogo": False, "responsive": True}
PNG_WIDTH, PNG_HEIGHT = 1100, 460
_MIME = {".toml": "application/toml", ".json": "application/json", ".csv": "text/csv"}
_CSS = """body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC",sans-serif;
max-width:1200px;margin:2em auto;padding:0 1em;color:#222;line-height:1.5}
h1{font-size:1.6em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #ddd;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#f4f6f8}code{background:#f4f6f8;
padding:0 .2em}.figure{margin:.6em 0 1.2em}"""


# ---- prose: a small Markdown subset, escaped first ---------------------------------------
_CODE = re.compile(r"(`[^`\n]+`)")
_STRONG = re.compile(r"\*\*(.+?)\*\*")
_EM = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")


def _inline(text: str) -> str:
    out = []
    for i, piece in enumerate(_CODE.split(text)):
        if i % 2:
            out.append(f"<code>{html.escape(piece[1:-1])}</code>")
        else:
            out.append(_EM.sub(r"<em>\1</em>", _STRONG.sub(r"<strong>\1</strong>",
                                                           html.escape(piece))))
    return "".join(out)


def prose_html(text: str) -> str:
    """Paragraphs and "- " lists as HTML; every character of ``text`` is escaped."""
    blocks = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if lines and all(line.startswith(("- ", "* ")) for line in lines):
            items = "".join(f"<li>{_inline(line[2:])}</li>" for line in lines)
            blocks.append(f"<ul>{items}</ul>")
        elif lines:
            blocks.append(f"<p>{'<br>'.join(_inline(line) for line in lines)}</p>")
    return "\n".join(blocks)


def md_escape(text: object) -> str:
    """Text that Markdown shows literally (no HTML, links, emphasis or table breaks)."""
    flat = " ".join(str(text).split())
    return re.sub(r"([\\`*_\[\]|#!{}])", r"\\\1", html.escape(flat, quote=False))


def _items(content) -> list:
    return list(content) if isinstance(content, (list, tuple)) else [content]


# ---- HTML --------------------------------------------------------------------------------
@functools.cache
def _plotly_js() -> str:
    return plotly.offline.get_plotlyjs()


def _html_item(item, ids: Iterator[int]) -> str:
    if isinstance(item, go.Figure):
        return '<div class="figure">' + item.to_html(
            full_html=False, include_plotlyjs=False, config=FIGURE_CONFIG,
            div_id=f"figure-{next(ids)}", default_height=f"{PNG_HEIGHT}px") + "</div>"
    if isinstance(item, pd.DataFrame):
        return item.to_html(index=False, escape=True, border=0)
    if isinstance(item, str):
        return prose_html(item)
    raise TypeError(f"a report section holds text, figures and tables, not {type(item)}")


def _embed(name: str, text: str) -> str:
    mime = _MIME.get(Path(name).suffix, "text/plain")
    return f'<script type="{mime}" id="{html.escape(name)}">{html.escape(text)}</script>'


def _save_links(embedded: Mapping[str, str], lang: str) -> str:
    links = []
    for name, text in embedded.items():
        mime = _MIME.get(Path(name).suffix, "text/plain")
        data = urllib.parse.quote(text, safe="")
        links.append(f'<li><a download="{html.escape(name)}" href="data:{mime};charset=utf-8,'
                     f'{data}">{html.escape(t("report.embedded.save", lang, file=name))}</a></li>')
    return (f"<section><h2>{html.escape(t('report.h.files', lang))}</h2>"
            f"{prose_html(t('report.embedded.text', lang))}<ul>{''.join(links)}</ul></section>")


def html_document(title: str, sections: Sequence[tuple[str, object]],
                  embedded: Mapping[str, str] | None = None, *, lang: str = "en",
                  intro: str = "") -> str:
    """One self-contained HTML page (see the module docstring for ``sections``)."""
    ids, body = itertools.count(), [f"<h1>{html.escape(title)}</h1>", prose_html(intro)]
    for heading, content in sections:
        parts = [_html_item(item, ids) for item in _items(content)]
        body.append(f"<section><h2>{html.escape(heading)}</h2>\n" + "\n".join(parts)
                    + "</section>")
    files = dict(embedded or {})
    if files:
        body.append(_save_links(files, lang))
    body.append(f"<footer>{prose_html(made_with(lang))}</footer>")
    head = ['<meta charset="utf-8">', f"<title>{html.escape(title)}</title>",
            f"<style>{_CSS}</style>", *(_embed(n, text) for n, text in files.items())]
    if next(ids) > 0:  # Plotly's JavaScript once, inline: the file needs no network
        head.append(f'<script type="text/javascript">{_plotly_js()}</script>')
    return (f'<!DOCTYPE html>\n<html lang="{html.escape(lang)}">\n<head>\n' + "\n".join(head)
            + "\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")


def embedded_text(html_text: str, name: str) -> str | None:
    """The text of the file ``name`` embedded by :func:`html_document` (None if absent).
    The opening tag is matched, then the end found with ``str.find``: linear even in a
    crafted page of a million unclosed tags (a lazy ``(.*?)</script>`` was quadratic)."""
    opening = re.search(r'<script type="[^"<>]*" id="' + re.escape(html.escape(name)) + '">',
                        html_text)
    end = html_text.find("</script>", opening.end()) if opening else -1
    return html.unescape(html_text[opening.end():end]) if end >= 0 else None


# ---- Markdown ----------------------------------------------------------------------------
def md_table(df: pd.DataFrame) -> str:
    rows = [[md_escape(c) for c in df.columns]] + [[md_escape(v) for v in row]
                                                   for row in df.itertuples(index=False)]
    lines = ["| " + " | ".join(r) + " |" for r in rows]
    lines.insert(1, "|" + " --- |" * len(df.columns))
    return "\n".join(lines)


def write_pngs(figures: Sequence[tuple[Path, go.Figure]]) -> str:
    """Each figure as a PNG through kaleido (one browser for all); "" when every file was
    written, else why not (no Chrome/Chromium, a crashed browser)."""
    try:
        import kaleido

        kaleido.write_fig_from_object_sync(
            [{"fig": fig, "path": str(path), "opts": {
                "format": "png", "width": PNG_WIDTH, "height": fig.layout.height or PNG_HEIGHT}}
             for path, fig in figures], cancel_on_error=True)
    except Exception as exc:  # noqa: BLE001  (whatever kaleido raises, the report says it)
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    missing = [path.name for path, _ in figures if not path.is_file()]
    return f"missing {', '.join(missing)}" if missing else ""


def _md_item(item, pngs: dict[int, str], heading: str) -> str:
    if isinstance(item, go.Figure):
        return f"![{md_escape(heading)}]({pngs[id(item)]})" if id(item) in pngs else ""
    if isinstance(item, pd.DataFrame):
        return md_table(item)
    return str(item).strip()


def _draw_figures(sections, out: Path) -> tuple[dict[int, str], str]:
    """PNG paths by figure identity, and the reason when they could not be drawn."""
    figs = [item for _, content in sections for item in _items(content)
            if isinstance(item, go.Figure)]
    if not figs:
        return {}, ""
    (out / "figures").mkdir(exist_ok=True)
    paths = [(out / "figures" / f"figure_{i:02d}.png", fig) for i, fig in enumerate(figs)]
    reason = write_pngs(paths)
    if reason:
        return {}, reason
    return {id(fig): path.relative_to(out).as_posix() for path, fig in paths}, ""


def markdown_document(title: str, sections: Sequence[tuple[str, object]], out_dir,
                      embedded: Mapping[str, str] | None = None, *, lang: str = "en",
                      intro: str = "") -> Path:
    """report.md in ``out_dir`` with PNG figures beside it; without a browser for kaleido
    it says so and writes report.html (the interactive figures) instead."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pngs, reason = _draw_figures(sections, out)
    parts = [f"# {md_escape(title)}", intro.strip()]
    if reason:
        (out / "report.html").write_text(html_document(title, sections, embedded, lang=lang,
                                                       intro=intro), encoding="utf-8")
        parts.append("> " + t("report.md.no_images", lang, reason=md_escape(reason)))
    for heading, content in sections:
        parts.append(f"## {md_escape(heading)}")
        parts += [_md_item(item, pngs, heading) for item in _items(content)]
    parts.append(made_with(lang))
    for name, text in (embedded or {}).items():
        (out / name).write_text(text, encoding="utf-8")
    path = out / "report.md"
    path.write_text("\n\n".join(p for p in parts if p) + "\n", encoding="utf-8")
    return path


def made_with(lang: str = "en") -> str:
    """The footer of every report: the explorer's version that wrote it."""
    return t("report.made_with", lang, version=__version__)


# ---- reports of one run ------------------------------------------------------------------
def _mean_error(groups: Mapping[str, dict], group: str) -> str:
    return f"{100 * groups[group]['mean_error']:.1f}%" if group in groups else "—"


@functools.lru_cache(maxsize=len(LANGUAGES))
def time_model_line(lang: str = "en") -> str:
    """The "Time model" line every report carries: the model version and how far it is
    from the published cases (run once per process, see ``model_card``)."""
    card = model_card.validation_summary()
    return t("report.time_model", lang, version=card["version"], cases=card["cases"],
             gemm=_mean_error(card["groups"], "gemm"),
             datacopy=_mean_error(card["groups"], "datacopy"))


def report_title(result, lang: str = "en") -> str:
    s = result.scenario
    title = t("report.title", lang, kernel=s.kernel, chip=result.chip.display_name)
    return f"{s.name} · {title}" if s.name else title


def html_report(result, lang: str = "en", explanation: str = "") -> str:
    """The run as one HTML file that works offline, its scenario embedded for re-import."""
    sections = result_sections(result, lang, explanation)
    sections.append((t("advisor.title", lang), advisor.report_content(result, lang)))
    return html_document(report_title(result, lang), sections,
                         {SCENARIO_FILE: result.scenario.to_toml()}, lang=lang,
                         intro=t("report.intro", lang) + "\n\n" + time_model_line(lang))


def metrics_frame(result, lang: str = "en") -> pd.DataFrame:
    """Every metric: name, raw value, unit and definition (one row each)."""
    rows = [(name, result.metrics[name], unit, t(METRIC_DEF_IDS[name], lang))
            for name, unit in METRICS.items() if name in result.metrics]
    return pd.DataFrame(rows, columns=["metric", "value", "unit", "definition"])


def metrics_csv(result, lang: str = "en") -> str:
    """Every metric as CSV (for spreadsheets): see :func:`metrics_frame`."""
    return metrics_frame(result, lang).to_csv(index=False)


def markdown_report(result, out_dir, lang: str = "en", explanation: str = "") -> Path:
    """report.md with PNG figures, metrics.csv, the Chrome trace and the scenario file."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.csv").write_text(metrics_csv(result, lang), encoding="utf-8")
    (out / "trace.json").write_text(json.dumps(chrome_trace(result)), encoding="utf-8")
    sections = result_sections(result, lang, explanation)
    files = t("report.md.files", lang, scenario=SCENARIO_FILE)
    sections.append((t("report.h.files", lang), files))
    return markdown_document(report_title(result, lang), sections, out,
                             {SCENARIO_FILE: result.scenario.to_toml()}, lang=lang,
                             intro=t("report.intro_md", lang) + "\n\n" + time_model_line(lang))


def markdown_zip(result, lang: str = "en", explanation: str = "") -> bytes:
    """The Markdown report's folder as a zip archive (for a download button)."""
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(
            buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        markdown_report(result, tmp, lang, explanation)
        for path in sorted(Path(tmp).rglob("*")):
            if path.is_file():
                archive.write(path, Path("report") / path.relative_to(tmp))
    return buffer.getvalue()


def scenario_from_report(html_text: str, origin: str = "report.html") -> Scenario:
    """The scenario embedded in an HTML report (InputError when there is none)."""
    text = embedded_text(html_text, SCENARIO_FILE)
    if text is None:
        raise InputError(origin, Phrase("refusal.value.file"),
                         Phrase("refusal.report.scenario", file=SCENARIO_FILE))
    return Scenario.from_toml(text, f"{origin}: {SCENARIO_FILE}")

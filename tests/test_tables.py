"""Rules every table of the pages keeps (issue 19, item 10), in English and in Chinese, on
the multi-card, compare, GEMM, sweep, balance, sparse, precision, validation and claims
pages with their defaults or a small gallery pair:

* (a) names, not ids: no cell is a model's id, a choice of a kernel's or a page's
  parameter that the catalogues name (some id ends in ``.<parameter>.<choice>``), a
  scenario field (``params.x``) or a bare Python value (True, None, nan);
* (b) rounded numbers: a value (a cell that starts with a number) shows at most four
  significant digits once it has a fraction, as the browser draws it (a column's printf
  format applied);
* (c) the GEMM page's "Achieved TFLOPS" delta fits its tile;
* (d) a text longer than a line sits in a wide column whose rows wrap;

and the compare page writes B − A in each row's unit (a ratio's change in points).
"""
from __future__ import annotations

import functools
import json
import re
import unicodedata

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import kernels
from explorer.core.i18n import catalogue, t
from explorer.plots import values
from explorer.ui import (
    balance_controls,
    decode_controls,
    gemm_controls,
    multicard_view,
    playground,
    precision_controls,
    run_view,
    sparse_controls,
)
from kernels.models import list_models
from tests.apptest_helpers import open_page
from tests.test_sweep_page import click_run

LANGS = ("en", "zh")
PAGES = "explorer/ui/pages/{}.py"
#: what a table cell holds when a value reached it unformatted
RAW_VALUES = frozenset({"True", "False", "None", "nan", "NaN", "<NA>"})
FIELD = re.compile(r"(params|overrides)\.\w+")
#: the leading number of a cell: integer digits, fraction, exponent
LEADING = re.compile(r"\s*[+−-]?(\d[\d,]*)(?:\.(\d+))?(e[+-]?\d+)?")
#: a metric tile in the GEMM page's rows of four holds about 22 columns of text in a
#: 1,400 px window (measured in chromium: the old 24-column delta was cut off)
TILE_COLUMNS = 20
ROW_PX = 35  # Streamlit's one-line row


# ---- what the tables show ------------------------------------------------------------------
def _specs():
    pages = (balance_controls, decode_controls, gemm_controls, multicard_view, playground,
             precision_controls, sparse_controls)
    yield from (s for record in kernels.KERNELS.values() for s in record.params)
    yield from (s for page in pages for s in page.SPECS.values())


@functools.cache
def raw_ids(lang: str) -> frozenset[str]:
    """Ids that have a name users read in ``lang``: the models, and every choice that
    the catalogue names otherwise (some id ends in ``.<parameter>.<choice>``; "ring",
    named "ring" in English, is its own name there)."""
    names: dict[str, set[str]] = {}
    for msg_id, text in catalogue(lang).items():
        names.setdefault(".".join(msg_id.split(".")[-2:]), set()).add(text)
    choices = {c for s in _specs() for c in s.choices or () if isinstance(c, str)
               and c not in names.get(f"{s.name}.{c}", {c})}
    return frozenset(list_models()) | choices


def _formats(element) -> dict:
    """Each column's printf format (``column_config``), as the browser applies it."""
    config = json.loads(getattr(element.proto, "columns", "") or "{}")
    return {name: c.get("type_config", {}).get("format") for name, c in config.items()}


def shown(element) -> pd.DataFrame:
    """A table's cells as text, as the browser draws them."""
    df, formats = element.value, _formats(element)
    out = {}
    for column in df.columns:
        form = formats.get(str(column))
        out[column] = [form % v if form and isinstance(v, (int, float)) and not
                       isinstance(v, bool) else str(v) for v in df[column]]
    return pd.DataFrame(out)


def tables(at: AppTest) -> list:
    return [*at.dataframe, *at.table]


def significant(text: str) -> int:
    """Significant digits of a cell's leading number when it has a fraction or an
    exponent (a whole number shows the digits its size needs); 0 otherwise."""
    found = LEADING.match(text)
    if found is None or (found[2] is None and found[3] is None):
        return 0
    return len((found[1].replace(",", "") + (found[2] or "")).lstrip("0"))


def faults(at: AppTest, lang: str, keep: tuple[str, ...] = ()) -> list[str]:
    """(a) and (b) over every table on the page; ``keep``: id columns kept for reference."""
    found, ids = [], raw_ids(lang)
    for element in tables(at):
        cells = shown(element)
        for column in (c for c in cells.columns if c not in keep):
            for text in cells[column]:
                if text in ids or text in RAW_VALUES or FIELD.fullmatch(text):
                    found.append(f"(a) {column}: {text!r}")
                if significant(text) > 4:
                    found.append(f"(b) {column}: {text!r}")
    return found


def cut_texts(at: AppTest) -> list[str]:
    """(d): texts over a line in a column that is not wide or in rows that do not wrap."""
    found = []
    for element in at.dataframe:
        config = json.loads(element.proto.columns or "{}")
        for column in element.value.columns:
            texts = [v for v in element.value[column] if isinstance(v, str)]
            if max(map(len, texts), default=0) <= run_view.LINE_CHARS:
                continue
            wide = config.get(str(column), {}).get("width") == "large"
            if not wide or element.proto.row_height <= ROW_PX:
                found.append(str(column))
    return found


def assert_read_well(at: AppTest, lang: str, keep: tuple[str, ...] = ()) -> None:
    """Rules (a), (b) and (d) over every table of the page."""
    assert tables(at)
    assert faults(at, lang, keep) == []
    assert cut_texts(at) == []


def page(name: str, lang: str, **query) -> AppTest:
    return open_page(PAGES.format(name), {"lang": lang, **query})


def unit_of(text: str) -> str:
    """What follows a value's number: its unit ("µs", "%", "pp"), "" for a bare count."""
    found = LEADING.match(text)
    return text[found.end():].strip() if found else text


def same_unit(value: str, delta: str, lang: str) -> bool:
    """B − A is in A's unit: a time in µs or ms, a size in B to GiB, a ratio's change in
    percentage points."""
    families = ({"µs", "ms"}, {"B", "KiB", "MiB", "GiB", "TiB"})
    a, d = unit_of(value), unit_of(delta)
    if a == "%":
        return d == unit_of(t("tables.unit.pp", lang, value="1"))
    return a == d or any({a, d} <= family for family in families)


def display_columns(text: str) -> int:
    """Columns a text takes: a CJK character two, any other one."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


# ---- the rules, page by page ---------------------------------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_multicard_names_models_and_rounds_the_scaling_table(lang):
    at = page("multicard", lang)
    assert len(tables(at)) == 2
    assert_read_well(at, lang)
    options = [o for box in (*at.selectbox, *at.radio) for o in box.options]
    assert not raw_ids(lang) & set(options)  # the widgets name models and kernels too


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("pair", ["lpt", "split_k"])
def test_compare_names_fields_and_writes_b_minus_a_in_units(pair, lang):
    at = page("compare", lang, a=f"{pair}_a", b=f"{pair}_b")
    assert len(at.dataframe) == 2
    assert_read_well(at, lang)
    metrics = shown(at.dataframe[1])
    a, delta = metrics.columns[1], metrics.columns[3]
    wrong = [(x, d) for x, d in zip(metrics[a], metrics[delta])
             if d != values.DASH and not same_unit(x, d, lang)]
    assert wrong == []


@pytest.mark.parametrize("lang", LANGS)
def test_gemm_delta_fits_its_tile_and_tables_read_well(lang):
    at = page("gemm", lang, M="512", N="512", K="512")
    label = t("metric.achieved_tflops.label", lang)
    delta = next(m.proto.delta for m in at.metric if m.label == label)
    assert delta and display_columns(delta) <= TILE_COLUMNS, delta
    assert_read_well(at, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_sweep_results_name_knobs_and_round_metrics(lang):
    at = click_run(page("sweep", lang, xv="65536:262144:*4"))
    assert len(at.dataframe) == 1
    assert_read_well(at, lang)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", ["balance", "sparse", "claims"])
def test_study_tables_read_well(name, lang):
    at = page(name, lang)
    assert_read_well(at, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_precision_table_reads_well(lang):
    at = page("precision", lang, M="256", N="256", K="256")
    assert_read_well(at, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_validation_table_keeps_its_case_ids_and_reads_well(lang):
    at = page("validation", lang)
    assert_read_well(at, lang, keep=(t("validation.col.case", lang),))

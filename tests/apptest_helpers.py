"""Shared AppTest plumbing for the page tests: open a page from the app's entry point,
find a widget by its session key, set values, press a kernel page's Apply button, read
texts."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from explorer.ui.apply import BUTTON as APPLY_BUTTON
from tests.waiting import DEADLINE_S

APP = Path(__file__).resolve().parents[1] / "app.py"
WIDGET_KINDS = ("number_input", "selectbox", "slider", "radio", "toggle", "select_slider")


def run(at: AppTest) -> AppTest:
    """Run the script and fail with the app's own exception text if it raised."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def start_app(query: dict | None = None) -> AppTest:
    """The app from its entry point with ``query`` in its URL, not yet run. A run may
    take up to the suite's deadline (AppTest waits for the script to end)."""
    at = AppTest.from_file(str(APP), default_timeout=DEADLINE_S)
    at.query_params.update(query or {})
    return at


def open_page(page: str, query: dict | None = None) -> AppTest:
    """The app started from app.py with ``query`` in its URL, switched to ``page``."""
    at = start_app(query)
    run(at)
    return run(at.switch_page(page))


def widget(at: AppTest, key: str):
    """The widget whose session key is ``key`` (whatever its kind)."""
    for kind in WIDGET_KINDS:
        found = [w for w in at.get(kind) if getattr(w, "key", None) == key]
        if found:
            return found[0]
    raise KeyError(key)


def set_widgets(at: AppTest, prefix: str, **values) -> AppTest:
    """Set widgets ``prefix + name`` to the given values, then rerun once."""
    for name, value in values.items():
        widget(at, prefix + name).set_value(value)
    return run(at)


def apply(at: AppTest) -> AppTest:
    """Press the kernel page's Apply button (``explorer.ui.apply``): the page then runs the
    values its widgets hold. Changing a widget alone leaves the results as they were.

    The button is enabled only while the widgets differ from the applied values: a value
    set with ``set_value`` reaches the app on a run first (in a browser the change reruns
    the controls, which enables the button), then the button is pressed; when the widgets
    hold the applied values already there is nothing to press."""
    if at.button(key=APPLY_BUTTON).disabled:
        run(at)
        if at.button(key=APPLY_BUTTON).disabled:
            return at
    at.button(key=APPLY_BUTTON).click()
    return run(at)


def set_and_apply(at: AppTest, prefix: str, **values) -> AppTest:
    """Set widgets ``prefix + name`` to the given values, then press Apply."""
    for name, value in values.items():
        widget(at, prefix + name).set_value(value)
    return apply(at)


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements).replace("\\", "")


# ---- every text a page shows (tests/test_zh_pages.py) ------------------------------------
#: string fields of an element's proto that a reader sees (labels, bodies, help, options)
_SHOWN_FIELDS = ("body", "label", "help", "options", "placeholder", "delta", "caption")


def _cells(frame) -> list[str]:
    """A table's header and cells as texts (numbers too: "1.2 GiB" is a cell)."""
    index = list(map(str, frame.columns))
    return index + [str(v) for row in frame.itertuples(index=False) for v in row
                    if v is not None and str(v) not in ("nan", "None", "<NA>")]


def shown_text(at: AppTest) -> list[str]:
    """Every text the page shows: bodies of markdown, captions and alerts, widgets' labels,
    help and options, metrics' labels, values and deltas, table headers and cells,
    expanders' and tabs' labels (not the run marker's HTML nor the charts)."""
    found: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        fields = getattr(getattr(proto, "DESCRIPTOR", None), "fields_by_name", {})
        kind = getattr(node, "type", "")
        if kind in ("dataframe", "table"):
            found.extend(_cells(node.value))
        elif kind != "html":
            for name in _SHOWN_FIELDS:
                if name in fields:
                    value = getattr(proto, name)
                    if isinstance(value, str):
                        found.append(value)
                    elif not hasattr(value, "DESCRIPTOR"):  # a repeated field of texts
                        found.extend(v for v in value if isinstance(v, str))
            for block in ("expandable", "tab"):
                if block in fields and proto.HasField(block):
                    found.append(getattr(proto, block).label)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)  # noqa: SLF001  (AppTest has no public walk of every element)
    return [text.replace("\\", "") for text in found if text]

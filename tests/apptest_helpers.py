"""Shared AppTest plumbing for the page tests: open a page from the app's entry point,
find a widget by its session key, set values, read texts."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

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


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements).replace("\\", "")

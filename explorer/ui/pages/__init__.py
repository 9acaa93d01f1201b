"""The app's pages, one module each; explorer/ui/app_main.py lists them in order."""
from pathlib import Path


def page_file(name: str) -> Path:
    """The absolute path of page ``name`` (for ``st.Page`` and ``st.page_link``): Streamlit
    resolves a relative path against the main script, which is app.py in the checkout and
    explorer/ui/app_main.py in an installed package."""
    return Path(__file__).resolve().with_name(f"{name}.py")

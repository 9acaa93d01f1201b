"""One file uploader for every page, in the session's language.

Streamlit draws its uploader's own words in English: the "Upload" button, "Drag and drop
a file here" while a file is dragged over it, and "200MB per file • TOML, JSON" under it.
Streamlit takes no text for them, so ``uploader`` scopes a few CSS rules to its own box
(``st-key-upload-box-<key>``, the class Streamlit gives a keyed container):

* the built-in instructions (``stFileUploaderDropzoneInstructions``) are hidden, and a
  caption under the box says in the session's language which files it takes and the
  page's own size cap, the one the page enforces (``max_bytes``; the app's
  ``server.maxUploadSize`` is Streamlit's default, 200 MB, above every cap);
* the button's label and the drag text are replaced by translated ones (CSS ``content``);
  the markup they hang on is Streamlit 1.67's (requirements.txt pins it; the browser test
  ``tests/browser/test_uploads.py`` checks the words a reader sees).

Streamlit's own refusal of a file above ``max_upload_size`` (a tooltip on the file) stays
English: Streamlit offers no hook for it, and the page's cap is also the one it names.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence

import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

from explorer.ui import state, widgets

#: the keyed container around an uploader: its CSS class is ``st-key-`` + this + the key
BOX_PREFIX = "upload-box-"
_MIB = 1 << 20
_DROPZONE = '[data-testid="stFileUploaderDropzone"]'
#: Streamlit 1.67's markup: the button's label, the drag text, the instructions
_BUTTON_TEXT = (f'{_DROPZONE} [data-testid="stBaseButton-secondary"] '
                '[data-testid="stMarkdownContainer"]')
_DRAG_TEXT = f"{_DROPZONE} > div:not([data-testid]) > span"
_INSTRUCTIONS = '[data-testid="stFileUploaderDropzoneInstructions"]'


def box_key(key: str) -> str:
    """The key of the container around the uploader whose session key is ``key``."""
    return BOX_PREFIX + re.sub(r"[^A-Za-z0-9_-]", "-", key)


def size_text(nbytes: int) -> str:
    """A byte cap as the caption writes it: whole MiB ("64 MiB"), else KiB or bytes."""
    if nbytes % _MIB == 0:
        return f"{nbytes // _MIB:,} MiB"
    return f"{nbytes / 1024:,.0f} KiB" if nbytes >= 1024 else f"{nbytes:,} B"


def types_text(types: Sequence[str]) -> str:
    """The accepted extensions as the caption lists them: ".toml, .json"."""
    return ", ".join(f".{t.lstrip('.')}" for t in types)


def style(key: str) -> str:
    """The CSS of one uploader's box: Streamlit's instructions hidden, its button label
    and drag text in the session's language."""
    scope = "." + "st-key-" + box_key(key)
    button = json.dumps(state.tr("uploads.button"), ensure_ascii=False)
    drag = json.dumps(state.tr("uploads.drag"), ensure_ascii=False)
    return (f"<style>{scope} {_INSTRUCTIONS} {{display: none;}}"
            f"{scope} {_BUTTON_TEXT} > p {{display: none;}}"
            f"{scope} {_BUTTON_TEXT}::after {{content: {button};}}"
            f"{scope} {_DRAG_TEXT} {{font-size: 0;}}"
            f"{scope} {_DRAG_TEXT}::after {{content: {drag}; font-size: 0.875rem;}}</style>")


def uploader(where, label_id: str, types: Sequence[str], key: str, *, max_bytes: int,
             help_id: str | None = None, help_values: Mapping[str, object] | None = None,
             limit: str | None = None, on_change: Callable | None = None,
             args: tuple = ()) -> UploadedFile | None:
    """A file uploader labelled ``label_id`` that takes ``types`` (extensions) up to
    ``max_bytes`` (the page's own cap, which it also checks: Streamlit refuses a larger
    file before it is sent), with its words in the session's language; ``limit`` words
    the cap when one number does not say it (a report and a scenario have different
    caps). Returns the uploaded file, as ``st.file_uploader`` does."""
    st.html(style(key))
    box = where.container(key=box_key(key))
    upload = box.file_uploader(
        state.tr(label_id), type=list(types), key=key,
        help=state.tr(help_id, **(help_values or {})) if help_id else None,
        max_upload_size=widgets.upload_limit_mb(max_bytes), on_change=on_change, args=args)
    box.caption(state.tr("uploads.instruction", types=types_text(types),
                         limit=limit or size_text(max_bytes)))
    return upload

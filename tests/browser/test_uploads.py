"""The file uploaders in Chinese, in a real browser (explorer/ui/uploads.py): Streamlit's
own words in the box are replaced (its "Upload" button label, its "Drag and drop a file
here" while a file is dragged over the box) or hidden (its "1MB per file • TOML, JSON"),
the caption under the box names the accepted types and the cap the page enforces, and a
file dropped in the box is still read by the page.

What a reader sees is read from the page as chromium draws it: an element's visibility and
its ``::after`` content (the CSS that replaces a label), not the page's source.
"""
from __future__ import annotations

from explorer.core.i18n import t
from explorer.ui import compare_controls as cc
from explorer.ui import uploads
from tests.browser import assert_clean, key_class, open_app, rerun, wait_for_text_drawn

BOX = f".st-key-{uploads.box_key('cmp_upload_a')}"
DROPZONE = f'{BOX} [data-testid="stFileUploaderDropzone"]'
_AFTER = "(e) => getComputedStyle(e, '::after').content"
_SHOWN = "(e) => getComputedStyle(e).display !== 'none' && e.offsetParent !== null"
SCENARIO = b'kernel = "vector_add"\npreset = "910B2"\nname = "mine"\n[params]\ntile = 1024\n'


def _open_upload_side(page, app_url: str) -> None:
    open_app(page, f"{app_url}/compare?lang=zh")
    # side A's source radio, by its widget's key (state.bound keys it "w.<name>"), not the
    # first radio found: under load that once picked side B's
    with rerun(page):
        page.locator(f".{key_class('w.' + cc.key('a_source'))}").get_by_text(
            t("ui.compare.source_choice.upload", "zh"), exact=True).click()
    page.locator(DROPZONE).wait_for()


def test_the_uploader_speaks_chinese(app_url, page):
    _open_upload_side(page, app_url)
    button = page.locator(f'{DROPZONE} [data-testid="stBaseButton-secondary"] '
                          '[data-testid="stMarkdownContainer"]')
    assert button.evaluate(_AFTER) == f'"{t("uploads.button", "zh")}"'
    assert not button.locator("p").evaluate(_SHOWN)  # Streamlit's "Upload"
    instructions = page.locator(f'{BOX} [data-testid="stFileUploaderDropzoneInstructions"]')
    assert not instructions.evaluate(_SHOWN)  # "1MB per file • TOML, JSON"
    caption = t("uploads.instruction", "zh", types=uploads.types_text(cc.UPLOAD_TYPES),
                limit=uploads.size_text(cc.MAX_UPLOAD_BYTES))
    assert page.locator(BOX).get_by_text(caption).is_visible()
    assert "1 MiB" in caption  # the cap compare_controls.parse_upload enforces

    # a file dragged over the box: Streamlit's drag text is replaced
    drag = page.evaluate_handle("""() => { const d = new DataTransfer();
        d.items.add(new File(['x'], 'a.toml')); return d; }""")
    page.locator(DROPZONE).dispatch_event("dragenter", {"dataTransfer": drag})
    text = page.locator(f"{DROPZONE} > div:not([data-testid]) > span")
    text.wait_for()
    assert text.evaluate(_AFTER) == f'"{t("uploads.drag", "zh")}"'
    page.locator(DROPZONE).dispatch_event("dragleave", {"dataTransfer": drag})
    assert_clean(page, "uploads_zh")


def test_a_file_dropped_in_the_box_is_read(app_url, page):
    _open_upload_side(page, app_url)
    with rerun(page):
        page.locator(f'{BOX} [data-testid="stFileUploaderDropzoneInput"]').set_input_files(
            {"name": "mine.toml", "mimeType": "application/toml", "buffer": SCENARIO})
    wait_for_text_drawn(page, "mine")
    assert_clean(page, "uploads_read")

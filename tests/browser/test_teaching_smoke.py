"""Real-browser passes through the teaching pages: the claims recompute for another
preset, the multi-card page draws its scaling, the troubleshooting lab shows its
problems; nothing raises; screenshots land in test-output/."""
from __future__ import annotations

from explorer.core.i18n import t
from explorer.ui.lab_view import PROBLEM_IDS
from tests.browser import assert_clean, english_leftovers, main_text, open_app, open_rendered


def _claims_text(page, url: str) -> str:
    open_app(page, url)
    assert page.get_by_text("The blog's claims, recomputed").count() >= 1
    return page.locator('[data-testid="stMain"]').inner_text()


def test_claims_recompute_for_another_preset(app_url, page):
    b2 = _claims_text(page, f"{app_url}/claims?preset=910B2")
    assert_clean(page, "claims_en")
    b4 = _claims_text(page, f"{app_url}/claims?preset=910B4")
    assert b2 != b4 and "910B4" in b4


def test_multicard_and_lab_render(app_url, page):
    open_rendered(page, f"{app_url}/multicard?batch=4&cards=4", "Multi-card decode")
    assert_clean(page, "multicard_en")
    open_app(page, f"{app_url}/lab?lang=zh")
    text = main_text(page)
    for msg_id in ("lab.title", *(ids[0] for ids in PROBLEM_IDS.values())):
        assert t(msg_id, "zh") in text, msg_id  # the title and every problem's heading
    assert english_leftovers(text, ("lab.",)) == []
    assert_clean(page, "lab_zh")

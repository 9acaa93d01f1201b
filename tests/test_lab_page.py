"""The "Troubleshooting lab" page under ``streamlit.testing.v1.AppTest``: every problem
renders (in English and Chinese) with its refusal, deadlock or figures, its verdict and,
where a page takes the scenario, a link to it; no exception."""
from __future__ import annotations

import pytest

from explorer.core import troubleshoot as ts
from explorer.core.i18n import t
from tests.apptest_helpers import open_page, texts

PAGE = "explorer/ui/pages/lab.py"


@pytest.fixture(scope="module", params=["en", "zh"])
def lab(request):
    return request.param, open_page(PAGE, {"lang": request.param})


def test_every_problem_has_an_expander(lab):
    lang, at = lab
    assert at.title[0].value == t("lab.title", lang)
    labels = [e.label for e in at.expander]
    for problem in ts.PROBLEMS:
        assert t(f"lab.problem.{problem}.title", lang) in labels


def test_refusals_deadlock_and_verdicts_are_shown(lab):
    lang, at = lab
    errors = texts(at.error)
    assert "params.tile" in errors and "params.grid_z" in errors
    assert "deadlock" in errors.lower() or "死锁" in errors
    assert texts(at.warning).count(t("lab.detected", lang, criterion="")[:4]) >= len(ts.PROBLEMS)
    assert texts(at.success).count(t("lab.fixed", lang)) == len(ts.PROBLEMS)


def test_links_open_the_kernel_pages(lab):
    lang, at = lab
    prose = "\n".join(str(m.value) for m in at.markdown)
    assert f"./gemm?lang={lang}&preset=910B4" in prose
    assert "./vector_add?" in prose and "tile=65536" in prose
    assert "grid_z=32" in prose



def test_a_trigger_link_opens_its_page():
    """The vector add page refuses an oversized tile as the lab does, naming the field, and
    runs the nearest tile it accepts: the largest that fits, which is the lab's fix (found
    by asking the kernel). It used to change the tile without a word."""
    found = ts.run_problem("ub_overflow")
    query = {"lang": "en", "preset": found.trigger.preset,
             **{k: str(v) for k, v in found.trigger.params.items()}}
    at = open_page("explorer/ui/pages/vector_add.py", query)
    assert "tile (elements) (params.tile) = 65536 is not allowed" in texts(at.error)
    assert found.trigger.refusal.allowed in texts(at.error)
    assert at.session_state["va.tile"] == found.fix.params["tile"]

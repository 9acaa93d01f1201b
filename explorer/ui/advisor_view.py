"""The performance advisor of a kernel page: its top finding in one box, right under the
answer (the bound the run is under and why, and the first what-if to try), and, folded
below it, the blog's tuning checklist with editable thresholds, the bound as a tile, and
each what-if with a "Try it" button that emulates the changed scenario (cached) and
shows old against new of the metric it promises.

The bound is the run's metric, shown as a tile in the words of the page's own tile, with
the sentence that explains it as plain prose: bold markup around CJK punctuation
("**访存受限：**本次") is not emphasis to a Markdown parser and would show as asterisks.
The checklist is a static table, so that its long explanations wrap instead of being
cut, and its verdicts are words with a colour, since chromium may lack an emoji font.

A tried what-if stays shown across reruns (its scenario's key is remembered in the
session), since a button is only True on the run that follows its click.
"""
from __future__ import annotations

import urllib.parse

import pandas as pd
import streamlit as st

from explorer.core import Result
from explorer.core.advisor import (
    CHECK_IDS,
    CHECKS,
    DEFAULT_THRESHOLDS,
    METRIC_IDS,
    Advice,
    Tip,
    advise,
    bound_text,
    checklist_table,
    improved,
    promise_text,
)
from explorer.core.metrics import METRIC_DEF_IDS
from explorer.ui import errors, run_view, state
from hardware_presets.errors import InputError

TRIED = "adv.tried"  # session key: scenario keys of the what-ifs tried
THRESHOLD_PREFIX = "advisor.threshold."
SECTION = "advisor"  # key of the advisor's container (tests find its elements in it)
#: a check's verdict (None: not applicable) -> CSS of its status cell (dark enough to read)
STATUS_STYLES = {True: "color: #007A4D; font-weight: 600",
                 False: "color: #B35900; font-weight: 600", None: "color: #6E6E6E"}


def _threshold_values() -> dict[str, float]:
    """The checklist thresholds (in %, as the session holds them) as fractions: the top
    finding is drawn before their inputs, which are folded below it."""
    return {key: float(st.session_state.get(THRESHOLD_PREFIX + key,
                                            DEFAULT_THRESHOLDS[key] * 100)) / 100
            for key in CHECKS}


def _thresholds() -> None:
    """Number inputs (in %) for every checklist threshold, bound to the session."""
    with st.expander(state.tr("advisor.thresholds")):
        columns = st.columns(3)
        for i, key in enumerate(CHECKS):
            columns[i % 3].number_input(state.tr(CHECK_IDS[key][0]) + " (%)",
                                        min_value=0.0, max_value=100.0, step=5.0,
                                        format="%.0f",
                                        **state.bound(THRESHOLD_PREFIX + key,
                                                      DEFAULT_THRESHOLDS[key] * 100))


def _outcome(result: Result, tip: Tip) -> None:
    """Emulate the what-if (cached) and show old vs new of the promised metric."""
    try:
        new = state.simulate(tip.scenario)
    except InputError as exc:
        errors.show(exc, state.language())
        return
    old_m, new_m = result.metrics, new.metrics
    st.markdown(state.tr(
        "advisor.outcome", metric=state.tr(METRIC_IDS[tip.metric]),
        old=run_view.metric_value(tip.metric, old_m[tip.metric]),
        new=run_view.metric_value(tip.metric, new_m[tip.metric]),
        old_ms=f"{old_m['makespan_us']:.2f}", new_ms=f"{new_m['makespan_us']:.2f}"))
    if improved(tip, old_m, new_m):
        st.success(state.tr("advisor.outcome_ok"))
    else:
        st.warning(state.tr("advisor.outcome_bad"))
    query = run_view.scenario_url(tip.scenario, {}, state.language())
    st.markdown(f"[{state.tr('advisor.open')}](?{urllib.parse.urlencode(query)})")


def _show_tip(result: Result, tip: Tip, index: int) -> None:
    key = state.scenario_key(tip.scenario)
    tried = st.session_state.setdefault(TRIED, set())
    with st.container(border=True):
        st.markdown(state.tr(tip.msg_id, **tip.values))
        st.caption(promise_text(tip, state.language()))
        if st.button(state.tr("advisor.try"), key=f"advisor.try.{index}"):
            tried.add(key)
        if key in tried:
            _outcome(result, tip)


def _checklist(advice: Advice) -> None:
    """The checklist as a static table: every text wraps, each status word coloured."""
    table = checklist_table(advice, state.language())
    styles = [STATUS_STYLES[check.passed] for check in advice.checks]
    styled = table.style.apply(lambda _: pd.Series(styles, index=table.index),
                               subset=[state.tr("advisor.col.status")])
    st.table(styled, hide_index=True)


def _bound(advice: Advice) -> None:
    """The run's bound as the page's Bound tile words it, beside why (plain prose)."""
    tile, why = st.columns([1, 3], vertical_alignment="center")
    tile.metric(state.tr("advisor.bound_title"), run_view.metric_value("bound", advice.bound),
                help=state.tr(METRIC_DEF_IDS["bound"]), border=True)
    why.markdown(bound_text(advice, state.language()))


def top_text(advice: Advice) -> str:
    """The advisor's top finding in plain prose: the bound and why, then the first what-if
    and what it promises (or that there is none)."""
    lang = state.language()
    bound = state.tr("advisor.bound_line", label=run_view.metric_label("bound"),
                     value=run_view.metric_value("bound", advice.bound),
                     text=bound_text(advice, lang))
    if not advice.tips:
        return f"{bound}\n\n{state.tr('advisor.no_tips')}"
    tip = advice.tips[0]
    return f"{bound}\n\n" + state.tr("apply.top_tip", tip=state.tr(tip.msg_id, **tip.values),
                                      promise=promise_text(tip, lang))


def show_advisor(result: Result) -> None:
    """The advisor section of a kernel page for ``result``: the top finding, and the full
    checklist, bound and what-ifs folded under it."""
    with st.container(key=SECTION):
        st.subheader(state.tr("advisor.title"))
        advice = advise(result, _threshold_values())
        st.info(top_text(advice), icon=":material/lightbulb:")
        with st.expander(state.tr("apply.advisor_full"), icon=":material/checklist:"):
            st.caption(state.tr("advisor.intro"))
            _checklist(advice)
            _bound(advice)
            st.subheader(state.tr("advisor.tips_title"))
            if not advice.tips:
                st.info(state.tr("advisor.no_tips"))
            for i, tip in enumerate(advice.tips):
                _show_tip(result, tip, i)
            _thresholds()

"""The performance advisor under a kernel page's results: the blog's tuning checklist with
editable thresholds, the bound, and each what-if with a "Try it" button that emulates
the changed scenario (cached) and shows old against new of the metric it promises.

A tried what-if stays shown across reruns (its scenario's key is remembered in the
session), since a button is only True on the run that follows its click.
"""
from __future__ import annotations

import urllib.parse

import streamlit as st

from explorer.core import Result
from explorer.core.advisor import (
    BOUND_IDS,
    CHECK_IDS,
    CHECKS,
    DEFAULT_THRESHOLDS,
    METRIC_IDS,
    Tip,
    advise,
    checklist_table,
    improved,
    promise_text,
)
from explorer.ui import errors, run_view, state
from hardware_presets.errors import InputError

TRIED = "adv.tried"  # session key: scenario keys of the what-ifs tried
THRESHOLD_PREFIX = "advisor.threshold."


def _thresholds() -> dict[str, float]:
    """Number inputs (in %) for every checklist threshold, bound to the session."""
    values = {}
    with st.expander(state.tr("advisor.thresholds")):
        columns = st.columns(3)
        for i, key in enumerate(CHECKS):
            name = THRESHOLD_PREFIX + key
            columns[i % 3].number_input(state.tr(CHECK_IDS[key][0]) + " (%)",
                                        min_value=0.0, max_value=100.0, step=5.0,
                                        format="%.0f",
                                        **state.bound(name, DEFAULT_THRESHOLDS[key] * 100))
            values[key] = float(st.session_state[name]) / 100
    return values


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


def show_advisor(result: Result) -> None:
    """The advisor section of a kernel page for ``result``."""
    st.subheader(state.tr("advisor.title"))
    st.caption(state.tr("advisor.intro"))
    advice = advise(result, _thresholds())
    st.dataframe(checklist_table(advice, state.language()), hide_index=True)
    st.markdown(f"##### {state.tr('advisor.bound_title')}")
    st.markdown(state.tr(BOUND_IDS[advice.bound], **advice.bound_values))
    st.markdown(f"##### {state.tr('advisor.tips_title')}")
    if not advice.tips:
        st.info(state.tr("advisor.no_tips"))
    for i, tip in enumerate(advice.tips):
        _show_tip(result, tip, i)

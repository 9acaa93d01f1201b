"""Drawing of the Claims page: one bordered card per claim of the seed blog.

A card shows the verdict badge, the original Chinese sentence, a short rendering in the
session's language, the figures table (value and where it comes from), the rule that
gave the verdict, the explanation, the references and a link to the page and scenario
that demonstrate it. The cards themselves are computed in `explorer.core.claims`
(cached per chip here, since several of them emulate).
"""
from __future__ import annotations

import math
import re

import pandas as pd
import streamlit as st

import hardware_presets as hp
from explorer.core.claims import claims
from explorer.core.claims_data import (
    SOURCE_IDS,
    VERDICT_IDS,
    Card,
    Figure,
    counts,
    format_value,
    text_values,
)
from explorer.plots import values
from explorer.ui import errors, run_view, state

BADGE_COLOURS = {"holds": "green", "wrong": "red", "inconsistent": "orange",
                 "unverifiable": "gray"}
BADGE_ICONS = {"holds": ":material/check_circle:", "wrong": ":material/cancel:",
               "inconsistent": ":material/sync_problem:", "unverifiable": ":material/help:"}


@st.cache_resource(max_entries=8, show_spinner=False, hash_funcs={hp.Chip: hash})
def cached_claims(chip: hp.Chip) -> list[Card]:
    """The twelve cards of one chip (computed once per chip and overrides)."""
    return claims(chip)


def _too_precise(f: Figure) -> bool:
    """Whether the card's fixed-point format would print more than four significant
    digits (1.3264, 1,495.8): more than the model's numbers carry."""
    decimals = re.search(r"\.(\d+)f$", f.fmt)
    if decimals is None or isinstance(f.value, bool) or not f.value:
        return False
    return math.floor(math.log10(abs(f.value))) + 1 + int(decimals[1]) > 4


def figure_value(f: Figure, lang: str) -> str:
    """A figure as the card prints it (its explanation quotes the same text), or as every
    table writes a number where the card's format would be too precise."""
    if _too_precise(f):
        return run_view.metric_value(f.name, f.value, values.NUMBER)
    return format_value(f, lang)


def figures_table(card: Card, lang: str) -> pd.DataFrame:
    """The card's figures: label, printed value, source, in the session's language."""
    return pd.DataFrame({
        state.tr("claims.col.figure"): [state.tr(f.label_id) for f in card.figures],
        state.tr("claims.col.value"): [figure_value(f, lang) for f in card.figures],
        state.tr("claims.col.source"): [state.tr(SOURCE_IDS[f.source])
                                        for f in card.figures],
    })


def show_summary(cards: list[Card], chip: hp.Chip) -> None:
    st.info(state.tr("claims.summary", chip=errors.escape(chip.display_name), **counts(cards)))


def _badge(card: Card) -> None:
    st.badge(state.tr(VERDICT_IDS[card.verdict]), icon=BADGE_ICONS[card.verdict],
             color=BADGE_COLOURS[card.verdict])


def show_card(card: Card) -> None:
    """One claim in a bordered container."""
    lang = state.language()
    explained = text_values(card, lang)
    with st.container(border=True):
        st.subheader(state.tr("claims.card_title", n=card.id, section=card.section))
        _badge(card)
        st.markdown(f"**{state.tr('claims.quote')}:** {card.quote}")
        st.markdown(f"**{state.tr('claims.claim')}:** {state.tr(card.claim_id)}")
        st.dataframe(figures_table(card, lang), hide_index=True, width="stretch")
        st.markdown(f"**{state.tr('claims.rule')}:** {state.tr(card.rule_id)}")
        st.markdown(f"**{state.tr('claims.explain')}:** {state.tr(card.explain_id, **explained)}")
        refs = "\n".join(f"- {errors.escape(r)}" for r in card.references)
        st.markdown(f"**{state.tr('claims.references')}:**\n{refs}")
        st.markdown(f"[{state.tr('claims.link')}]({card.link(lang=lang)})")

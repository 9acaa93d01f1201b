"""How the decode page splits a model over cards: the card counts that split it into whole
heads and widths and leave weights that fit each card's HBM, "auto" as the fewest such
cards, and the one card's share the page emulates (the multi-card page's own split).
"""
from __future__ import annotations

import functools

from explorer.core import Scenario
from explorer.core import multicard as mc
from explorer.ui import state
from explorer.ui.multicard_view import ALL_CARDS
from hardware_presets import Chip
from hardware_presets.errors import InputError
from kernels.decode import params as dp
from kernels.decode.kv_memory import max_batch_that_fits
from kernels.models import ModelShape, model_from_dict


def _model_key(p: dict) -> tuple:
    """What identifies the model of page parameters (a preset's name, or the custom shape)."""
    if p["model"] != dp.CUSTOM:
        return (("model", p["model"]),)
    return (("model", dp.CUSTOM), *((f"custom_{n}", p[f"custom_{n}"]) for n in dp.CUSTOM_FIELDS))


@functools.lru_cache(maxsize=64)
def _whole(preset: str, overrides: tuple, model: tuple) -> Scenario:
    """A decode scenario of the model alone (what the multi-card split reads)."""
    return Scenario.make(preset, "decode", dict(model), dict(overrides))


@functools.lru_cache(maxsize=64)
def _shares(preset: str, overrides: tuple, model: tuple) -> tuple:
    """For each count of ALL_CARDS, one card's share of the model (shape items), or None
    when that count cannot split it into whole heads and widths (multicard's rule)."""
    whole = _whole(preset, overrides, model)
    shares = []
    for cards in ALL_CARDS:
        try:
            shares.append(tuple(mc.per_card_shape(whole, cards).items()))
        except InputError:
            shares.append(None)
    return tuple(shares)


def _scope(p: dict) -> tuple:
    return state.preset(), tuple(sorted(state.overrides().items())), _model_key(p)


def whole_model(p: dict) -> ModelShape:
    """The model of page parameters as a whole, before any split over cards."""
    return dp.model_of(_whole(*_scope(p)).params_dict)


@functools.lru_cache(maxsize=256)
def _weights_fit(chip: Chip, share: tuple, weight_dtype: str) -> bool:
    """Whether one card's share of the weights fits its HBM (the kernel's own test)."""
    model = model_from_dict(dict(share), origin="params.cards")
    return max_batch_that_fits(model, chip, 1, weight_dtype=weight_dtype)["weights_fit"]


def card_counts(chip: Chip, p: dict) -> tuple[int, ...]:
    """The card counts that split the model whole and, unless overcommit is allowed, leave
    every card weights that fit its HBM (none for a custom shape the kernel refuses)."""
    try:
        shares = _shares(*_scope(p))
    except InputError:
        return ()
    return tuple(cards for cards, share in zip(ALL_CARDS, shares) if share is not None and (
        p["allow_overcommit"] or _weights_fit(chip, share, p["weight_dtype"])))


def fewest_cards(chip: Chip, p: dict) -> int:
    """What "auto" means: the fewest cards whose weight share fits one chip (1 if none)."""
    fitting = card_counts(chip, {**p, "allow_overcommit": False})
    return fitting[0] if fitting else 1


def cards_of(chip: Chip, p: dict) -> int:
    """The cards the model is split over (auto resolved)."""
    return p["cards"] or fewest_cards(chip, p)


def emulated(chip: Chip, p: dict) -> dict:
    """The kernel parameters of what the page emulates for page parameters ``p``: the model
    itself on one card, or one card's share of it as the multi-card page splits it (the
    custom shape of 1/cards of the heads, widths and parameters, ``tp`` = cards)."""
    run = {k: v for k, v in p.items() if k not in ("cards", "seed")}
    cards = cards_of(chip, p)
    if cards == 1:
        return run
    share = _shares(*_scope(p))[ALL_CARDS.index(cards)]
    if share is None:  # refused: in the multi-card split's own words
        mc.per_card_shape(_whole(*_scope(p)), cards)
    return {**run, **{f"custom_{k}": v for k, v in share}, "model": dp.CUSTOM, "tp": cards}

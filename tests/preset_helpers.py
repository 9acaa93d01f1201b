"""Which presets a test that gathers the claims' texts needs to run.

The twelve claim cards' ids, quotes, references and figure names belong to the card, not
to the chip (the same on all nine presets today); where a card branches on the chip, it is
on its architecture. One preset of each architecture covers them at a fraction of running
the claims on every preset (about 1 s each), which tests that only collect texts do not need.
"""
from __future__ import annotations

from functools import cache

import hardware_presets as hp


@cache
def one_preset_per_architecture() -> tuple[str, ...]:
    """The first preset of each architecture, in preset order."""
    first: dict[str, str] = {}
    for name in hp.list_presets():
        first.setdefault(hp.load(name).architecture, name)
    return tuple(first.values())

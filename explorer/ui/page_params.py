"""The parameters of a page in session state: keys, values with the page's defaults, the
URL taken into them, and one-click examples. Every kernel page keeps its widgets' values
this way, so links, uploads and examples behave the same on all of them."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import streamlit as st

from explorer.ui import widgets
from hardware_presets.errors import InputError
from kernels.common.params import ParamSpec


@dataclass(frozen=True)
class PageParams:
    """A page's parameters in session state under ``prefix``: their values (session, else
    the page's default, else the spec's), the URL taken into them, and example scenarios
    that reset every parameter before applying their own values."""

    prefix: str
    specs: Mapping[str, ParamSpec]
    defaults: Mapping[str, object] = field(default_factory=dict)
    examples: Mapping[str, Mapping[str, object]] = field(default_factory=dict)

    def key(self, name: str) -> str:
        return self.prefix + name

    def value(self, name: str) -> object:
        return st.session_state.get(self.key(name),
                                    self.defaults.get(name, self.specs[name].default))

    def take_url(self) -> list[InputError]:
        """Copy the page's URL parameters into session state; returns the refused ones."""
        return widgets.take_url_into(self.specs, self.key)

    def apply_example(self, name: str) -> None:
        for spec_name in self.specs:
            st.session_state.pop(self.key(spec_name), None)
        st.session_state.update({self.key(k): v for k, v in self.examples[name].items()})

    def example_row(self, msg_prefix: str, key_prefix: str) -> None:
        """A row of buttons, each one a ready scenario."""
        widgets.example_buttons(tuple(self.examples), msg_prefix, key_prefix,
                                self.apply_example)

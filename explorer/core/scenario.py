"""A Scenario is everything that determines a run: chip preset + overrides, kernel +
parameters, and the seed. It is frozen and hashable (so the UI can cache on it) and
round-trips through TOML and JSON as plain data (no pickle, no eval)."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import tomli_w

import hardware_presets as hp
import kernels
from hardware_presets import documents
from hardware_presets.errors import InputError, Phrase

SEED_MAX = 2**32 - 1
NAME_MAX = 200
#: a scenario document is a few hundred characters; a file or upload may be this long
DOCUMENT_MAX_CHARS = 1 << 20
_KEYS = ("name", "preset", "overrides", "kernel", "params", "seed")


def _frozen(mapping: Mapping[str, object] | None) -> tuple[tuple[str, object], ...]:
    return tuple(sorted((mapping or {}).items()))


@dataclass(frozen=True)
class Scenario:
    """One what-if: a chip, a kernel with its parameters, a seed, and a free-text name."""

    preset: str = "910B2"
    kernel: str = "vector_add"
    params: tuple[tuple[str, object], ...] = ()
    overrides: tuple[tuple[str, object], ...] = ()
    seed: int = 0
    name: str = ""

    @classmethod
    def make(cls, preset="910B2", kernel="vector_add", params=None, overrides=None, seed=0,
             name="") -> Scenario:
        """Build from plain dicts, validating every field (see :meth:`validated`)."""
        return cls(preset, kernel, _frozen(params), _frozen(overrides), seed, name).validated()

    @property
    def params_dict(self) -> dict[str, object]:
        return dict(self.params)

    @property
    def overrides_dict(self) -> dict[str, object]:
        return dict(self.overrides)

    def chip(self) -> hp.Chip:
        """The chip preset with this scenario's overrides applied (validated)."""
        if self.preset not in hp.list_presets():
            raise InputError("preset", self.preset,
                             Phrase("refusal.one_of", options=", ".join(hp.list_presets())))
        return hp.load(self.preset, **self.overrides_dict)

    def validated(self) -> Scenario:
        """The same scenario with kernel defaults filled in; InputError on any bad field."""
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or \
                not 0 <= self.seed <= SEED_MAX:
            raise InputError("seed", self.seed, Phrase("refusal.scenario.seed", high=SEED_MAX))
        if not isinstance(self.name, str) or len(self.name) > NAME_MAX:
            raise InputError("name", self.name, Phrase("refusal.scenario.name", n=NAME_MAX))
        # what a scenario file may hold, so that it round-trips
        documents.check_strings(self.name, "name")
        kernel = kernels.get(self.kernel)
        params = kernel.check(self.chip(), self.params_dict)
        return Scenario(self.preset, self.kernel, _frozen(params), self.overrides, self.seed,
                        self.name)

    def replace(self, **changes) -> Scenario:
        """A copy with some fields changed; ``params``/``overrides`` given as dicts merge."""
        data = self.to_dict()
        for key in ("params", "overrides"):
            if key in changes:
                data[key] = {**data[key], **changes.pop(key)}
        data.update(changes)
        return Scenario.from_dict(data)

    # -- plain data ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "preset": self.preset, "overrides": self.overrides_dict,
                "kernel": self.kernel, "params": self.params_dict, "seed": self.seed}

    @classmethod
    def from_dict(cls, data: Mapping[str, object], origin: str = "scenario") -> Scenario:
        """Parse plain data; unknown keys and wrong shapes are refused with their name."""
        if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
            raise InputError(origin, type(data).__name__, Phrase("refusal.scenario.table"))
        unknown = sorted(set(data) - set(_KEYS))
        if unknown:
            raise InputError(f"{origin}: {unknown[0]}", data[unknown[0]],
                             Phrase("refusal.scenario.keys", keys=", ".join(_KEYS)))
        for key in ("params", "overrides"):
            table = data.get(key, {})
            if not isinstance(table, Mapping) or not all(isinstance(k, str) for k in table):
                raise InputError(f"{origin}: {key}", table, Phrase("refusal.scenario.name_value"))
        for key, default in (("preset", "910B2"), ("kernel", "vector_add")):
            if not isinstance(data.get(key, default), str):
                raise InputError(f"{origin}: {key}", data[key], Phrase("refusal.scenario.text",
                                                                       key=key))
        return cls.make(data.get("preset", "910B2"), data.get("kernel", "vector_add"),
                        data.get("params"), data.get("overrides"), data.get("seed", 0),
                        data.get("name", ""))

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_dict())

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_toml(cls, text: str, origin: str = "scenario.toml") -> Scenario:
        return cls._parse(text, "toml", origin)

    @classmethod
    def from_json(cls, text: str, origin: str = "scenario.json") -> Scenario:
        return cls._parse(text, "json", origin)

    @classmethod
    def from_file_text(cls, text: str, filename: str) -> Scenario:
        """Parse by file extension (.json, otherwise TOML)."""
        fmt = "json" if filename.lower().endswith(".json") else "toml"
        return cls._parse(text, fmt, filename)

    @classmethod
    def _parse(cls, text: str, fmt: str, origin: str) -> Scenario:
        """Through the one safe document reader: size, nesting, repeated keys and
        unreadable text are refused there, the fields by :meth:`from_dict`."""
        loads = documents.load_json if fmt == "json" else documents.load_toml
        return cls.from_dict(loads(text, origin, DOCUMENT_MAX_CHARS), origin)

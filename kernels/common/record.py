"""What a kernel is, in one typed record: everything the layers above ask about a kernel.

A kernel offers a ``KernelRecord`` (``RECORD`` in its module or package) and nothing above
the kernels layer branches on its name: the scenario validates through ``check``, the
emulator times ``build``'s program, the numerical check runs ``numerics``, the advisor
reads ``advice``, reports draw ``figures`` from the plots' catalogue and quote
``explanation``, the CLI adds the ``extensions`` the core knows (e.g. decode's whole-model
step), and the gallery lists the scenario files in ``examples``. Message ids are data
(the kernels layer translates nothing); the catalogues live in ``explorer.core.locales``
or the kernel's own ``locales/<lang>/`` folder.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernels.common.params import ParamSpec


@dataclass(frozen=True)
class Numerics:
    """The kernel's arithmetic beside its float64 truth.

    ``make_inputs(params, rng)``, ``execute(params, inputs)`` (the emulated precision),
    ``reference(inputs)`` (float64), ``error_bound(params, inputs, ref)`` (allowed error
    per element), ``unit_roundoff(params)``, ``output_elements(params)``; ``as_real``
    (optional) maps quantised outputs to the real domain before comparing."""

    make_inputs: Callable
    execute: Callable
    reference: Callable
    error_bound: Callable
    unit_roundoff: Callable[[dict], float]
    output_elements: Callable[[dict], int]
    as_real: Callable | None = None


@dataclass(frozen=True)
class Advice:
    """What the advisor may check and suggest for this kernel (all optional).

    ``double_buffer``: (message id, the parameters that turn double buffering on).
    ``block_cores``: "vector" or "cube", the cores ``block_dim`` should reach.
    ``tile_param``: the parameter whose doubling makes DataCopies larger.
    ``buffer_use(chip, params)``: (buffer, used / capacity) of the kernel's buffer plan.
    ``l2_reuse``: the kernel reads data twice, so its L2 hit rate is always checked.
    ``waves(params)``: (tasks, waves, block_dim) of a task grid, for tail effects.
    ``rules``: the kernel's own rules, ``rule(result, ctx) -> [tip tuples]`` (see
    ``explorer.core.advisor``)."""

    double_buffer: tuple[str, dict] | None = None
    block_cores: str | None = None
    tile_param: str | None = None
    buffer_use: Callable | None = None
    l2_reuse: bool = False
    waves: Callable[[dict], tuple[int, int, int]] | None = None
    rules: tuple[Callable, ...] = ()


@dataclass(frozen=True)
class KernelRecord:
    """One kernel: its name, parameters, program, numerics and what the layers above show.

    ``check(chip, params) -> params`` validates and fills defaults; ``build(chip, params)``
    (``build(chip, params, seed=...)`` when ``seeded``: the work depends on random draws)
    returns the Program; ``timing_only`` parameters shape the time but never the
    arithmetic, so the numerics never see them; ``precision(params)`` names the format
    of the roofline's compute peak and ``roofline_label(params)`` the point's (message id,
    values); ``explanation`` are message ids a report quotes; ``figures`` names extra
    report figures (``explorer.plots.report_figures.KERNEL_FIGURES``); ``extensions``
    names core features (``explorer.core.extensions``); ``examples`` is a folder of
    gallery scenario files; ``locales`` a folder of message catalogues
    (``<lang>/*.toml``)."""

    name: str
    title_key: str
    params: tuple[ParamSpec, ...]
    check: Callable[..., dict]
    build: Callable
    numerics: Numerics
    precision: Callable[[dict], str]
    roofline_label: Callable[[dict], tuple[str, dict]]
    seeded: bool = False
    timing_only: frozenset[str] = frozenset()
    advice: Advice = field(default_factory=Advice)
    explanation: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    examples: Path | None = None
    locales: Path | None = None

    def build_program(self, chip, params: dict, seed: int = 0):
        """The kernel's program; a seeded kernel gets the scenario's seed."""
        if self.seeded:
            return self.build(chip, params, seed=seed)
        return self.build(chip, params)

    def param(self, name: str) -> ParamSpec:
        """The schema of one parameter (KeyError when the kernel has none of that name)."""
        for spec in self.params:
            if spec.name == name:
                return spec
        raise KeyError(name)


def tip(msg: str, changes: dict, metric: str, direction: str, gain: float | None = None,
        **values) -> tuple:
    """A kernel rule's what-if, as ``explorer.core.advisor`` reads it: (message id, its
    values, the parameter changes, the metric they move, "up" or "down", rough gain)."""
    return msg, values, changes, metric, direction, gain


def percent(x: float) -> str:
    """A share as the advisor prints it (no decimals)."""
    return f"{100 * x:.0f}%"

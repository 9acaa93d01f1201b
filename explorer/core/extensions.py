"""Features the core adds to some kernels' runs, named in a kernel record's ``extensions``.

A kernel record lives below the core, so it cannot hold core code; it names what it
wants ("decode_step": the whole-model decode step built from the emulated layer), and
this catalogue says what each name computes and what the CLI prints of it. Nothing here
(or in the CLI and reports that use it) asks which kernel a run is.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import kernels

from .decode_step import DecodeStep, simulate_decode


@dataclass(frozen=True)
class Extension:
    """One core feature: ``run(result)`` computes it, ``summary(value)`` is its figures,
    ``notes(value)`` what a report says about it (message ids with values)."""

    run: Callable
    summary: Callable[[object], dict[str, float]]
    notes: Callable[[object], tuple] = lambda value: ()


def _step_summary(step: DecodeStep) -> dict[str, float]:
    """The whole-model step, every op emulated: the totals and each op's time per step."""
    return {"step_ms": step.step_ns / 1e6, "tokens_per_s": step.tokens_per_s,
            "layer_us": step.layer_ns / 1e3, "lm_head_us": step.head_ns / 1e3,
            "append_us_per_layer": step.append_ns / 1e3,
            "attention_us_per_layer": step.attention_ns / 1e3,
            "linear_us_per_layer": step.linear_ns / 1e3,
            **{f"{op}_ms_per_step": ns / 1e6 for op, ns in zip(step.ops["op"],
                                                              step.ops["step_ns"])},
            "attention_done_p50_us": step.latency_p50_ns / 1e3,
            "attention_done_p99_us": step.latency_p99_ns / 1e3,
            "attention_hbm_GBps": step.attention_hbm_GBps, "layers": step.layers,
            "fits_hbm": step.fits_hbm}


EXTENSIONS: dict[str, Extension] = {
    "decode_step": Extension(lambda result: simulate_decode(result.scenario, result),
                             _step_summary, lambda step: step.notes),
}


def names(kernel: str) -> tuple[str, ...]:
    """The extensions a kernel's record asks for."""
    return kernels.get(kernel).extensions


def has(kernel: str, name: str) -> bool:
    return name in names(kernel)


def of(result) -> dict[str, object]:
    """Every extension of a run, computed: name -> value."""
    return {name: EXTENSIONS[name].run(result) for name in names(result.scenario.kernel)}


def notes(result, computed: dict[str, object]) -> tuple:
    """The run's notes, then each computed extension's that are not among them."""
    found = list(result.notes)
    for name, value in computed.items():
        found += [n for n in EXTENSIONS[name].notes(value) if n not in found]
    return tuple(found)


def summaries(values: dict[str, object]) -> dict[str, dict[str, float]]:
    """name -> the figures the CLI prints, for computed extensions."""
    return {name: EXTENSIONS[name].summary(value) for name, value in values.items()}

"""Command line: ``python -m explorer run SCENARIO.toml [--json] [--trace out.json]``,
``python -m explorer presets`` and ``python -m explorer validate FILE``. Exit codes: 0 ok,
2 bad input, 3 numerical check failed, 4 the program deadlocked."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import tomllib

import hardware_presets as hp
from hardware_presets.errors import InputError
from kernels.models import load_model_text

from .core import Scenario, simulate
from .core.decode_step import simulate_decode
from .core.emulator.engine import ENGINES, DeadlockError
from .core.i18n import t
from .core.metrics import METRICS
from .core.trace import chrome_trace

EXIT_OK, EXIT_INPUT, EXIT_NUMERICS, EXIT_DEADLOCK = 0, 2, 3, 4
MAX_SCENARIO_BYTES = 1 << 20


def _format(value: object, unit: str) -> str:
    if isinstance(value, float):
        return f"{value:,.4g} {unit}".rstrip()
    return f"{value} {unit}".rstrip()


def _read_text(path: str, what: str = "SCENARIO") -> tuple[Path, str]:
    file = Path(path)
    if not file.is_file():
        raise InputError(what, path, "an existing .toml or .json file")
    if file.stat().st_size > MAX_SCENARIO_BYTES:
        raise InputError(what, path, f"a file of at most {MAX_SCENARIO_BYTES} bytes")
    return file, file.read_text(encoding="utf-8")


def _read_scenario(path: str) -> Scenario:
    file, text = _read_text(path)
    return Scenario.from_file_text(text, file.name)


def _kind_of(file: Path, text: str) -> str:
    """"scenario", "chip" or "model": a chip preset has an architecture, a model a
    [shape] table, anything else is read as a scenario."""
    if file.suffix.lower() == ".json":
        return "scenario"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "scenario"  # the scenario parser names the TOML error
    return "chip" if "architecture" in data else "model" if "shape" in data else "scenario"


def cmd_validate(args: argparse.Namespace) -> int:
    """Check a scenario, chip preset or model file without running anything."""
    file, text = _read_text(args.file, "FILE")
    kind = _kind_of(file, text)
    if kind == "chip":
        chip = hp.load_text(text, origin=file.name)
        print(f"ok: chip {chip.display_name} ({chip.architecture}, {chip.num_cores} cores)")
    elif kind == "model":
        model = load_model_text(text, origin=file.name)
        print(f"ok: model {model.display_name} ({model.layers} layers, "
              f"{model.q_heads}/{model.kv_heads} heads)")
    else:
        scenario = Scenario.from_file_text(text, file.name)
        print(f"ok: scenario {scenario.name or file.name}: {scenario.kernel} on "
              f"{scenario.preset}, {len(scenario.params)} parameters")
    return EXIT_OK


def decode_summary(result) -> dict[str, float]:
    """The whole-model step of a decode scenario (its linear layers are an estimate)."""
    step = simulate_decode(result.scenario, result)
    return {"step_ms": step.step_ns / 1e6, "tokens_per_s": step.tokens_per_s,
            "append_us_per_layer": step.append_ns / 1e3,
            "attention_us_per_layer": step.attention_ns / 1e3,
            "linear_us_per_layer_estimated": step.linear_ns / 1e3,
            "attention_done_p50_us": step.latency_p50_ns / 1e3,
            "attention_done_p99_us": step.latency_p99_ns / 1e3,
            "attention_hbm_GBps": step.attention_hbm_GBps, "layers": step.layers,
            "fits_hbm": step.fits_hbm}


def cmd_run(args: argparse.Namespace) -> int:
    result = simulate(_read_scenario(args.scenario), engine=args.engine)
    check = result.numerics
    extra = {"decode_step": decode_summary(result)} if result.scenario.kernel == "decode" else {}
    if args.json:
        print(json.dumps({"scenario": result.scenario.to_dict(), "metrics": result.metrics,
                          "numerics": vars(check), **extra}, indent=2, default=float))
    else:
        print(f"{result.chip.display_name} · {result.scenario.kernel}")
        for name, unit in METRICS.items():
            print(f"  {t(f'metric.{name}.label'):<28} {_format(result.metrics[name], unit)}")
        verdict = "passed" if check.passed else "FAILED"
        print(f"  numerics: {verdict}: max abs error {check.max_abs_error:.3g}, max rel error "
              f"{check.max_rel_error:.3g} (bound {check.bound:.3g}), "
              f"{check.verified} of {check.total} elements verified")
        for name, value in extra.get("decode_step", {}).items():
            print(f"  decode step: {name:<30} {_format(value, '')}")
    if args.trace:
        Path(args.trace).write_text(json.dumps(chrome_trace(result)), encoding="utf-8")
    return EXIT_OK if check.passed else EXIT_NUMERICS


def cmd_presets(args: argparse.Namespace) -> int:
    for name in hp.list_presets():
        chip = hp.load(name)
        peaks = ", ".join(f"{p} {v:.1f} TF" for p, v in chip.peak_tflops_table().items())
        print(f"{name:<6} {chip.display_name:<14} {chip.architecture:<8} "
              f"{chip.ai_cores} AI cores + {chip.vector_cores} vector, {chip.clock_MHz:g} MHz, "
              f"HBM {chip.hbm_bandwidth_GBps:g} GB/s, L2 {chip.l2_MiB:g} MiB; {peaks}")
    return EXIT_OK


def _subcommands() -> tuple:
    """Commands kept in modules of their own (imported here: they import this module)."""
    from . import cli_compare, cli_report, cli_sweep
    return (cli_report, cli_compare, cli_sweep)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m explorer",
                                 description="Ascend NPU architecture explorer")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="simulate a scenario file and print its metrics")
    run.add_argument("scenario", help="scenario .toml or .json")
    run.add_argument("--json", action="store_true", help="print metrics as JSON")
    run.add_argument("--trace", metavar="OUT.json", help="write a Chrome/Perfetto trace")
    run.add_argument("--engine", choices=ENGINES, default="jit")
    run.set_defaults(func=cmd_run)
    presets = sub.add_parser("presets", help="list chip presets with their peaks")
    presets.set_defaults(func=cmd_presets)
    validate = sub.add_parser("validate", help="check a scenario, chip or model file")
    validate.add_argument("file", help="a scenario (.toml/.json), chip preset or model TOML")
    validate.set_defaults(func=cmd_validate)
    for module in _subcommands():
        module.add_parser(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit code says how it ended (see the module docstring)."""
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except DeadlockError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_DEADLOCK


"""Command line: ``python -m explorer run SCENARIO.toml [--json] [--trace out.json]``,
``python -m explorer presets``, ``python -m explorer validate FILE`` and ``python -m explorer
warmup`` (compile the emulator once, at install); ``--version``. An installed package has
the same CLI as the console command ``ascend-explorer``. Exit codes: 0 ok,
2 bad input, 3 numerical check failed, 4 the program deadlocked.

Every command reads its files here, through ``hardware_presets.documents`` (a SCENARIO
may also be a report .html: its embedded scenario is read), checks its output paths
before any work, and answers bad input with exit code 2 and one line on stderr."""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import hardware_presets as hp
from hardware_presets import documents
from hardware_presets.errors import InputError
from kernels.models import load_model_text

from .core import Scenario, extensions, gallery, simulate
from .core.emulator.engine import ENGINES, DeadlockError, warm_up
from .core.i18n import LANGUAGES, t
from .core.metrics import METRIC_LABEL_IDS, METRICS
from .core.quantization import input_quantization, quantization_frame
from .core.scenario import DOCUMENT_MAX_CHARS
from .core.trace import chrome_trace
from .core.verdict import verdict
from .plots.report import scenario_from_report
from .version import __version__

EXIT_OK, EXIT_INPUT, EXIT_NUMERICS, EXIT_DEADLOCK = 0, 2, 3, 4
#: the package's name (pyproject.toml), which is also its console command
DISTRIBUTION = "ascend-explorer"
MAX_SCENARIO_BYTES = DOCUMENT_MAX_CHARS
#: a report holds Plotly's JavaScript (about 5 MB) after its embedded scenario: a larger
#: file is not ours, and only the first MiB, where the scenario sits, is read
MAX_REPORT_BYTES, REPORT_HEAD_BYTES = 32 << 20, 1 << 20


def _format(value: object, unit: str) -> str:
    if isinstance(value, float):
        return f"{value:,.4g} {unit}".rstrip()
    return f"{value} {unit}".rstrip()


def _read_text(path: str, what: str = "SCENARIO",
               allowed: str = ".toml or .json file") -> tuple[Path, str]:
    """A UTF-8 file of at most MAX_SCENARIO_BYTES, through the one safe reader."""
    return Path(path), documents.read_file(path, what, allowed, MAX_SCENARIO_BYTES)


def _report_head(path: str) -> str:
    """The first MiB of a report .html (a multi-byte character cut at its end is dropped)."""
    file = Path(path)
    if not file.is_file() or file.stat().st_size > MAX_REPORT_BYTES:
        raise InputError("SCENARIO", path, f"an existing report of at most {MAX_REPORT_BYTES:,} "
                                           "bytes, or a .toml / .json scenario file")
    try:
        with file.open("rb") as stream:
            return stream.read(REPORT_HEAD_BYTES).decode("utf-8", errors="ignore")
    except OSError as exc:
        raise InputError("SCENARIO", path, "a readable report", exc.strerror or "") from None


def _read_scenario(path: str) -> Scenario:
    """The scenario of a .toml / .json file, the one embedded in a report .html, or a
    gallery scenario by its id (no such file here: an installed package's users need no
    path into site-packages)."""
    if not Path(path).exists() and path in gallery.ids():
        return gallery.load(path)
    if Path(path).suffix.lower() in (".html", ".htm"):
        return scenario_from_report(_report_head(path), Path(path).name)
    file, text = _read_text(path, allowed=".toml or .json file, or a gallery id ("
                                          + ", ".join(gallery.ids()) + ")")
    return Scenario.from_file_text(text, file.name)


def output_file(path: str | None, what: str) -> Path | None:
    """Where an output will go, checked before any work: a file in an existing folder."""
    if path is None:
        return None
    file = Path(path)
    if "\0" in path or not file.parent.is_dir() or file.is_dir():
        raise InputError(what, path, "a file in an existing folder")
    return file


def write_output(file: Path, text: str, what: str) -> None:
    """Write one output; a file that cannot be written is bad input, not a crash."""
    try:
        file.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(what, str(file), "a file that can be written",
                         exc.strerror or "") from None


def _kind_of(file: Path, text: str) -> str:
    """"scenario", "chip" or "model": a chip preset has an architecture, a model a
    [shape] table, anything else is read as a scenario."""
    if file.suffix.lower() == ".json":
        return "scenario"
    data = documents.load_toml(text, file.name, MAX_SCENARIO_BYTES)
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


def cmd_run(args: argparse.Namespace) -> int:
    trace = output_file(args.trace, "--trace")
    result = simulate(_read_scenario(args.scenario), engine=args.engine)
    check = result.numerics
    extra = extensions.summaries(extensions.of(result))
    lost = input_quantization(result.scenario)  # what quantised inputs lost to their format
    if args.json:
        print(json.dumps({"scenario": result.scenario.to_dict(), "metrics": result.metrics,
                          "numerics": {**vars(check), "verdict": verdict(check)}, **extra,
                          **({"quantization": lost} if lost else {})},
                         indent=2, default=float))
    else:
        print(f"{result.chip.display_name} · {result.scenario.kernel}")
        for name, unit in METRICS.items():
            print(f"  {t(METRIC_LABEL_IDS[name]):<28} {_format(result.metrics[name], unit)}")
        head, *rest = verdict(check)
        print(f"  numerics: {head}")
        for line in rest:
            print(f"    {line}")
        for _, e in quantization_frame(lost or {}).iterrows():
            print("  inputs: " + t("ui.quant.cli_line", operand=e["operand"], fmt=e["fmt"],
                                   norm=f"{e['norm_rel']:.3%}", bf16=f"{e['bf16_norm_rel']:.3%}",
                                   ratio=f"{e['bound_ratio']:.3f}", flushed=f"{e['flushed']:,}",
                                   nonzero=f"{e['nonzero']:,}"))
        for ext, values in extra.items():
            for name, value in values.items():
                print(f"  {ext.replace('_', ' ')}: {name:<30} {_format(value, '')}")
    if trace:
        write_output(trace, json.dumps(chrome_trace(result)), "--trace")
    return EXIT_OK if check.passed else EXIT_NUMERICS


def cmd_presets(args: argparse.Namespace) -> int:
    """One line per preset with its provenance counts; a package of several devices gets a
    second, indented line with the package's totals (a kernel runs on one device)."""
    chips = [hp.load(name) for name in hp.list_presets()]
    wide = max(len(chip.display_name) for chip in chips)  # the names' column, aligned
    for name, chip in zip(hp.list_presets(), chips):
        peaks = ", ".join(f"{p} {v:.1f} TF" for p, v in chip.peak_tflops_table().items())
        counts = ", ".join(f"{n} {s}" for s, n in chip.status_counts().items())
        print(f"{name:<6} {chip.display_name:<{wide}} {chip.architecture:<8} "
              f"{chip.ai_cores} AI cores + {chip.vector_cores} vector, {chip.clock_MHz:g} MHz, "
              f"HBM {chip.hbm_GiB:g} GiB at {chip.hbm_bandwidth_GBps:g} GB/s, "
              f"L2 {chip.l2_MiB:g} MiB; {peaks}; provenance: {counts}")
        if chip.package_devices > 1:
            print(f"{'':<6} package: {chip.package_devices} devices on {chip.package_dies} dies, "
                  f"{chip.package_total('ai_cores')} AI cores + "
                  f"{chip.package_total('vector_cores')} vector, "
                  f"HBM {chip.package_total('hbm_GiB'):g} GiB at "
                  f"{chip.package_total('hbm_bandwidth_GBps'):g} GB/s, "
                  f"fp16 {chip.package_peak_tflops('fp16'):.1f} TF; a kernel runs on one device")
    return EXIT_OK


def cmd_gallery(args: argparse.Namespace) -> int:
    """The gallery's scenarios, one line each: the id a SCENARIO argument takes, its
    kernel and chip, and what it shows (``--lang zh`` in Chinese)."""
    entries = gallery.entries()
    wide = max(len(e.id) for e in entries)
    for e in entries:
        scenario = gallery.load(e.id)
        print(f"{e.id:<{wide}}  {scenario.kernel:<12} {scenario.preset:<6} "
              f"{t(e.title_id, args.lang)}")
    return EXIT_OK


def cmd_warmup(args: argparse.Namespace) -> int:
    """Compile the event loop and the lowering once, so the first run starts at once."""
    seconds = warm_up(hp.load(Scenario.make().preset))
    print(f"emulator compiled in {seconds:.1f} s (numba cache: {os.environ['NUMBA_CACHE_DIR']})")
    return EXIT_OK


def _subcommands() -> tuple:
    """Commands kept in modules of their own (imported here: they import this module)."""
    from . import cli_app, cli_compare, cli_puzzle, cli_report, cli_sweep
    return (cli_report, cli_compare, cli_sweep, cli_puzzle, cli_app)


def _prog() -> str:
    """The command as it was typed: the console script's name when installed, else
    ``python -m explorer``."""
    name = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else ""
    return name if name.startswith(DISTRIBUTION) else "python -m explorer"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=_prog(), description="Ascend NPU architecture explorer")
    ap.add_argument("--version", action="version", version=f"{DISTRIBUTION} {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="simulate a scenario file and print its metrics")
    run.add_argument("scenario", help="scenario .toml or .json, or a gallery id")
    run.add_argument("--json", action="store_true", help="print metrics as JSON")
    run.add_argument("--trace", metavar="OUT.json", help="write a Chrome/Perfetto trace")
    run.add_argument("--engine", choices=ENGINES, default="jit")
    run.set_defaults(func=cmd_run)
    presets = sub.add_parser("presets", help="list chip presets with their peaks")
    presets.set_defaults(func=cmd_presets)
    listed = sub.add_parser("gallery", help="list the gallery's scenarios: the ids run, "
                                             "report, compare and sweep take")
    listed.add_argument("--lang", choices=LANGUAGES, default="en")
    listed.set_defaults(func=cmd_gallery)
    validate = sub.add_parser("validate", help="check a scenario, chip or model file")
    validate.add_argument("file", help="a scenario (.toml/.json), chip preset or model TOML")
    validate.set_defaults(func=cmd_validate)
    warmup = sub.add_parser("warmup", help="compile the emulator into numba's cache (once, "
                            "at install: make venv runs it)")
    warmup.set_defaults(func=cmd_warmup)
    for module in _subcommands():
        module.add_parser(sub)
    return ap


def say(exc: Exception) -> None:
    """One line on stderr, whatever the message holds (a file name with a newline or a
    terminal escape in it is shown escaped)."""
    text = " ".join(str(exc).split())
    print("error: " + "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text),
          file=sys.stderr)


def refusing(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The command with bad input (an InputError, a document refusal) turned into one line
    on stderr and exit code 2, also when it is called without :func:`main`."""
    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except InputError as exc:
            say(exc)
            return EXIT_INPUT
    return run


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit code says how it ended (see the module docstring)."""
    args = parser().parse_args(argv)
    try:
        code = refusing(args.func)(args)
        sys.stdout.flush()  # a reader that left shows here, not at the interpreter's exit
        return code
    except DeadlockError as exc:
        say(exc)
        return EXIT_DEADLOCK
    except BrokenPipeError:  # the reader left (`... presets | head`): no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


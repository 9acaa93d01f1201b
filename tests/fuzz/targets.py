"""Run one fuzz case against the project and say how it ended; this runs inside a worker
process of ``runner`` (under its memory limit), never in the test process itself.

A case is ``(surface, payload)``. The outcome is ``ok``, ``refused`` (an ``InputError`` or
another documented refusal), ``crash`` (any other exception: its type, message, the
deepest frame in project code and the last frame), or ``oom`` (``MemoryError``). A CLI call
is a crash too when it exits 2 without exactly one line on stderr, or prints a traceback.
"""
from __future__ import annotations

import contextlib
import io
import os
import tempfile
import traceback
from pathlib import Path

from explorer import cli
from explorer.core import Scenario, simulate
from explorer.core.emulator.engine import DeadlockError
from explorer.ui import state, widgets
from hardware_presets import load as load_chip
from hardware_presets.errors import InputError
from kernels import KERNELS
from kernels.sparse import data as sparse_data

from .strategies import ROOT, SMALL

#: exceptions that are the documented way of saying no
REFUSALS = (InputError, DeadlockError)
LOADERS = {"dict": Scenario.from_dict, "json": Scenario.from_json, "toml": Scenario.from_toml}
CLI_EXITS = (0, 2, 3, 4)  # ok, bad input, numerics failed, deadlock (explorer/cli.py)
MESSAGE_CHARS = 300


class CliOutputError(Exception):
    """The CLI answered, but not as documented (exit code or stderr)."""


def _scenario(payload: tuple[str, object]) -> str:
    """Load through the public loader, simulate, and round-trip the loaded scenario."""
    fmt, data = payload
    scenario = LOADERS[fmt](data)
    simulate(scenario)
    for text, load in ((scenario.to_json(), Scenario.from_json),
                       (scenario.to_toml(), Scenario.from_toml)):
        if load(text) != scenario:
            raise AssertionError(f"{fmt} round trip changed the scenario: {text[:200]!r}")
    return "ok"


def _stream() -> io.TextIOWrapper:
    """A strict UTF-8 text stream like a real terminal's (a lone surrogate fails)."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")


def _run_cli(argv: list[str]) -> tuple[int, str]:
    out, err = _stream(), _stream()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse's own refusals
            code = exc.code if isinstance(exc.code, int) else 2
        out.flush()
        err.flush()
    return code, err.buffer.getvalue().decode("utf-8", "replace")


def _cli(payload: tuple[tuple[str, ...], dict[str, bytes]]) -> str:
    """``python -m explorer ARGV`` in a fresh folder holding the case's files."""
    argv, files = payload
    home = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        for name, data in files.items():
            Path(folder, name).write_bytes(data)
        os.chdir(folder)
        try:
            code, stderr = _run_cli(list(argv))
        finally:
            os.chdir(home)
    lines = stderr.strip().splitlines()
    if code not in CLI_EXITS or "Traceback" in stderr or (code == 2 and len(lines) != 1):
        raise CliOutputError(f"{argv[0]}: exit {code} with {len(lines)} stderr lines: "
                             f"{stderr[:MESSAGE_CHARS]!r}")
    return "refused" if code == 2 else "ok"


def _npz(payload: bytes) -> str:
    sparse_data.load_npz(payload, "upload.npz")
    return "ok"


def _url(payload: tuple[str, dict[str, str]]) -> str:
    """What a page does with its URL: each value parsed on its own (a bad one is shown and
    skipped), then the page's scenario from the values that were kept."""
    page, query = payload
    specs = {s.name: s for s in KERNELS[page].params} | {"seed": widgets.SEED_SPEC}
    preset = query.get("preset", state.DEFAULT_PRESET)
    params, overrides, refused = {}, {}, 0
    for key, text in query.items():
        try:
            if key.startswith(state.CHIP_PREFIX):
                trial = {**overrides, key[len(state.CHIP_PREFIX):]: state._number(text)}
                load_chip(preset, **trial)
                overrides = trial
            elif key in specs:
                params[key] = widgets.url_value(specs[key], text)
        except InputError:
            refused += 1
    seed = params.pop("seed", 0)
    simulate(Scenario.make(preset, page, params, overrides, seed))
    return "refused" if refused else "ok"


SURFACES = {"scenario": _scenario, "cli": _cli, "npz": _npz, "url": _url}


def own_code(filename: str) -> bool:
    """A file of the project itself: not a library, not the fuzz harness."""
    path = Path(filename)
    return (path.is_relative_to(ROOT) and not path.is_relative_to(ROOT / "tests" / "fuzz")
            and ".venv" not in path.parts)


def frame_text(filename: str, line: int | str, name: str) -> str:
    path = Path(filename)
    return f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{line} {name}"


def _frame(frame: traceback.FrameSummary) -> str:
    return frame_text(frame.filename, frame.lineno, frame.name)


def project_frame(frames: list[traceback.FrameSummary]) -> str:
    """The deepest frame in the project's own code: where a fix goes, and the key crashes
    are grouped by (the last frame overall when none is the project's)."""
    own = [f for f in frames if own_code(f.filename)]
    return _frame(own[-1]) if own else (_frame(frames[-1]) if frames else "?")


def run_case(case: tuple[str, object]) -> dict[str, str]:
    """The outcome of one case (surface, payload) as plain data."""
    surface, payload = case
    return outcome_of(SURFACES[surface], payload)


def outcome_of(check, payload: object) -> dict[str, str]:
    """``check(payload)``'s kind ("ok" or "refused"), or the failure with its details."""
    try:
        return {"kind": check(payload)}
    except REFUSALS:
        return {"kind": "refused"}
    except Exception as exc:  # noqa: BLE001 - every other exception is the finding
        frames = traceback.extract_tb(exc.__traceback__)
        kind = "oom" if isinstance(exc, MemoryError) else "crash"
        return {"kind": kind, "type": type(exc).__name__,
                "message": str(exc)[:MESSAGE_CHARS], "where": project_frame(frames),
                "last": _frame(frames[-1]) if frames else "?"}


def warm_up() -> None:
    """Compile and load everything a case may need once, before the memory limit is set
    (numba's compiler needs more address space than any run), each kernel at its SMALL size
    or, without one, its defaults."""
    for kernel in KERNELS:
        run_case(("scenario", ("dict", {"kernel": kernel, "params": SMALL.get(kernel, {})})))

"""Parameter sweeps: one base scenario, one or two knobs, every combination simulated.

A knob is a kernel parameter (``n``, ``params.tile``) or a tunable chip field
(``chip.ub_KiB``, ``chip.vector_cores``). Its values are written ``NAME=START:STOP:STEP``
(STOP included when the steps land on it; ``STEP`` may be ``*FACTOR`` for a geometric
series such as ``n=1024:1048576:*4``) or listed, ``NAME=a,b,c``. Every value is checked
against the parameter's or field's range; a combination the kernel refuses as a whole
(a tile larger than UB, more cores than the chip has) is a row with its reason, not an
error of the sweep. The grid is capped at ``MAX_SCENARIOS``.

Points run through an :class:`~explorer.core.sweep_exec.Executor` (worker processes or
Dask); identical scenarios are simulated once per process (``RESULTS``, keyed by the
scenario's TOML). The outcome is a tidy table: one row per scenario with the swept
values, every metric, the numerical verdict and the reason of a refusal.
"""
from __future__ import annotations

import itertools
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import pandas as pd
import tomli_w

import kernels
from hardware_presets import FIELDS, FieldSpec
from hardware_presets.errors import InputError, Phrase
from kernels.common.params import ParamSpec

from .metrics import METRICS
from .scenario import Scenario
from .sweep_exec import Cancelled, Executor, Progress, run_point

MAX_AXES = 2
MAX_SCENARIOS = 2000
CHIP, PARAMS = "chip.", "params."
SYNTAX = "NAME=START:STOP:STEP (STEP may be *FACTOR) or NAME=a,b,c"
RESULT_COLUMNS = ("error", "numerics_passed", "bound_ratio", "norm_rel_error", *METRICS)
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


# ---- knobs: what can be swept ------------------------------------------------------------
@dataclass(frozen=True)
class Knob:
    """A sweepable kernel parameter (``target`` "params") or chip field ("overrides")."""

    name: str  # as the table and the command line write it: "n", "chip.ub_KiB"
    key: str
    target: str
    spec: ParamSpec | FieldSpec

    @property
    def numeric(self) -> bool:
        return self.spec.kind in (int, float)

    @property
    def field(self) -> str:
        return f"params.{self.key}" if self.target == "params" else self.name

    def allowed(self) -> str:
        return self.spec.allowed()

    def check(self, value: object) -> object:
        """The value in the knob's type, or an InputError naming the field and range."""
        if self.target == "params":
            return self.spec.check(value)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(self.field, value, self.allowed()) from None
        if self.spec.kind is int and not number.is_integer():
            raise InputError(self.field, value, self.allowed())
        if not (math.isfinite(number) and self.spec.min <= number <= self.spec.max):
            raise InputError(self.field, value, self.allowed())
        return self.spec.kind(number)


def knobs(kernel: str, numeric: bool = False) -> dict[str, Knob]:
    """The knobs of a kernel: its parameters with a range or choices, then the tunable
    chip fields (``numeric``: only those that take numbers)."""
    found = {s.name: Knob(s.name, s.name, "params", s) for s in kernels.get(kernel).params
             if s.choices is not None or s.kind in (int, float, bool)}
    found.update({CHIP + k: Knob(CHIP + k, k, "overrides", s) for k, s in FIELDS.items()
                  if s.tunable})
    return {n: k for n, k in found.items() if k.numeric or not numeric}


def find_knob(kernel: str, name: str) -> Knob:
    """The knob called ``name`` (``params.`` prefix optional), or an InputError listing
    what this kernel can sweep."""
    table = knobs(kernel)
    bare = name.strip().removeprefix(PARAMS)
    if bare in table:
        return table[bare]
    params = ", ".join(n for n in table if not n.startswith(CHIP))
    hint = Phrase("refusal.hint.did_you_mean_chip", name=CHIP + bare) if CHIP + bare in table \
        else Phrase("refusal.hint.chip_fields",
                    names=", ".join(n for n in table if n.startswith(CHIP)))
    raise InputError("sweep", name, Phrase("refusal.sweep.param", kernel=kernel, params=params),
                     hint)


# ---- values --------------------------------------------------------------------------------
def _number(text: str, knob: Knob, whole: bool | None = None) -> int | float:
    """A finite number (a whole one for an integer knob unless ``whole`` says not)."""
    whole = knob.spec.kind is int if whole is None else whole
    try:
        number = float(text.strip())
    except ValueError:
        raise InputError(knob.field, text.strip(), knob.allowed()) from None
    if not math.isfinite(number) or (whole and not number.is_integer()):
        raise InputError(knob.field, text.strip(), knob.allowed())
    return int(number) if whole else number


def _listed(text: str, knob: Knob) -> list:
    out = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            raise InputError(knob.field, text, Phrase("refusal.sweep.list",
                                                      syntax=Phrase("refusal.sweep.syntax")))
        if knob.spec.kind is bool and item.lower() in _TRUE + _FALSE:
            out.append(item.lower() in _TRUE)
        else:
            out.append(_number(item, knob) if knob.numeric else item)
    return out


def _count(start: float, stop: float, step: float, factor: bool) -> int | float:
    """How many values START:STOP:STEP has, computed without generating them; a step so
    small that the count overflows a float is ``inf`` (then refused, not expanded)."""
    span = math.log(stop / start) / math.log(step) if factor else (stop - start) / step
    return int(math.floor(span + 1e-9)) + 1 if span <= MAX_SCENARIOS else math.inf


def _series(text: str, knob: Knob) -> list:
    """START:STOP:STEP with STOP included, or START:STOP:*FACTOR (geometric)."""
    parts = text.split(":")
    if len(parts) != 3 or not knob.numeric:
        allowed = Phrase("refusal.sweep.syntax" if knob.numeric else "refusal.sweep.not_numeric")
        raise InputError(knob.field, text, allowed)
    start, stop = _number(parts[0], knob), _number(parts[1], knob)
    factor = parts[2].strip().startswith("*")
    step = _number(parts[2].strip().lstrip("*"), knob, whole=False if factor else None)
    if stop < start or step <= 0 or (factor and (step <= 1 or start <= 0)):
        raise InputError(knob.field, text, Phrase("refusal.sweep.order"))
    count = _count(start, stop, step, factor)
    if count > MAX_SCENARIOS:
        raise InputError(knob.field, text, Phrase("refusal.sweep.values", n=f"{MAX_SCENARIOS:,}"),
                         Phrase("refusal.hint.coarser"))
    raw = (start * step ** i if factor else start + i * step for i in range(count))
    values = [round(v) if knob.spec.kind is int else float(f"{v:.12g}") for v in raw]
    return list(dict.fromkeys(values))


@dataclass(frozen=True)
class Axis:
    """One swept knob and its values, in the order they were written."""

    knob: Knob
    values: tuple

    @property
    def name(self) -> str:
        return self.knob.name


def parse_axis(text: str, kernel: str) -> Axis:
    """``NAME=START:STOP:STEP`` or ``NAME=a,b,c``, each value checked against its range."""
    name, sep, spec = str(text).partition("=")
    if not sep or not name.strip() or not spec.strip():
        raise InputError("sweep", text, Phrase("refusal.sweep.syntax"))
    knob = find_knob(kernel, name)
    values = _series(spec, knob) if ":" in spec else _listed(spec, knob)
    return Axis(knob, tuple(knob.check(v) for v in values))


def parse_axes(texts, kernel: str) -> tuple[Axis, ...]:
    """One or two axes; refuses repeats and grids above ``MAX_SCENARIOS`` points."""
    texts = list(texts)
    if not 1 <= len(texts) <= MAX_AXES:
        raise InputError("sweep", len(texts), Phrase("refusal.sweep.axes", n=MAX_AXES))
    axes = tuple(parse_axis(text, kernel) for text in texts)
    if len({a.name for a in axes}) < len(axes):
        raise InputError("sweep", axes[-1].name, Phrase("refusal.sweep.once"))
    size = math.prod(len(a.values) for a in axes)
    if size > MAX_SCENARIOS:
        raise InputError("sweep", Phrase("refusal.value.scenarios", n=f"{size:,}"),
                         Phrase("refusal.sweep.scenarios", n=f"{MAX_SCENARIOS:,}"),
                         Phrase("refusal.hint.fewer_values"))
    return axes


# ---- the grid ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Sweep:
    """A base scenario and the axes swept over it (the first axis varies slowest)."""

    base: Scenario
    axes: tuple[Axis, ...]

    @classmethod
    def parse(cls, base: Scenario, texts) -> Sweep:
        return cls(base.validated(), parse_axes(texts, base.kernel))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    @property
    def size(self) -> int:
        return math.prod(len(a.values) for a in self.axes)

    def points(self) -> list[tuple[tuple, Scenario | InputError]]:
        """(swept values, scenario or the reason it is refused) per grid point."""
        out = []
        for combo in itertools.product(*(a.values for a in self.axes)):
            changes: dict[str, dict] = {"params": {}, "overrides": {}}
            for axis, value in zip(self.axes, combo):
                changes[axis.knob.target][axis.knob.key] = value
            try:
                out.append((combo, self.base.replace(**changes)))
            except InputError as exc:
                out.append((combo, exc))
        return out

    def to_toml(self) -> str:
        """The grid as data: what identifies it for caches and files."""
        axes = [{"name": a.name, "values": list(a.values)} for a in self.axes]
        return tomli_w.dumps({"base": self.base.to_dict(), "axes": axes})


# ---- running -----------------------------------------------------------------------------
class ResultCache:
    """Point results of this process keyed by scenario TOML (least recently used out)."""

    def __init__(self, max_entries: int = 10_000) -> None:
        self.max_entries, self.hits = max_entries, 0
        self._data: OrderedDict[str, dict] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> dict | None:
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
                self.hits += 1
            return found

    def put(self, key: str, value: dict) -> None:
        with self._lock:
            self._data[key] = value
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


RESULTS = ResultCache()


@dataclass
class SweepResult:
    """The table (one row per finished scenario, grid order) and how the run ended."""

    table: pd.DataFrame
    names: tuple[str, ...]
    total: int
    cancelled: bool = False
    refusals: dict[int, InputError] = field(default_factory=dict)  # row -> its InputError

    @property
    def refused(self) -> int:
        """Rows of refused points (their metrics are empty)."""
        return int((self.table["error"] != "").sum())

    @property
    def failed(self) -> int:
        """Rows whose numerical check failed (refused rows are neither passed nor failed)."""
        return int(self.table["numerics_passed"].eq(False).sum())

    def to_csv(self) -> str:
        return self.table.to_csv(index=False)


def _row(names, combo, outcome: dict) -> dict:
    row = dict(zip(names, combo))
    error = outcome.get("error")
    row.update(error=error["message"] if error else "",
               numerics_passed=outcome.get("numerics_passed"),
               bound_ratio=outcome.get("bound_ratio", math.nan),
               norm_rel_error=outcome.get("norm_rel_error", math.nan))
    metrics = outcome.get("metrics", {})
    row.update({m: metrics.get(m, None if m == "bound" else math.nan) for m in METRICS})
    return row


def _refusal(error: dict) -> InputError | None:
    if "field" not in error:
        return None
    return InputError(error["field"], error["value"], error["allowed"], error["hint"])


def _table(sweep: Sweep, points, outcomes: dict[str, dict]) -> SweepResult:
    """Rows in grid order for the points that have an outcome (refused ones included)."""
    rows, refusals = [], {}
    for combo, found, key in points:
        if isinstance(found, InputError):
            outcome, refusal = {"error": {"message": str(found)}}, found
        elif key in outcomes:
            outcome = outcomes[key]
            refusal = _refusal(outcome["error"]) if outcome.get("error") else None
        else:
            continue  # cancelled before it ran
        if refusal is not None:
            refusals[len(rows)] = refusal
        rows.append(_row(sweep.names, combo, outcome))
    table = pd.DataFrame(rows, columns=[*sweep.names, *RESULT_COLUMNS])
    table["numerics_passed"] = table["numerics_passed"].astype("boolean")
    return SweepResult(table, sweep.names, len(points), len(rows) < len(points), refusals)


def run_sweep(sweep: Sweep, executor: Executor, progress: Progress | None = None,
              cancelled: Cancelled | None = None, cache: ResultCache = RESULTS) -> SweepResult:
    """Simulate every point of the grid; cached scenarios and repeats run only once.
    ``progress(done, total)`` counts grid points (refused and cached ones are done at
    once); ``cancelled()`` stops the run and the result holds the finished part."""
    points = [(combo, s, s.to_toml() if isinstance(s, Scenario) else None)
              for combo, s in sweep.points()]
    scenarios = {key: s for _, s, key in points if key is not None}
    outcomes = {k: v for k in scenarios if (v := cache.get(k)) is not None}
    todo = [k for k in scenarios if k not in outcomes]
    waiting = sum(1 for *_, key in points if key is not None and key not in outcomes)

    def tick(finished: int, _total: int) -> None:
        if progress:
            share = finished * waiting // max(1, len(todo))
            progress(len(points) - waiting + share, len(points))

    tick(0, len(todo))
    payloads = [scenarios[k].to_dict() for k in todo]
    fresh = executor.map(run_point, payloads, tick, cancelled) if todo else {}
    for index, outcome in fresh.items():
        cache.put(todo[index], outcome)
        outcomes[todo[index]] = outcome
    return _table(sweep, points, outcomes)


class BackgroundSweep:
    """A sweep running on a thread of its own, so that a page can poll its progress and
    cancel it between reruns. ``close_executor``: the executor is this run's alone (a
    Dask client) and is closed when the run ends."""

    def __init__(self, sweep: Sweep, executor: Executor, *, close_executor: bool = False,
                 cache: ResultCache = RESULTS) -> None:
        self.sweep, self.done, self.total = sweep, 0, sweep.size
        self.result: SweepResult | None = None
        self.error: Exception | None = None
        self._executor, self._close, self._cache = executor, close_executor, cache
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sweep", daemon=True)

    def start(self) -> BackgroundSweep:
        self._thread.start()
        return self

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def _run(self) -> None:
        try:
            self.result = run_sweep(self.sweep, self._executor, self._progress,
                                    self._cancel.is_set, self._cache)
        except Exception as exc:  # shown by the page; the thread must not die silently
            self.error = exc
        finally:
            if self._close:
                self._executor.close()

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelling(self) -> bool:
        return self._cancel.is_set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run ends (or ``timeout``); whether it has ended."""
        self._thread.join(timeout)
        return not self.running

"""Grading a puzzle solution inside the sandbox child (``grade_in_child``), and the compact
form in which the timed Program travels back to the server (``pack_program`` /
``unpack_program``).

The child has run the student's module; ``grade_in_child(namespace, payload)`` launches
``namespace[puzzle.entry]`` with ``kernels.ascendc.launch`` on the puzzle's chip for each
value case (``cases(seed)``) and then for the timing case, compares every output with the
float64 expectation (``|got - expected| <= atol + rtol |expected|``), and returns JSON:

* ``cases``: per case run, its name, block_dim, tiling, GM sizes and the comparison (the
  worst element: output, index, value, expectation, allowed error; mismatch count). The
  first failing case ends the grading (the cases after it are not run).
* ``error``: a DSL error (``AscendCError``) or a missing entry: message id, values, line,
  block and the case it happened in; None when every launch finished.
* ``timing``: the timing case's Program, ``pack_program``'d (None unless every case passed).
* ``notes``: the DSL's warnings (message id, values, line, block), once each.

Nothing here is translated; the server (``explorer.core.puzzles``) turns this into a
verdict. Imports only numpy, the DSL and ``kernels.common`` (it runs in the child).
"""
from __future__ import annotations

import base64
import math
import types
import zlib

import numpy as np

import hardware_presets as hp
from kernels.ascendc import AscendCError, LimitError, launch
from kernels.common.program import COLUMNS, Program

from . import Case, get

#: instructions one launch of a puzzle may issue (a puzzle's cases are small: a solution
#: that needs more is looping without end or copying byte by byte)
MAX_INSTRUCTIONS = 60_000
#: wall-clock seconds one launch may run in the child
LAUNCH_TIMEOUT_S = 20.0
#: the largest Program (instructions) ``unpack_program`` accepts
MAX_PACKED_INSTRUCTIONS = MAX_INSTRUCTIONS
_ARRAY_FIELDS = ("dep_ptr", "dep_idx", "region_bytes", "barrier_size", "lines", "blocks")
_ARRAY_DTYPES = {"dep_ptr": np.int64, "dep_idx": np.int32, "region_bytes": np.int64,
                 "barrier_size": np.int32, "lines": np.int32, "blocks": np.int32}


def grade_in_child(namespace: dict, payload: dict) -> dict:
    """Grade the student's module (``namespace``) on puzzle ``payload["puzzle"]``.

    ``payload``: ``puzzle`` (id), ``seed`` (int: the value cases' draw), ``values`` (bool,
    default True: run the value cases; False runs only the timing case, as the server
    does for the reference solution). Returns the JSON described in the module doc."""
    puzzle = get(payload["puzzle"])
    chip = hp.load(puzzle.preset)
    cases = puzzle.cases(int(payload.get("seed", 0))) if payload.get("values", True) else []
    result = {"cases": [], "error": None, "timing": None, "notes": []}
    kernel = namespace.get(puzzle.entry)
    if not callable(kernel):
        result["error"] = {"msg_id": "puzzle.error.no_entry", "values": {"entry": puzzle.entry},
                           "line": None, "block": None, "case": "", "limit": False}
        return result
    seen_notes: set[tuple] = set()
    run = None
    for case in [*cases, puzzle.timing_case()]:
        try:
            run = launch(kernel, chip, case.block_dim, case.args,
                         types.SimpleNamespace(**case.tiling), kernel_type=puzzle.kernel_type,
                         name=puzzle.id, max_instructions=MAX_INSTRUCTIONS,
                         timeout_s=LAUNCH_TIMEOUT_S)
        except AscendCError as exc:
            if isinstance(exc.__cause__, (MemoryError, RecursionError)):
                raise exc.__cause__ from None  # the sandbox's memory / recursion limit
            result["error"] = {"msg_id": exc.message_id, "values": _plain_values(exc.values),
                               "line": exc.line, "block": exc.core, "case": case.name,
                               "limit": isinstance(exc, LimitError)}
            return result
        for note in run.notes:
            key = (note.message_id, note.line)
            if key not in seen_notes:
                seen_notes.add(key)
                result["notes"].append({"msg_id": note.message_id,
                                        "values": _plain_values(note.values),
                                        "line": note.line, "block": note.block})
        compared = compare(case, run.outputs)
        result["cases"].append(compared)
        if not compared["passed"]:
            return result
    result["timing"] = pack_program(run.program, run.lines, run.blocks)
    return result


def describe(case: Case) -> dict:
    """What a case is, for the student: block_dim, tiling and the size of each GM array."""
    return {"name": case.name, "block_dim": case.block_dim,
            "tiling": _plain_values(case.tiling),
            "sizes": {name: int(array.size) for name, array in case.args.items()}}


def compare(case: Case, outputs: dict[str, np.ndarray]) -> dict:
    """The case's outputs against ``expected``: passed, mismatching elements, the worst
    one (the largest error relative to what is allowed) and the first wrong one."""
    found = {**describe(case), "passed": True, "elements": 0, "mismatches": 0,
             "max_abs_error": 0.0, "max_rel_error": 0.0, "output": "", "index": None,
             "got": None, "expected": None, "allowed": None, "first": None}
    worst = None
    for out in case.outputs:
        got = np.asarray(outputs[out], np.float64).reshape(-1)
        want = np.asarray(case.expected[out], np.float64).reshape(-1)
        allowed = case.atol + case.rtol * np.abs(want)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(got - want)
            err = np.where(got == want, 0.0, err)  # equal infinities are right
        bad = ~(err <= allowed)  # NaN is bad
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            score = np.where(np.isfinite(err), err, np.inf) / np.maximum(
                allowed, np.finfo(np.float64).tiny)
        score = np.where(bad, np.maximum(score, 1.0), score)
        scale = np.abs(want)
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where(scale > 0, err / scale, np.where(err > 0, np.inf, 0.0))
        if bad.any() and found["first"] is None:  # the first wrong element, in order
            j = int(np.argmax(bad))
            found["first"] = {"output": out, "index": j, "got": _number(got[j]),
                              "expected": _number(want[j])}
        found["elements"] += int(got.size)
        found["mismatches"] += int(bad.sum())
        found["max_abs_error"] = max(found["max_abs_error"], _finite_max(err))
        found["max_rel_error"] = max(found["max_rel_error"], _finite_max(rel))
        if got.size:
            i = int(np.argmax(np.where(bad, score, -1.0))) if bad.any() else \
                int(np.argmax(score))
            key = (bool(bad[i]), float(score[i]))
            if worst is None or key > worst:
                worst = key
                found.update(output=out, index=i, got=_number(got[i]),
                             expected=_number(want[i]), allowed=_number(allowed[i]))
    found["passed"] = found["mismatches"] == 0
    return found


def _finite_max(values: np.ndarray) -> float:
    if not values.size:
        return 0.0
    top = float(np.nanmax(np.where(np.isnan(values), np.inf, values)))
    return top if math.isfinite(top) else float("inf")


def _number(value: object) -> float | str:
    """A JSON number (NaN and infinities as text: JSON has none)."""
    value = float(value)
    return value if math.isfinite(value) else str(value)


def _plain_values(values: dict) -> dict:
    """Message values as JSON scalars (others as text)."""
    plain = {}
    for key, value in dict(values).items():
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            value = value.item()
        if value is None or isinstance(value, (bool, int, str)):
            plain[str(key)] = value
        elif isinstance(value, float):
            plain[str(key)] = _number(value)
        else:
            plain[str(key)] = str(value)[:300]
    return plain


# ---- the Program, packed ---------------------------------------------------------------
def _pack_array(array: np.ndarray) -> str:
    data = np.ascontiguousarray(array).tobytes()
    return base64.b64encode(zlib.compress(data, 6)).decode("ascii")


def _unpack_array(text: object, dtype, count: int) -> np.ndarray:
    """``count`` elements of ``dtype`` from ``_pack_array``'s text, refused when it holds
    anything else (the child is not trusted)."""
    if not isinstance(text, str):
        raise ValueError("a packed array must be text")
    size = count * np.dtype(dtype).itemsize
    inflate = zlib.decompressobj()
    data = inflate.decompress(base64.b64decode(text.encode("ascii"), validate=True), size + 1)
    if len(data) != size or inflate.unconsumed_tail or not inflate.eof:
        raise ValueError(f"a packed array does not hold {count} {np.dtype(dtype).name}")
    return np.frombuffer(data, dtype=dtype).copy()


def pack_program(program: Program, lines: np.ndarray, blocks: np.ndarray) -> dict:
    """A Program (and the student's line and block per instruction) as JSON data: each
    column deflated and base64-coded."""
    return {
        "name": program.name, "n": len(program), "op_names": list(program.op_names),
        "n_deps": len(program.dep_idx), "n_regions": len(program.region_bytes),
        "n_barriers": len(program.barrier_size),
        "launches": [[name, int(first)] for name, first in program.launches],
        "cols": {name: _pack_array(program.cols[name]) for name in COLUMNS},
        "dep_ptr": _pack_array(program.dep_ptr), "dep_idx": _pack_array(program.dep_idx),
        "region_bytes": _pack_array(program.region_bytes),
        "barrier_size": _pack_array(program.barrier_size),
        "lines": _pack_array(np.asarray(lines, np.int32)),
        "blocks": _pack_array(np.asarray(blocks, np.int32)),
    }


def unpack_program(data: dict, chip: hp.Chip) -> tuple[Program, np.ndarray, np.ndarray]:
    """(Program, lines, blocks) from ``pack_program``'s data, every array and index checked
    against ``chip`` (a ValueError for anything a Program could not hold)."""
    if not isinstance(data, dict):
        raise ValueError("a packed program must be a dict")
    n, n_deps = _count(data, "n"), _count(data, "n_deps")
    n_regions, n_barriers = _count(data, "n_regions"), _count(data, "n_barriers")
    if n > MAX_PACKED_INSTRUCTIONS or n_deps > 64 * max(n, 1):
        raise ValueError("the packed program is too large")
    ops = data.get("op_names")
    if not isinstance(ops, list) or not all(isinstance(o, str) and len(o) < 100 for o in ops) \
            or len(ops) > 1000:
        raise ValueError("op_names must be a short list of texts")
    cols_in = data.get("cols")
    if not isinstance(cols_in, dict) or set(cols_in) != set(COLUMNS):
        raise ValueError("the packed program's columns are not the Program's")
    cols = {name: _unpack_array(cols_in[name], dtype, n)
            for name, (dtype, _) in COLUMNS.items()}
    counts = {"dep_ptr": n + 1, "dep_idx": n_deps, "region_bytes": n_regions,
              "barrier_size": n_barriers, "lines": n, "blocks": n}
    arrays = {name: _unpack_array(data.get(name), _ARRAY_DTYPES[name], counts[name])
              for name in _ARRAY_FIELDS}
    _check_program(cols, arrays, len(ops), chip)
    launches = data.get("launches") or []
    if not isinstance(launches, list) or launches:
        raise ValueError("a puzzle's program is one launch")
    name = data.get("name")
    program = Program(name if isinstance(name, str) else "puzzle", cols, arrays["dep_ptr"],
                      arrays["dep_idx"], arrays["region_bytes"], tuple(ops),
                      arrays["barrier_size"])
    return program, arrays["lines"], arrays["blocks"]


def _count(data: dict, key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key} must be a count")
    return value


def _within(values: np.ndarray, low: int, high: int, what: str) -> None:
    if values.size and (int(values.min()) < low or int(values.max()) > high):
        raise ValueError(f"{what} out of range")


def _check_program(cols: dict, arrays: dict, n_ops: int, chip: hp.Chip) -> None:
    """Every index of an unpacked program within what it indexes."""
    n = len(cols["core"])
    _within(cols["core"], 0, len(chip.core_kinds()) - 1, "core")
    _within(cols["pipe"], 0, 6, "pipe")
    _within(cols["kind"], 0, 4, "kind")
    _within(cols["op"], 0, n_ops - 1, "op")
    _within(cols["src"], -1, 5, "src")
    _within(cols["dst"], -1, 5, "dst")
    _within(cols["dtype"], -1, 7, "dtype")
    _within(cols["vclass"], -1, 2, "vclass")
    _within(cols["region"], -1, len(arrays["region_bytes"]) - 1, "region")
    _within(cols["barrier"], -1, len(arrays["barrier_size"]) - 1, "barrier")
    _within(cols["seq"], 0, 2 ** 40, "seq")
    for name in ("nbytes", "m", "n", "k", "elems", "task"):
        _within(cols[name], -1 if name == "task" else 0, 2 ** 40, name)
    if not np.all(np.isfinite(cols["cycles"])) or (cols["cycles"] < 0).any():
        raise ValueError("cycles out of range")
    ptr = arrays["dep_ptr"]
    if ptr[0] != 0 or ptr[-1] != len(arrays["dep_idx"]) or (np.diff(ptr) < 0).any():
        raise ValueError("dep_ptr is not a CSR index")
    _within(arrays["dep_idx"], 0, n - 1, "dep_idx")
    _within(arrays["region_bytes"], 0, 2 ** 40, "region_bytes")
    _within(arrays["barrier_size"], 1, len(chip.core_kinds()), "barrier_size")

"""Hostile values and sizes (issue 16's fuzz findings) end in an InputError that names the
field, never in a raw exception, a memory error or a hang; huge sizes are refused from
the parameters before anything is allocated (checked in a child process whose address
space is capped at 1 GiB)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from explorer.core import Scenario, simulate
from hardware_presets.errors import InputError, shorten
from kernels.common import budget
from kernels.sparse import data as sd

HUGE = 10 ** 400
#: (name, scenario dict, field the refusal names)
REPROS = [
    ("override_vector_bytes", {"overrides": {"vector_bytes_per_cycle": HUGE}},
     "910B2 override: vector_bytes_per_cycle"),
    ("override_l2_bandwidth", {"overrides": {"l2_bandwidth_GBps": HUGE}},
     "910B2 override: l2_bandwidth_GBps"),
    ("gemm_list_dtype", {"kernel": "gemm", "params": {"dtype_in": ["fp16"]}},
     "params.dtype_in"),
    ("decode_bool_cost", {"kernel": "decode", "params": {"inter_core_cost": True}},
     "params.inter_core_cost"),
    ("gemm_bool_scale", {"kernel": "gemm", "params": {"quant_scale": True}},
     "params.quant_scale"),
    ("override_bool_l0b", {"kernel": "gemm", "overrides": {"l0b_KiB": True}},
     "910B2 override: l0b_KiB"),
    ("decode_block_table", {"kernel": "decode", "params": {
        "batch": 4096, "mean_len": 1048576, "max_len": 1048576, "allow_overcommit": True,
        "phases": "append", "block_size": 1}}, "params.block_size"),
    ("vector_add_huge_n", {"params": {"n": 17179869184, "tile": 4096}}, "instructions"),
    ("vector_add_910B3", {"preset": "910B3", "params": {
        "n": 16463175720, "block_dim": 18, "tile": 4096, "dtype": "int16"}}, "instructions"),
    ("gemm_narrow_tiles", {"kernel": "gemm", "preset": "910B3", "params": {
        "N": 37079, "base_n": 16, "db_l0": False}}, "instructions"),
    ("vector_add_one_core", {"preset": "910B1", "params": {
        "n": 9982125731, "block_dim": 1, "tile": 4096}}, "instructions"),
    ("gemm_cluster", {"kernel": "gemm", "preset": "910", "params": {
        "N": 36645, "K": 65536, "depth_k": 7, "grid_y": 127, "policy": "cluster"}},
     "instructions"),
]


def _refusal(data: dict) -> InputError:
    with pytest.raises(InputError) as err:
        simulate(Scenario.from_dict(data))
    return err.value


@pytest.mark.parametrize("name,data,field", REPROS, ids=[r[0] for r in REPROS])
def test_each_repro_is_refused_naming_its_field(name, data, field):
    exc = _refusal(data)
    assert exc.field == field
    assert "not allowed" in str(exc) and exc.allowed


def test_refusals_of_sizes_say_the_limit_and_the_setting():
    exc = _refusal(dict(REPROS[7][1]))
    assert f"at most {budget.default_instruction_cap():,}" in exc.allowed
    assert budget.INSTRUCTIONS_ENV in exc.allowed and "n may be at most" in exc.hint
    exc = _refusal(dict(REPROS[6][1]))
    assert budget.ARRAY_BYTES_ENV in exc.allowed


_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from explorer.core import Scenario, simulate
from hardware_presets.errors import InputError
fields = []
for data in json.loads(sys.stdin.read()):
    try:
        simulate(Scenario.from_dict(data))
        fields.append(None)
    except InputError as exc:
        fields.append(exc.field)
print(json.dumps(fields))
"""


def test_every_repro_is_refused_within_one_gib_of_address_space():
    """The sizes are refused from the parameters: a child limited to 1 GiB gets the same
    refusals, not a MemoryError (huge ints cannot cross JSON, so those stay in-process)."""
    sized = [r for r in REPROS if HUGE not in r[1].get("overrides", {}).values()]
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps([r[1] for r in sized]),
                         capture_output=True, text=True, timeout=600, check=True, cwd=root,
                         env=env)
    assert json.loads(out.stdout) == [r[2] for r in sized]


def test_an_empty_instruction_batch_adds_nothing():
    """Every sequence of length 1 has no cached token to copy: the concat append emits no
    copy at all instead of failing to broadcast an empty array."""
    res = simulate(Scenario.from_dict({"kernel": "decode", "params": {
        "mean_len": 1, "append": "concat", "batch": 2, "max_len": 8}}))
    assert "CopyIn cache tile" not in set(res.timeline["op"].astype(str))
    assert res.numerics.passed


@pytest.mark.parametrize("kernel", ["vector_add", "gemm", "decode"])
@pytest.mark.parametrize("bad", [[1], {"a": 1}, None, HUGE, -HUGE, float("nan"), "x" * 70000])
def test_no_parameter_takes_a_non_scalar_or_a_huge_value(kernel, bad):
    """Every parameter of every kernel refuses lists, tables, None, out-of-range integers,
    NaN and oversized texts with an InputError naming it."""
    import kernels
    for spec in kernels.get(kernel).params:
        with pytest.raises(InputError) as err:
            Scenario.from_dict({"kernel": kernel, "params": {spec.name: bad}})
        assert err.value.field == f"params.{spec.name}", spec.name


@pytest.mark.parametrize("kernel", ["vector_add", "gemm", "decode"])
def test_bools_are_not_numbers_and_numbers_are_not_bools(kernel):
    import kernels
    for spec in kernels.get(kernel).params:
        value = 1 if spec.kind is bool else True
        with pytest.raises(InputError) as err:
            Scenario.from_dict({"kernel": kernel, "params": {spec.name: value}})
        assert err.value.field == f"params.{spec.name}", spec.name


@pytest.mark.parametrize("value", [3.7e-227, 0.5])
def test_a_bandwidth_that_can_be_absent_is_zero_or_at_least_one_byte_per_cycle(value):
    """A fuzz finding: 3.7e-227 B/cycle made copies end after 10^230 ns (the event loop
    never got there). 0 still means "no fixpipe"."""
    with pytest.raises(InputError, match="fixpipe_gm_bytes_per_cycle.*0 \\(no fixpipe"):
        Scenario.from_dict({"kernel": "gemm", "overrides": {"fixpipe_gm_bytes_per_cycle": value}})
    assert Scenario.from_dict({"kernel": "gemm", "preset": "910B2",
                               "overrides": {"fixpipe_gm_bytes_per_cycle": 1}})


def test_scenario_names_and_keys_must_be_text():
    for data, field in (({"preset": ["910B2"]}, "scenario: preset"),
                        ({"kernel": HUGE}, "scenario: kernel"),
                        ({"params": {1: 2}}, "scenario: params"),
                        ({1: 2, "seed": 0}, "scenario")):
        with pytest.raises(InputError) as err:
            Scenario.from_dict(data)
        assert err.value.field == field


def test_a_huge_value_is_shown_short_and_never_breaks_formatting():
    exc = InputError("f", 10 ** 5000, "small")
    assert "an integer of about 5,001 digits" in str(exc) and len(str(exc)) < 100
    assert len(str(InputError("f", "y" * 10 ** 6, "short"))) < 200
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert len(str(InputError("f", deep, "flat"))) < 200
    assert shorten(12) == 12 and shorten("fp16") == "fp16" and shorten(True) is True


def test_the_budgets_are_settings(monkeypatch):
    monkeypatch.setenv(budget.ARRAY_BYTES_ENV, str(350 * 1000))
    assert budget.default_instruction_cap() == 1000
    monkeypatch.setenv(budget.INSTRUCTIONS_ENV, "77")
    assert budget.default_instruction_cap() == 77
    monkeypatch.setenv(budget.INSTRUCTIONS_ENV, "many")
    with pytest.raises(InputError) as err:
        budget.default_instruction_cap()
    assert err.value.field == budget.INSTRUCTIONS_ENV


def test_a_lower_array_budget_refuses_smaller_block_tables(monkeypatch):
    data = {"kernel": "decode", "params": {"batch": 64, "mean_len": 4096, "max_len": 4096,
                                           "block_size": 16, "phases": "append"}}
    assert simulate(Scenario.from_dict(data)).numerics.passed
    monkeypatch.setenv(budget.ARRAY_BYTES_ENV, "1000")
    assert _refusal(data).field == "params.block_size"


# ---- uploaded sparse-attention dumps ---------------------------------------------------

def _dump() -> bytes:
    rng = np.random.default_rng(0)
    buf = io.BytesIO()
    np.savez_compressed(buf, q=rng.standard_normal((4, 16)), k=rng.standard_normal((2, 40, 16)),
                        v=rng.standard_normal((2, 40, 16)))
    return buf.getvalue()


def _patched(data: bytes, local: int, central: int, value: int, width: int = 2) -> bytes:
    """``data`` with a field of the first member's local header and central entry set."""
    out = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        first = archive.infolist()[0]
    cd = data.find(b"PK\x01\x02")  # the first central entry belongs to the first member
    for at in (first.header_offset + local, cd + central):
        out[at:at + width] = value.to_bytes(width, "little")
    return bytes(out)


@pytest.mark.parametrize("method", [9, 99, 12])  # deflate64, AES, bzip2
def test_dumps_with_a_compression_npz_never_writes_are_refused(method):
    with pytest.raises(InputError) as err:
        sd.load_npz(_patched(_dump(), 8, 10, method), "dump.npz")
    assert err.value.field == "q in dump.npz" and "stored (0) or deflated (8)" in err.value.allowed


def test_encrypted_dumps_are_refused():
    with pytest.raises(InputError) as err:
        sd.load_npz(_patched(_dump(), 6, 8, 0x1 | 0x8), "dump.npz")
    assert err.value.field == "q in dump.npz" and "encrypted" in str(err.value)


def test_a_corrupt_deflate_stream_is_refused():
    data = bytearray(_dump())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        info = archive.infolist()[1]
    at = info.header_offset  # the local header's own name and extra lengths
    start = at + 30 + int.from_bytes(data[at + 26:at + 28], "little") + \
        int.from_bytes(data[at + 28:at + 30], "little")
    data[start:start + 8] = b"\xff" * 8  # an invalid deflate block type
    with pytest.raises(InputError) as err:
        sd.load_npz(bytes(data), "dump.npz")
    assert err.value.field == "k in dump.npz"


def test_a_directory_of_a_million_members_is_refused_before_it_is_parsed():
    data = bytearray(_dump())
    eocd = data.rfind(b"PK\x05\x06")
    data[eocd + 8:eocd + 12] = (60000).to_bytes(2, "little") * 2
    with pytest.raises(InputError) as err:
        sd.load_npz(bytes(data), "dump.npz")
    assert err.value.field == "members in dump.npz"


def test_stated_sizes_over_the_array_budget_are_refused_before_inflating(monkeypatch):
    monkeypatch.setenv(budget.ARRAY_BYTES_ENV, "4096")
    with pytest.raises(InputError) as err:
        sd.load_npz(_dump(), "dump.npz")
    assert err.value.field == "arrays in dump.npz"
    assert budget.ARRAY_BYTES_ENV in err.value.allowed


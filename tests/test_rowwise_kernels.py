"""What RMSNorm, RoPE and SwiGLU share as row-wise vector kernels (kernels.common.rows),
checked on each as relations, never as times: more rows take longer, double buffering is
not slower, one core is much slower than all of them, and a bad parameter in a scenario
file is exit code 2 naming the field. Their own numerics and programs are in
tests/test_<kernel>.py."""
from __future__ import annotations

import json

import pytest

from explorer import cli
from explorer.core import Scenario, simulate

#: a width per kernel that keeps every run small
WIDTH = {"rmsnorm": {"hidden": 1024}, "rope": {"q_heads": 4, "kv_heads": 2, "head_dim": 64},
         "swiglu": {"intermediate": 1024}}
#: a parameter each kernel refuses, with its field
BAD = {"rmsnorm": ("hidden", 24), "rope": ("head_dim", 24), "swiglu": ("tile_cols", 20)}


def makespan(kernel: str, **kw) -> float:
    return simulate(Scenario.make("910B2", kernel, {**WIDTH[kernel], **kw})).makespan_ns


@pytest.mark.parametrize("kernel", sorted(WIDTH))
def test_more_rows_take_longer(kernel):
    times = [makespan(kernel, rows=r, block_dim=8) for r in (16, 64, 256)]
    assert times == sorted(times) and len(set(times)) == 3, times


@pytest.mark.parametrize("kernel", sorted(WIDTH))
def test_double_buffering_is_not_slower(kernel):
    one, two = (makespan(kernel, rows=32, block_dim=4, buffer_num=b) for b in (1, 2))
    assert two <= one


@pytest.mark.parametrize("kernel", sorted(WIDTH))
def test_one_core_is_slower_than_all(kernel):
    one, every = (makespan(kernel, rows=96, block_dim=b) for b in (1, 0))
    assert every * 4 < one, (one, every)


@pytest.mark.parametrize("kernel", sorted(BAD))
def test_cli_refusal_exits_2(kernel, tmp_path, capsys):
    name, value = BAD[kernel]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"kernel": kernel, "params": {name: value}}))
    assert cli.main(["run", str(path)]) == 2
    assert f"params.{name}" in capsys.readouterr().err

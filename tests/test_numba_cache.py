"""A numba cache left by older code (a type since removed) is compiled over, not an error."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CODE = """
from typing import NamedTuple
import numpy as np
from numba import njit
import explorer.core.emulator._jit  # the engine's numba package (its cache guard)

class {name}(NamedTuple):
    values: np.ndarray

@njit(cache=True)
def total(record):
    return record.values.sum()

print(total({name}(np.arange(4.0))))
"""


def _run(folder: Path, name: str) -> subprocess.CompletedProcess:
    (folder / "cached.py").write_text(textwrap.dedent(CODE.format(name=name)))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "cache"),
           "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}
    return subprocess.run([sys.executable, "-c", "import cached"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_cache_naming_a_removed_type_is_compiled_over(tmp_path):
    first = _run(tmp_path, "Before")
    assert first.returncode == 0 and first.stdout.strip() == "6.0", first.stderr
    assert list((tmp_path / "cache").rglob("*.nbi"))  # an index that names Before
    # the type is renamed: the index's pickled signature names a class that is gone
    second = _run(tmp_path, "After")
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "6.0"

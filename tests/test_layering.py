"""The layers of DESIGN.md section 2, checked by walking every import with ``ast``.

hardware_presets <- kernels <- explorer.core <- explorer.plots <- explorer.ui <- app.py

A layer may import the ones to its left, never to its right; the UI-free layers never
import streamlit or plotly; numba lives only in explorer/core/emulator/_jit/ (tests and
benchmarks may use it too). Every import counts: top level, inside functions, relative
(``from ..plots import x``), ``from pkg import submodule`` and ``importlib.import_module``
with a literal name. Failures name file:line.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
UI_LIBS = ("streamlit", "plotly")
ABOVE_LIBRARY = ("app", "tests", "bench")

# (folder or file, forbidden import prefixes, why)
RULES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("hardware_presets", ("kernels", "explorer", *ABOVE_LIBRARY, *UI_LIBS),
     "hardware_presets is the bottom layer"),
    ("kernels", ("explorer", *ABOVE_LIBRARY, *UI_LIBS), "kernels sits below explorer"),
    ("explorer/core", ("explorer.plots", "explorer.ui", *ABOVE_LIBRARY, *UI_LIBS),
     "explorer.core is UI-free"),
    # Importing explorer.core runs explorer/__init__.py first: it must be as UI-free.
    ("explorer/__init__.py", ("explorer.plots", "explorer.ui", *ABOVE_LIBRARY, *UI_LIBS),
     "explorer/__init__.py runs on every import of explorer.core"),
    ("explorer/plots", ("explorer.ui", "streamlit", *ABOVE_LIBRARY),
     "explorer.plots are pure figure functions"),
    ("explorer/ui", ABOVE_LIBRARY, "explorer.ui sits below app.py"),
)
NUMBA_HOME = "explorer/core/emulator/_jit/"
NUMBA_ALLOWED_UNDER = ("tests/", "bench/")
SKIP_DIRS = {"__pycache__", "node_modules", "build", "dist", "test-output"}


def python_files(root: Path) -> list[Path]:
    """Every .py file of the project (no hidden folders, caches or virtual environments)."""
    found: list[Path] = []
    for path in sorted(root.iterdir()):
        if path.is_dir():
            if path.name.startswith(".") or path.name in SKIP_DIRS:
                continue
            if (path / "pyvenv.cfg").exists():
                continue
            found.extend(python_files(path))
        elif path.suffix == ".py":
            found.append(path)
    return found


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, rel: Path) -> list[tuple[int, str]]:
    """(line, dotted module name) for every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
    package = module_name(rel).split(".")
    if rel.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{a.name}".strip(".")) for a in node.names)
        elif _is_import_call(node):
            found.append((node.lineno, node.args[0].value))
    return found


def _is_import_call(node: ast.AST) -> bool:
    """``importlib.import_module("x")`` or ``__import__("x")`` with a literal name."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    arg = node.args[0]
    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__")


def _matches(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _applies(rule_path: str, rel: str) -> bool:
    return rel == rule_path if rule_path.endswith(".py") else rel.startswith(rule_path + "/")


def violations(root: Path) -> list[str]:
    """Every broken layering rule under ``root``, as 'file:line: message'."""
    problems: list[str] = []
    for path in python_files(root):
        rel = path.relative_to(root)
        rel_s = rel.as_posix()
        try:
            found = imports(path, rel)
        except SyntaxError as exc:
            problems.append(f"{rel_s}:{exc.lineno}: cannot be parsed: {exc.msg}")
            continue
        for line, name in found:
            for rule_path, forbidden, why in RULES:
                hit = next((p for p in forbidden if _matches(name, p)), None)
                if hit and _applies(rule_path, rel_s):
                    problems.append(f"{rel_s}:{line}: imports {name} ({why}; no {hit})")
            numba_ok = rel_s.startswith((NUMBA_HOME, *NUMBA_ALLOWED_UNDER))
            if _matches(name, "numba") and not numba_ok:
                problems.append(f"{rel_s}:{line}: imports {name} (numba only in {NUMBA_HOME})")
    return sorted(set(problems))


def test_project_keeps_its_layers():
    problems = violations(REPO_ROOT)
    assert not problems, "layering broken:\n" + "\n".join(problems)


def test_walker_sees_the_project():
    files = {p.relative_to(REPO_ROOT).as_posix() for p in python_files(REPO_ROOT)}
    assert "explorer/core/i18n.py" in files
    assert "tests/test_layering.py" in files
    assert not any(f.startswith(".venv/") for f in files)


PLANTED = {
    "hardware_presets/schema.py": "import numpy\nfrom kernels import program\n",
    "kernels/gemm/kernel.py": "import numpy as np\n\ndef f():\n    import explorer.core.scenario\n",
    "explorer/__init__.py": '"""pkg."""\n',
    "explorer/core/__init__.py": "",
    "explorer/core/metrics.py": "from ..plots import timeline\nimport plotly.graph_objects as go\n",
    "explorer/core/report.py": "from explorer import ui\n",
    "explorer/core/emulator/__init__.py": "",
    "explorer/core/emulator/_jit/events.py": "import numba\nfrom numba import njit\n",
    "explorer/core/emulator/engine.py": "from . import _jit\nfrom numba import prange\n",
    "explorer/core/scenario.py": "import importlib\nimportlib.import_module('streamlit')\n",
    "explorer/plots/roofline.py": "import plotly\nfrom .. import core\nimport streamlit as st\n",
    "explorer/ui/page.py": "import streamlit\nimport app\n",
    "tests/test_x.py": "import numba\nimport streamlit\n",
    "bench/engine.py": "import numba\n",
    "app.py": "import streamlit\nfrom explorer.ui import page\n",
    "kernels/broken.py": "def f(:\n",
}


def test_checker_catches_planted_violations(tmp_path):
    for rel, source in PLANTED.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    venv = tmp_path / "venv" / "lib"
    venv.mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("")
    (venv / "streamlit_stuff.py").write_text("import explorer.ui\n")

    problems = violations(tmp_path)
    flagged = {p.split(": ")[0] for p in problems}
    assert flagged == {
        "hardware_presets/schema.py:2",
        "kernels/gemm/kernel.py:4",
        "explorer/core/metrics.py:1",
        "explorer/core/metrics.py:2",
        "explorer/core/report.py:1",
        "explorer/core/emulator/engine.py:2",
        "explorer/core/scenario.py:2",
        "explorer/plots/roofline.py:3",
        "explorer/ui/page.py:2",
        "kernels/broken.py:1",
    }, "\n".join(problems)


@pytest.mark.parametrize(
    ("rel", "source", "expected"),
    [
        ("explorer/core/emulator/engine.py", "from ..metrics import x", "explorer.core.metrics"),
        ("explorer/core/__init__.py", "from .scenario import simulate", "explorer.core.scenario"),
        ("explorer/core/__init__.py", "from .. import plots", "explorer.plots"),
        ("kernels/gemm/kernel.py", "from .grid import task_grid", "kernels.gemm.grid"),
        ("kernels/gemm/kernel.py", "from ..common import tque", "kernels.common"),
    ],
)
def test_relative_imports_resolve(tmp_path, rel, source, expected):
    path = tmp_path / rel
    path.parent.mkdir(parents=True)
    path.write_text(source)
    assert expected in {name for _, name in imports(path, Path(rel))}

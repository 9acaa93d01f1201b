"""The installable package (pyproject.toml): the wheel holds every file the code reads, the
pins satisfy the package's ranges, and the wheel installed into a fresh venv works from a
folder far from the checkout: ``ascend-explorer --version | presets | warmup | run |
report | app`` and the app's pages.

Nothing is downloaded. The wheel is built offline from a copy of the checkout's package
folders (``pip wheel --no-build-isolation``, the pinned setuptools of this venv), so the
build leaves nothing in the checkout. The fresh venv gets the wheel alone
(``--no-deps --no-index``); its dependencies are this venv's, made visible by one ``.pth``
line (this venv's site-packages, after the fresh venv's own), and the checkout is on no
path: every command runs from a temporary folder without PYTHONPATH, and the test checks
that ``explorer`` is imported from the fresh venv. Numba caches in a per-user folder there
(``XDG_CACHE_HOME`` points into the temporary folder), as it would for a user.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import hardware_presets as hp
from explorer import cli
from explorer.core import gallery, simulate
from explorer.core.i18n import t
from explorer.plots.report import scenario_from_report
from explorer.version import __version__
from tests.app_server import _health, free_port, stop_process_group
from tests.waiting import DEADLINE_S, poll_until

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("explorer", "kernels", "hardware_presets")
#: files in the package folders that no code reads at run time (kept out of the wheel)
NOT_PACKAGED = {"kernels/ascendc/puzzles/ruff.toml": "ruff's settings for the puzzles' "
                                                    "student code: linting only"}
#: what a build copy leaves out: caches and hidden folders, never sources or data
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
SCENARIO = "double_buffer_a"


# ---- the wheel ---------------------------------------------------------------------------
def _package_files(root: Path) -> set[str]:
    """Every file of the package folders under ``root`` (posix paths relative to it),
    without caches and hidden files (what ``_IGNORED`` leaves out of the copy)."""
    found = set()
    for package in PACKAGES:
        for path in (root / package).rglob("*"):
            rel = path.relative_to(root)
            hidden = any(part.startswith(".") or part == "__pycache__" for part in rel.parts)
            if path.is_file() and not hidden and path.suffix != ".pyc":
                found.add(rel.as_posix())
    return found


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> tuple[Path, set[str]]:
    """The wheel built from a copy of the checkout, and the files that copy held."""
    tmp = tmp_path_factory.mktemp("package")
    source = tmp / "source"
    for package in PACKAGES:
        shutil.copytree(REPO / package, source / package, ignore=_IGNORED)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "--disable-pip-version-check", "-q", "-w", str(tmp / "dist"),
                    str(source)], check=True, timeout=DEADLINE_S)
    (wheel,) = (tmp / "dist").glob("*.whl")
    return wheel, _package_files(source)


def test_the_wheel_holds_every_file_of_the_package_folders(build):
    wheel, files = build
    assert wheel.name == f"ascend_explorer-{__version__}-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    packaged = {f for f in names if f.split("/")[0] in PACKAGES}
    forgotten = files - packaged - set(NOT_PACKAGED)
    assert not forgotten, f"left out of the wheel (pyproject.toml [tool.setuptools." \
                          f"package-data]): {', '.join(sorted(forgotten))}"
    assert not set(NOT_PACKAGED) & packaged
    assert packaged <= files  # nothing else slips in (a cache, a build folder)
    # the data each part of the code reads, by kind
    for pattern in (r"hardware_presets/910B2\.toml", r"hardware_presets/locales/zh/.+\.toml",
                    r"explorer/core/locales/(en|zh)/common\.toml", r"kernels/models/.+\.toml",
                    r"explorer/core/validation/published_cases\.toml",
                    rf"explorer/scenarios/{SCENARIO}\.toml", r"kernels/rope/examples/.+\.toml",
                    r"kernels/ascendc/puzzles/p01_copy/(starter\.py|statement\.zh\.md)",
                    r"explorer/ui/pages/start\.py", r"explorer/ui/app_main\.py"):
        assert any(re.fullmatch(pattern, n) for n in names), pattern
    dist = f"ascend_explorer-{__version__}.dist-info"
    assert "ascend-explorer = explorer.cli:main" in zipfile.ZipFile(wheel).read(
        f"{dist}/entry_points.txt").decode()


def _pins() -> dict[str, str]:
    """name -> pinned version of every requirements*.txt line ``name==version``."""
    pins = {}
    for path in REPO.glob("requirements*.txt"):
        for line in path.read_text(encoding="utf-8").splitlines():
            name, sep, version = line.split("#")[0].strip().partition("==")
            if sep:
                pins[name.lower().replace("_", "-")] = version
    return pins


def test_the_pins_satisfy_the_package_ranges():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = [*project["project"]["dependencies"],
              *project["project"]["optional-dependencies"]["dask"],
              *project["build-system"]["requires"]]
    pins = _pins()
    for text in wanted:
        req = Requirement(text)
        name = req.name.lower().replace("_", "-")
        assert name in pins, f"{name} has no pin in requirements*.txt"
        assert req.specifier.contains(pins[name]), f"{name}=={pins[name]} is not in {req}"
    assert project["project"]["scripts"] == {"ascend-explorer": "explorer.cli:main"}


def test_version_flag_prints_the_one_version(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"ascend-explorer {__version__}\n"
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


# ---- installed in a fresh venv, used from elsewhere ---------------------------------------
@pytest.fixture(scope="module")
def installed(build, tmp_path_factory) -> dict:
    """A fresh venv holding the wheel, this venv's dependencies visible to it, and the
    environment and folder to run it from (none of them the checkout)."""
    wheel, _ = build
    tmp = tmp_path_factory.mktemp("installed")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=DEADLINE_S)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-index", "--disable-pip-version-check", str(wheel)],
                   check=True, timeout=DEADLINE_S)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig."
                                "get_path('purelib'))"], capture_output=True, text=True,
                               check=True).stdout.strip())
    ours = dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib"))
    (site / "_project_dependencies.pth").write_text("\n".join(ours) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
    env.update(XDG_CACHE_HOME=str(tmp / "cache"), PYTHONUNBUFFERED="1")
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return {"bin": venv / "bin", "site": site, "env": env, "cwd": elsewhere,
            "cache": tmp / "cache" / "ascend-explorer" / "numba"}


def _run(installed: dict, *args: str) -> subprocess.CompletedProcess:
    """A command of the fresh venv's bin folder, run from the temporary folder."""
    return subprocess.run([str(installed["bin"] / args[0]), *args[1:]], cwd=installed["cwd"],
                          env=installed["env"], capture_output=True, text=True,
                          timeout=DEADLINE_S)


def test_the_installed_command_works_outside_the_checkout(installed):
    version = _run(installed, "ascend-explorer", "--version")
    assert (version.returncode, version.stdout) == (0, f"ascend-explorer {__version__}\n")

    presets = _run(installed, "ascend-explorer", "presets")
    assert presets.returncode == 0, presets.stderr
    lines = presets.stdout.splitlines()
    for name in hp.list_presets():  # each preset's line starts with its name
        assert any(line.startswith(f"{name} ") for line in lines), (name, presets.stdout)

    # the per-user numba cache (no checkout around the package), filled by warmup
    warmup = _run(installed, "ascend-explorer", "warmup")
    assert warmup.returncode == 0, warmup.stderr
    assert f"(numba cache: {installed['cache']})" in warmup.stdout
    assert any(installed["cache"].rglob("*.nbi"))

    scenario = installed["site"] / "explorer" / "scenarios" / f"{SCENARIO}.toml"
    run = _run(installed, "ascend-explorer", "run", str(scenario), "--json")
    assert run.returncode == 0, run.stderr
    here = simulate(gallery.load(SCENARIO))  # the same scenario, from the checkout
    assert json.loads(run.stdout)["metrics"] == json.loads(json.dumps(here.metrics,
                                                                      default=float))

    report = _run(installed, "ascend-explorer", "report", str(scenario), "-o", "out.html")
    assert report.returncode == 0, report.stderr
    page = (installed["cwd"] / "out.html").read_text(encoding="utf-8")
    assert scenario_from_report(page) == gallery.load(SCENARIO)
    assert f"version {__version__} (<code>ascend-explorer</code>)" in page  # its footer


def test_the_installed_app_serves_and_its_pages_run(installed):
    port, log_path = free_port(), installed["cwd"] / "app.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(installed["bin"] / "ascend-explorer"), "app", "--port",
                                 str(port), "--address", "127.0.0.1"], cwd=installed["cwd"],
                                env=installed["env"], stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:  # the process is Streamlit's server itself (execv), in a group of its own
        poll_until(lambda: _health(f"http://127.0.0.1:{port}", proc, log_path), bool,
                   "the installed app to be healthy")
    finally:
        stop_process_group(proc.pid)
        proc.wait(timeout=DEADLINE_S)
    # the start page from the installed main script (its links reach the packaged pages),
    # with explorer imported from the fresh venv and the checkout on no path
    shown = _run(installed, "python", "-c", f"""if True:
        import sys
        from streamlit.testing.v1 import AppTest
        from explorer.ui import app_main
        at = AppTest.from_file(app_main.__file__, default_timeout={DEADLINE_S}).run()
        print([e.value for e in at.exception])
        print(at.title[0].value)
        print(at.sidebar.caption[-1].value)
        print(app_main.__file__)
        print(*sys.path, sep="\\n")
        """)
    assert shown.returncode == 0, shown.stderr
    errors, title, footer, main, *path = shown.stdout.splitlines()
    assert (errors, title, footer) == ("[]", t("app.title", "en"), f"Version {__version__}")
    assert Path(main) == installed["site"] / "explorer" / "ui" / "app_main.py"
    assert str(REPO) not in {str(Path(p).resolve()) for p in path if p}

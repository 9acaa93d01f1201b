"""``ascend-explorer app [--port N] [--address HOST]``: the Streamlit app, from any folder.

An installed package has no checkout and no ``app.py``: the command hands the app's main
script inside the package (``explorer/ui/app_main.py``, the one ``app.py`` runs too) to
``streamlit run`` with the settings of ``make run`` (headless, no usage statistics,
localhost unless told otherwise). The process becomes Streamlit's (``os.execv``): Ctrl-C
and a service manager's signals reach the server directly, and its exit code is the
command's. Bad input (a port out of range) exits with 2 before anything starts.

The command is registered by :func:`add_parser`; ``explorer/cli.py`` calls it.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hardware_presets.errors import InputError

from . import cli
from .core.i18n import t

#: the app's main script in the package (the file, not imported: it imports streamlit)
APP_MAIN = Path(__file__).resolve().parent / "ui" / "app_main.py"
DEFAULT_PORT, DEFAULT_ADDRESS = 8501, "localhost"
PORTS = range(1, 65536)


def streamlit_argv(port: int, address: str) -> list[str]:
    """``python -m streamlit run`` of the packaged app, as ``make run`` starts app.py."""
    return [sys.executable, "-m", "streamlit", "run", str(APP_MAIN),
            "--server.headless", "true", "--server.port", str(port),
            "--server.address", address, "--browser.gatherUsageStats", "false"]


@cli.refusing
def cmd_app(args: argparse.Namespace) -> int:
    """Check the port, then become the Streamlit server (never returns when it starts)."""
    if args.port not in PORTS:
        raise InputError("--port", args.port, f"{PORTS.start} to {PORTS.stop - 1}")
    argv = streamlit_argv(args.port, args.address)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)
    return cli.EXIT_OK  # not reached: execv replaces this process


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``app`` on the ``add_subparsers()`` object of the explorer's CLI."""
    app = subparsers.add_parser("app", help=t("app.cli.help"), description=t("app.cli.help"))
    app.add_argument("--port", type=int, default=DEFAULT_PORT, help=t("app.cli.port"))
    app.add_argument("--address", default=DEFAULT_ADDRESS, help=t("app.cli.address"))
    app.set_defaults(func=cmd_app)
    return app

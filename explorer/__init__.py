"""Ascend NPU architecture explorer: the Python API for notebooks (docs/notebook.md).

    from explorer import Scenario, simulate
    run = simulate(Scenario.make(kernel="gemm", params={"M": 512, "N": 512, "K": 512}))
    run                         # the summary: key metrics, the numerical check
    run.to_frame("per_core")    # tidy tables; run.figure("timeline"): the app's figures

The public names load on first use (PEP 562): ``import explorer`` reads only the version,
and ``import explorer.core``, which runs this file first, stays free of plotly and
streamlit. ``simulate`` and the other names but ``Scenario`` come from
``explorer.notebook``, which sits above ``explorer.plots``.
"""
from .version import __version__

_NOTEBOOK_NAMES = ("Run", "kernels", "parameters", "presets", "simulate")
__all__ = ["Scenario", "__version__", *_NOTEBOOK_NAMES]


def __getattr__(name: str):
    if name == "Scenario":
        from .core.scenario import Scenario

        return Scenario
    if name in _NOTEBOOK_NAMES:
        from . import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'explorer' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

"""UI-free core: scenarios, the emulator, metrics and exports (no streamlit, no plotly)."""
from .scenario import Scenario
from .simulate import NumericsCheck, Result, simulate

__all__ = ["NumericsCheck", "Result", "Scenario", "simulate"]

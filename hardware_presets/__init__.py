"""Ascend chip presets: one TOML file per chip, validated into a frozen, hashable `Chip`.

    >>> chip = load("910B2")
    >>> round(chip.peak_tflops("fp16"), 1)
    353.9
    >>> load("910B2", ai_cores=8).vector_cores
    16

Every number carries its provenance (source, status, confidence, note). This package
imports only the standard library: never kernels, explorer, streamlit or plotly.
"""
from __future__ import annotations

from .errors import InputError
from .fields import (
                     ARCHITECTURES,
                     CONFIDENCES,
                     CUBE_PRECISIONS,
                     FIELDS,
                     PRECISION_BYTES,
                     SECTIONS,
                     STATUSES,
                     VECTOR_DTYPES,
                     FieldSpec,
)
from .loader import PRESETS, list_presets, load, load_file, load_text
from .schema import Chip, Provenance

__all__ = [
    "ARCHITECTURES", "CONFIDENCES", "CUBE_PRECISIONS", "Chip", "FIELDS", "FieldSpec",
    "InputError", "PRECISION_BYTES", "PRESETS", "Provenance", "SECTIONS", "STATUSES",
    "VECTOR_DTYPES", "list_presets", "load", "load_file", "load_text",
]

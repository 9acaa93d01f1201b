"""LLM shapes for decode scenarios: one sourced TOML file per model, validated into a
frozen, hashable `ModelShape`.

    >>> m = load_model("llama3-70b")
    >>> m.kv_bytes_per_token("fp16") // 1024          # KiB of K and V per token
    320
    >>> m.gqa_group
    8
    >>> model_from_dict({"layers": 2, "q_heads": 4, "kv_heads": 2, "head_dim": 8,
    ...                  "hidden": 32, "params_B": 0.01}).kv_bytes_per_token("int8")
    96

KV bytes per token = 2 x layers x kv_heads x head_dim x bytes per element (K and V), plus
per-token scales for ``int8_token``; see `schema` for every KV format's scale bytes.
Every number carries its provenance (source, status, confidence, note), as chip presets
do. Imports only hardware_presets and the standard library.
"""
from __future__ import annotations

from .loader import (
                     MODELS,
                     list_models,
                     load_model,
                     load_model_text,
                     model_from_dict,
                     parse_model_document,
)
from .schema import (
                     KV_ALIASES,
                     KV_DTYPES,
                     KV_FORMATS,
                     MODEL_FIELDS,
                     WEIGHT_DTYPES,
                     KVFormat,
                     ModelShape,
                     kv_format,
                     weight_element_bytes,
)

__all__ = [
    "KV_ALIASES", "KV_DTYPES", "KV_FORMATS", "KVFormat", "MODELS", "MODEL_FIELDS", "ModelShape",
    "WEIGHT_DTYPES", "kv_format", "list_models", "load_model", "load_model_text",
    "model_from_dict", "parse_model_document", "weight_element_bytes",
]

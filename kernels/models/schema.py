"""The model record: shape fields, KV-cache storage formats and the frozen `ModelShape`.

A `ModelShape` stores only what a model file states (every number with its provenance,
as chip presets do); KV bytes per token, weight bytes and the GQA group are computed from
those numbers on demand. Validation lives in `loader.py`; every `ModelShape` in
circulation has passed it.

KV formats (``kv_dtype``) and what one token costs, per layer and per KV head, K and V:

* ``fp16`` / ``bf16``: 2 bytes per element, no scales.
* ``int8_token`` (alias ``int8``): 1 byte per element plus one fp32 scale per token for
  each (layer, KV head, K|V): ``2 x layers x kv_heads x 4`` bytes per token on top of the
  codes. Dynamic per-token quantisation; the precision library's granularity "token".
* ``int8_head``: 1 byte per element; one static fp32 scale per (layer, KV head, K|V),
  ``2 x layers x kv_heads x 4`` bytes for the whole model, shared by every token and
  sequence, so 0 bytes per token (amortised). Granularity "tensor" applied per head slab.
* ``int8_channel``: 1 byte per element; one static fp32 scale per (layer, KV head, K|V,
  channel of head_dim), ``2 x layers x kv_heads x head_dim x 4`` bytes for the whole
  model, 0 per token (amortised). The precision library's granularity "channel".
* ``fp8_e4m3``, ``fp8_e5m2``, ``hif8``: 1 byte per element, static fp32 scales per
  channel as ``int8_channel`` (``kernels.common.lowp``'s scaled formats); only on chips
  whose units take the format (``kernels.decode.params.kv_formats_on``).
* ``mxfp8``, ``mxfp4``: OCP MX, 1 or 0.5 byte per element plus one E8M0 byte per 32
  elements of a token's head_dim (blocks along d): ``2 x layers x kv_heads x
  ceil(head_dim / 32)`` scale bytes per token.

Scales are symmetric (no zero point); an asymmetric scheme would double the scale bytes.
The fixed scale bytes are counted once per model, not per sequence (`kv_scale_bytes_fixed`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from hardware_presets.errors import InputError, Phrase
from hardware_presets.fields import MX_BLOCK, PRECISION_BYTES, FieldSpec
from hardware_presets.schema import Provenance, in_language

SECTION = "shape"
META_KEYS = ("name", "display_name", "description")
#: texts a file may also give in Simplified Chinese; without them the English stands in
OPTIONAL_META_KEYS = ("description_zh",)
SCALE_BYTES = 4  # fp32 scales
STATUSES = ("published", "derived", "estimated", "override")
CONFIDENCES = ("H", "M", "L")
WEIGHT_DTYPES = ("fp16", "bf16", "fp32", "int8", "int4")


def _f(key: str, unit: str, kind: type, lo: float, hi: float, step: float,
       zero_means: str = "") -> FieldSpec:
    return FieldSpec(key, SECTION, unit, kind, lo, hi, True, step, zero_means)


#: Numeric model fields in file order; ranges are sanity bounds, not claims about models.
MODEL_FIELDS: dict[str, FieldSpec] = {s.key: s for s in (
    _f("layers", "layers", int, 1, 1000, 1),
    _f("q_heads", "heads", int, 1, 1024, 1),
    _f("kv_heads", "heads", int, 1, 1024, 1),
    _f("head_dim", "elements", int, 1, 1024, 8),
    _f("hidden", "elements", int, 1, 262_144, 128),
    _f("params_B", "billion parameters", float, 0.001, 10_000, 0.1),
    _f("intermediate_size", "elements", int, 0, 1_048_576, 128, "not given"),
    _f("vocab_size", "tokens", int, 0, 4_194_304, 128, "not given"),
    _f("rope_theta", "", float, 0, 1e9, 1000, "not given"),
    _f("rms_norm_eps", "", float, 0, 0.1, 1e-6, "not given"),
)}
REQUIRED_FIELDS = ("layers", "q_heads", "kv_heads", "head_dim", "hidden", "params_B")
#: what a whole decode layer needs beyond attention: the MLP width, the LM head's rows,
#: RoPE's base and RMSNorm's epsilon (0 = not given: the layer cannot be emulated)
OPTIONAL_FIELDS = ("intermediate_size", "vocab_size", "rope_theta", "rms_norm_eps")
LAYER_FIELDS = OPTIONAL_FIELDS


@dataclass(frozen=True)
class KVFormat:
    """How the KV cache stores one element and where its scales live."""

    name: str
    element_bytes: float  # 0.5 for mxfp4
    scales: str  # "" (float format), "token", "head", "channel" or "block" (MX, E8M0)
    # the matching kernels.common.attention_math.stored_kv granularity ("" for floats)
    granularity: str
    storage: str  # the kernels.common.precision format name of the elements ("fp16", "int8", ...)


KV_FORMATS: dict[str, KVFormat] = {f.name: f for f in (
    KVFormat("fp16", 2, "", "", "fp16"),
    KVFormat("bf16", 2, "", "", "bf16"),
    KVFormat("int8_token", 1, "token", "token", "int8"),
    KVFormat("int8_head", 1, "head", "tensor", "int8"),
    KVFormat("int8_channel", 1, "channel", "channel", "int8"),
    KVFormat("fp8_e4m3", 1, "channel", "channel", "fp8_e4m3"),
    KVFormat("fp8_e5m2", 1, "channel", "channel", "fp8_e5m2"),
    KVFormat("hif8", 1, "channel", "channel", "hif8"),
    KVFormat("mxfp8", 1, "block", "block", "mxfp8"),
    KVFormat("mxfp4", 0.5, "block", "block", "mxfp4"),
)}
KV_DTYPES: tuple[str, ...] = tuple(KV_FORMATS)
KV_ALIASES = {"int8": "int8_token"}


def kv_format(kv_dtype: str) -> KVFormat:
    """The `KVFormat` called ``kv_dtype`` ("int8" means "int8_token"), or an InputError."""
    name = KV_ALIASES.get(kv_dtype, kv_dtype) if isinstance(kv_dtype, str) else kv_dtype
    if name not in KV_FORMATS:
        raise InputError("kv_dtype", kv_dtype, Phrase("refusal.model.kv_dtype",
                                                      options=", ".join(KV_DTYPES)))
    return KV_FORMATS[name]


def weight_element_bytes(dtype: str) -> float:
    """Bytes per weight element of ``dtype`` (int4 packs two per byte)."""
    if dtype not in WEIGHT_DTYPES:
        raise InputError("weight_dtype", dtype, Phrase("refusal.one_of",
                                                       options=", ".join(WEIGHT_DTYPES)))
    return PRECISION_BYTES[dtype]


@dataclass(frozen=True)
class ModelShape:
    """One decoder-only LLM's attention shape and size; frozen and hashable."""

    name: str
    display_name: str
    description: str
    description_zh: str  # "" when the file gives none; see `description_in`
    layers: int
    q_heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    params_B: float
    intermediate_size: int = 0  # 0 = not given
    vocab_size: int = 0  # 0 = not given
    rope_theta: float = 0.0  # 0 = not given
    rms_norm_eps: float = 0.0  # 0 = not given
    provenance: tuple[tuple[str, Provenance], ...] = ()
    # where the numbers were read from ("llama3_8b.toml", "user shape"); names messages
    origin: str = field(default="", compare=False)

    def values(self) -> dict[str, int | float]:
        """Every numeric field as {key: value}, in MODEL_FIELDS order."""
        return {k: getattr(self, k) for k in MODEL_FIELDS}

    def description_in(self, lang: str) -> str:
        """The description in ``lang``, falling back to English (as chip presets do)."""
        return in_language(self.description, self.description_zh, lang)

    def provenance_of(self, key: str) -> Provenance:
        """The provenance of one numeric field."""
        prov = dict(self.provenance)
        if key not in prov:
            raise InputError(f"{self.name}: field", key, Phrase("refusal.one_of",
                                                                options=", ".join(MODEL_FIELDS)))
        return prov[key]

    @property
    def gqa_group(self) -> int:
        """Query heads sharing one KV head (q_heads / kv_heads; 1 = multi-head attention)."""
        return self.q_heads // self.kv_heads

    @property
    def params(self) -> int:
        """Parameter count (params_B x 1e9, rounded)."""
        return round(self.params_B * 1e9)

    @property
    def kv_elements_per_token(self) -> int:
        """K and V elements one token adds to the cache: 2 x layers x kv_heads x head_dim."""
        return 2 * self.layers * self.kv_heads * self.head_dim

    def kv_bytes_per_token_per_layer(self, kv_dtype: str = "fp16") -> int:
        """One token's K and V in one layer: 2 x kv_heads x (head_dim x bytes + scales)."""
        return self.kv_bytes_per_token(kv_dtype) // self.layers

    def kv_bytes_per_token(self, kv_dtype: str = "fp16") -> int:
        """Bytes one token adds to the cache, all layers, K and V:
        2 x layers x kv_heads x head_dim x element bytes, plus for ``int8_token`` its
        2 x layers x kv_heads fp32 scales (4 bytes each) and for the MX formats their
        2 x layers x kv_heads x ceil(head_dim / 32) E8M0 scales (1 byte each). Static
        per-head / per-channel scales are not per token: see `kv_scale_bytes_fixed`."""
        fmt = kv_format(kv_dtype)
        codes = math.ceil(self.kv_elements_per_token * fmt.element_bytes)
        if fmt.scales == "token":
            codes += 2 * self.layers * self.kv_heads * SCALE_BYTES
        if fmt.scales == "block":
            codes += 2 * self.layers * self.kv_heads * -(-self.head_dim // MX_BLOCK)
        return codes

    def kv_scale_bytes_fixed(self, kv_dtype: str = "fp16") -> int:
        """Scale bytes stored once for the whole model, independent of tokens and batch:
        int8_head 2 x layers x kv_heads x 4; int8_channel (and the scaled 8-bit floats)
        2 x layers x kv_heads x head_dim x 4; 0 for fp16 / bf16, per-token and MX scales."""
        fmt = kv_format(kv_dtype)
        if fmt.scales == "head":
            return 2 * self.layers * self.kv_heads * SCALE_BYTES
        if fmt.scales == "channel":
            return 2 * self.layers * self.kv_heads * self.head_dim * SCALE_BYTES
        return 0

    def weight_bytes(self, dtype: str = "fp16") -> int:
        """Bytes of all weights stored in ``dtype``: params x bytes per element (rounded
        up for int4). Quantisation scales of int8 / int4 weights are not counted."""
        return math.ceil(self.params * weight_element_bytes(dtype))

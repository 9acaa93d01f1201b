"""Which KV-cache formats a chip can hold and read, asked of the chip, never of its name.

fp16, bf16 and the int8 formats run everywhere: every vector unit casts them to fp32. The
8- and 4-bit float formats (FP8 E4M3 / E5M2, HiF8, MXFP8, MXFP4) need a chip whose units
take the format (``kernels.common.lowp.on_chip``): on the shipped presets the
arch-3510 cube of the 950PR / 950DT, whose vector units also convert these formats to fp32
(CANN's arch35 attention kernels dequantise an FP8 cache this way: Cast fp8 -> fp32, then
the scale). Chips without them refuse the format with the list they do take.
"""
from __future__ import annotations

import hardware_presets as hp
from hardware_presets import Chip
from hardware_presets.errors import InputError, Phrase
from kernels.common.lowp import on_chip
from kernels.models import KV_DTYPES, kv_format


def kv_formats_on(chip: Chip) -> tuple[str, ...]:
    """The KV formats (``KV_DTYPES`` order) that ``chip`` can hold and read."""
    return tuple(k for k in KV_DTYPES if on_chip(chip, kv_format(k).storage))


def check_kv_format(chip: Chip, kv_dtype: str) -> None:
    """Refuse a KV format the chip's units do not take, naming the ones they do."""
    if kv_format(kv_dtype).name not in kv_formats_on(chip):
        raise InputError("params.kv_dtype", kv_dtype, Phrase(
            "refusal.decode.kv_format", chip=chip.display_name,
            options=", ".join(kv_formats_on(chip))))


def presets_holding(formats: tuple[str, ...]) -> tuple[str, ...]:
    """The presets (names) whose chips hold every one of ``formats``: where to go for a
    KV format the current chip lacks."""
    return tuple(n for n in hp.list_presets() if set(formats) <= set(kv_formats_on(hp.load(n))))

"""How much work one request may ask for: the budgets every user-controlled size is checked
against *before* anything is allocated, so that a hostile or mistaken scenario is refused in
milliseconds instead of exhausting memory or hanging a shared server.

Two settings, read from the environment on every call (a server sets them lower than the
CLI's defaults; a sweep's workers get their own):

* ``EXPLORER_MAX_ARRAY_BYTES`` (default 1.5 GiB): the largest block of numpy memory one
  request may need for its derived arrays: a decode's block table, a sparse-attention dump's
  decompressed members, and the emulated program itself (see below).
* ``EXPLORER_MAX_INSTRUCTIONS``: the largest program the emulator builds and runs. When it
  is not set it follows the array budget: a program costs about ``BYTES_PER_INSTRUCTION``
  bytes at its peak (instruction columns, dependencies, lowering, event loop and the
  timeline table; measured 300 to 340 bytes on a vector add and a GEMM of 10 to 15 million
  instructions), so the default 1.5 GiB allows about 4.6 million instructions (a vector add of
  2^34 elements in 16384-element tiles is 4.2 million), roughly 10 s of CPU.
"""
from __future__ import annotations

import os

from hardware_presets.errors import InputError, Phrase

INSTRUCTIONS_ENV = "EXPLORER_MAX_INSTRUCTIONS"
ARRAY_BYTES_ENV = "EXPLORER_MAX_ARRAY_BYTES"
DEFAULT_ARRAY_BYTES = 3 << 29  # 1.5 GiB
#: peak bytes one emulated instruction costs from build to tables (rounded up)
BYTES_PER_INSTRUCTION = 350


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise InputError(name, text, Phrase("refusal.env_whole"))
    return value


def array_bytes_budget() -> int:
    """Bytes of derived arrays one request may allocate (env EXPLORER_MAX_ARRAY_BYTES)."""
    return _env_int(ARRAY_BYTES_ENV, DEFAULT_ARRAY_BYTES)


def default_instruction_cap() -> int:
    """Largest program the emulator accepts: env EXPLORER_MAX_INSTRUCTIONS, else what the
    array budget holds at BYTES_PER_INSTRUCTION bytes each."""
    return _env_int(INSTRUCTIONS_ENV, array_bytes_budget() // BYTES_PER_INSTRUCTION)


def instruction_limit_text(cap: int) -> Phrase:
    """The 'allowed' part of a refusal of field "instructions"."""
    return Phrase("refusal.instructions", cap=f"{cap:,}", env=INSTRUCTIONS_ENV)


def check_array_bytes(nbytes: int, field: str, value: object, what: str,
                      hint: str = "") -> None:
    """Refuse ``field = value`` when the ``what`` it implies needs more than the budget."""
    budget = array_bytes_budget()
    if nbytes > budget:
        raise InputError(field, value, Phrase("refusal.array_budget", what=what,
                                              need=f"{nbytes:,}", budget=f"{budget:,}",
                                              env=ARRAY_BYTES_ENV), hint)

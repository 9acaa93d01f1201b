"""How the threads around the event loop tell each other how far they are, while it runs.

The loop counts completions per block of internal ids (``publish``) and a second thread
maps a block's results back to program ids once its count is full (``complete_blocks``);
before the loop reaches an instruction, the thread gathering its fields may still be at
work, and says how far it got (``release``, read by the loop). Counts are stored with
release order and read with acquire order, so that a thread that sees one also sees
everything written before it (plain stores could be reordered, by the compiler on any
machine or by the processor on Arm)."""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..config import JIT_OPTIONS


def _element(context, builder, sig, args):
    """The pointer to ``array[index]`` of an int64 array."""
    ary = context.make_array(sig.args[0])(context, builder, args[0])
    index = context.cast(builder, args[1], sig.args[1], types.intp)
    return cgutils.get_item_pointer(context, builder, sig.args[0], ary, [index],
                                    wraparound=False)


@intrinsic
def store_release(typingctx, array, index, value):
    """``array[index] = value`` (int64), ordered after every store before it."""

    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[2], sig.args[2], types.int64)
        builder.store_atomic(value, _element(context, builder, sig, args), "release", 8)
        return context.get_dummy_value()

    return types.void(array, index, value), codegen


@intrinsic
def load_acquire(typingctx, array, index):
    """``array[index]`` (int64), ordered before every load after it."""

    def codegen(context, builder, sig, args):
        return builder.load_atomic(_element(context, builder, sig, args), "acquire", 8)

    return types.int64(array, index), codegen


@njit(inline="always", **JIT_OPTIONS)
def publish(done, i, block_bits):
    """Count instruction ``i`` done in its block (only the loop's thread writes ``done``)."""
    b = i >> block_bits
    store_release(done, b, done[b] + 1)


@njit(**JIT_OPTIONS)
def release(array, index, value):
    """``store_release`` for Python: a value another thread's compiled code waits for."""
    store_release(array, index, value)


@njit(**JIT_OPTIONS)
def complete_blocks(done, block_bits, n, taken):
    """The blocks whose every instruction is done and that are not ``taken`` yet."""
    out = np.empty(len(done), np.int64)
    count = 0
    for b in range(len(done)):
        if not taken[b] and load_acquire(done, b) == min(n - (b << block_bits),
                                                         1 << block_bits):
            out[count] = b
            count += 1
    return out[:count]

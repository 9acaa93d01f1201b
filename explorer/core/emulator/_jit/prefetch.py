"""A software prefetch for the event loop: the hint that an array element will be read
soon, so its cache line is fetched while other work goes on.

The loop visits each lane's instructions in runs laid side by side (``graph.interleave``),
but it jumps between lanes, so the hardware's own prefetcher does not see the next run
coming: a lane's next instruction's arrays missed the cache when it came to start (perf
put most of the loop's time on those loads). Prefetched when the lane moves on to it, they
have arrived by then."""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """``llvm.prefetch`` of ``array[index]``, or of row ``index``'s start in a 2-D array
    (a read, kept in every cache level)."""

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        row = context.cast(builder, args[1], sig.args[1], types.intp)
        zero = ir.Constant(row.type, 0)
        ptr = cgutils.get_item_pointer(context, builder, sig.args[0], ary,
                                       [row] + [zero] * (sig.args[0].ndim - 1),
                                       wraparound=False)
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen

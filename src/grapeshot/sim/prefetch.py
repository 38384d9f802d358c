"""A software prefetch for the kernel: ``prefetch(array, i)`` asks the CPU to bring
``array[i]``'s cache line in, without waiting for it and without changing anything.

On runs of a million partitions spread over thousands of nodes, the kernel's time goes to
cache misses in chains that the processor cannot overlap by itself: a halo message reads its
receiver's node, then that task's dependency count and earliest start, and the next message
only after the previous one's network walk. Prefetching every receiver's lines first, in one
short loop, lets those misses overlap. A hint has no effect on results (the simulated times
are the same bit for bit); it is LLVM's ``llvm.prefetch`` (read, high locality, data cache).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Prefetch the cache line of element ``index`` of C-contiguous ``array``, counted flat
    (``array[index]`` of a 1-D array; ``i * columns + j`` for row ``i``, column ``j``)."""
    if (
        not isinstance(array, types.Array)
        or array.layout != "C"
        or not isinstance(index, types.Integer)
    ):
        return None
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(arr.data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen

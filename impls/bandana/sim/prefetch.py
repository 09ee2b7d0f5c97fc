"""A software prefetch for numba kernels: ``prefetch(array, index)``.

Issues LLVM's ``llvm.prefetch`` (a hint, never a fault: an index past the array
is harmless) for the cache line of ``array[index]``, with write intent and
temporal locality. Unlike an ordinary load used as a prefetch, it retires at
once and ties up no register or reorder-buffer slot while the line arrives, so
a kernel can ask for the lines it needs a few iterations ahead.
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Nothing; hints the CPU to bring ``array[index]``'s cache line in (C-contiguous 1-d arrays)."""
    if not isinstance(array, types.Array) or array.ndim != 1 or not isinstance(index, types.Integer):
        return None
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        address = builder.gep(arr.data, [args[1]])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0")
        # rw = 1 (write), locality = 3 (keep in all levels), cache type = 1 (data)
        builder.call(fn, [builder.bitcast(address, i8p), i32(1), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen

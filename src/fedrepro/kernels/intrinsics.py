"""LLVM instructions numba does not expose: a fused multiply-add, a cache prefetch, and the reinterpretation of a
binary32 value as its 32 bits and back (and of a binary64 value as its 64 bits) (a bitcast: no arithmetic, so no floating-point unit sees the value)."""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils
from numba.core import types as nbtypes
from numba.extending import intrinsic


@intrinsic
def fma(typingctx, a, b, c):
    """a b + c rounded once (LLVM's llvm.fma: the hardware instruction where there is one)."""
    if not (isinstance(a, nbtypes.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return a(a, b, c), codegen


@intrinsic
def prefetch(typingctx, arr, index):
    """Ask the memory system for the cache line holding arr[index] (a hint: no effect on any value)."""
    if not (isinstance(arr, nbtypes.Array) and arr.ndim == 1 and isinstance(index, nbtypes.Integer)):
        return None

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])   # read, keep in all levels, data
        return context.get_dummy_value()

    return nbtypes.void(arr, index), codegen


@intrinsic
def bits32(typingctx, a):
    """The 32 bits of a binary32 value as an int32 (sign bit, 8 exponent bits, 23 fraction bits)."""
    if a != nbtypes.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return nbtypes.int32(a), codegen


@intrinsic
def float32_from_bits(typingctx, b):
    """The binary32 value whose bits are the int32 b (bits32's inverse)."""
    if b != nbtypes.int32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return nbtypes.float32(b), codegen


@intrinsic
def bits64(typingctx, a):
    """The 64 bits of a binary64 value as an int64."""
    if a != nbtypes.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return nbtypes.int64(a), codegen

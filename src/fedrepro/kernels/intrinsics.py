"""LLVM instructions numba does not expose, for the kept kernels: a fused multiply-add (the momentum pass, as
torch's alpha-add), a cache prefetch and a 4-lane binary64 multiply and add into memory (the CSR products), and the
reinterpretation of a binary32/binary64 value as its bits (the top-k kernel's magnitude keys; a bitcast, no
arithmetic)."""

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
def bits64(typingctx, a):
    """The 64 bits of a binary64 value as an int64."""
    if a != nbtypes.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return nbtypes.int64(a), codegen


@intrinsic
def add_scaled4(typingctx, arr, index, a, r0, r1, r2, r3):
    """arr[index + k] += a r_k for k = 0..3 as one 4-lane vector operation: each lane the product rounded, then the
    sum rounded, as the four scalar statements would compute it (no fused multiply-add), so the same bits.
    arr: a contiguous 1-D binary64 array; index: an integer (the caller keeps index + 3 in bounds)."""
    f64 = nbtypes.float64
    if not (isinstance(arr, nbtypes.Array) and arr.ndim == 1 and arr.dtype == f64 and arr.layout == "C"
            and isinstance(index, nbtypes.Integer) and a == r0 == r1 == r2 == r3 == f64):
        return None

    def codegen(context, builder, signature, args):
        ary_arg, idx, scale, *lanes = args
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, ary_arg)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx], wraparound=False)
        i32, vty = ir.IntType(32), ir.VectorType(ir.DoubleType(), 4)
        vptr = builder.bitcast(ptr, vty.as_pointer())
        r = ir.Constant(vty, ir.Undefined)
        for k, lane in enumerate(lanes):
            r = builder.insert_element(r, lane, i32(k))
        s = builder.insert_element(ir.Constant(vty, ir.Undefined), scale, i32(0))
        s = builder.shuffle_vector(s, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(i32, 4), [0] * 4))
        builder.store(builder.fadd(builder.load(vptr, align=8), builder.fmul(s, r)), vptr, align=8)
        return context.get_dummy_value()

    return nbtypes.void(arr, index, a, r0, r1, r2, r3), codegen


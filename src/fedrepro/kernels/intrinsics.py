"""LLVM instructions numba does not expose: a fused multiply-add, a cache prefetch, a 4-lane binary64 multiply and
add into memory, the reinterpretation of a binary32 value as its 32 bits and back (and of a binary64 value as its 64 bits) (a bitcast: no arithmetic, so no floating-point unit sees the value), and an 8-lane binary32 vector
value (``float32x8``) with its loads, stores (contiguous and strided), broadcast, multiply, add, division, fused multiply-add and
an 8 x 8 transposing store.

numba leaves LLVM's SLP vectorizer off, so eight independent scalar chains stay eight scalar chains; and a loop's
vectorizer keeps an accumulator array in memory, where each step waits on the last one's store. A ``float32x8``
local is an LLVM vector value that stays in a register across a loop. Its multiply and add are separate
instructions, each rounded, lane by lane as the scalar statements would compute them; ``fma8`` rounds once, as
``fma`` does."""

from __future__ import annotations

import numba
from llvmlite import ir
from numba.core import cgutils
from numba.core import types as nbtypes
from numba.extending import intrinsic, models, register_model


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


class Float32x8(nbtypes.Type):
    """Eight binary32 lanes held as one LLVM vector value (<8 x float>)."""

    def __init__(self):
        super().__init__(name="float32x8")


float32x8 = Float32x8()
_V8 = ir.VectorType(ir.FloatType(), 8)


@register_model(Float32x8)
class _Float32x8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _V8)


def _f32_vector(arr) -> bool:
    return isinstance(arr, nbtypes.Array) and arr.ndim == 1 and arr.dtype == nbtypes.float32 and arr.layout == "C"


def _lanes_pointer(context, builder, aryty, ary_arg, index):
    ary = context.make_array(aryty)(context, builder, ary_arg)
    ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [index], wraparound=False)
    return builder.bitcast(ptr, _V8.as_pointer())


@intrinsic
def load8(typingctx, arr, index):
    """arr[index : index + 8] as a float32x8 (arr: a contiguous 1-D binary32 array; the caller keeps it in bounds)."""
    if not (_f32_vector(arr) and isinstance(index, nbtypes.Integer)):
        return None

    def codegen(context, builder, signature, args):
        return builder.load(_lanes_pointer(context, builder, signature.args[0], *args), align=4)

    return float32x8(arr, index), codegen


@intrinsic
def store8(typingctx, arr, index, v):
    """arr[index : index + 8] = v."""
    if not (_f32_vector(arr) and isinstance(index, nbtypes.Integer) and v == float32x8):
        return None

    def codegen(context, builder, signature, args):
        builder.store(args[2], _lanes_pointer(context, builder, signature.args[0], args[0], args[1]), align=4)
        return context.get_dummy_value()

    return nbtypes.void(arr, index, v), codegen


@intrinsic
def splat8(typingctx, a):
    """a binary32 value in all eight lanes."""
    if a != nbtypes.float32:
        return None

    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        v = builder.insert_element(ir.Constant(_V8, ir.Undefined), args[0], i32(0))
        return builder.shuffle_vector(v, ir.Constant(_V8, ir.Undefined), ir.Constant(ir.VectorType(i32, 8), [0] * 8))

    return float32x8(a), codegen


def _lanewise(instruction: str, doc: str):
    """An intrinsic applying one LLVM binary instruction (``fmul``, ``fadd``) to two float32x8, lane by lane."""

    @intrinsic
    def lanewise(typingctx, a, b):
        if not (a == b == float32x8):
            return None

        def codegen(context, builder, signature, args):
            return getattr(builder, instruction)(*args)

        return float32x8(a, b), codegen

    lanewise.__doc__ = doc
    return lanewise


mul8 = _lanewise("fmul", "a b lane by lane, each product rounded.")
add8 = _lanewise("fadd", "a + b lane by lane, each sum rounded.")
div8 = _lanewise("fdiv", "a / b lane by lane, each quotient rounded.")


@intrinsic
def store8_strided(typingctx, arr, base, stride, v):
    """arr[base + l stride] = v's lane l for l in 0..7 (eight scalar stores; the caller keeps them in bounds)."""
    if not (_f32_vector(arr) and isinstance(base, nbtypes.Integer) and isinstance(stride, nbtypes.Integer)
            and v == float32x8):
        return None

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        i64 = ir.IntType(64)
        first = context.cast(builder, args[1], signature.args[1], nbtypes.intp)
        step = context.cast(builder, args[2], signature.args[2], nbtypes.intp)
        for lane in range(8):
            index = builder.add(first, builder.mul(step, i64(lane)))
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [index], wraparound=False)
            builder.store(builder.extract_element(args[3], ir.IntType(32)(lane)), ptr)
        return context.get_dummy_value()

    return nbtypes.void(arr, base, stride, v), codegen


def _shuffle(mask: tuple[int, ...], doc: str):
    """An intrinsic picking lanes of two float32x8 (LLVM's shufflevector: 0-7 a's lanes, 8-15 b's): data movement
    only, no arithmetic."""

    @intrinsic
    def shuffle(typingctx, a, b):
        if not (a == b == float32x8):
            return None

        def codegen(context, builder, signature, args):
            return builder.shuffle_vector(args[0], args[1], ir.Constant(ir.VectorType(ir.IntType(32), 8), mask))

        return float32x8(a, b), codegen

    shuffle.__doc__ = doc
    return shuffle


# the three steps of the usual AVX 8 x 8 transpose (unpack within 128-bit halves, pairs of pairs, halves)
_unpack_lo = _shuffle((0, 8, 1, 9, 4, 12, 5, 13), "a0 b0 a1 b1 | a4 b4 a5 b5")
_unpack_hi = _shuffle((2, 10, 3, 11, 6, 14, 7, 15), "a2 b2 a3 b3 | a6 b6 a7 b7")
_pairs_lo = _shuffle((0, 1, 8, 9, 4, 5, 12, 13), "a0 a1 b0 b1 | a4 a5 b4 b5")
_pairs_hi = _shuffle((2, 3, 10, 11, 6, 7, 14, 15), "a2 a3 b2 b3 | a6 a7 b6 b7")
_halves_lo = _shuffle((0, 1, 2, 3, 8, 9, 10, 11), "a0-a3 b0-b3")
_halves_hi = _shuffle((4, 5, 6, 7, 12, 13, 14, 15), "a4-a7 b4-b7")


@intrinsic
def fma8(typingctx, a, b, c):
    """a b + c lane by lane, each rounded once (llvm.fma on the vector)."""
    if not (a == b == c == float32x8):
        return None

    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_V8, [_V8, _V8, _V8]), "llvm.fma.v8f32")
        return builder.call(fn, list(args))

    return float32x8(a, b, c), codegen


@numba.njit(cache=True, nogil=True, inline="always")
def store8_transposed(out, base, stride, r0, r1, r2, r3, r4, r5, r6, r7):
    """out[base + q stride + k] = r_k[q] for q, k in 0..7: eight rows of eight lanes written as eight columns, each
    one 8-lane store (the caller keeps them in bounds; only the values move)."""
    t0, t1 = _unpack_lo(r0, r1), _unpack_hi(r0, r1)
    t2, t3 = _unpack_lo(r2, r3), _unpack_hi(r2, r3)
    t4, t5 = _unpack_lo(r4, r5), _unpack_hi(r4, r5)
    t6, t7 = _unpack_lo(r6, r7), _unpack_hi(r6, r7)
    u0, u1, u2, u3 = _pairs_lo(t0, t2), _pairs_hi(t0, t2), _pairs_lo(t1, t3), _pairs_hi(t1, t3)
    u4, u5, u6, u7 = _pairs_lo(t4, t6), _pairs_hi(t4, t6), _pairs_lo(t5, t7), _pairs_hi(t5, t7)
    store8(out, base, _halves_lo(u0, u4))
    store8(out, base + stride, _halves_lo(u1, u5))
    store8(out, base + 2 * stride, _halves_lo(u2, u6))
    store8(out, base + 3 * stride, _halves_lo(u3, u7))
    store8(out, base + 4 * stride, _halves_hi(u0, u4))
    store8(out, base + 5 * stride, _halves_hi(u1, u5))
    store8(out, base + 6 * stride, _halves_hi(u2, u6))
    store8(out, base + 7 * stride, _halves_hi(u3, u7))

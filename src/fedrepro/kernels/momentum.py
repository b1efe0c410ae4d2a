"""The decentral engine's momentum passes (numba), in torch's operation order, bit for bit (fedrepro.kernels.dense
re-exports them; its docstring says how the operations map to torch's):

- ``momentum_step``: v = (v c) + g;  x = fma(fma(v, β, g), -η, x)  (Nesterov)  or  x = fma(v, -η, x),
  with g = (x wd) + g first when weight decay is on — one pass where torch makes four or five.
- ``outer_momentum_step``: momentum_step with g = (aᵀ z) / b formed on the fly for a gradient that is a sum of
  b outer products per node (the logistic-regression minibatch gradient, fedrepro.models.logreg.OuterGradient):
  each entry as BLAS's sgemm forms it at these shapes (a chain of fused multiply-adds over the batch, starting
  from +0, then the division by b), so G is never written to memory, read back, divided and read again.

Subnormal momentum entries (binary32). An entry whose gradient stays zero (a pixel that no sample of the node's batch
lights) decays geometrically, v <- v c, into the subnormal range below 2^-126, and for c > 1/2 it stays there: the
smallest subnormal 2^-149 times c rounds back to itself, so such entries pile up over a run. Without flush-to-zero an
x86 core runs every vector instruction that reads or writes a subnormal through a microcode assist of ~100 cycles:
on the 60-node MNIST benchmark 4 % of the entries are subnormal after 3,000 iterations, and the momentum pass then
took 2.9x as long (602 µs against 211 µs with those entries zeroed; 320 µs with the pass below). Flushing them
would change the bits, so where the caller asks (``subnormal_safe``; ``subnormal_safe_next`` says when it pays)
the binary32 pass computes them without one:

- the plain formulas run on v with its subnormals read as +0. That is exact wherever the subnormal cannot matter:
  a gradient with |g| >= 2^-100 absorbs round(v c) (|v c| < 2^-126 is under half an ulp of g), so v' = g either way,
  and with g = ±0 an |x| >= 2^-100 absorbs the step w η (|w| <= 2^-126 for c < 1, |β| <= 1; |η| < 2), so x' = x;
- the decay itself, v' = round(v c) (+ g = ±0), is exact integer-valued arithmetic on v's mantissa m: round(m c) on
  the subnormal grid 2^-149, with m c formed in binary32 and corrected by its error-free residual fma(m, c, -m c);
- any other subnormal entry (0 < |g| < 2^-100, |x| < 2^-100, scalars outside those bounds) is left unchanged by that
  pass and then updated by the plain formulas, which are exact, only slow.

Every entry is computed both ways and selected, without a branch, so the loop vectorizes; a branch would let the
compiler compute the plain formulas on the subnormal it was meant to avoid.
"""

from __future__ import annotations

import numba
import numba.extending
import numpy as np

from fedrepro.kernels.intrinsics import (
    bits32,
    div8,
    float32_from_bits,
    fma,
    fma8,
    load8,
    splat8,
    store8_strided,
    store8_transposed,
)

_jit = numba.njit(cache=True, nogil=True, boundscheck=False)

_SIGN = np.int32(-(2**31))           # binary32 sign bit
_ABS = np.int32(2**31 - 1)           # all but the sign bit
_FRACTION = np.int32(2**23 - 1)      # the fraction bits: a subnormal's integer mantissa (value = m 2^-149)
_BITS_2_POW_M100 = np.int32(0x0D800000)   # the bits of 2^-100 (exponent field 27): |x| >= 2^-100 iff bits >= these
_HALF = np.float32(0.5)


@_jit
def _momentum_entry(x, v, i, gi, c, beta, neg_eta, wd, nesterov):
    """One entry of the momentum update, the plain formulas: weight decay, v = v c + g, then x."""
    if wd != 0:
        gi = x[i] * wd + gi
    vi = v[i] * c + gi
    v[i] = vi
    if nesterov:
        x[i] = fma(fma(vi, beta, gi), neg_eta, x[i])
    else:
        x[i] = fma(vi, neg_eta, x[i])


@_jit
def _plain_pass(x, v, g, c, beta, neg_eta, wd, nesterov):
    for e in range(x.shape[0]):
        _momentum_entry(x, v, e, g[e], c, beta, neg_eta, wd, nesterov)


@_jit
def _plain_pass_divided(x, v, g, b, c, beta, neg_eta, wd, nesterov):
    for e in range(x.shape[0]):
        _momentum_entry(x, v, e, g[e] / b, c, beta, neg_eta, wd, nesterov)


@_jit
def _plain(x, v, g, b, divide, c, beta, neg_eta, wd, nesterov):
    if divide:                   # two loops, each vectorized
        _plain_pass_divided(x, v, g, b, c, beta, neg_eta, wd, nesterov)
    else:
        _plain_pass(x, v, g, c, beta, neg_eta, wd, nesterov)


@_jit
def _subnormal(b):
    """Whether the binary32 bits b are a subnormal (nonzero, exponent field 0); branch-free."""
    t = (b & _ABS) - np.int32(1)
    return (t >= np.int32(0)) & (t < _FRACTION)


@_jit
def _decay(b, c):
    """The bits of round(a c), a the binary32 with bits b and |a| < 2^-126, 0 < c < 1 (binary32).

    a = m 2^-149 with the integer m = b's fraction, so round(a c) = round(m c) 2^-149 (the grid is uniform below
    2^-125). p = m c rounded to binary32 is within half an ulp (<= 1/4) of m c, so rint(p) is round(m c) except where
    p lies on a half-integer: then the exact residual fma(m, c, -p) breaks the tie (a zero residual: a true tie,
    to even, as rint)."""
    m = np.float32(b & _FRACTION)       # exact: m < 2^23
    p = m * c
    err = fma(m, c, -p)
    r = np.rint(p)
    d = p - r                           # exact
    away = (abs(d) == _HALF) & (err != 0) & ((err > 0) == (d > 0))
    r = r + (np.float32(np.sign(d)) if away else np.float32(0))
    return np.int32(r) | (b & _SIGN)


@_jit
def _safe_entry(vbits, xbits, g, left, e, c, beta, neg_eta, scalars_ok, nesterov):
    """Entry e of the binary32 pass without weight decay (module docstring); returns whether it is left unchanged
    for the plain formulas (then left[e] = 1)."""
    vb, xb, gi = vbits[e], xbits[e], g[e]
    sub = _subnormal(vb)
    vi = float32_from_bits(np.int32(0) if sub else vb)
    xi = float32_from_bits(xb)
    vn = vi * c + gi
    xn = fma(fma(vn, beta, gi), neg_eta, xi) if nesterov else fma(vn, neg_eta, xi)
    gb = bits32(gi)
    ga = gb & _ABS
    db = _decay(vb, c)
    decayed = (db & gb & _SIGN) if (db & _ABS) == np.int32(0) else db     # + g = ±0: IEEE's sign of a zero sum
    keep = sub & ((not scalars_ok) | ((ga == np.int32(0)) & ((xb & _ABS) < _BITS_2_POW_M100))
                  | ((ga != np.int32(0)) & (ga < _BITS_2_POW_M100)))
    vbits[e] = vb if keep else ((decayed if ga == np.int32(0) else bits32(vn)) if sub else bits32(vn))
    xbits[e] = xb if keep else bits32(xn)
    left[e] = keep
    return keep


@_jit
def _safe_range(x, v, g, left, lo, hi, c, beta, neg_eta, nesterov):
    """_safe_entry on the entries lo..hi-1 (unsigned: no wrap-around test per index, so the loop vectorizes); one
    loop per value of nesterov (a branch inside would keep it scalar). Returns whether any entry is left."""
    scalars_ok = 0 < c < 1 and abs(neg_eta) < 2 and (not nesterov or abs(beta) <= 1)
    vbits, xbits = v.view(np.int32), x.view(np.int32)
    any_left = False
    if nesterov:
        for e in range(lo, hi):
            any_left |= _safe_entry(vbits, xbits, g, left, e, c, beta, neg_eta, scalars_ok, True)
    else:
        for e in range(lo, hi):
            any_left |= _safe_entry(vbits, xbits, g, left, e, c, beta, neg_eta, scalars_ok, False)
    return any_left


@_jit
def _plain_range(x, v, g, lo, hi, c, beta, neg_eta, nesterov):
    """The plain formulas without weight decay on the entries lo..hi-1 (unsigned, as _safe_range)."""
    if nesterov:
        for e in range(lo, hi):
            _momentum_entry(x, v, e, g[e], c, beta, neg_eta, np.float32(0), True)
    else:
        for e in range(lo, hi):
            _momentum_entry(x, v, e, g[e], c, beta, neg_eta, np.float32(0), False)


@_jit
def _subnormal_in(vbits, lo, hi):
    found = False
    for e in range(lo, hi):
        found |= _subnormal(vbits[e])
    return found


SAFE_BLOCK = 64                  # entries per block that _safe_pass checks for a subnormal v


@_jit
def _safe_pass(x, v, g, left, c, beta, neg_eta, nesterov):
    """The binary32 pass without weight decay (module docstring) on the SAFE_BLOCK-entry blocks of v that hold a
    subnormal, the plain formulas on the runs of blocks between them: the same bits, since the two differ only at a
    subnormal v. Subnormals cluster (the pixels no sample of a node lights), so most blocks take the plain formulas:
    on the 60-node MNIST benchmark late in a run (3-4 % of v subnormal), 22-30 % of the blocks hold one, and the pass
    over a node's row took 3.3 against 5.1 µs for the safe pass on every entry (1.3 µs with no subnormal at all).
    Entries the safe pass leaves are finished here by the plain formulas."""
    n = np.uint64(x.shape[0])
    block = np.uint64(SAFE_BLOCK)
    vbits = v.view(np.int32)
    plain_from = np.uint64(0)                 # the first entry of the run of plain blocks not yet updated
    for s in range(np.uint64(0), n, block):
        t = min(s + block, n)
        if not _subnormal_in(vbits, s, t):
            continue
        if plain_from < s:
            _plain_range(x, v, g, plain_from, s, c, beta, neg_eta, nesterov)
        if _safe_range(x, v, g, left, s, t, c, beta, neg_eta, nesterov):
            _finish_left(x[s:t], v[s:t], g[s:t], left[s:t], c, beta, neg_eta, nesterov)
        plain_from = t
    if plain_from < n:
        _plain_range(x, v, g, plain_from, n, c, beta, neg_eta, nesterov)


# Subnormal residuals (binary32). As a run goes on, the softmax residual z of a class a node's batch is confidently
# not in underflows into the subnormals (the 60-node MNIST benchmark: 192 of 3,000 after 800 iterations), and every
# vector fused multiply-add of a gradient chain link with such a z takes the assist: the chains took 2.4x as long.
# A column k of z with a subnormal entry has its chain computed on the images scaled by 2^64 (z' = z 2^64, exact and
# normal, as are the chain values r' = r 2^64), the same operations on values the hardware takes at full speed:
# - where the unscaled result is normal or zero (|u| >= 2^-62 or u = 0, u = fma(a, z', r')), u is its image exactly:
#   the rounding to 24 bits commutes with the power of two;
# - where it is subnormal (0 < |u| < 2^-62), the exact rounding is to the grid 2^-149 (2^-85 scaled), which an
#   addend C = ±2^-62 of u's sign forces: fma(a, z', r' + C) - C rounds a z' + r' once, on that grid, ties to even
#   (C's grid index 2^23 is even), and both additions of C are exact where |r'| < 2^-62; a result that rounds to
#   zero there takes u's sign, as an underflow does;
# - a column whose entries are not all finite, or whose scaled chain could overflow (B max|a| max|z| 2^64 >= 2^120,
#   or max|z| >= 2^60), and a lane with |r'| >= 2^-62 and a subnormal result, take the plain chain: exact, only slow.
# The quotient by b and the scaling back are done in binary64 and converted to binary32 (see _scaled_chain).
_MAGIC = np.float32(2.0**-62)       # the image of 2^-126 under the scaling by 2^64
_MAGIC_BITS = np.int32(0x20800000)  # its bits
_TWO_POW_M85 = np.float32(2.0**-85)
_INF_BITS = np.int32(0x7F800000)
_DOWN = 2.0**-64
_SCALED_LIMIT = 2.0**56             # B max|a| max|z| below this: every scaled value below 2^120
_Z_LIMIT = 2.0**60                  # max|z| below this: z 2^64 finite (_scale_up adds 64 to the exponent field)


@_jit
def _scaled_link(row, aj, zs):
    """row <- the images of fma(aj, z, r) for the images row = r 2^64 and zs = z 2^64 (comment above); returns
    whether a lane with a subnormal result had |r'| >= 2^-62 (then row is unspecified)."""
    worst = np.int32(0)          # the bits of the largest |r'| of a lane whose result is subnormal (an integer
    for q in range(row.shape[0]):  # maximum: a floating-point one would keep the loop from vectorizing)
        r, a = row[q], aj[q]
        u = fma(a, zs, r)
        au = abs(u)
        small = (au < _MAGIC) & (au != 0)
        cc = float32_from_bits(np.int32(_MAGIC_BITS | (bits32(u) & _SIGN)))
        m = bits32(fma(a, zs, r + cc) - cc) | (bits32(u) & _SIGN)    # a zero keeps the sign of what underflowed
        row[q] = float32_from_bits(np.int32(m)) if small else u
        worst = max(worst, np.int32(bits32(r) & _ABS) if small else np.int32(0))
    return worst >= _MAGIC_BITS


@_jit
def _column_bounded(zi, k, amax):
    """Whether column k's entries are finite and its scaled chain bounded (amax: max |a| of the node, inf where an
    entry of a is not finite)."""
    zmax = 0.0
    for j in range(zi.shape[0]):
        zabs = abs(np.float64(zi[j, k]))
        if not zabs <= 1e300:                    # inf or NaN
            return False
        zmax = max(zmax, zabs)
    return zmax < _Z_LIMIT and zi.shape[0] * amax * zmax < _SCALED_LIMIT


@_jit
def _abs_max(ai):
    """max |a| over one node's binary32 (B, P) rows, as a binary64; inf where an entry is not finite. On the bits:
    they order the magnitudes as the values do, and an integer maximum vectorizes."""
    mb = np.int32(0)
    for j in range(ai.shape[0]):
        for q in range(ai.shape[1]):
            mb = max(mb, np.int32(bits32(ai[j, q]) & _ABS))
    return np.inf if mb >= _INF_BITS else np.float64(float32_from_bits(mb))


@_jit
def _scale_up(z):
    """z 2^64 for a binary32 z with |z| < 2^63, from the bits (a multiplication would take the assist on a
    subnormal z: LLVM narrows a binary64 product of binary32 values to a binary32 one)."""
    b = bits32(z)
    if np.int32(b & _ABS) >= np.int32(0x00800000):               # normal: the exponent field plus 64
        return float32_from_bits(np.int32(b + np.int32(64 << 23)))
    m = np.float32(np.int32(b & _FRACTION)) * _TWO_POW_M85      # the subnormal's integer mantissa, scaled: exact
    return float32_from_bits(np.int32(bits32(m) | (b & _SIGN)))


@_jit
def _scaled_chain(row, ai, zi, k, b):
    """row = (the chain of links j = 0..B-1 of column k, aᵀ z for class k) / b, through the scaled images; returns
    False (row unspecified) where a lane is outside the exact cases. The quotient of the image by b is formed in
    binary64 and scaled back there: one rounding of a binary32 quotient to binary64, then to binary32 (whose
    subnormals the conversion makes without an assist), which is the binary32 quotient (53 >= 2 x 24 + 2); binary64
    there because LLVM narrows a binary64 quotient of two binary32 values to a binary32 division."""
    for q in range(row.shape[0]):
        row[q] = 0.0
    for j in range(ai.shape[0]):
        if _scaled_link(row, ai[j], _scale_up(zi[j, k])):
            return False
    bd = np.float64(b)
    for q in range(row.shape[0]):
        row[q] = np.float32((np.float64(row[q]) / bd) * _DOWN)
    return True


def _scaled_column(row, ai, zi, k, b, amax):
    """Column k's chain divided by b into row through the scaled images, where z's column holds a binary32 subnormal
    and that is exact (comment above): returns whether it did. amax: a 1-element buffer caching max |a| of the node
    (negative: not computed yet). Always False for other dtypes."""
    raise NotImplementedError


@numba.extending.overload(_scaled_column)
def _scaled_column_for(row, ai, zi, k, b, amax):
    def binary32(row, ai, zi, k, b, amax):
        sub = False
        for j in range(zi.shape[0]):
            sub |= _subnormal(bits32(zi[j, k]))
        if not sub:
            return False
        if amax[0] < 0:
            amax[0] = _abs_max(ai)
        return _column_bounded(zi, k, amax[0]) and _scaled_chain(row, ai, zi, k, b)

    def other(row, ai, zi, k, b, amax):
        return False

    return binary32 if zi.dtype == numba.types.float32 else other


@_jit
def _finish_left(x, v, g, left, c, beta, neg_eta, nesterov):
    """The plain formulas on the entries _safe_range left; eight flags at a time (they are rare)."""
    n = x.shape[0]
    words = left[: n - n % 8].view(np.uint64)
    for w in range(words.shape[0] + 1):
        if w < words.shape[0] and words[w] == 0:
            continue
        for e in range(8 * w, min(8 * w + 8, n)):
            if left[e]:
                _momentum_entry(x, v, e, g[e], c, beta, neg_eta, np.float32(0), nesterov)


def _row_pass(x, v, g, b, divide, left, c, beta, neg_eta, wd, nesterov, subnormal_safe):
    """The momentum update of the 1-D x, v with gradient g (divided by b where divide, a literal).
    Compiled only (the overload below picks the pass by dtype); `left`: uint8 scratch of x's length."""
    raise NotImplementedError


@numba.extending.overload(_row_pass)
def _row_pass_for(x, v, g, b, divide, left, c, beta, neg_eta, wd, nesterov, subnormal_safe):
    def binary32(x, v, g, b, divide, left, c, beta, neg_eta, wd, nesterov, subnormal_safe):
        if not subnormal_safe or wd != 0 or divide:     # (the safe pass takes g divided already)
            _plain(x, v, g, b, divide, c, beta, neg_eta, wd, nesterov)
        else:
            _safe_pass(x, v, g, left, c, beta, neg_eta, nesterov)

    def other(x, v, g, b, divide, left, c, beta, neg_eta, wd, nesterov, subnormal_safe):
        _plain(x, v, g, b, divide, c, beta, neg_eta, wd, nesterov)   # binary64 subnormals (< 2^-1022): the hardware's

    return binary32 if x.dtype == numba.types.float32 else other


# The safe pass costs about 0.2 ns per entry more than the plain one and saves about 20 ns per subnormal entry
# (momentum_step on the 60-node MNIST benchmark's state after 3,000 iterations, one core): alone it pays above about
# 1 %; inside the engine's iteration, interleaved against the plain pass, it lost 9 % at 1 % and broke even at 2 %.
SAFE_FRACTION = 0.02
SAMPLE_STRIDE = 61               # subnormal_safe_next looks at every 61st entry (prime: no alignment with a layout)


@_jit
def _sampled_subnormals(v):
    count = 0
    for e in range(0, v.shape[0], SAMPLE_STRIDE):
        count += _subnormal(bits32(v[e]))
    return count


def subnormal_safe_next(v: np.ndarray) -> bool:
    """Whether the next momentum pass over v (binary32, after this one) should take the safe pass: more than
    SAFE_FRACTION of a sample of its entries subnormal (the momentum changes slowly from one iteration to the next)."""
    if v.dtype != np.float32 or v.size == 0:
        return False
    flat = v.reshape(-1)
    return _sampled_subnormals(flat) > SAFE_FRACTION * len(range(0, flat.size, SAMPLE_STRIDE))


MOMENTUM_CHUNK = 8192            # momentum_step's entries per pass (its scratch stays in the L1/L2 cache)


@_jit
def momentum_step(x, v, g, c, beta, neg_eta, wd, nesterov, subnormal_safe=False):
    """x, v (updated in place), g: 1-D arrays of one dtype; c, beta, neg_eta, wd: scalars of that dtype;
    subnormal_safe: take the binary32 pass that avoids subnormals' slow path (subnormal_safe_next says when)."""
    n = x.shape[0]
    left = np.empty(min(n, MOMENTUM_CHUNK), dtype=np.uint8)
    for s in range(0, n, MOMENTUM_CHUNK):
        t = min(s + MOMENTUM_CHUNK, n)
        _row_pass(x[s:t], v[s:t], g[s:t], c, False, left[: t - s], c, beta, neg_eta, wd, nesterov, subnormal_safe)


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _finish_column(acc, gT, scaled, k, P, q, bv, divided):
    """A block's column k: its chain divided by b where asked, or a scaled column's values from its gT row."""
    if scaled[k]:
        return load8(gT, k * P + q)
    return div8(acc, bv) if divided else acc


def _outer_blocks(g, a, base, zi, gT, scaled, b, divided):
    """Write g[q C + k] for the pixels of whole blocks of 8, every class, straight from registers (binary32 only,
    C >= 8): returns how many pixels it did (0 for other dtypes or C < 8). Whole groups of 8 classes go out by
    ``store8_transposed``, the others lane by lane.

    a: the node's (B, P) rows, flattened, from ``base``; gT: the (C, P) scratch flattened (flat arrays and
    offsets, not row views: a view in this loop costs two atomic reference counts). Per block the eight classes'
    chains run side by side (eight accumulators, one load of a per link), each the chain of links j = 0..B-1 from
    +0 that the row chains below form."""
    raise NotImplementedError


@numba.extending.overload(_outer_blocks)
def _outer_blocks_for(g, a, base, zi, gT, scaled, b, divided):
    def binary32(g, a, base, zi, gT, scaled, b, divided):
        B, C = zi.shape
        P = gT.shape[0] // C
        C8 = C - C % 8
        if C8 == 0:
            return 0
        bv = splat8(b)
        zero = splat8(np.float32(0.0))
        for q in range(0, P - P % 8, 8):
            for k in range(0, C8, 8):
                r0 = r1 = r2 = r3 = r4 = r5 = r6 = r7 = zero
                for j in range(B):
                    aj = load8(a, base + j * P + q)
                    r0 = fma8(aj, splat8(zi[j, k]), r0)
                    r1 = fma8(aj, splat8(zi[j, k + 1]), r1)
                    r2 = fma8(aj, splat8(zi[j, k + 2]), r2)
                    r3 = fma8(aj, splat8(zi[j, k + 3]), r3)
                    r4 = fma8(aj, splat8(zi[j, k + 4]), r4)
                    r5 = fma8(aj, splat8(zi[j, k + 5]), r5)
                    r6 = fma8(aj, splat8(zi[j, k + 6]), r6)
                    r7 = fma8(aj, splat8(zi[j, k + 7]), r7)
                store8_transposed(g, q * C + k, C, _finish_column(r0, gT, scaled, k, P, q, bv, divided),
                                  _finish_column(r1, gT, scaled, k + 1, P, q, bv, divided),
                                  _finish_column(r2, gT, scaled, k + 2, P, q, bv, divided),
                                  _finish_column(r3, gT, scaled, k + 3, P, q, bv, divided),
                                  _finish_column(r4, gT, scaled, k + 4, P, q, bv, divided),
                                  _finish_column(r5, gT, scaled, k + 5, P, q, bv, divided),
                                  _finish_column(r6, gT, scaled, k + 6, P, q, bv, divided),
                                  _finish_column(r7, gT, scaled, k + 7, P, q, bv, divided))
            for k in range(C8, C, 2):      # the last C mod 8 classes, two chains side by side, lane by lane out
                k1 = min(k + 1, C - 1)     # (an odd last class computes its chain twice)
                r0 = r1 = zero
                for j in range(B):
                    aj = load8(a, base + j * P + q)
                    r0 = fma8(aj, splat8(zi[j, k]), r0)
                    r1 = fma8(aj, splat8(zi[j, k1]), r1)
                r0 = _finish_column(r0, gT, scaled, k, P, q, bv, divided)
                r1 = _finish_column(r1, gT, scaled, k1, P, q, bv, divided)
                store8_strided(g, q * C + k, C, r0)
                store8_strided(g, q * C + k1, C, r1)
        return P - P % 8

    def other(g, a, base, zi, gT, scaled, b, divided):
        return 0

    return binary32 if g.dtype == numba.types.float32 else other


@_jit
def outer_momentum_step(x, v, a, z, b, c, beta, neg_eta, wd, nesterov, subnormal_safe=False):
    """momentum_step on x, v (n, p C) with g_i = (a_iᵀ z_i) / b, a (n, B, p), z (n, B, C), b a scalar of x's dtype.

    Per node, in binary32 with C >= 8, the p x C products of whole blocks of 8 pixels and 8 classes are summed in
    registers (eight B-term chains, one per class, each over 8 pixels), divided by b where that is done here, and
    written to a row of x's layout by an 8 x 8 transposing store (``_outer_blocks``). The rest (the other dtypes,
    the last C mod 8 classes, the last p mod 8 pixels) is summed in a C x p scratch (rows of a are contiguous, so the
    chains vectorize over p, four links per pass), divided, then transposed into the row. Either way each entry is
    the same chain. Then the momentum pass as in momentum_step (the division inside it, where that pass is the
    plain one). The blocks save the scratch's transposition, which was half the time of the whole pass (a scalar
    store per entry)."""
    n, B, P = a.shape
    C = z.shape[2]
    gT = np.empty((C, P), dtype=x.dtype)
    g = np.empty(P * C, dtype=x.dtype)
    left = np.empty(P * C, dtype=np.uint8)
    scaled = np.zeros(C, dtype=np.bool_)
    amax = np.empty(1)                 # max |a| of the node, computed where a column needs it
    a_flat, gT_flat = a.reshape(-1), gT.reshape(-1)
    for i in range(n):
        xi, vi, ai, zi = x[i], v[i], a[i], z[i]
        amax[0] = -1.0
        any_scaled = False
        for k in range(C):
            scaled[k] = _scaled_column(gT[k], ai, zi, k, b, amax)   # row = the chain divided by b already
            any_scaled |= scaled[k]
        # the division here where the safe pass follows (it takes g divided) or a scaled column is divided already
        divided = subnormal_safe or any_scaled
        done = _outer_blocks(g, a_flat, i * B * P, zi, gT_flat, scaled, b, divided)   # pixels [0, done) in g
        for k in range(C):
            if scaled[k]:
                continue
            row = gT[k]
            for q in range(done, P):
                row[q] = 0.0
            j = 0
            while j + 4 <= B:      # four links of the chain per pass over the row (one load and store, not four)
                a0, a1, a2, a3 = ai[j], ai[j + 1], ai[j + 2], ai[j + 3]
                z0, z1, z2, z3 = zi[j, k], zi[j + 1, k], zi[j + 2, k], zi[j + 3, k]
                for q in range(done, P):
                    row[q] = fma(a3[q], z3, fma(a2[q], z2, fma(a1[q], z1, fma(a0[q], z0, row[q]))))
                j += 4
            while j < B:
                aj, zk = ai[j], zi[j, k]
                for q in range(done, P):
                    row[q] = fma(aj[q], zk, row[q])
                j += 1
            if divided:
                for q in range(done, P):
                    row[q] = row[q] / b
        for k in range(C):     # gT's rows read in order, g written with stride C: 1.4x faster than q outer
            src = gT[k]
            for q in range(done, P):
                g[q * C + k] = src[q]
        if subnormal_safe:
            _row_pass(xi, vi, g, b, False, left, c, beta, neg_eta, wd, nesterov, True)
        elif divided:
            _row_pass(xi, vi, g, b, False, left, c, beta, neg_eta, wd, nesterov, False)
        else:
            _row_pass(xi, vi, g, b, True, left, c, beta, neg_eta, wd, nesterov, False)

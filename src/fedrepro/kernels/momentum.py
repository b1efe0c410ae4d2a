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

from fedrepro.kernels.intrinsics import bits32, float32_from_bits, fma

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
def _safe_pass(x, v, g, left, c, beta, neg_eta, nesterov):
    """The binary32 pass without weight decay (module docstring); nesterov a literal. left[e] = 1 where entry e is
    left unchanged for the plain formulas. Returns whether any entry is left."""
    scalars_ok = 0 < c < 1 and abs(neg_eta) < 2 and (not nesterov or abs(beta) <= 1)
    vbits, xbits = v.view(np.int32), x.view(np.int32)
    any_left = False
    for e in range(x.shape[0]):
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
        any_left |= keep
    return any_left


@_jit
def _finish_left(x, v, g, left, c, beta, neg_eta, nesterov):
    """The plain formulas on the entries _safe_pass left; eight flags at a time (they are rare)."""
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
        elif nesterov:           # a literal flag each: the loop is compiled without the branch (else it stays scalar)
            if _safe_pass(x, v, g, left, c, beta, neg_eta, True):
                _finish_left(x, v, g, left, c, beta, neg_eta, True)
        elif _safe_pass(x, v, g, left, c, beta, neg_eta, False):
            _finish_left(x, v, g, left, c, beta, neg_eta, False)

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


@_jit
def outer_momentum_step(x, v, a, z, b, c, beta, neg_eta, wd, nesterov, subnormal_safe=False):
    """momentum_step on x, v (n, p C) with g_i = (a_iᵀ z_i) / b, a (n, B, p), z (n, B, C), b a scalar of x's dtype.

    Per node the p x C products are summed in a C x p scratch (rows of a are contiguous, so the B-term chains
    vectorize over p, four links per pass), divided by b, transposed into a row of x's layout, then the momentum
    pass as in momentum_step (the division inside it, where that pass is the plain one)."""
    n, B, P = a.shape
    C = z.shape[2]
    gT = np.empty((C, P), dtype=x.dtype)
    g = np.empty(P * C, dtype=x.dtype)
    left = np.empty(P * C, dtype=np.uint8)
    for i in range(n):
        xi, vi, ai, zi = x[i], v[i], a[i], z[i]
        for k in range(C):
            row = gT[k]
            for q in range(P):
                row[q] = 0.0
            j = 0
            while j + 4 <= B:      # four links of the chain per pass over the row (one load and store, not four)
                a0, a1, a2, a3 = ai[j], ai[j + 1], ai[j + 2], ai[j + 3]
                z0, z1, z2, z3 = zi[j, k], zi[j + 1, k], zi[j + 2, k], zi[j + 3, k]
                for q in range(P):
                    row[q] = fma(a3[q], z3, fma(a2[q], z2, fma(a1[q], z1, fma(a0[q], z0, row[q]))))
                j += 4
            while j < B:
                aj, zk = ai[j], zi[j, k]
                for q in range(P):
                    row[q] = fma(aj[q], zk, row[q])
                j += 1
            if subnormal_safe:     # the division here: the safe pass takes g divided
                for q in range(P):
                    row[q] = row[q] / b
        for q in range(P):
            for k in range(C):
                g[q * C + k] = gT[k, q]
        if subnormal_safe:
            _row_pass(xi, vi, g, b, False, left, c, beta, neg_eta, wd, nesterov, True)
        else:
            _row_pass(xi, vi, g, b, True, left, c, beta, neg_eta, wd, nesterov, False)

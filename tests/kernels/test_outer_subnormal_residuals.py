"""outer_momentum_step's columns of subnormal residuals (fedrepro.kernels.momentum: the chain on images scaled by
2^64, a magic addend for the subnormal results, the quotient through binary64) against an exact oracle: every link
of the chain and the division by b rounded from the exact rational value, with IEEE's signs of zero, then the
momentum pass. Residual columns mix subnormals of both signs, signed zeros, tiny and ordinary values; a holds
signed zeros, pixels, negative, large and tiny entries; ties on the subnormal grid, a cancellation into the
subnormals after a large partial sum (the plain chain's fallback), and non-finite entries are built in."""

from fractions import Fraction

import numpy as np
import pytest

from fedrepro import kernels

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba not installed: the kernels are not used")

SUB = Fraction(1, 2**149)          # the binary32 subnormal grid


def _round32(x: Fraction, negative_zero: bool) -> np.float32:
    """x rounded to the nearest binary32, ties to even (subnormals and overflow included); a zero result takes the
    sign IEEE gives it: that of x where x underflows, ``negative_zero`` where x is an exact zero."""
    if x == 0:
        return np.float32(-0.0 if negative_zero else 0.0)
    sign, m = (-1 if x < 0 else 1), abs(x)
    e = max(m.numerator.bit_length() - m.denominator.bit_length() - 1, -126)  # floor(log2 m) or lower, >= -126
    while Fraction(2) ** (e + 1) <= m:
        e += 1
    ulp = Fraction(2) ** (e - 23) if e >= -126 else SUB
    ulp = max(ulp, SUB)
    q, rem = divmod(m, ulp)
    if rem * 2 > ulp or (rem * 2 == ulp and q % 2 == 1):
        q += 1
    value = float(q * ulp)
    if value > float(np.finfo(np.float32).max):
        return np.float32(sign * np.inf)
    return np.float32(sign * value) if q else np.float32(-0.0 if sign < 0 else 0.0)


def _fma32(a: np.float32, z: np.float32, r: np.float32) -> np.float32:
    product_negative = bool(np.signbit(a)) != bool(np.signbit(z))
    p = Fraction(float(a)) * Fraction(float(z))
    exact = p + Fraction(float(r))
    if exact == 0:   # ±0 + ±0 is -0 only when both are; a cancellation of nonzero terms is +0
        return _round32(exact, p == 0 and r == 0 and product_negative and bool(np.signbit(r)))
    return _round32(exact, False)


def _oracle_gradient(a: np.ndarray, z: np.ndarray, b: float) -> np.ndarray:
    """G (n, p C): per node the chain fma(a_j, z_jk, .) over j from +0, then / b, each rounded exactly."""
    n, B, P = a.shape
    C = z.shape[2]
    G = np.empty((n, P, C), dtype=np.float32)
    bf = np.float32(b)
    for i in range(n):
        for k in range(C):
            for q in range(P):
                r = np.float32(0.0)
                for j in range(B):
                    r = _fma32(a[i, j, q], z[i, j, k], r)
                neg = bool(np.signbit(r)) != bool(np.signbit(bf))
                G[i, q, k] = _round32(Fraction(float(r)) / Fraction(float(bf)), neg)
    return G.reshape(n, P * C)


def _inputs(seed: int, n=5, B=5, P=48, C=6):
    rng = np.random.default_rng(seed)
    T = np.float32(np.finfo(np.float32).tiny)
    kind = rng.integers(0, 7, (n, B, C))
    z = np.select([kind == 0, kind == 1, kind == 2, kind == 3, kind == 4, kind == 5],
                  [rng.uniform(-1, 1, kind.shape) * T,                       # subnormal, both signs
                   rng.integers(1, 8, kind.shape) * 2.0**-149 * rng.choice([-1, 1], kind.shape),  # a few grid steps
                   np.where(rng.random(kind.shape) < 0.5, 0.0, -0.0),        # signed zeros
                   rng.standard_normal(kind.shape) * 2.0**-120,              # tiny normal
                   rng.standard_normal(kind.shape) * 2.0**-100,
                   rng.standard_normal(kind.shape) * 1e-7],
                  rng.standard_normal(kind.shape)).astype(np.float32)
    z[:, 0, 0] = np.float32(1e-40)                                          # every node has a subnormal column
    ak = rng.integers(0, 6, (n, B, P))
    a = np.select([ak == 0, ak == 1, ak == 2, ak == 3, ak == 4],
                  [np.zeros(ak.shape), np.full(ak.shape, -0.0), rng.integers(1, 256, ak.shape) / 255.0,
                   -rng.random(ak.shape) * 37.0, rng.standard_normal(ak.shape) * 2.0**-30],
                  rng.random(ak.shape) * 2.0**10).astype(np.float32)
    # ties on the subnormal grid: 0.5 x (2 m + 1) 2^-149, rounded to the even neighbour
    a[0, :, :4] = np.float32(0.5)
    z[0, :, 1] = (np.arange(1, B + 1) * 2 + 1) * np.float32(2.0**-149)
    # a large partial sum cancelled into the subnormals: the plain chain's fallback
    a[1, :2, 5] = np.float32(1.0)
    z[1, 0, 2], z[1, 1, 2] = np.float32(2.0**-110), np.float32(-(2.0**-110 - 2.0**-130))   # both exact
    z[1, 2:, 2] = np.float32(2.0**-140)
    return a, z


# (P, C): six classes take the row chains only; ten and seventeen the blocks of 8 pixels (store8_transposed for
# each group of 8 classes, lane by lane for an even and an odd rest) with the row chains for the last P mod 8 pixels
SHAPES = [(48, 6), (51, 10), (40, 17)]


@pytest.mark.parametrize("seed,shape", [(s, SHAPES[0]) for s in range(4)] + [(s, sh) for s in range(2)
                                                                              for sh in SHAPES[1:]])
@pytest.mark.parametrize("nesterov,safe", [(True, False), (False, False), (True, True), (False, True)])
def test_outer_momentum_step_with_subnormal_residuals_is_exact(seed, shape, nesterov, safe):
    from fedrepro.kernels.dense import momentum_step, outer_momentum_step

    a, z = _inputs(seed, P=shape[0], C=shape[1])
    n, B, P = a.shape
    C = z.shape[2]
    rng = np.random.default_rng(100 + seed)
    X = rng.standard_normal((n, P * C)).astype(np.float32)
    V = (rng.standard_normal((n, P * C)) * 1e-3).astype(np.float32)
    V[:, ::2] = 0.0                       # v' = g there: the gradient's every bit shows in V and X
    X[:, ::4] = 0.0
    f = np.float32
    scalars = (f(0.9 * 1.0137), f(0.9), f(-0.0123), f(0.0), nesterov)
    G = _oracle_gradient(a, z, B)
    Xk, Vk = X.copy(), V.copy()
    momentum_step(X.reshape(-1), V.reshape(-1), G.reshape(-1), *scalars)
    outer_momentum_step(Xk, Vk, a, z, f(B), *scalars, safe)
    assert np.array_equal(X.view(np.uint32), Xk.view(np.uint32))
    assert np.array_equal(V.view(np.uint32), Vk.view(np.uint32))


def test_the_oracle_rounds_as_the_hardware():
    """The oracle itself against the hardware's binary32 arithmetic (NumPy) where that is a single rounding."""
    rng = np.random.default_rng(0)
    T = np.finfo(np.float32).tiny
    x = np.concatenate([rng.uniform(-4, 4, 300) * T, rng.standard_normal(300), [0.0, -0.0]]).astype(np.float32)
    y = np.concatenate([rng.uniform(-4, 4, 300) * T, rng.standard_normal(300) * 1e-3, [-0.0, -0.0]]).astype(np.float32)
    for u, w in zip(x, y):
        s = u + w                                   # one rounding of the exact sum, IEEE's zero signs
        neg = bool(np.signbit(u)) and bool(np.signbit(w))
        assert _round32(Fraction(float(u)) + Fraction(float(w)), neg).view(np.uint32) == s.view(np.uint32)
        q = np.float32(u / np.float32(5.0))
        assert _round32(Fraction(float(u)) / 5, bool(np.signbit(u))).view(np.uint32) == q.view(np.uint32)


def test_non_finite_entries_take_the_plain_chain():
    """An infinite residual or a NaN in a keeps the hardware's chain (and its NaN/inf results)."""
    from fedrepro.kernels.dense import momentum_step, outer_momentum_step
    from fedrepro.models.logreg import OuterGradient

    a, z = _inputs(7)
    z[2, 3, 0] = np.inf
    a[3, 1, 10] = np.nan
    n, B, P = a.shape
    C = z.shape[2]
    X = np.ones((n, P * C), dtype=np.float32)
    V = np.zeros((n, P * C), dtype=np.float32)
    f = np.float32
    scalars = (f(0.9), f(0.9), f(-0.01), f(0.0), True)
    G = OuterGradient(a, z).dense().numpy()           # BLAS's chain: the plain one
    Xk, Vk = X.copy(), V.copy()
    momentum_step(X.reshape(-1), V.reshape(-1), G.reshape(-1), *scalars)
    outer_momentum_step(Xk, Vk, a, z, f(B), *scalars)
    same = (X.view(np.uint32) == Xk.view(np.uint32)) | (np.isnan(X) & np.isnan(Xk))
    assert same.all()


def test_the_scaled_chain_takes_most_subnormal_columns_and_is_exact():
    """The scaled path itself (not its fallback) on every column with a subnormal residual."""
    from fedrepro.kernels import momentum

    a, z = _inputs(3)
    n, B, P = a.shape
    C = z.shape[2]
    G = _oracle_gradient(a, z, B).reshape(n, P, C)
    T = np.finfo(np.float32).tiny
    taken = columns = 0
    row = np.empty(P, dtype=np.float32)
    for i in range(n):
        for k in range(C):
            if not ((z[i, :, k] != 0) & (np.abs(z[i, :, k]) < T)).any():
                continue
            columns += 1
            if momentum._scaled_chain(row, a[i], z[i], k, np.float32(B)):
                taken += 1
                assert np.array_equal(row.view(np.uint32), G[i, :, k].view(np.uint32)), (i, k)
    assert columns >= 10 and taken >= columns - 2
    assert not momentum._scaled_chain(row, a[1], z[1], 2, np.float32(B))      # the cancellation: declined


def test_a_huge_residual_beside_a_subnormal_keeps_the_plain_chain():
    """max|z| >= 2^60 would overflow z 2^64 even where every a is zero (max |a| = 0 bounds nothing): declined."""
    from fedrepro.kernels import momentum
    from fedrepro.kernels.dense import momentum_step, outer_momentum_step

    a, z = _inputs(11)
    a[2] = 0.0
    a[2, 1, ::3] = -0.0
    z[2, 0, 3], z[2, 1, 3] = np.float32(1e-40), np.float32(2.0**100)
    n, B, P = a.shape
    C = z.shape[2]
    assert not momentum._column_bounded(z[2], 3, 0.0)
    X = np.zeros((n, P * C), dtype=np.float32)
    V = np.zeros((n, P * C), dtype=np.float32)
    f = np.float32
    scalars = (f(0.9), f(0.9), f(-0.01), f(0.0), True)
    G = _oracle_gradient(a, z, B)
    Xk, Vk = X.copy(), V.copy()
    momentum_step(X.reshape(-1), V.reshape(-1), G.reshape(-1), *scalars)
    outer_momentum_step(Xk, Vk, a, z, f(B), *scalars)
    assert np.array_equal(X.view(np.uint32), Xk.view(np.uint32)) and np.array_equal(V.view(np.uint32), Vk.view(np.uint32))

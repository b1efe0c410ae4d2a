"""fedrepro.kernels.intrinsics' float32x8 data movement and division against NumPy, bit for bit (signed zeros,
subnormals, infinities and NaN payloads included: a shuffle or a store must move bits, not values)."""

import numpy as np
import pytest

from fedrepro import kernels

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba not installed: the kernels are not used")


def _awkward(rng, size):
    """binary32 values of every kind, as bits."""
    bits = rng.integers(0, 2**32, size, dtype=np.uint64).astype(np.uint32)
    bits[::7] = 0x80000000                    # -0
    bits[1::11] = 0x00000001                  # the smallest subnormal
    bits[2::13] = 0x7FC00123                  # a NaN with a payload
    bits[3::17] = 0xFF800000                  # -inf
    return bits.view(np.float32)


def _compiled():
    import numba

    from fedrepro.kernels.intrinsics import div8, load8, store8, store8_strided, store8_transposed

    @numba.njit
    def transposed(src, out, base, stride):
        store8_transposed(out, base, stride, load8(src, 0), load8(src, 8), load8(src, 16), load8(src, 24),
                          load8(src, 32), load8(src, 40), load8(src, 48), load8(src, 56))

    @numba.njit
    def strided(src, out, base, stride):
        store8_strided(out, base, stride, load8(src, 0))

    @numba.njit
    def divided(a, b, out):
        for i in range(0, a.shape[0], 8):
            store8(out, i, div8(load8(a, i), load8(b, i)))

    return transposed, strided, divided


@pytest.mark.parametrize("base,stride", [(0, 8), (3, 10), (5, 17)])
def test_store8_transposed_writes_the_columns(base, stride):
    transposed, _, _ = _compiled()
    src = _awkward(np.random.default_rng(stride), 64)
    out = np.full(base + 7 * stride + 8 + 4, np.float32(7.0))
    transposed(src, out, base, stride)
    expected = np.full_like(out, np.float32(7.0))
    for q in range(8):
        expected[base + q * stride: base + q * stride + 8] = src.reshape(8, 8)[:, q]
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("base,stride", [(0, 1), (2, 10), (1, 3)])
def test_store8_strided_writes_each_lane(base, stride):
    _, strided, _ = _compiled()
    src = _awkward(np.random.default_rng(base), 8)
    out = np.full(base + 7 * stride + 3, np.float32(7.0))
    strided(src, out, base, stride)
    expected = np.full_like(out, np.float32(7.0))
    expected[base: base + 7 * stride + 1: stride] = src
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))


def test_div8_is_the_correctly_rounded_quotient():
    _, _, divided = _compiled()
    rng = np.random.default_rng(1)
    a, b = _awkward(rng, 4096), _awkward(rng, 4096)
    b[5::9] = np.float32(5.0)                 # the engine's batch size, beside every kind of dividend
    out = np.empty_like(a)
    divided(a, b, out)
    with np.errstate(all="ignore"):
        expected = a / b
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(out), nan)
    assert np.array_equal(out[~nan].view(np.uint32), expected[~nan].view(np.uint32))

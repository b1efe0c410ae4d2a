"""The compiled CuteMaxVar kernels (fedrepro.kernels.sparse) against the SciPy/NumPy calls they replace and against
dense NumPy products (the independent check), to float64 rounding (relative 1e-10), and a whole engine run that
agrees with the kernels switched off (FEDREPRO_KERNELS=0)."""

import numpy as np
import pytest
import scipy.sparse as sp

from fedrepro import kernels
from fedrepro.comm import TrackedCopy, get_compressor
from fedrepro.gcca.engine import EngineConfig, run_maxvar
from fedrepro.gcca.generators import sparse_views
from fedrepro.gcca.mvlsa import mvlsa
from fedrepro.gcca.views import SparseViews, sample_rows

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba not installed: the kernels are not used")


@pytest.fixture(autouse=True)
def every_call_compiled(monkeypatch):
    """Small inputs, which the size threshold (kernels.MIN_WORK) would route to the library path: every call
    takes the kernel (FEDREPRO_KERNELS=always). (Not a conftest.py: that would shadow tests/conftest.py for the
    modules that import from it.)"""
    monkeypatch.setenv("FEDREPRO_KERNELS", "always")


RTOL = 1e-10


def _close(got, want):
    want = np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * float(np.abs(want).max()))


def _csr(rng, J=400, N=60, density=0.05):
    x = sp.random(J, N, density=density, format="csr", random_state=rng, data_rvs=rng.standard_normal)
    x.data[::7] = 0.0                                  # explicit zeros and a negative-zero product or two
    return x


@pytest.mark.parametrize("K", [1, 5, 16, 17])           # unrolled kernels up to 16 columns, a loop beyond
def test_csr_product_is_scipys(K):
    from fedrepro.kernels.sparse import csr_matmul_into

    rng = np.random.default_rng(0)
    x = _csr(rng)
    Q = rng.standard_normal((60, K))
    out = np.full((400, K), np.nan)
    csr_matmul_into(x.indptr, x.indices, x.data, Q, out)
    _close(out, x @ Q)
    _close(out, x.toarray() @ Q)


@pytest.mark.parametrize("K", [1, 3, 4, 5, 8, 13, 16, 17])
@pytest.mark.parametrize("ahead", [0, 8, 10**6])        # prefetching never changes a value
def test_batch_gradient_is_the_row_slice_products(K, ahead, monkeypatch):
    from fedrepro.kernels import sparse

    monkeypatch.setattr(sparse, "PREFETCH_ROWS", ahead)
    rng = np.random.default_rng(1)
    x = _csr(rng)
    Q, Ghat = rng.standard_normal((60, K)), rng.standard_normal((400, K))
    rows = np.sort(rng.choice(400, 90, replace=False))
    XF = x[rows]
    want = XF.T @ (XF @ Q - Ghat[rows])
    out = np.full((60, K), np.nan)
    sparse.csr_batch_gradient_into(x.indptr, x.indices, x.data, rows, Q, Ghat, out)
    _close(out, want)
    dense = x.toarray()[rows]
    _close(out, dense.T @ (dense @ Q - Ghat[rows]))


def test_kernels_take_strided_q_and_out():
    """The unrolled kernels index Q and the gradient's out flat: a Fortran-ordered Q and a strided out (views of
    bigger arrays) give SciPy's values as contiguous ones do."""
    from fedrepro.kernels import sparse

    rng = np.random.default_rng(3)
    x = _csr(rng)
    Q = np.asfortranarray(rng.standard_normal((60, 5)))
    Ghat = rng.standard_normal((400, 5))
    rows = np.sort(rng.choice(400, 90, replace=False))
    out = np.full((400, 10), np.nan)[:, ::2]
    sparse.csr_matmul_into(x.indptr, x.indices, x.data, Q, out)
    _close(out, x @ Q)
    grad = np.full((60, 10), np.nan)[:, 1::2]
    sparse.csr_batch_gradient_into(x.indptr, x.indices, x.data, rows, Q, Ghat, grad)
    XF = x[rows]
    _close(grad, XF.T @ (XF @ Q - Ghat[rows]))


def test_views_use_the_kernels_and_agree_with_scipy(monkeypatch):
    rng = np.random.default_rng(2)
    views = SparseViews([_csr(rng) for _ in range(3)])
    Q, Ghat = rng.standard_normal((3, 60, 4)), rng.standard_normal((400, 4))
    rows = sample_rows(rng, 3, 400, 50, increasing=True)
    fast = views.apply(Q), views.batch_gradient(rows, Q, Ghat)
    monkeypatch.setenv("FEDREPRO_KERNELS", "0")
    slow = views.apply(Q), views.batch_gradient(rows, Q, Ghat)
    for a, b in zip(fast, slow):
        _close(a, b)


@pytest.mark.parametrize("q", [2, 3, 5])
@pytest.mark.parametrize("batched", [True, False])
def test_in_place_quantizer_update_is_update(q, batched):
    """update_in_place (the kernel) against update (NumPy's quantizer and the message added), and every entry of
    x̂'s step on the quantizer's grid: sign(Δ) h m / S with h the floor of |Δ| S / m or one more."""
    rng = np.random.default_rng(q)
    shape = (3, 500, 5) if batched else (500, 5)
    x0, x1 = rng.standard_normal(shape), rng.standard_normal(shape)
    x1.reshape(-1)[::11] = x0.reshape(-1)[::11]          # zero differences
    a = TrackedCopy(get_compressor("cutemaxvar", q=q), init=x0, batched=batched)
    b = TrackedCopy(get_compressor("cutemaxvar", q=q), init=x0, batched=batched)
    ra, rb = np.random.default_rng(9), np.random.default_rng(9)
    for x in (x1, x1 * 3.0, x0):                         # the last one: x̂ moves back towards x0
        before = b.value.copy()
        out_a = a.update(x, ra)
        out_b = b.update_in_place(x, rb)
        _close(b.value, a.value)
        delta, step = x - before, b.value - before
        m = np.abs(delta).max(axis=(1, 2) if batched else None, keepdims=True)     # per element of the batch
        t = np.abs(delta) * (a.compressor.S / m)
        h = np.abs(step) * (a.compressor.S / m)
        assert np.all((np.abs(h - np.floor(t)) < 1e-6) | (np.abs(h - np.floor(t) - 1) < 1e-6))
        assert np.all((np.sign(step) == np.sign(delta)) | (step == 0))
        assert np.array_equal(out_a.bits, out_b.bits) and out_b.value is None
    assert ra.random() == rb.random()                    # the same draws


def test_quantizer_kernel_keeps_nan_and_zero_rows_as_numpy_does():
    from fedrepro.kernels.sparse import maxabs_quantize_add

    comp = get_compressor("cutemaxvar", q=3)
    x = np.array([[0.0, 0.0, 0.0], [1.0, np.nan, -2.0], [np.inf, 1.0, -1.0]])
    u = np.full(x.shape, 0.5)
    want = comp._encode(x.copy(), u, (3,)).value
    got = np.zeros_like(x)
    with np.errstate(invalid="ignore"):
        maxabs_quantize_add(x, got, u, float(comp.S))
    np.testing.assert_allclose(got, want, rtol=RTOL, equal_nan=True)


def test_engine_run_agrees_without_the_kernels(monkeypatch):
    views = sparse_views(np.random.default_rng(0), 2000, 100, 20, 3, 0.1, d_A=0.05)
    Q0 = mvlsa(views, 3, 10).Q
    cfg = EngineConfig(K=3, R=5, T=3, batch=200, q=3)

    def run():
        r = run_maxvar(views, Q0, cfg, np.random.default_rng(1), np.random.default_rng(2))
        return r.objective, r.Q, r.Ghat, r.bits_up

    fast = run()
    monkeypatch.setenv("FEDREPRO_KERNELS", "0")
    slow = run()
    for a, b in zip(fast, slow):
        _close(a, b)

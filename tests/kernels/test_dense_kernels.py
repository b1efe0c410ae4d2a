"""The decentral engine's compiled passes (fedrepro.kernels.dense) against the torch operations they replace, to
the bit; tests/decentral/test_engine_reference.py runs the whole engine (kernels on) against the pre-issue-19
engine, and the last test here runs it with the kernels switched off (FEDREPRO_KERNELS=0)."""

import numpy as np
import pytest
import torch
from decentral_paper_methods import method_config

from fedrepro import kernels
from fedrepro.decentral.engine import DecentralEngine
from fedrepro.decentral.mixing import GatherMixer, neighbour_lists
from fedrepro.decentral.schedules import InverseLR, SqrtStepThreshold
from fedrepro.decentral.topology import erdos_renyi, ring, torus

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba not installed: the kernels are not used")


@pytest.fixture(autouse=True)
def every_call_compiled(monkeypatch):
    """Small inputs, which the size threshold (kernels.MIN_WORK) would route to the library path: every call
    takes the kernel unless a test sets the threshold itself. (Not a conftest.py: that would shadow tests/conftest.py
    for the modules that import from it.)"""
    monkeypatch.setattr(kernels, "MIN_WORK", 0)


def _torch_momentum(X, V, G, beta, corr, eta, wd, nesterov):
    if wd:
        G = torch.mul(X, wd).add_(G)
    V.mul_(beta * corr).add_(G)
    if nesterov:
        X.add_(torch.add(G, V, alpha=beta), alpha=-eta)
    else:
        X.add_(V, alpha=-eta)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("nesterov,wd", [(True, 0.0), (False, 0.0), (True, 1e-3)])
def test_momentum_step_is_torchs_to_the_bit(dtype, nesterov, wd):
    from fedrepro.kernels.dense import momentum_step

    g = torch.Generator().manual_seed(0)
    X, V, G = (torch.randn(7, 1001, generator=g, dtype=dtype) for _ in range(3))
    Xk, Vk = X.clone(), V.clone()
    beta, corr, eta = 0.9, 1.0137, 0.0123
    f = Xk.numpy().dtype.type
    for _ in range(3):
        _torch_momentum(X, V, G, beta, corr, eta, wd, nesterov)
        momentum_step(Xk.view(-1).numpy(), Vk.view(-1).numpy(), G.view(-1).numpy(), f(beta * corr), f(beta), f(-eta),
                      f(wd), nesterov)
    assert torch.equal(X, Xk) and torch.equal(V, Vk)


def test_the_fused_multiply_add_matters():
    """Without the single rounding of torch's alpha-add the float32 iterates differ: the test above can fail."""
    g = torch.Generator().manual_seed(1)
    X, V, G = (torch.randn(100000, generator=g) for _ in range(3))
    fused = X.add(torch.add(G, V, alpha=0.9), alpha=-0.0123)
    f = np.float32
    x, v, gg = X.numpy(), V.numpy(), G.numpy()
    plain = x + f(-0.0123) * (gg + f(0.9) * v)
    assert not np.array_equal(fused.numpy(), plain)


@pytest.mark.parametrize("W", [ring(60).W, ring(3).W, torus(4, 6).W, erdos_renyi(20, 0.2, np.random.default_rng(2)).W],
                         ids=["ring", "ring3", "torus", "erdos_renyi"])
@pytest.mark.parametrize("gamma", [1.0, 0.4])
def test_gossip_add_is_the_mixers_sum_to_the_bit(W, gamma):
    from fedrepro.kernels.dense import gossip_add

    idx, wts = neighbour_lists(W)
    g = torch.Generator().manual_seed(3)
    n = W.shape[0]
    X, Y = torch.randn(n, 555, generator=g), torch.randn(n, 555, generator=g)
    want = X.clone()
    mixed = torch.sub(GatherMixer(idx, wts, Y.dtype, Y.device)(Y), Y)
    if gamma != 1.0:
        mixed.mul_(gamma)
    want += mixed
    gossip_add(X.numpy(), Y.numpy(), idx, wts.astype(np.float32), np.float32(gamma), gamma != 1.0)
    assert torch.equal(X, want)


@pytest.mark.parametrize("method", ["squarm", "choco_topk", "vanilla"])
def test_engine_is_identical_without_the_kernels(method, monkeypatch):
    rng = np.random.default_rng(0)
    n, d = 12, 300
    A = torch.as_tensor(rng.standard_normal((n, d)), dtype=torch.float32)

    def grad(X, t):                          # a quadratic per node: g_i = x_i - a_i (+ t-dependent noise)
        return X - A + 0.01 * np.sin(t)

    cfg = method_config(method, gamma=0.4 if method == "choco_topk" else 1.0, k=10,
                        H=5 if method == "squarm" else None)
    runs = []
    for flag in ("1", "0"):
        monkeypatch.setenv("FEDREPRO_KERNELS", flag)
        eng = DecentralEngine(ring(n).W, torch.zeros(n, d), cfg, InverseLR(),
                              SqrtStepThreshold(c0=100.0, every=1000) if method == "squarm" else None,
                              generator=torch.Generator().manual_seed(7))
        assert eng._compiled == (flag == "1")
        for _ in range(30):
            eng.step(grad)
        runs.append(eng)
    a, b = runs
    assert torch.equal(a.X, b.X) and torch.equal(a.V, b.V) and torch.equal(a.xhat, b.xhat)
    assert a.sync_log == b.sync_log


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("sign_of_zero", [1, 0])
def test_scaled_sign_in_place_is_the_message_added_to_the_bit(dtype, sign_of_zero):
    """ScaledSign._add_compressed (sign_scale_add) against x̂ + scale · sign(x) as torch forms it, zeros, a NaN, an
    infinite row (NaN scale · 0) and negative zeros in x̂ included."""
    from fedrepro.comm import get_compressor

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 300, generator=gen, dtype=dtype)
    x[0, :5] = 0
    x[1] = 0
    x[2, 3] = float("nan")
    x[3] = 0
    x[3, 0] = float("inf")
    xhat = torch.randn(6, 300, generator=gen, dtype=dtype)
    xhat[4, :4] = -0.0
    comp = get_compressor("sign", sign_of_zero=sign_of_zero)
    want = xhat + comp._encode(x, None, (300,)).value
    got = xhat.clone()
    enc = comp._add_compressed(x, got, None)
    assert enc is not None and enc.value is None and enc.counts == {"signs": 300, "scales": 1}
    assert np.array_equal(got.numpy().view(np.uint8), want.numpy().view(np.uint8))   # NaN and -0 bits too
    assert torch.isnan(got[2]).all() and bool(torch.isnan(got[3]).any()) == (sign_of_zero == 0)   # 0 · inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("zero_is_positive", [False, True])
def test_sign_scale_add_on_every_pair_of_special_values_is_its_rule_bit_for_bit(dtype, zero_is_positive):
    """sign_scale_add against its rule applied entry by entry with NumPy scalars (x̂ + s, x̂ - s, x̂ + s · 0 for a
    zero, x̂ + x for a NaN), on every pair (x, x̂) of signed zeros, subnormals, infinities and NaNs of both signs,
    with finite scales (the branch-free rows) and infinite and NaN ones (the branching rows), NaN signs included.
    (torch.sign gives 0 for NaN, but a row holding a NaN has a NaN scale, where both give NaN: the test above.)"""
    from fedrepro.kernels.dense import sign_scale_add

    tiny = np.finfo(dtype).smallest_normal / 4
    specials = np.array([0.0, -0.0, 1.0, -1.5, tiny, -tiny, np.inf, -np.inf, np.nan, -np.nan, 3e-3], dtype=dtype)
    x = np.tile(np.repeat(specials, len(specials)), (8, 1))      # every (x, x̂) pair in each row
    xhat = np.tile(np.tile(specials, len(specials)), (8, 1))
    scale = np.array([0.0, -0.0, 0.25, -2.0, tiny, np.inf, -np.inf, np.nan], dtype=dtype)

    def rule(v, h, s):
        if v > 0 or (v == 0 and zero_is_positive):
            return h + s
        if v < 0:
            return h - s
        if v == 0:
            return h + s * dtype(0)
        return h + v

    want = xhat.copy()
    for r, c in np.ndindex(*x.shape):
        v, h, s = x[r, c], xhat[r, c], scale[r]
        with np.errstate(invalid="ignore"):
            want[r, c] = rule(v, h, s)
    got = xhat.copy()
    sign_scale_add(x, got, scale, zero_is_positive)
    bits = np.uint32 if dtype == np.float32 else np.uint64
    assert np.array_equal(got.view(bits), want.view(bits))


def test_top_magnitudes_is_torch_topk_where_unique_and_declines_ties_and_nan():
    from fedrepro.comm import _backend as bk
    from fedrepro.kernels.dense import top_magnitudes

    g = torch.Generator().manual_seed(5)
    x = torch.randn(40, 7840, generator=g)
    x[3, 100:140] = 0.0
    idx = torch.empty(40, 10, dtype=torch.int64)
    assert top_magnitudes(x.numpy(), 10, idx.numpy())
    assert torch.equal(idx, torch.topk(x.abs(), 10, dim=1, sorted=False).indices)
    tie = x.clone()
    tie[7, 5] = -tie[7].abs().max()                     # the largest magnitude twice
    assert not top_magnitudes(tie.numpy(), 10, idx.numpy())
    nan = x.clone()
    nan[1, 9] = float("nan")
    assert not top_magnitudes(nan.numpy(), 10, idx.numpy())
    late_nan = x.clone()                                # in a block the threshold would skip
    late_nan[2, 7001] = float("nan")
    assert not top_magnitudes(late_nan.numpy(), 10, idx.numpy())
    late_tie = x.clone()                                # the 10th largest magnitude again, late in the row
    late_tie[4, 7839] = torch.topk(x[4].abs(), 10).values[-1]
    assert not top_magnitudes(late_tie.numpy(), 10, idx.numpy())
    for y in (x, tie, nan, late_nan, late_tie, torch.zeros(5, 7840)):      # the backend falls back to torch.topk: the same answer always
        assert torch.equal(bk.largest_abs_k(y, 10), torch.topk(y.abs(), 10, dim=1, sorted=False).indices)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("d,k", [(640, 10), (7840, 10), (1000, 3), (5000, 64), (300, 1), (4099, 15)])
def test_top_magnitudes_strided_blocks_against_topk(dtype, d, k):
    """The block maxima's threshold on shapes where the strided blocks do and do not divide the row, the k + 1
    largest gathered in one block (the others' maxima far below), two NaNs of different payloads, signed zeros,
    subnormals, and rows of equal magnitudes (declined)."""
    from fedrepro.kernels.dense import TOP_BLOCKS, top_magnitudes

    g = torch.Generator().manual_seed(d + k)
    x = torch.randn(12, d, generator=g, dtype=dtype)
    nb = min(d, max(TOP_BLOCKS, 4 * (k + 1)))
    x[1] *= 1e-3
    x[1, 5::nb] = torch.arange(1, len(range(5, d, nb)) + 1, dtype=dtype) * 10.0   # one block holds the largest
    x[2, ::7] = -0.0
    x[3] *= torch.finfo(dtype).tiny                                                    # subnormal magnitudes
    idx = torch.empty(12, k, dtype=torch.int64)
    assert top_magnitudes(x.numpy(), k, idx.numpy())
    assert torch.equal(idx, torch.topk(x.abs(), k, dim=1, sorted=False).indices)
    nan = x.clone()
    nan[4, 3] = float("nan")
    nan[4, d - 1] = -torch.nan_to_num(torch.tensor(float("nan"), dtype=dtype), nan=float("nan"))
    assert not top_magnitudes(nan.numpy(), k, idx.numpy())
    flat = torch.ones(2, d, dtype=dtype)
    assert not top_magnitudes(flat.numpy(), k, idx.numpy())


def _residuals_numpy(Wm, x, y):
    """softmax(x W) - onehot(y) with NumPy's operations (models.logreg without the kernels)."""
    from fedrepro.models.logreg import softmax_regression_residuals

    return softmax_regression_residuals(Wm, x, y, compiled=None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("C", [2, 7, 10, 17, 128])
def test_softmax_residual_loops_are_numpys_to_the_bit(dtype, C):
    """Max, NumPy's pairwise row sum (one 8-way pass up to 128 entries) and the label subtraction; a NaN row stays
    NaN as with NumPy."""
    from fedrepro.kernels import dense
    from fedrepro.models.logreg import softmax_regression_residuals

    rng = np.random.default_rng(C)
    n, b, p = 6, 5, 40
    x = rng.random((n, b, p)).astype(dtype)
    Wm = (4 * rng.standard_normal((n, p, C))).astype(dtype)
    y = rng.integers(0, C, size=(n, b))
    x[2, 3, 7] = np.nan
    want = _residuals_numpy(Wm, x, y)
    got = softmax_regression_residuals(Wm, x, y, compiled=dense)
    assert np.isnan(want[2, 3]).all()
    ok = ~np.isnan(want)
    assert np.isnan(got[~ok]).all()
    assert np.array_equal(got[ok].view(np.uint8), want[ok].view(np.uint8))    # every bit, signed zeros included


def _outer_cases():
    from fedrepro.models.logreg import MAX_OUTER_BATCH

    for dtype in (np.float32, np.float64):
        for b in range(1, MAX_OUTER_BATCH[np.dtype(dtype)] + 1):
            for C in (2, 10):
                yield dtype, b, C


@pytest.mark.parametrize("dtype,b,C", list(_outer_cases()))
@pytest.mark.parametrize("nesterov,wd", [(True, 0.0), (False, 0.0), (True, 1e-3)])
def test_outer_momentum_step_is_blas_then_the_momentum_pass_to_the_bit(dtype, b, C, nesterov, wd):
    """G = aᵀ z / b formed inside the momentum pass: the same bits as BLAS's product (OuterGradient.dense: the
    gemm sums the batch as one chain of fused multiply-adds for every b up to MAX_OUTER_BATCH) followed by
    momentum_step; zeros in a (MNIST's background pixels) make signed-zero products, which must keep their sign."""
    from fedrepro.kernels import dense
    from fedrepro.kernels.dense import momentum_step, outer_momentum_step
    from fedrepro.models.logreg import OuterGradient, fuses_like_blas

    rng = np.random.default_rng(b)
    n, p = 7, 61
    a = (rng.random((n, b, p)) * (rng.random((n, b, p)) < 0.5)).astype(dtype)
    z = rng.standard_normal((n, b, C)).astype(dtype)
    z[0, :, 1] = -0.0
    X, V = (rng.standard_normal((n, p * C)).astype(dtype) for _ in range(2))
    V[0] = 0.0
    f = np.dtype(dtype).type
    scalars = (f(0.9 * 1.0137), f(0.9), f(-0.0123), f(wd), nesterov)
    Xk, Vk = X.copy(), V.copy()
    G = OuterGradient(a, z).dense().numpy()
    momentum_step(X.reshape(-1), V.reshape(-1), G.reshape(-1), *scalars)
    outer_momentum_step(Xk, Vk, a, z, f(b), *scalars)
    same = np.array_equal(X.view(np.uint8), Xk.view(np.uint8)) and np.array_equal(V.view(np.uint8), Vk.view(np.uint8))
    # where this machine's BLAS sums another way (float64, b = 8, C = 10 on AVX2 without AVX-512) the probe must say
    # so, and the gradient then stays BLAS's (test_softmax_grad_stays_blas_where_the_probe_declines)
    assert same == fuses_like_blas(dense, np.dtype(dtype), b, C, p)


def test_softmax_grad_stays_blas_where_the_probe_declines(monkeypatch):
    """softmax_regression_grad(lazy=True) hands the engine an unformed gradient only where the probe finds BLAS's
    bits; elsewhere it returns BLAS's tensor, so the engine's result is the same with and without the kernels."""
    from fedrepro.models import logreg

    rng = np.random.default_rng(0)
    X = torch.from_numpy(rng.standard_normal((4, 30 * 10)).astype(np.float32))
    xb = torch.from_numpy(rng.random((4, 5, 30)).astype(np.float32))
    yb = torch.from_numpy(rng.integers(0, 10, (4, 5)))
    assert isinstance(logreg.softmax_regression_grad(X, xb, yb, 10, lazy=True), logreg.OuterGradient)
    monkeypatch.setattr(logreg, "fuses_like_blas", lambda *a: False)
    g = logreg.softmax_regression_grad(X, xb, yb, 10, lazy=True)
    assert isinstance(g, torch.Tensor)
    assert torch.equal(g, logreg.softmax_regression_grad(X, xb, yb, 10))


def test_outer_gradient_dense_is_the_plain_formula():
    """An independent check of the layout: G_i = x_iᵀ z_i / b, row-major (p, C), against einsum in float64."""
    from fedrepro.models.logreg import OuterGradient

    rng = np.random.default_rng(0)
    a, z = rng.random((3, 4, 9)), rng.standard_normal((3, 4, 5))
    G = OuterGradient(a, z).dense().numpy()
    np.testing.assert_allclose(G, np.einsum("ijp,ijc->ipc", a, z).reshape(3, 45) / 4, rtol=1e-12)


@pytest.mark.parametrize("method", ["squarm", "vanilla"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mnist_engine_with_the_fused_gradient_is_identical_without_the_kernels(method, dtype, monkeypatch):
    """MnistTask hands the engine an OuterGradient: formed in the compiled pass with the kernels on (checked: the
    pass runs), by BLAS with them off; iterates, momentum, copies and sync logs agree to the bit."""
    from types import SimpleNamespace

    from fedrepro.decentral.experiments import MnistTask
    from fedrepro.kernels import dense

    rng = np.random.default_rng(3)
    x = (np.round(rng.random((600, 50)) * (rng.random((600, 50)) < 0.4) * 255) / 255).astype(np.float32)
    split = SimpleNamespace(x_train=x, y_train=np.arange(600) % 10, x_test=x[:50], y_test=np.arange(50) % 10,
                            n_classes=10)
    calls = []
    monkeypatch.setattr(dense, "outer_momentum_step",
                        lambda *a, _f=dense.outer_momentum_step: calls.append(1) or _f(*a))
    cfg = method_config(method, gamma=1.0, k=10, H=5 if method == "squarm" else None)
    runs = []
    for flag in ("1", "0"):
        monkeypatch.setenv("FEDREPRO_KERNELS", flag)
        calls.clear()
        task = MnistTask(split, 6, "sorted", 5, 0, train_eval=50, dtype=dtype)
        eng = DecentralEngine(ring(6).W, task.x0(), cfg, InverseLR(), SqrtStepThreshold(c0=100.0, every=1000)
                              if method == "squarm" else None, generator=torch.Generator().manual_seed(7))
        for _ in range(40):
            eng.step(task.grad)
        runs.append(eng)
        assert bool(calls) == (flag == "1")
    a, b = runs
    assert torch.equal(a.X, b.X) and torch.equal(a.V, b.V) and torch.equal(a.xhat, b.xhat)
    assert a.sync_log == b.sync_log and np.abs(a.X.numpy()).max() > 1e-3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_difference_and_square_is_torch_sub_then_mul(dtype):
    """x - x̂ and its square as torch's sub and mul, every bit (signed zeros, subnormals, inf, NaN), on a column
    slice of x (a segment: not contiguous)."""
    from fedrepro.kernels.dense import difference_and_square

    g = torch.Generator().manual_seed(3)
    x = torch.randn(6, 90, generator=g, dtype=dtype)
    xhat = torch.randn(6, 50, generator=g, dtype=dtype)
    x[0, 20:25] = torch.tensor([0.0, -0.0, float("inf"), float("nan"), torch.finfo(dtype).tiny / 3], dtype=dtype)
    xhat[0, :5] = torch.tensor([-0.0, -0.0, float("inf"), 1.0, -torch.finfo(dtype).tiny / 5], dtype=dtype)
    xs = x[:, 20:70]
    diff, square = torch.empty_like(xhat), torch.empty_like(xhat)
    difference_and_square(xs.numpy(), xhat.numpy(), diff.numpy(), square.numpy())
    want = torch.sub(xs, xhat)
    bits = torch.int32 if dtype == torch.float32 else torch.int64
    assert torch.equal(diff.view(bits), want.view(bits))
    assert torch.equal(square.view(bits), torch.mul(want, want).view(bits))

"""The decentral engine's compiled passes (fedrepro.kernels.dense) against the torch operations they replace and
against independent float64 formulas, to float rounding (relative 1e-5 for float32, 1e-10 for float64); the whole
engine with the kernels on and off is compared in tests/decentral/test_engine_reference.py. The sign and top-k
kernels' results are exact (a sum of ±scale, a set of indices), so they are compared exactly."""

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

RTOL = {torch.float32: 1e-5, torch.float64: 1e-10}


@pytest.fixture(autouse=True)
def every_call_compiled(monkeypatch):
    """Small inputs, which the size threshold (kernels.MIN_WORK) would route to the library path: every call takes
    the kernel (FEDREPRO_KERNELS=always). (Not a conftest.py: that would shadow tests/conftest.py for the modules
    that import from it.)"""
    monkeypatch.setenv("FEDREPRO_KERNELS", "always")


def _close(got, want, rtol):
    want = np.asarray(want, dtype=np.float64)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol,
                               atol=rtol * float(np.abs(want).max()))


def _torch_momentum(X, V, G, beta, corr, eta, wd, nesterov):
    """fedrepro.decentral.engine's torch path."""
    if wd:
        G = torch.mul(X, wd).add_(G)
    V.mul_(beta * corr).add_(G)
    if nesterov:
        X.add_(torch.add(G, V, alpha=beta), alpha=-eta)
    else:
        X.add_(V, alpha=-eta)


def _float64_momentum(X, V, G, beta, corr, eta, wd, nesterov):
    """Algorithm 1's step in float64 NumPy, written from the formulas: the independent check."""
    G = G + wd * X
    V = beta * corr * V + G
    return X - eta * (beta * V + G if nesterov else V), V


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("nesterov,wd", [(True, 0.0), (False, 0.0), (True, 1e-3)])
def test_momentum_step_is_the_torch_step(dtype, nesterov, wd):
    from fedrepro.kernels.dense import momentum_step

    g = torch.Generator().manual_seed(0)
    X, V, G = (torch.randn(7, 1001, generator=g, dtype=dtype) for _ in range(3))
    Xk, Vk = X.clone(), V.clone()
    X64, V64 = X.numpy().astype(np.float64), V.numpy().astype(np.float64)     # copies (X, V change in place)
    beta, corr, eta = 0.9, 1.0137, 0.0123
    f = Xk.numpy().dtype.type
    for _ in range(3):
        _torch_momentum(X, V, G, beta, corr, eta, wd, nesterov)
        X64, V64 = _float64_momentum(X64, V64, G.double().numpy(), beta, corr, eta, wd, nesterov)
        momentum_step(Xk.view(-1).numpy(), Vk.view(-1).numpy(), G.view(-1).numpy(), f(beta * corr), f(beta), f(-eta),
                      f(wd), nesterov)
    for got, torch_ref, plain in ((Xk, X, X64), (Vk, V, V64)):
        _close(got.numpy(), torch_ref.numpy(), RTOL[dtype])
        _close(got.numpy(), plain, RTOL[dtype])


@pytest.mark.parametrize("W", [ring(60).W, ring(3).W, torus(4, 6).W, erdos_renyi(20, 0.2, np.random.default_rng(2)).W],
                         ids=["ring", "ring3", "torus", "erdos_renyi"])
@pytest.mark.parametrize("gamma", [1.0, 0.4])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gossip_add_is_the_mixers_sum(W, gamma, dtype):
    from fedrepro.kernels.dense import gossip_add

    idx, wts = neighbour_lists(W)
    g = torch.Generator().manual_seed(3)
    n = W.shape[0]
    X, Y = torch.randn(n, 555, generator=g, dtype=dtype), torch.randn(n, 555, generator=g, dtype=dtype)
    want = X.clone()
    mixed = torch.sub(GatherMixer(idx, wts, Y.dtype, Y.device)(Y), Y)
    if gamma != 1.0:
        mixed.mul_(gamma)
    want += mixed
    Y64 = Y.numpy().astype(np.float64)
    plain = X.numpy().astype(np.float64) + gamma * (W @ Y64 - Y64)     # the dense product, before X changes
    f = X.numpy().dtype.type
    gossip_add(X.numpy(), Y.numpy(), idx, wts.astype(f), f(gamma), gamma != 1.0)
    _close(X.numpy(), want.numpy(), RTOL[dtype])
    _close(X.numpy(), plain, RTOL[dtype])


@pytest.mark.parametrize("method", ["squarm", "choco_sign", "choco_topk", "vanilla"])
def test_engine_agrees_without_the_kernels(method, monkeypatch):
    rng = np.random.default_rng(0)
    n, d = 12, 300
    A = torch.as_tensor(rng.standard_normal((n, d)), dtype=torch.float32)

    def grad(X, t):                          # a quadratic per node: g_i = x_i - a_i (+ t-dependent noise)
        return X - A + 0.01 * np.sin(t)

    cfg = method_config(method, gamma=0.4 if method == "choco_topk" else 1.0, k=10,
                        H=5 if method == "squarm" else None)
    runs = []
    for flag in ("always", "0"):
        monkeypatch.setenv("FEDREPRO_KERNELS", flag)
        eng = DecentralEngine(ring(n).W, torch.zeros(n, d), cfg, InverseLR(),
                              SqrtStepThreshold(c0=100.0, every=1000) if method == "squarm" else None,
                              generator=torch.Generator().manual_seed(7))
        assert eng._compiled == (flag == "always")
        for _ in range(30):
            eng.step(grad)
        runs.append(eng)
    a, b = runs
    for x, y in ((a.X, b.X), (a.V, b.V), (a.xhat, b.xhat)):
        _close(x.numpy(), y.numpy(), 1e-5)
    assert a.sync_log == b.sync_log


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("sign_of_zero", [1, 0])
def test_scaled_sign_in_place_is_the_message_added(dtype, sign_of_zero):
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
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=RTOL[dtype], equal_nan=True)
    assert torch.isnan(got[2]).all() and bool(torch.isnan(got[3]).any()) == (sign_of_zero == 0)   # 0 · inf


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("zero_is_positive", [False, True])
def test_sign_scale_add_on_every_pair_of_special_values_is_its_rule(dtype, zero_is_positive):
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
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-10, equal_nan=True)
    assert np.array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))    # signed zeros kept


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


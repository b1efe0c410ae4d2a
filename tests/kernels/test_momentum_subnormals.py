"""The momentum pass that keeps subnormal binary32 entries off the hardware's slow path (fedrepro.kernels.momentum,
subnormal_safe=True) against torch's operations, to the bit, on states built to reach every case: subnormal v of both
signs decaying to zero, zero gradients of both signs, tiny and ordinary gradients, x zero, subnormal, tiny, ordinary,
infinite and NaN, and scalars inside and outside the bounds where the integer path applies."""

import numpy as np
import pytest
import torch

from fedrepro import kernels

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba not installed: the kernels are not used")

TINY = np.finfo(np.float32).tiny      # 2^-126, the smallest normal binary32


def _torch_momentum(X, V, G, c, beta, eta, wd, nesterov):
    if wd:
        G = torch.mul(X, wd).add_(G)
    V.mul_(c).add_(G)
    if nesterov:
        X.add_(torch.add(G, V, alpha=beta), alpha=-eta)
    else:
        X.add_(V, alpha=-eta)


def _state(seed, n=20000):
    """x, v, g (float32) with every kind of entry the pass tells apart."""
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 6, n)
    v = np.select([kind == 0, kind == 1, kind == 2, kind == 3],
                  [rng.uniform(-1, 1, n) * TINY,                        # subnormal
                   rng.uniform(-1, 1, n) * 2.0**-140,                   # deep subnormal: decays to zero
                   rng.uniform(1, 1.2, n) * TINY * rng.choice([-1, 1], n),   # normal, decays into the subnormals
                   np.where(rng.random(n) < 0.5, 0.0, -0.0)],           # signed zeros
                  rng.standard_normal(n) * 1e-2).astype(np.float32)
    gk = rng.integers(0, 5, n)
    g = np.select([gk == 0, gk == 1, gk == 2, gk == 3],
                  [np.zeros(n), np.full(n, -0.0), rng.standard_normal(n) * 2.0**-110, rng.standard_normal(n) * 1e-3],
                  rng.standard_normal(n)).astype(np.float32)
    xk = rng.integers(0, 7, n)
    x = np.select([xk == 0, xk == 1, xk == 2, xk == 3, xk == 4, xk == 5],
                  [np.where(rng.random(n) < 0.5, 0.0, -0.0), rng.uniform(-1, 1, n) * TINY,
                   rng.standard_normal(n) * 2.0**-110, rng.standard_normal(n) * 2.0**-99,
                   rng.choice([np.inf, -np.inf, np.nan], n), rng.standard_normal(n) * 1e-30],
                  rng.standard_normal(n)).astype(np.float32)
    return x, v, g


SCALARS = [  # (c = β·correction, β, η): inside the integer path's bounds, then outside each of them
    (0.9 * 1.0137, 0.9, 0.0123),
    (0.5, 0.5, 0.01),                  # dyadic c: products on exact half-integers (ties to even)
    (0.9999999, 1.0, 1.9),
    (1.0, 1.0, 0.01),                  # c = 1: outside (0, 1)
    (0.9, 1.5, 0.01),                  # |β| > 1
    (0.9, 0.9, 3.0),                   # |η| >= 2
]


@pytest.mark.parametrize("nesterov", [True, False])
@pytest.mark.parametrize("c,beta,eta", SCALARS)
@pytest.mark.parametrize("wd", [0.0, 1e-3])
def test_subnormal_safe_momentum_step_is_torchs_to_the_bit(c, beta, eta, nesterov, wd):
    from fedrepro.kernels.momentum import momentum_step, subnormal_safe_next

    x, v, g = _state(int(c * 1000) + int(nesterov))
    assert subnormal_safe_next(v)                         # a third of the entries subnormal: the safe pass pays
    X, V, G = (torch.from_numpy(a.copy()) for a in (x, v, g))
    f = np.float32
    for _ in range(12):      # long enough for entries to decay through to zero (c <= 1/2: the smallest subnormal
        _torch_momentum(X, V, G, f(c).item(), f(beta).item(), f(eta).item(), f(wd).item(), nesterov)  # times c > 1/2
        momentum_step(x, v, g, f(c), f(beta), f(-eta), f(wd), nesterov, True)                         # is itself)
        assert np.array_equal(X.numpy().view(np.int32), x.view(np.int32))
        assert np.array_equal(V.numpy().view(np.int32), v.view(np.int32))   # each step: a zero's sign is transient


@pytest.mark.parametrize("n", [1, 63, 64, 65, 130, 1237])
@pytest.mark.parametrize("nesterov", [True, False])
def test_subnormal_safe_pass_with_clustered_subnormals_is_torchs_to_the_bit(n, nesterov):
    """Subnormal v in some SAFE_BLOCK-entry blocks only, as a node's never-lit pixels put them: the pass takes the
    plain formulas on the blocks between them, and every entry is updated exactly once either way (block edges, a
    partial last block, runs of clean blocks); entries that decay into the subnormals move their block over."""
    from fedrepro.kernels.momentum import SAFE_BLOCK, momentum_step

    x, v, g = _state(11 + n, n)
    rng = np.random.default_rng(n)
    block = np.arange(n) // SAFE_BLOCK
    dirty = rng.random(block[-1] + 1) < 0.4
    dirty[rng.integers(0, len(dirty))] = True
    sub = (np.abs(v) < TINY) & (v != 0)
    v = np.where(sub & ~dirty[block], (rng.standard_normal(n) * 1e-2).astype(np.float32), v)
    X, V, G = (torch.from_numpy(a.copy()) for a in (x, v, g))
    f = np.float32
    c, beta, eta = 0.9 * 1.0137, 0.9, 0.0123
    for _ in range(12):
        _torch_momentum(X, V, G, f(c).item(), f(beta).item(), f(eta).item(), 0.0, nesterov)
        momentum_step(x, v, g, f(c), f(beta), f(-eta), f(0), nesterov, True)
        assert np.array_equal(X.numpy().view(np.int32), x.view(np.int32))
        assert np.array_equal(V.numpy().view(np.int32), v.view(np.int32))


@pytest.mark.parametrize("nesterov", [True, False])
def test_subnormal_safe_outer_momentum_step_is_blas_then_torch_to_the_bit(nesterov):
    """Zero pixels in a make zero gradient entries: with subnormal momentum there, they decay in the integer path."""
    from fedrepro.kernels.momentum import outer_momentum_step
    from fedrepro.models.logreg import OuterGradient

    rng = np.random.default_rng(5)
    n, b, p, C = 5, 5, 300, 10
    a = (rng.random((n, b, p)) * (rng.random((n, b, p)) < 0.1)).astype(np.float32)
    z = rng.standard_normal((n, b, C)).astype(np.float32)
    x, v, _ = _state(7, n * p * C)
    x, v = x.reshape(n, p * C), v.reshape(n, p * C)
    X, V = torch.from_numpy(x.copy()), torch.from_numpy(v.copy())
    G = OuterGradient(a, z).dense()
    f = np.float32
    for _ in range(6):
        _torch_momentum(X, V, G, f(0.9 * 1.0137).item(), f(0.9).item(), f(0.0123).item(), 0.0, nesterov)
        outer_momentum_step(x, v, a, z, f(b), f(0.9 * 1.0137), f(0.9), f(-0.0123), f(0), nesterov, True)
    assert np.array_equal(X.numpy().view(np.int32), x.view(np.int32))
    assert np.array_equal(V.numpy().view(np.int32), v.view(np.int32))


def test_the_decay_is_the_correctly_rounded_product():
    """_decay(m, c) = round(m c) on the subnormal grid, against float64 (exact products of 24-bit factors), over
    every mantissa for dyadic c (exact ties) and random mantissas for others (ties of the rounded product)."""
    import numba

    from fedrepro.kernels.momentum import _decay

    @numba.njit
    def mismatches(ms, c):
        bad = 0
        for m in ms:
            want = np.int64(np.rint(np.float64(m) * np.float64(c)))
            bad += _decay(np.int32(m), c) != want
        return bad

    every = np.arange(1, 2**23, dtype=np.int32)
    for c in (0.5, 0.75, 0.625):
        assert mismatches(every, np.float32(c)) == 0
    ms = np.random.default_rng(0).integers(1, 2**23, 2_000_000).astype(np.int32)
    for c in (0.9, 0.9 * 1.0137, 0.9999999, 1e-3, 0.51):
        assert mismatches(ms, np.float32(c)) == 0


def test_the_tie_correction_matters():
    """Rounding the binary32 product alone (no residual) differs for some mantissas: the test above can fail."""
    ms = np.random.default_rng(0).integers(2**22, 2**23, 200_000).astype(np.float32)
    c = np.float32(0.9 * 1.0137)
    naive = np.rint(ms * c).astype(np.int64)
    exact = np.rint(ms.astype(np.float64) * np.float64(c)).astype(np.int64)
    assert (naive != exact).any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_engine_with_subnormal_momentum_is_identical_without_the_kernels(dtype, monkeypatch):
    """A ring engine whose momentum holds subnormals from the start: kernels on (the safe pass, after the first
    step has sampled them) and off (torch's operations) agree to the bit, iterates and momentum."""
    from types import SimpleNamespace

    from decentral_paper_methods import method_config

    from fedrepro.decentral.engine import DecentralEngine
    from fedrepro.decentral.experiments import MnistTask
    from fedrepro.decentral.schedules import InverseLR, SqrtStepThreshold
    from fedrepro.decentral.topology import ring

    monkeypatch.setattr(kernels, "MIN_WORK", 0)
    rng = np.random.default_rng(3)
    x = (np.round(rng.random((600, 50)) * (rng.random((600, 50)) < 0.2) * 255) / 255).astype(np.float32)
    split = SimpleNamespace(x_train=x, y_train=np.arange(600) % 10, x_test=x[:50], y_test=np.arange(50) % 10,
                            n_classes=10)
    cfg = method_config("squarm", gamma=1.0, k=10, H=5)
    runs = []
    for flag in ("1", "0"):
        monkeypatch.setenv("FEDREPRO_KERNELS", flag)
        task = MnistTask(split, 6, "sorted", 5, 0, train_eval=50, dtype=dtype)
        eng = DecentralEngine(ring(6).W, task.x0(), cfg, InverseLR(), SqrtStepThreshold(c0=100.0, every=1000),
                              generator=torch.Generator().manual_seed(7))
        tiny = torch.finfo(dtype).tiny
        eng.V.copy_(torch.from_numpy(rng.uniform(-1, 1, eng.V.shape)).to(dtype) * tiny if flag == "1" else runs[0][2])
        V0 = eng.V.clone()
        safe = []
        for _ in range(30):
            eng.step(task.grad)
            safe.append(eng._subnormal_safe)
        runs.append((eng.X.clone(), eng.V.clone(), V0))
        assert eng._compiled == (flag == "1")
        assert any(safe) == (flag == "1" and dtype == torch.float32)     # the safe pass ran (binary32, kernels on)
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])

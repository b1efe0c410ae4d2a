"""thesis ch. 3 engine: reductions, invariants, mixing matrices, trigger (spec §3.7)."""

import numpy as np
import pytest
import torch
from decentral_paper_methods import method_config

from fedrepro.decentral.engine import DecentralEngine, EngineConfig
from fedrepro.decentral.schedules import InverseLR, PiecewiseEpochThreshold, SqrtStepThreshold, WarmupPiecewiseLR
from fedrepro.decentral.topology import complete, erdos_renyi, ring, ring_gap_closed_form, spectral_gap, torus
from fedrepro.decentral.trigger import trigger_mask

N, D = 6, 12


def _quad_grad(targets, noise_seed=0):
    """Stochastic gradients of f_i(x) = ½‖x - b_i‖² with deterministic pseudo-noise per (t, node)."""
    def g(X, t):
        rng = np.random.default_rng(1000 + t + noise_seed)
        return X - targets + torch.as_tensor(rng.normal(size=X.shape), dtype=X.dtype)
    return g


@pytest.fixture
def setup():
    rng = np.random.default_rng(0)
    targets = torch.as_tensor(rng.normal(size=(N, D)))
    x0 = torch.as_tensor(rng.normal(size=(N, D)))
    return targets, x0


@pytest.mark.parametrize("topo", [ring(8), ring(60), torus(3, 4), complete(5), erdos_renyi(20, 0.3, np.random.default_rng(1))])
def test_mixing_matrices_are_symmetric_doubly_stochastic(topo):
    W = topo.W
    assert np.allclose(W, W.T)
    assert np.allclose(W.sum(0), 1) and np.allclose(W.sum(1), 1)
    assert (W >= 0).all()
    assert 0 < topo.spectral_gap <= 1


@pytest.mark.parametrize("n,gap", [(6, 0.333333), (8, 0.195262), (60, 0.0036521)])
def test_ring_spectral_gap_matches_closed_form_and_spec_table(n, gap):
    assert spectral_gap(ring(n).W) == pytest.approx(ring_gap_closed_form(n), rel=1e-9)
    assert spectral_gap(ring(n).W) == pytest.approx(gap, rel=1e-4)
    assert ring(n).lam == pytest.approx(4 / 3)
    assert spectral_gap(complete(7).W) == pytest.approx(1.0)


def _run(cfg, W, x0, grad, T, lr=0.05, thr=None, seg=None):
    eng = DecentralEngine(W, x0, cfg, lambda t: lr, thr, segments=seg, generator=torch.Generator().manual_seed(0))
    for _ in range(T):
        eng.step(grad)
    return eng


def test_identity_h1_no_trigger_equals_gossip_sgd(setup):
    targets, x0 = setup
    W = ring(N).W
    cfg = EngineConfig(compressor="identity", H=1, gamma=1.0, beta=0.0)
    eng = _run(cfg, W, x0, _quad_grad(targets), 30)
    X = x0.clone()
    Wt = torch.as_tensor(W)
    g = _quad_grad(targets)
    for t in range(30):
        X = Wt @ (X - 0.05 * g(X, t))
    assert torch.allclose(eng.X, X, atol=1e-12)


def test_identity_with_momentum_equals_gossip_momentum_sgd(setup):
    targets, x0 = setup
    W = torch.as_tensor(ring(N).W)
    eng = _run(EngineConfig(compressor="identity", H=1, gamma=1.0, beta=0.9), ring(N).W, x0, _quad_grad(targets), 25)
    X, V, g = x0.clone(), torch.zeros_like(x0), _quad_grad(targets)
    for t in range(25):
        G = g(X, t)
        V = 0.9 * V + G
        X = W @ (X - 0.05 * (0.9 * V + G))
    assert torch.allclose(eng.X, X, atol=1e-12)


@pytest.mark.parametrize("beta", [0.0, 0.9])
def test_complete_graph_exact_averaging_equals_minibatch_sgd_on_pooled_data(setup, beta):
    targets, _ = setup
    x0 = torch.zeros(N, D, dtype=torch.float64) + 0.3
    eng = _run(EngineConfig(compressor="identity", H=1, gamma=1.0, beta=beta), complete(N).W, x0, _quad_grad(targets), 40)
    # pooled minibatch (momentum) SGD on the mean of the node gradients
    x, v, g = x0[0].clone(), torch.zeros(D, dtype=torch.float64), _quad_grad(targets)
    for t in range(40):
        G = g(x.expand(N, D), t).mean(0)
        v = beta * v + G
        x = x - 0.05 * (beta * v + G)
    assert torch.allclose(eng.X, x.expand(N, D), atol=1e-12)


@pytest.mark.parametrize("method", ["squarm", "choco_sign", "choco_topk", "vanilla"])
def test_average_is_preserved_by_consensus_inv1(setup, method):
    targets, x0 = setup
    cfg = method_config(method, gamma=0.3, k=3, H=2)
    eng = DecentralEngine(ring(N).W, x0, cfg, lambda t: 0.05, SqrtStepThreshold(50.0, 10),
                          generator=torch.Generator().manual_seed(0))
    g = _quad_grad(targets)
    for _ in range(20):
        X, V = eng.X.clone(), eng.V.clone()
        G = g(X, eng.t)
        Vn = 0.9 * V + G
        Xh = X - 0.05 * (0.9 * Vn + G)
        eng.step(g)
        assert torch.allclose(eng.X.mean(0), Xh.mean(0), rtol=1e-12, atol=1e-12)


def test_trigger_never_fires_below_threshold_inv2(setup):
    targets, x0 = setup
    cfg = method_config("squarm", gamma=0.3, k=3, H=2)
    c = 200.0
    eng = DecentralEngine(ring(N).W, x0, cfg, lambda t: 0.05, lambda t, eta: c,
                          generator=torch.Generator().manual_seed(0))
    g = _quad_grad(targets)
    seen_silent = False
    for _ in range(60):
        before = eng.xhat.clone()
        info = eng.step(g)
        if info["sync"] and eng.n_sync > 1:
            silent = ~info["fire"]
            seen_silent |= bool(silent.any())
            assert (info["sq_drift"][silent] <= c * 0.05 ** 2).all()
            assert (info["sq_drift"][info["fire"]] > c * 0.05 ** 2).all()
            assert (info["step_bits"][silent] == 0).all()
            assert torch.equal(eng.xhat[torch.as_tensor(silent)], before[torch.as_tensor(silent)])
    assert seen_silent, "the test threshold should silence some nodes"
    assert np.all(trigger_mask(np.array([1.0, 2.0]), 1.0, 1.0, first=False) == [False, True])
    assert trigger_mask(np.array([0.0]), 1.0, 1.0, first=True).all()


def test_memory_efficient_variant_matches(setup):
    targets, x0 = setup
    a = _run(method_config("squarm", gamma=0.3, k=3, H=2), ring(N).W, x0, _quad_grad(targets), 30,
             thr=lambda t, e: 5.0)
    b = _run(method_config("squarm", gamma=0.3, k=3, H=2, memory_efficient=True), ring(N).W, x0,
             _quad_grad(targets), 30, thr=lambda t, e: 5.0)
    assert torch.allclose(a.X, b.X, atol=1e-12)


def test_virtual_sequence_inv3(setup):
    targets, x0 = setup
    eta, beta = 0.05, 0.9
    eng = DecentralEngine(ring(N).W, x0, method_config("squarm", gamma=0.3, k=3, H=3), lambda t: eta,
                          lambda t, e: 1.0, generator=torch.Generator().manual_seed(0))
    g = _quad_grad(targets)
    for _ in range(15):
        xt = eng.X.mean(0) - eta * beta ** 2 / (1 - beta) * eng.V.mean(0)
        G = g(eng.X, eng.t).mean(0)
        eng.step(g)
        xt1 = eng.X.mean(0) - eta * beta ** 2 / (1 - beta) * eng.V.mean(0)
        assert torch.allclose(xt1, xt - eta / (1 - beta) * G, atol=1e-12)


def test_bits_per_message_b32_and_determinism():
    x0 = torch.zeros(4, 7840, dtype=torch.float64)
    grad = lambda X, t: torch.ones_like(X) * torch.arange(7840, dtype=X.dtype)
    for method, bits in (("vanilla", 250_880), ("choco_sign", 7_872), ("choco_topk", 640), ("squarm", 362)):
        eng = _run(method_config(method, gamma=0.5, k=10, H=1), ring(4).W, x0, grad, 1)
        assert (eng.bits == bits).all(), method
    a = _run(method_config("choco_topk", gamma=0.5, k=10), ring(4).W, x0, _quad_grad(torch.zeros(4, 7840)), 3)
    b = _run(method_config("choco_topk", gamma=0.5, k=10), ring(4).W, x0, _quad_grad(torch.zeros(4, 7840)), 3)
    assert torch.equal(a.X, b.X)


def test_schedules():
    assert InverseLR()(0) == pytest.approx(0.01)
    s = SqrtStepThreshold()
    assert s(0, 0.01) * 0.01 ** 2 == pytest.approx(0.5)
    assert s(1000, 1 / 1100) == pytest.approx(5000 * np.sqrt(2))
    lr = WarmupPiecewiseLR(base=0.1, warmup_epochs=5, start=0.01, milestones=(200, 300), iters_per_epoch=25)
    assert lr(0) == pytest.approx(0.01) and lr(25 * 5) == pytest.approx(0.1) and lr(25 * 250) == pytest.approx(0.02)
    c = PiecewiseEpochThreshold(c0=2.5, step=1.5, every_epochs=20, n_steps=17, iters_per_epoch=1, cap_inv_lr=0.999)
    assert c(0, 0.1) == 2.5 and c(340, 0.004) == pytest.approx(28.0) and c(150, 0.1) == pytest.approx(9.99)

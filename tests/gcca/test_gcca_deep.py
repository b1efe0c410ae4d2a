"""fedrepro.gcca.deep: the stacked-MLP engine (CuteMaxVar-Deep / AltMaxVar-Deep)."""

import numpy as np
import torch

from fedrepro.gcca.deep import DeepConfig, StackedBatchNorm, StackedMLP, run_deep
from fedrepro.gcca.engine import EngineConfig, run_maxvar
from fedrepro.gcca.generators import dense_views
from fedrepro.gcca.mvlsa import mvlsa
from fedrepro.runtime import rng_stream


def _linear_net(views, Q0):
    net = StackedMLP(views.I, views.N, (), Q0.shape[2], bias=False, batch_norm=False, dtype=torch.float64)
    with torch.no_grad():
        net.net[0].weight.copy_(torch.as_tensor(Q0))
    return net


def test_one_layer_linear_network_matches_the_linear_engine():
    views = dense_views(rng_stream(0, "test-deep", "data"), 200, 10, 4, 3, 0.3)
    K, R, T = 3, 15, 4
    Q0 = mvlsa(views, K, 6).Q
    for q in (None, 3):
        lin = run_maxvar(views, Q0, EngineConfig(K=K, R=R, T=T, batch=None, q=q, center=True),
                         rng_stream(0, "sgd"), rng_stream(0, "comp"))
        cfg = DeepConfig(K=K, R=R, hidden=(), T=T, batch=views.J, lr=views.J / views.lambda_max, q=q, optimizer="sgd",
                         center=True, bias=False, batch_norm=False, dtype="float64")
        deep = run_deep(views.X, cfg, rng_stream(1, "sgd"), rng_stream(0, "comp"), model=_linear_net(views, Q0))
        np.testing.assert_allclose(deep.objective, lin.objective, rtol=1e-8)
        np.testing.assert_allclose(deep.bpv, lin.bpv)
        np.testing.assert_allclose(deep.G, lin.G, atol=1e-8)
        assert np.allclose(deep.model.net[0].weight.detach().numpy(), lin.Q, atol=1e-8)


def test_stacked_batchnorm_matches_torch_batchnorm_per_view():
    torch.manual_seed(0)
    x = torch.randn(3, 50, 7, dtype=torch.float64)
    ours = StackedBatchNorm(3, 7, dtype=torch.float64)
    refs = [torch.nn.BatchNorm1d(7, dtype=torch.float64) for _ in range(3)]
    for _ in range(3):
        y = ours(x)
        for i, ref in enumerate(refs):
            assert torch.allclose(y[i], ref(x[i]))
    ours.eval()
    for i, ref in enumerate(refs):
        ref.eval()
        assert torch.allclose(ours(x)[i], ref(x[i]))


def test_deep_alt_and_cute_decrease_the_objective_and_bpv_from_the_ledger():
    rng = rng_stream(0, "test-deep", "toy")
    X = rng.standard_normal((3, 400, 2))
    X[1] = X[0] ** 2 + 0.1 * X[1]
    for q, per in ((None, 32), (3, 3)):
        res = run_deep(X, DeepConfig(K=2, R=6, hidden=(16,), T=5, batch=100, lr=1e-2, q=q),
                       rng_stream(0, "sgd"), rng_stream(0, "comp"), seed_init=1,
                       callback=lambda model, r, G: {"r": float(r)})
        assert res.objective[-1] < res.objective[0]
        np.testing.assert_allclose(res.bpv, 32 + per * np.arange(7))
        np.testing.assert_allclose(res.metrics["r"], np.arange(7))
        assert np.allclose(res.G.T @ res.G, np.eye(2), atol=1e-8) and np.allclose(res.G.mean(0), 0, atol=1e-10)


def test_inner_epochs_are_T_passes_of_J_over_batch_adam_steps():
    """gcca:A-29: `inner_unit: epochs` (the authors' toy code) is T * (J // batch) Adam steps per outer iteration,
    i.e. the `steps` reading with that many steps: the same iterates, objectives and bits from the same streams."""
    rng = rng_stream(0, "test-deep", "epochs")
    X = rng.standard_normal((3, 120, 2))
    common = dict(K=2, R=3, hidden=(8,), batch=40, lr=1e-2, q=3)
    epochs = run_deep(X, DeepConfig(T=2, inner_unit="epochs", **common), rng_stream(0, "sgd"), rng_stream(0, "comp"))
    steps = run_deep(X, DeepConfig(T=2 * (120 // 40), **common), rng_stream(0, "sgd"), rng_stream(0, "comp"))
    fewer = run_deep(X, DeepConfig(T=2, **common), rng_stream(0, "sgd"), rng_stream(0, "comp"))
    np.testing.assert_array_equal(epochs.objective, steps.objective)
    np.testing.assert_array_equal(epochs.bpv, steps.bpv)
    assert not np.allclose(epochs.objective[1:], fewer.objective[1:])


def test_deep_toy_registry_runs_inner_epochs_beside_as_stated_only_at_paper_scale():
    from fedrepro.registry.papers import Registry

    reg = Registry.load(".")
    assert reg.configurations("gcca", "deep_toy", "quick") == ["as-stated"]
    assert reg.configurations("gcca", "deep_toy", "paper") == ["as-stated", "inner-epochs"]
    as_stated = reg.params("gcca", "deep_toy", "as-stated", "paper")
    epochs = reg.params("gcca", "deep_toy", "inner-epochs", "paper")
    assert {k for k in epochs if epochs[k] != as_stated.get(k)} == {"inner_unit"}
    assert reg.assumptions("gcca")["gcca:A-29"]["alternatives"] == {"steps": ["as-stated"], "epochs": ["inner-epochs"]}

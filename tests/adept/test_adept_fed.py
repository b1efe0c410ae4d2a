"""Batched clients: vmap(functional_call) equals the per-client modules; clipping and optimisers stay per client."""

import numpy as np
import torch

from fedrepro.adept.ae import recon_loss
from fedrepro.adept.fed import ClientData, FedConfig, client_forward, stacked_init, train
from fedrepro.models.adept_nets import BasicUNet, LinearAE


def test_stacked_forward_equals_per_client_modules():
    base, theta = stacked_init(lambda: LinearAE(6, 2), 3, 0, False)
    x = torch.rand(3, 4, 6)
    out = client_forward(base)(theta, x)
    for i in range(3):
        torch.manual_seed(i)
        ref = LinearAE(6, 2)
        assert torch.allclose(out[i], ref(x[i]), atol=1e-6)


def test_clients_train_independently():
    """Client 0's trajectory does not depend on the other clients' data (local training, no communication)."""
    rng = np.random.default_rng(0)
    xs = [rng.random((8, 6)).astype(np.float32) for _ in range(3)]
    def run(xs):
        base, theta = stacked_init(lambda: LinearAE(6, 2), len(xs), 0, False)
        data = ClientData(xs)
        cfg = FedConfig(method="local", epochs=3, tau=2)
        train(base, theta, recon_loss(client_forward(base)), lambda e: data.epoch_batches(2, np.random.default_rng(e)), cfg)
        return theta
    a = run(xs)
    b = run([xs[0], 10 * xs[1], 100 * xs[2]])
    assert torch.allclose(a["enc.weight"][0], b["enc.weight"][0], atol=1e-6)


def test_unet_shape_and_parameter_count():
    net = BasicUNet(1, (32, 64, 64))
    assert sum(p.numel() for p in net.parameters()) == 309_057
    assert net(torch.rand(2, 1, 28, 28)).shape == (2, 1, 28, 28)


def _frozen_adept(sigma_grad: str, round_iters, epochs: int, lam: float = 0.1):
    """ADEPT on one client with the models' learning rates at 0: theta and mu stay put, only sigma moves."""
    rng = np.random.default_rng(0)
    data = ClientData([rng.random((6, 4)).astype(np.float32)])
    base, theta = stacked_init(lambda: LinearAE(4, 2), 1, 0, False)
    mu0 = {k: v[:1].clone() for k, v in stacked_init(lambda: LinearAE(4, 2), 1, 7, True)[1].items()}
    delta = {k: (mu0[k] - theta[k]).clone() for k in theta}
    cfg = FedConfig(method="adept", epochs=epochs, tau=1, lr=0.0, lr_global=0.0, lr_sigma=1e-3, sigma0=0.4,
                    lazy_epochs=0, lambda_reg=lam, sigma_clip=1e9, round_iters=round_iters, sigma_grad=sigma_grad)
    _, _, sigma = train(base, theta, recon_loss(client_forward(base)), lambda e: iter([(data.x, data.mask())]), cfg,
                        mu0=mu0)
    return sigma, delta


def test_sigma_steps_of_the_authors_schedule():
    """Steps at iterations 0 and R = 3.  The first applies the gradient of that iteration alone; the second the sum
    over the R iterations since: (1 + lambda) dR/dsigma each (two backward passes reach sigma in the authors'
    code), i.e. R (1 + lambda) times the fresh gradient (theta and mu are frozen, so the gradient is constant)."""
    def grad(s, dl):
        return 1 / s - (2e-6 + dl ** 2) / s ** 3

    for mode, factor in (("accumulated", 3 * 1.1), ("fresh", 1.0)):
        sigma, delta = _frozen_adept(mode, round_iters=3, epochs=5)
        for k, dl in delta.items():
            s1 = 0.4 - 1e-3 * grad(torch.tensor(0.4), dl)
            s2 = s1 - 1e-3 * factor * grad(s1, dl)
            assert torch.allclose(sigma[k], s2.clamp(1e-3, 1e2), rtol=1e-5, atol=1e-7), (mode, k)


def test_round_iters_equal_to_tau_is_the_per_epoch_schedule():
    """Counting the communication period in iterations (round_iters = tau) changes nothing when an epoch holds tau
    batches: the same sigma steps, the same averaging."""
    rng = np.random.default_rng(1)
    xs = [rng.random((8, 6)).astype(np.float32) for _ in range(3)]
    out = []
    for r in (None, 2):
        base, theta = stacked_init(lambda: LinearAE(6, 2), 3, 0, False)
        data = ClientData(xs)
        cfg = FedConfig(method="adept", epochs=4, tau=2, lazy_epochs=1, round_iters=r)
        _, mu, sigma = train(base, theta, recon_loss(client_forward(base)),
                             lambda e: data.epoch_batches(2, np.random.default_rng(e)), cfg)
        out.append((theta, mu, sigma))
    for a, b in zip(out[0], out[1]):
        for k in a:
            assert torch.equal(a[k], b[k]), k


def test_linf_scale_is_the_abs_maximum_formula():
    """linf_scale takes max |g| as max(max g, -min g): the same factors as min(1, limit / max |g|) written with
    abs, on signed zeros, a client whose largest magnitude is negative, infinities and NaN."""
    from fedrepro.adept.fed import linf_scale

    g = {"w": torch.tensor([[0.5, -3.0], [0.0, -0.0], [1.0, float("-inf")], [float("nan"), 1.0], [2.0, -1.0]]),
         "b": torch.tensor([[0.1], [-0.0], [0.2], [0.3], [-4.0]])}
    want_max = torch.stack([v.abs().flatten(1).amax(1) for v in g.values()]).amax(0)
    want = torch.clamp(0.5 / want_max.clamp_min(1e-30), max=1.0)
    got = linf_scale(g, 0.5)
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got[~got.isnan()], want[~want.isnan()])
    assert got[0] == 0.5 / 3.0 and got[1] == 1.0 and got[2] == 0.0 and got[4] == 0.125


def _batches_by_steps(n, tau, rng, batch=None):
    """ClientData.epoch_batches' indices written step by step (the definition): per client one permutation, step k
    its b_i entries from (k b_i) mod n_i on, wrapping around to its start."""
    b = np.maximum(n // tau, 1) if batch is None else np.minimum(n, batch)
    idx = np.zeros((tau, len(n), int(b.max())), dtype=np.int64)
    for i in range(len(n)):
        perm = rng.permutation(n[i])
        for k in range(tau):
            sel = perm[(k * b[i]) % n[i]:][: b[i]]
            if len(sel) < b[i]:
                sel = np.concatenate([sel, perm[: b[i] - len(sel)]])
            idx[k, i, : b[i]] = sel
    return idx, b


def test_epoch_batches_take_the_permutations_steps():
    """Every step's rows are those of the step-by-step definition (wrap-around at the end of a permutation, clients
    with fewer rows than steps, a fixed batch), and the mask marks exactly each client's b_i rows."""
    n = np.array([7, 12, 3, 25, 1])
    xs = [np.arange(k, dtype=np.float32)[:, None] * np.ones((1, 2), np.float32) for k in n]
    data = ClientData(xs)
    for tau, batch in [(4, None), (5, None), (3, 4), (10, 30)]:
        want, b = _batches_by_steps(n, tau, np.random.default_rng(tau), batch)
        got = list(data.epoch_batches(tau, np.random.default_rng(tau), batch))
        assert len(got) == tau
        for k, (xb, mask) in enumerate(got):
            for i in range(len(n)):
                assert mask[i].sum() == b[i] and bool(mask[i, : b[i]].all())
                assert np.array_equal(xb[i, : b[i], 0].numpy(), want[k, i, : b[i]].astype(np.float32))

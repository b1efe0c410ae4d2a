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

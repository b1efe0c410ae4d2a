"""Energy captured, FID / KID (torchmetrics, custom extractor) and the Immerkaer estimate."""

import numpy as np
import pytest
import torch

from fedrepro.metrics.energy import energy_captured
from fedrepro.metrics.generative import fid_kid, immerkaer_sigma, kid_unbiased


class Flat(torch.nn.Module):
    num_features = 16

    def forward(self, x):
        return x.float().flatten(1)[:, :16]


def test_energy_is_100_for_perfect_reconstruction():
    x = torch.rand(3, 5, 1, 4, 4)
    assert torch.allclose(energy_captured(x, x), torch.full((3,), 100.0))
    assert float(energy_captured(x, torch.zeros_like(x)).max()) == pytest.approx(0.0)


def test_fid_of_a_set_against_itself_is_zero():
    pytest.importorskip("torchmetrics")
    x = torch.rand(60, 1, 4, 4)
    fid, kid = fid_kid(x, x.clone(), Flat(), subsets=5, subset_size=30)
    assert abs(fid) < 1e-2
    assert abs(kid) < 0.05


def test_kid_unbiased_hand_case_and_torchmetrics_agree():
    pytest.importorskip("torchmetrics")
    # hand case: 1-d features {0, 1} vs {0, 2}: k = (xy + 1)^3
    # within real: k(0,1) = 1 -> 1; within fake: k(0,2) = 1 -> 1; cross: (1 + 1 + 1 + 27) / 4 = 7.5 ->  1 + 1 - 15 = -13
    assert kid_unbiased(np.array([[0.0], [1.0]]), np.array([[0.0], [2.0]])) == pytest.approx(-13.0)
    rng = np.random.default_rng(0)
    # unbiased: two independent samples of one distribution give KID ~ 0 on average
    vals = [kid_unbiased(rng.standard_normal((50, 8)), rng.standard_normal((50, 8))) for _ in range(200)]
    assert abs(np.mean(vals)) < 3 * np.std(vals) / np.sqrt(len(vals))
    from torchmetrics.image.kid import KernelInceptionDistance
    real, fake = torch.rand(20, 1, 4, 4), torch.rand(20, 1, 4, 4) * 0.8
    kid = KernelInceptionDistance(feature=Flat(), subsets=1, subset_size=20)
    kid.update(real, real=True)
    kid.update(fake, real=False)
    ours = kid_unbiased(real.flatten(1)[:, :16].double().numpy(), fake.flatten(1)[:, :16].double().numpy())
    assert float(kid.compute()[0]) == pytest.approx(ours, rel=1e-4, abs=1e-6)


def test_immerkaer_recovers_gaussian_noise():
    rng = np.random.default_rng(0)
    img = 0.5 + 0.05 * rng.standard_normal((256, 256))
    assert immerkaer_sigma(img) == pytest.approx(0.05, rel=0.05)

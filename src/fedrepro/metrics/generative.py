"""FID / KID through torchmetrics with a pluggable feature extractor, and Immerkaer's noise estimate (adept.md 4.3-4.4).

Feature extractors:
* "inception": torchmetrics' FID Inception-v3 (2048-d), weights read from a configured path (paper scale, when the
  user has `pt_inception-2015-12-05-6726825d.pth`); needs torch-fidelity.
* "proxy": a FeatureNet the pipeline trains on the same dataset (128-d); numbers are NOT comparable to the paper's.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class FeatureWrapper(nn.Module):
    """Adapts a FeatureNet to torchmetrics' custom-feature interface: float images (B, C, H, W) in [0, 1] -> (B, F)."""

    def __init__(self, net: nn.Module, num_features: int = 128):
        super().__init__()
        self.net = net.eval()
        self.num_features = num_features

    @torch.no_grad()
    def forward(self, x):
        return self.net.features(x.float())


class InputsToDevice(nn.Module):
    """Runs `net` on the device of its parameters whatever device its input is on.  torchmetrics' FID sizes a custom
    extractor without `num_features` with a CPU dummy image; this lets such a network (Inception-v3) sit on a GPU."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.net = net
        if hasattr(net, "num_features"):   # FID then sizes it as before, without the dummy image (or its draw)
            self.num_features = net.num_features

    def forward(self, x):
        return self.net(x.to(next(self.net.parameters()).device))


def load_proxy_extractor(path: str, device: str | torch.device = "cpu") -> FeatureWrapper:
    """The proxy FeatureNet from its weights file (written on any device), on `device`."""
    from fedrepro.models.adept_nets import FeatureNet
    state = torch.load(path, map_location=device, weights_only=True)
    net = FeatureNet().to(device)
    net.load_state_dict(state)
    return FeatureWrapper(net)


def fid_kid(real: torch.Tensor, fake: torch.Tensor, extractor: nn.Module, *, subsets: int = 100,
            subset_size: int = 100) -> tuple[float, float]:
    """FID and KID (mean over subsets of the unbiased MMD^2 with the cubic kernel) with torchmetrics.

    The metrics' states go to the device of `real` (the images and `extractor` share it); KID's subsets are drawn
    from torch's global CPU generator whatever that device."""
    from torchmetrics.image.fid import FrechetInceptionDistance
    from torchmetrics.image.kid import KernelInceptionDistance

    size = min(subset_size, len(real), len(fake))
    fid = FrechetInceptionDistance(feature=extractor, normalize=True)
    kid = KernelInceptionDistance(feature=extractor, subsets=subsets, subset_size=size, normalize=True)
    for metric in (fid, kid):
        metric.to(real.device)
        metric.update(real, real=True)
        metric.update(fake, real=False)
    return float(fid.compute()), float(kid.compute()[0])


def kid_unbiased(fr: np.ndarray, ff: np.ndarray) -> float:
    """Unbiased MMD^2 with k(x, y) = (x.y / d + 1)^3 on one pair of feature sets (the KID of one subset)."""
    d = fr.shape[1]
    k = lambda a, b: (a @ b.T / d + 1) ** 3  # noqa: E731
    m, n = len(fr), len(ff)
    krr, kff, krf = k(fr, fr), k(ff, ff), k(fr, ff)
    return float((krr.sum() - np.trace(krr)) / (m * (m - 1)) + (kff.sum() - np.trace(kff)) / (n * (n - 1))
                 - 2 * krf.mean())


def immerkaer_sigma(img: np.ndarray) -> float:
    """Immerkaer (1996) fast noise std estimate of a 2-D image (valid 3x3 Laplacian-difference convolution)."""
    img = np.asarray(img, dtype=np.float64)
    h, w = img.shape
    n = (img[:-2, :-2] - 2 * img[:-2, 1:-1] + img[:-2, 2:] - 2 * img[1:-1, :-2] + 4 * img[1:-1, 1:-1]
         - 2 * img[1:-1, 2:] + img[2:, :-2] - 2 * img[2:, 1:-1] + img[2:, 2:])
    return float(np.sqrt(np.pi / 2) * np.abs(n).sum() / (6 * (w - 2) * (h - 2)))

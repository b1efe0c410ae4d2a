"""Networks of ADEPT (adept.md 5.2-5.4): linear AE, CIFAR conv AE, the small 6-layer U-Net (BasicUNet)."""

from __future__ import annotations

import torch
from torch import nn

from fedrepro.models.pooling import MaxPool2d  # nn.MaxPool2d's bits, its forward in channels-last memory


class LinearAE(nn.Module):
    """Linear(d -> k) -> Linear(k -> d), biases, no activations (CODE `Autoencoder`); input (B, *shape)."""

    def __init__(self, d: int, k: int):
        super().__init__()
        self.enc = nn.Linear(d, k)
        self.dec = nn.Linear(k, d)

    def forward(self, x):
        shape = x.shape
        return self.dec(self.enc(x.reshape(shape[0], -1))).reshape(shape)


class ConvAE(nn.Module):
    """CIFAR-10 AE: Conv(3->16,k3,s2) ReLU -> Linear(3600->k) -> Linear(k->3600) -> ConvT(16->3) -> sigmoid."""

    def __init__(self, k: int, size: int = 32):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, stride=2)
        self.h = (size - 3) // 2 + 1
        self.enc = nn.Linear(16 * self.h * self.h, k)
        self.dec = nn.Linear(k, 16 * self.h * self.h)
        self.deconv = nn.ConvTranspose2d(16, 3, 3, stride=2, output_padding=1)

    def forward(self, x):
        z = self.enc(torch.relu(self.conv(x)).flatten(1))
        y = self.dec(z).reshape(x.shape[0], 16, self.h, self.h)
        return torch.sigmoid(self.deconv(y))


class BasicUNet(nn.Module):
    """The Hugging Face diffusion-course BasicUNet (CODE): 3 down, 3 up convs (k5), SiLU after each, max-pool /
    nearest upsample, additive skips, no time input.  widths (32, 64, 64) is the paper's network (309,057 params)."""

    def __init__(self, in_ch: int = 1, widths=(32, 64, 64)):
        super().__init__()
        a, b, c = widths
        self.down = nn.ModuleList([nn.Conv2d(in_ch, a, 5, padding=2), nn.Conv2d(a, b, 5, padding=2),
                                   nn.Conv2d(b, c, 5, padding=2)])
        self.up = nn.ModuleList([nn.Conv2d(c, c, 5, padding=2), nn.Conv2d(c, a, 5, padding=2),
                                 nn.Conv2d(a, in_ch, 5, padding=2)])
        self.act = nn.SiLU()
        self.pool = MaxPool2d(2)
        self.upsample = nn.Upsample(scale_factor=2)

    def forward(self, x):
        h = []
        for i, layer in enumerate(self.down):
            x = self.act(layer(x))
            if i < 2:
                h.append(x)
                x = self.pool(x)
        for i, layer in enumerate(self.up):
            if i > 0:
                x = self.upsample(x)
                x = x + h.pop()
            x = self.act(layer(x))
        return x


class FeatureNet(nn.Module):
    """LeNet-style classifier whose penultimate 128-d features replace Inception for proxy FID/KID (docs/adept.md, "Feature extractor for FID / KID")."""

    def __init__(self, n_classes: int = 10, in_ch: int = 1, size: int = 28):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(in_ch, 32, 3, padding=1), nn.ReLU(), MaxPool2d(2),
                                  nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), MaxPool2d(2), nn.Flatten(),
                                  nn.Linear(64 * (size // 4) ** 2, 128), nn.ReLU())
        self.head = nn.Linear(128, n_classes)

    def features(self, x):
        return self.body(x)

    def forward(self, x):
        return self.head(self.body(x))

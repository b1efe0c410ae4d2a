"""Vertical-FL party networks stacked over the M parties (one set of weights per party, leading axis M).

Every module here maps a party-stacked input ``x`` of shape (M, B, ...) to embeddings (M, B, P) in one
batched call: no Python loop over parties except for the ResNet-18s (parameters carry a leading M axis and are applied with
``einsum`` / grouped convolutions / ``torch.func.vmap``). Party m's output depends only on party m's
parameters, so the gradient of a sum of per-party losses is each party's own gradient and plain SGD on
the stacked tensors is M independent SGD steps.

- ``StackedLSTM``     MIMIC-III (Sec. 5, App. C.1): one-layer LSTM, last hidden state, Keras init (A-19).
- ``StackedMLP``      small quick-scale parties (Q-CIFAR proxy, tests): Linear-ReLU-Linear, unbounded output.
- ``StackedViewCNN``  ModelNet10 (§5.A.3 shape, scaled): per-view conv stack shared over a party's views,
                      element-wise max over the party's views, Linear to the embedding (no activation).
- ``StackedResNet18`` CIFAR-10 / ImageNet-100 (§5.A.2/5.A.4): M ResNet-18s, the one loop over parties (measured
                      faster than vmap on the CPU, and BatchNorm keeps running statistics), with the CIFAR
                      stem (3x3, no max-pool) or torchvision's ImageNet stem.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from fedrepro.models.pooling import max_pool2d


def _uniform_(t: torch.Tensor, bound: float) -> torch.Tensor:
    with torch.no_grad():
        return t.uniform_(-bound, bound)


class StackedLinear(nn.Module):
    """M independent Linear(d_in, d_out): x (M, B, d_in) -> (M, B, d_out). PyTorch default init per party."""

    def __init__(self, M: int, d_in: int, d_out: int, bias: bool = True) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(d_in)
        self.weight = nn.Parameter(_uniform_(torch.empty(M, d_out, d_in), bound))
        self.bias = nn.Parameter(_uniform_(torch.empty(M, d_out), bound)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.einsum("mbi,moi->mbo", x, self.weight)
        return y + self.bias[:, None, :] if self.bias is not None else y


class StackedMLP(nn.Module):
    """Per party Linear(d_in, hidden) -> ReLU -> Linear(hidden, P) (linear, unbounded head: §7.2 Q-CIFAR)."""

    def __init__(self, M: int, d_in: int, hidden: int, P: int) -> None:
        super().__init__()
        self.l1 = StackedLinear(M, d_in, hidden)
        self.l2 = StackedLinear(M, hidden, P)
        self.P = P

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(F.relu(self.l1(x.flatten(2))))

    def last_bias(self) -> torch.Tensor:
        return self.l2.bias


class StackedLSTM(nn.Module):
    """M one-layer LSTMs (Keras ``LSTM(units=P)``): x (M, B, T, D) -> last hidden state (M, B, P).

    Init as Keras (A-19): glorot-uniform input kernel, orthogonal recurrent kernel, zero bias with the
    forget-gate bias 1. Gate order i, f, g(cell), o. The recursion over time is a loop over T; the M
    parties and the B samples are batched in each step.

    The time steps are taken with ``unbind``, not ``xi[:, :, t]``: the backward of an index builds a zero
    tensor of the whole (M, B, T, 4P) input projection per step and adds it up (T fills and adds of 4 MB
    at MIMIC's quick size, 40 % of a training iteration), where ``unbind``'s backward stacks the T step
    gradients once. Same values bit for bit (tests/cvfl/test_cvfl_parties.py).
    """

    def __init__(self, M: int, d_in: int, P: int) -> None:
        super().__init__()
        self.P = P
        limit = math.sqrt(6.0 / (d_in + 4 * P))
        self.w_ih = nn.Parameter(_uniform_(torch.empty(M, d_in, 4 * P), limit))
        w_hh = torch.empty(M, P, 4 * P)
        for m in range(M):
            nn.init.orthogonal_(w_hh[m])
        self.w_hh = nn.Parameter(w_hh)
        b = torch.zeros(M, 4 * P)
        b[:, P : 2 * P] = 1.0
        self.bias = nn.Parameter(b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, B, _, _ = x.shape
        P = self.P
        xi = torch.einsum("mbtd,mdg->mbtg", x, self.w_ih) + self.bias[:, None, None, :]
        h = x.new_zeros(M, B, P)
        c = x.new_zeros(M, B, P)
        for x_t in xi.unbind(2):
            g = x_t + torch.bmm(h, self.w_hh)
            i, f, cc, o = g.split(P, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(cc)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h


class StackedViewCNN(nn.Module):
    """Per party: conv stack shared over the party's views -> max over views -> Linear(., P).

    x: (M, B, V, C, H, W) with V views per party. The paper's party net (two convs + FC(4096)) is built
    with ``channels=(64, 256), kernels=(11, 3), strides=(4, 1), pools=(5, 5)/3``; the quick proxy uses one
    small conv (§7.2 Q-ModelNet). Convolutions of the M parties run as one grouped convolution.
    """

    def __init__(self, M: int, in_ch: int, size: int, P: int, channels=(8,), kernels=(3,), strides=(1,),
                 paddings=(0,), pool: int = 2, pool_stride: int | None = None) -> None:
        super().__init__()
        self.M, self.P = M, P
        self.convs = nn.ModuleList()
        ch = in_ch
        for c_out, k, s, p in zip(channels, kernels, strides, paddings):
            self.convs.append(nn.Conv2d(M * ch, M * c_out, k, stride=s, padding=p, groups=M))
            ch = c_out
        self.pool, self.pool_stride = pool, pool_stride or pool
        with torch.no_grad():
            feat = self._features(torch.zeros(1, 1, in_ch, size, size).expand(M, 1, 1, in_ch, size, size))
        self.head = StackedLinear(M, feat.shape[-1], P)

    def _features(self, x: torch.Tensor) -> torch.Tensor:
        M, B, V, C, H, W = x.shape
        z = x.permute(1, 2, 0, 3, 4, 5).reshape(B * V, M * C, H, W)
        for conv in self.convs:
            z = max_pool2d(F.relu(conv(z)), self.pool, self.pool_stride)  # F.max_pool2d's bits, faster
        z = z.reshape(B, V, M, -1).amax(dim=1)  # element-wise max over the party's views
        return z.permute(1, 0, 2)  # (M, B, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self._features(x))

    def last_bias(self) -> torch.Tensor:
        return self.head.bias


class StackedResNet18(nn.Module):
    """M torchvision ``resnet18(num_classes=P)``s, one per party: x (M, B, 3, H, W) -> (M, B, P).

    stem "cifar" (§5.A.2, 16x16 quadrants): 3x3 stride-1 conv, no max-pool. stem "imagenet" (§5.A.4, 112x112
    quadrants): torchvision's own 7x7 stride-2 conv + 3x3 stride-2 max-pool. Both end in avg-pool -> Linear(512, P).

    The parties run in a Python loop over M ordinary modules: on the CPU this is faster than one vmapped grouped
    convolution (whose backward dominated a local iteration), and each party's BatchNorm keeps running statistics
    in training and uses them in eval mode (A-6), as ``model.eval()`` does for a single network.
    ``eval_chunk``: samples per evaluation forward pass (smaller chunks are faster for these convolutions on
    the CPU, and with running statistics the chunking no longer changes the result).
    """

    STEMS = ("cifar", "imagenet")
    eval_chunk = 100

    def __init__(self, M: int, P: int, stem: str = "cifar") -> None:
        super().__init__()
        import torchvision

        if stem not in self.STEMS:
            raise ValueError(f"stem must be one of {', '.join(self.STEMS)}; got {stem!r}")

        def one():
            net = torchvision.models.resnet18(num_classes=P)
            if stem == "cifar":  # 3x3 stride-1 stem, no max-pool (§5.A.2); head 512 -> P
                net.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
                net.maxpool = nn.Identity()
            return net

        self.nets = nn.ModuleList(one() for _ in range(M))
        self.P = P

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([net(xm) for net, xm in zip(self.nets, x)])

    def last_bias(self) -> torch.Tensor:
        return torch.stack([net.fc.bias for net in self.nets])

"""CIFAR ResNet-20 (He et al. 2016, §4.2: 3 stages x 3 basic blocks, 16/32/64 channels, option-A identity
shortcuts with zero padding; thesis A-27, d = 269,722 at width 1 with BN affine) and ResNet-50 (torchvision,
random init, no pretrained weights)."""

from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F


class _ShortcutA(nn.Module):
    def __init__(self, planes: int):
        super().__init__()
        self.pad = planes // 4

    def forward(self, x):
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad))


class BasicBlock(nn.Module):
    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = _ShortcutA(planes) if (stride != 1 or in_planes != planes) else nn.Identity()

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    def __init__(self, num_blocks=(3, 3, 3), num_classes: int = 10, width: int = 16, in_channels: int = 3):
        super().__init__()
        w = width
        self.conv1 = nn.Conv2d(in_channels, w, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        layers, in_planes = [], w
        for i, nb in enumerate(num_blocks):
            planes = w * 2 ** i
            for j in range(nb):
                layers.append(BasicBlock(in_planes, planes, 2 if (j == 0 and i > 0) else 1))
                in_planes = planes
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(in_planes, num_classes)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layers(out)
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return self.linear(out)


def resnet20(num_classes: int = 10, width: int = 16, depth_blocks: int = 3) -> CifarResNet:
    """width 16 = the paper's network; smaller widths / fewer blocks per stage for CPU proxies."""
    return CifarResNet((depth_blocks,) * 3, num_classes=num_classes, width=width)


def resnet50(num_classes: int = 1000) -> nn.Module:
    import torchvision

    return torchvision.models.resnet50(weights=None, num_classes=num_classes)

"""torchvision ResNet forward passes with each stage in the memory layout that oneDNN runs fastest on the CPU.

On C-VFL's 16x16 CIFAR quadrants the ResNet-18 stages see 16x16, 8x8, 4x4 and 2x2 images. Which layout is faster
depends on the kernels oneDNN dispatches to, so the rule is kept per CPU kernel family (ATen's
``torch.backends.cpu.get_cpu_capability()``, the instruction set oneDNN also picks its kernels by):

- **AVX-512** (the first 2-core machine; one thread, batch 100; forward + backward of one 3x3 convolution,
  channels-last / channels-first): 0.65 at 16x16 (64 channels), 0.85 at 8x8, 1.27 at 4x4 and 2.05 at 2x2; on the
  ImageNet stem's 112x112 quadrants (batch 32): 0.60 at 56x56, 0.82 at 28x28, 0.93 at 14x14, 1.04 at 7x7, 1.53 at
  4x4. Channels-last from 8 pixels a side.
- **AVX2** (an AMD EPYC without AVX-512; two threads, batch 100, contiguous weights as the parameters are): 0.81 at
  16x16, 0.90 at 8x8, 0.86 at 4x4 (forward alone 8.2 against 12.3 ms) and 1.12 at 2x2. Channels-last from 4 pixels
  a side: one CIFAR party step (forward and backward, B = 100, two threads, 5-6 alternations) took 0.96 of its
  CPU time with the AVX-512 rule, the ImageNet stem's (B = 32, 112x112) 0.97.
- Any other CPU keeps the AVX-512 machine's rule (nothing measured).

``resnet_forward`` runs the stem and every stage whose output is at least ``channels_last_min_side()`` pixels a
side channels-last and the rest channels-first (one layout copy where they meet).

BatchNorm on the last stage's 2x2 images is the opposite case: ATen's channels-first kernels loop over 4-pixel
rows (backward 1.2 ms against 0.09 ms channels-last for 100 x 512 x 2 x 2, two threads), so ``TinyImageBatchNorm2d``
normalizes a channels-last copy there (``with_tiny_image_norms``).

Only speed and float rounding change: a layout changes the order of the sums inside a convolution and inside
BatchNorm's statistics, not what is computed (tests/models/test_resnet_layouts.py: outputs, gradients and running
statistics within float32 rounding of torchvision's own forward in float64; a forward gives the same bits with and
without autograd, which C-VFL's round-start reuse of the first local forward needs). The layouts apply on the CPU
only: on a GPU nothing changes. Keying the rule on the kernel family moves no result that was the same across
machines: oneDNN's AVX2 and AVX-512 kernels already sum in different orders.
"""

from __future__ import annotations

import torch
from torch import nn

# stages with outputs at least this wide run channels-last, by CPU kernel family (measured, above)
CHANNELS_LAST_MIN_SIDE = {"AVX512": 8, "AVX2": 4}
DEFAULT_CHANNELS_LAST_MIN_SIDE = 8
TINY_IMAGE_PIXELS = 4          # BatchNorm on images of at most this many pixels runs channels-last


def channels_last_min_side() -> int:
    """The smallest stage output side that runs channels-last on this CPU (module docstring)."""
    return CHANNELS_LAST_MIN_SIDE.get(torch.backends.cpu.get_cpu_capability(), DEFAULT_CHANNELS_LAST_MIN_SIDE)


def _stage_stride(stage: nn.Module) -> int:
    """A torchvision ResNet stage's stride: its first block's shortcut convolution's (basic and bottleneck blocks
    alike; a stage without one keeps the image size)."""
    shortcut = stage[0].downsample
    return shortcut[0].stride[0] if shortcut is not None else 1


def resnet_forward(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``torchvision.models.ResNet.forward`` with stages in their faster layout on the CPU (module docstring)."""
    if x.device.type != "cpu":
        return net(x)
    min_side = channels_last_min_side()
    x = x.contiguous(memory_format=torch.channels_last)
    x = net.maxpool(net.relu(net.bn1(net.conv1(x))))
    for stage in (net.layer1, net.layer2, net.layer3, net.layer4):
        side = -(-min(x.shape[2:]) // _stage_stride(stage))          # the stage's output side (padding 1)
        if side < min_side:
            x = x.contiguous()
        x = stage(x)
    return net.fc(torch.flatten(net.avgpool(x), 1))


class TinyImageBatchNorm2d(nn.BatchNorm2d):
    """``nn.BatchNorm2d`` that normalizes a channels-last copy of channels-first CPU inputs of at most
    TINY_IMAGE_PIXELS pixels and returns a channels-first result (the same statistics and running-statistics
    update, to float rounding)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 4 and x.device.type == "cpu" and x.shape[2] * x.shape[3] <= TINY_IMAGE_PIXELS \
                and x.is_contiguous():
            return super().forward(x.contiguous(memory_format=torch.channels_last)).contiguous()
        return super().forward(x)


def with_tiny_image_norms(module: nn.Module) -> nn.Module:
    """Make every plain ``nn.BatchNorm2d`` inside ``module`` a TinyImageBatchNorm2d, in place (the class only:
    parameters and buffers are untouched)."""
    for m in module.modules():
        if type(m) is nn.BatchNorm2d:
            m.__class__ = TinyImageBatchNorm2d
    return module

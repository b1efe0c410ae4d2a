"""Convolutions whose weight gradient is taken tap by tap where the output image is tiny (ResNet-18's last stage on
C-VFL's 16x16 CIFAR quadrants: 2x2 outputs).

oneDNN's weight-gradient kernel is slow on such images: for a 512 -> 512 3x3 convolution on 100 images of 2x2 it
took 53 ms on the 2-core machine, where the same FLOPs as a matrix product take 10. ``weight_grad_by_taps``
computes dL/dW as one matrix product per kernel tap, over the output pixels whose input pixel for that tap lies
inside the image (the padding's zeros are skipped, which halves the work on a 2x2 image): 12.5 ms there, 10 ms
instead of 22 for the stage's 3x3 stride-2 convolution. From 4x4 outputs on, oneDNN is as fast or faster
(measured: equal at 4x4, twice as fast at 8x8), so ``SmallOutputConv2d`` takes this path only for outputs of at most
``MAX_OUTPUT_PIXELS`` pixels.

What stays the same: the forward (``F.conv2d``) and the input gradient (ATen's ``convolution_backward``), bit for
bit. The weight gradient is the same sum in another order, so it agrees to float rounding (tested against a
float64 oracle).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

MAX_OUTPUT_PIXELS = 4


def _taps(size: int, out: int, k: int, stride: int, padding: int):
    """For kernel offset k along one axis: the output range [o0, o1) whose input index o*stride + k - padding is
    inside [0, size), and that first input index."""
    o0 = max(0, (padding - k + stride - 1) // stride)
    o1 = min(out, (size - 1 - k + padding) // stride + 1)
    return o0, o1, o0 * stride + k - padding


def weight_grad_by_taps(x: torch.Tensor, grad_y: torch.Tensor, kernel_size: tuple[int, int],
                        stride: tuple[int, int], padding: tuple[int, int]) -> torch.Tensor:
    """dL/dW of ``F.conv2d(x, W, stride=stride, padding=padding)`` (groups 1, dilation 1): W's tap (i, j) is
    Σ_n,oh,ow grad_y[n, :, oh, ow] x[n, :, oh·s + i − p, ow·s + j − p] over the pixels inside the image.

    Both tensors are copied once to channels-last order, so a tap's pixels are whole rows of channels (a
    channels-first slice of a 2x2 image copies 2-element runs), and each tap's product is written into its own
    contiguous slice of a (kh, kw, O, C) buffer, permuted once at the end (a product written straight into W's
    layout is a strided copy per tap): 3.5 ms instead of 6.6 for stage 4's 512 -> 512 convolution, two threads."""
    N, C, H, W = x.shape
    O, Ho, Wo = grad_y.shape[1:]
    x_rows = x.permute(0, 2, 3, 1).contiguous()              # (N, H, W, C)
    gy_rows = grad_y.permute(0, 2, 3, 1).contiguous()        # (N, Ho, Wo, O)
    by_tap = x.new_empty(*kernel_size, O, C)
    for i in range(kernel_size[0]):
        oh0, oh1, ih0 = _taps(H, Ho, i, stride[0], padding[0])
        for j in range(kernel_size[1]):
            ow0, ow1, iw0 = _taps(W, Wo, j, stride[1], padding[1])
            if oh1 <= oh0 or ow1 <= ow0:
                by_tap[i, j].zero_()              # this tap only ever sees the padding
                continue
            xs = x_rows[:, ih0:ih0 + (oh1 - oh0 - 1) * stride[0] + 1:stride[0],
                        iw0:iw0 + (ow1 - ow0 - 1) * stride[1] + 1:stride[1]]
            torch.mm(gy_rows[:, oh0:oh1, ow0:ow1].reshape(-1, O).t(), xs.reshape(-1, C), out=by_tap[i, j])
    return by_tap.permute(2, 3, 0, 1).contiguous()


class _WeightGradByTaps(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, stride, padding):
        ctx.save_for_backward(x, weight)
        ctx.stride, ctx.padding = stride, padding
        return F.conv2d(x, weight, None, stride, padding)

    @staticmethod
    def backward(ctx, grad_y):
        x, weight = ctx.saved_tensors
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.ops.aten.convolution_backward(
                grad_y, x, weight, None, list(ctx.stride), list(ctx.padding), [1, 1], False, [0, 0], 1,
                [True, False, False])[0]
        if ctx.needs_input_grad[1]:
            grad_w = weight_grad_by_taps(x, grad_y, weight.shape[2:], ctx.stride, ctx.padding)
        return grad_x, grad_w, None, None


class SmallOutputConv2d(nn.Conv2d):
    """``nn.Conv2d`` whose weight gradient comes from ``weight_grad_by_taps`` when the output image has at most
    MAX_OUTPUT_PIXELS pixels (bias-free, ungrouped, undilated, zero-padded convolutions on the CPU, outside
    torch.func's transforms); else ``nn.Conv2d`` itself."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (self.bias is None and self.groups == 1 and self.dilation == (1, 1) and self.padding_mode == "zeros"
                and isinstance(self.padding, tuple) and x.dim() == 4 and x.device.type == "cpu"
                and torch.is_grad_enabled() and self.weight.requires_grad
                and not any(map(torch._C._functorch.is_functorch_wrapped_tensor, (x, self.weight)))):
            out = [(n + 2 * p - k) // s + 1 for n, p, k, s in
                   zip(x.shape[2:], self.padding, self.kernel_size, self.stride)]
            if out[0] * out[1] <= MAX_OUTPUT_PIXELS:
                return _WeightGradByTaps.apply(x, self.weight, self.stride, self.padding)
        return super().forward(x)


def with_small_output_convs(module: nn.Module) -> nn.Module:
    """Make every plain ``nn.Conv2d`` inside ``module`` a SmallOutputConv2d, in place (the class only: parameters,
    their initial values and the random stream that drew them are untouched)."""
    for m in module.modules():
        if type(m) is nn.Conv2d:
            m.__class__ = SmallOutputConv2d
    return module

"""Convolutions on tiny images: ResNet-18's last stage on C-VFL's 16x16 CIFAR quadrants (2x2 images).

Two cases, both where oneDNN is slow:

- **Every window covers the whole image** (``covers_whole_image``: a 3x3 convolution with padding 1 on a 2x2 or
  1x1 image, or a 3x3 stride-2 one from 2x2 to 1x1). The convolution is then a dense linear map from the
  H·W·C input values to the Ho·Wo·O output values, one matrix product whose matrix ``dense_conv_matrix`` gathers
  from the weight, and it needs only H·W/(kh·kw) of the convolution's counted FLOPs: the padding's zeros are
  never multiplied. ``_DenseConv`` computes the forward and the input gradient that way and the weight gradient
  tap by tap (below). For stage 4's 512 -> 512 convolution on 100 images of 2x2, two threads, on the AVX2 machine:
  forward 8.8 ms against oneDNN's 16.9 (building the matrix, 16 MB, takes 2.2 of them), input gradient 5.8 ms
  against 13.7.
- **Outputs of at most ``MAX_OUTPUT_PIXELS`` pixels** otherwise (stage 4's 3x3 stride-2 convolution from 4x4 to
  2x2): oneDNN's weight-gradient kernel is slow on such images (53 ms for the 512 -> 512 convolution on the
  AVX-512 machine, where the same FLOPs as a matrix product take 10). ``weight_grad_by_taps`` computes dL/dW as one
  matrix product per kernel tap, over the output pixels whose input pixel for that tap lies inside the image: 12.5
  ms there, 10 ms instead of 22 for the stride-2 convolution. From 4x4 outputs on, oneDNN is as fast or faster
  (measured: equal at 4x4, twice as fast at 8x8). Forward and input gradient stay oneDNN's, bit for bit.

Both compute the same sums as ``F.conv2d`` in another order, so they agree with it to float rounding (tested
against float64 oracles). The forward is the same with and without autograd, bit for bit (C-VFL reuses the first
local forward as the round-start forward).
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


def covers_whole_image(in_size: tuple[int, int], kernel_size: tuple[int, int], stride: tuple[int, int],
                       padding: tuple[int, int]) -> bool:
    """Whether every output pixel's window covers the whole input image (and so the convolution is a dense linear
    map): along each axis the first window starts at or before the first pixel (p >= (out - 1)·s, for the last
    window too) and the last window ends at or after the last pixel (size + p <= k)."""
    for size, k, s, p in zip(in_size, kernel_size, stride, padding):
        out = (size + 2 * p - k) // s + 1
        if out < 1 or p < (out - 1) * s or size + p > k:
            return False
    return True


def dense_conv_matrix(weight: torch.Tensor, in_size: tuple[int, int], stride: tuple[int, int],
                      padding: tuple[int, int]) -> torch.Tensor:
    """The (Ho·Wo·O, H·W·C) matrix of a convolution whose windows cover the whole image (``covers_whole_image``):
    row (Ho-1-oh, Wo-1-ow, o), column (ih, iw, c) holds W[o, c, ih - oh·s + p, iw - ow·s + p].

    The output pixels are numbered backwards because the tap index falls as the output index rises: numbered so,
    every index of the matrix is a non-negative stride into the weight's taps, and the gather is one strided copy
    with whole rows of C channels (from the weight in (kh, kw, O, C) order, one transposing copy)."""
    O, C, kh, kw = weight.shape
    H, W = in_size
    (sh, sw), (ph, pw) = stride, padding
    Ho, Wo = (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1
    taps = weight.permute(2, 3, 0, 1).contiguous()                  # (kh, kw, O, C)
    oc = O * C
    rows = taps.as_strided((Ho, Wo, O, H, W, C), (sh * kw * oc, sw * oc, C, kw * oc, oc, 1),
                           ((ph - (Ho - 1) * sh) * kw + (pw - (Wo - 1) * sw)) * oc)
    return rows.reshape(Ho * Wo * O, H * W * C)


def _layout_of(t: torch.Tensor) -> torch.memory_format:
    """Channels-last for a channels-last tensor that is not also contiguous, else contiguous (as ATen's
    convolution decides its output's layout)."""
    if t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous():
        return torch.channels_last
    return torch.contiguous_format


def _pixel_rows(t: torch.Tensor) -> torch.Tensor:
    """(N, C, H, W) -> (N, H·W·C): each image's pixels as rows of its channels."""
    return t.permute(0, 2, 3, 1).reshape(t.shape[0], -1)


def _from_pixel_rows(rows: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The inverse of ``_pixel_rows`` for a tensor shaped like ``like``, in its memory layout."""
    N, C, H, W = like.shape
    return rows.view(N, H, W, C).permute(0, 3, 1, 2).contiguous(memory_format=_layout_of(like))


def _reversed_pixel_rows(t: torch.Tensor) -> torch.Tensor:
    """(N, O, Ho, Wo) -> (N, Ho·Wo·O) with the pixels numbered backwards, as ``dense_conv_matrix``'s rows are."""
    return _pixel_rows(t.flip(2, 3))


def _from_reversed_pixel_rows(rows: torch.Tensor, shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
    """The inverse of ``_reversed_pixel_rows`` for an (N, O, Ho, Wo) ``shape``, in ``like``'s memory layout."""
    N, O, Ho, Wo = shape
    out = rows.view(N, Ho, Wo, O).flip(1, 2).permute(0, 3, 1, 2)
    return out.contiguous(memory_format=_layout_of(like))


def _out_shape(x: torch.Tensor, weight: torch.Tensor, stride, padding) -> tuple[int, int, int, int]:
    """(N, O, Ho, Wo) of ``F.conv2d(x, weight, stride=stride, padding=padding)``."""
    out = [(n + 2 * p - k) // s + 1 for n, p, k, s in zip(x.shape[2:], padding, weight.shape[2:], stride)]
    return (x.shape[0], weight.shape[0], *out)


def dense_conv2d(x: torch.Tensor, matrix: torch.Tensor, out_shape: tuple[int, ...]) -> torch.Tensor:
    """``F.conv2d`` as one product with ``dense_conv_matrix``'s matrix; the result in x's memory layout."""
    return _from_reversed_pixel_rows(torch.mm(_pixel_rows(x), matrix.t()), out_shape, x)


def _dense_forward(x: torch.Tensor, weight: torch.Tensor, stride, padding) -> tuple[torch.Tensor, torch.Tensor]:
    """(the convolution's output, its dense matrix): the one forward of both the autograd and the no-grad path."""
    matrix = dense_conv_matrix(weight, x.shape[2:], stride, padding)
    return dense_conv2d(x, matrix, _out_shape(x, weight, stride, padding)), matrix


class _DenseConv(torch.autograd.Function):
    """A convolution whose windows cover the whole image: forward and input gradient through its dense matrix
    (kept for the backward: 16 MB for stage 4's), weight gradient tap by tap."""

    @staticmethod
    def forward(ctx, x, weight, stride, padding):
        y, matrix = _dense_forward(x, weight, stride, padding)
        ctx.save_for_backward(x, matrix)
        ctx.stride, ctx.padding, ctx.kernel_size = stride, padding, weight.shape[2:]
        return y

    @staticmethod
    def backward(ctx, grad_y):
        x, matrix = ctx.saved_tensors
        grad_x = grad_w = None
        if ctx.needs_input_grad[0]:
            grad_x = _from_pixel_rows(torch.mm(_reversed_pixel_rows(grad_y), matrix), x)
        if ctx.needs_input_grad[1]:
            grad_w = weight_grad_by_taps(x, grad_y, ctx.kernel_size, ctx.stride, ctx.padding)
        return grad_x, grad_w, None, None


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
    """``nn.Conv2d`` that, for bias-free, ungrouped, undilated, zero-padded convolutions on the CPU outside
    torch.func's transforms, runs as one dense product where every window covers the whole image (with and without
    autograd, so a forward gives the same bits either way), and takes its weight gradient tap by tap where the
    output has at most MAX_OUTPUT_PIXELS pixels; else ``nn.Conv2d`` itself."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (self.bias is None and self.groups == 1 and self.dilation == (1, 1) and self.padding_mode == "zeros"
                and isinstance(self.padding, tuple) and x.dim() == 4 and x.device.type == "cpu"
                and not any(map(torch._C._functorch.is_functorch_wrapped_tensor, (x, self.weight)))):
            grad = torch.is_grad_enabled() and (self.weight.requires_grad or x.requires_grad)
            if covers_whole_image(x.shape[2:], self.kernel_size, self.stride, self.padding):
                if grad:
                    return _DenseConv.apply(x, self.weight, self.stride, self.padding)
                return _dense_forward(x, self.weight, self.stride, self.padding)[0]
            _, _, Ho, Wo = _out_shape(x, self.weight, self.stride, self.padding)
            if grad and self.weight.requires_grad and Ho * Wo <= MAX_OUTPUT_PIXELS:
                return _WeightGradByTaps.apply(x, self.weight, self.stride, self.padding)
        return super().forward(x)


def with_small_output_convs(module: nn.Module) -> nn.Module:
    """Make every plain ``nn.Conv2d`` inside ``module`` a SmallOutputConv2d, in place (the class only: parameters,
    their initial values and the random stream that drew them are untouched)."""
    for m in module.modules():
        if type(m) is nn.Conv2d:
            m.__class__ = SmallOutputConv2d
    return module

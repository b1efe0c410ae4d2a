"""A Conv2d whose stacked-clients form, with one output channel per client, runs compiled loops.

Clients train side by side as ``torch.func.vmap(functional_call)`` over stacked parameters (fedrepro.adept.fed):
each layer's convolution becomes one grouped convolution, one group per client, with the bias added on its own
(PyTorch's batching rule for ``convolution``). oneDNN runs a grouped convolution with one output channel per group
as an im2col matrix product, slowly: BasicUNet's last layer (8 -> 1 channels, 5x5, 28x28) was more than half of an
ADEPT-DGM training step. ``OneOutputConv2d`` replaces that layer's grouped convolution under ``vmap`` by
fedrepro.kernels.grouped_conv (the forward and both gradients in the order of oneDNN's AVX2 code with one thread,
so bit for bit the same) and leaves everything else as PyTorch's rule does it: the same reshapes, the same separate
bias addition, so the same autograd graph around the convolution.

The loops run only where oneDNN runs that AVX2 code (``onednn_runs_avx2``): on a machine with AVX-512 oneDNN's
kernels sum in other orders, so there, as outside ``vmap`` (one model) and wherever else the loops do not apply
(another device or dtype, the kernels switched off with FEDREPRO_KERNELS=0, a call too small to pay for numba), the
layer is ``nn.Conv2d`` under PyTorch's rule: every machine keeps its own oneDNN bits.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.nn import functional as F

from fedrepro.kernels import compiled

if TYPE_CHECKING:  # imported at run time by kernels.compiled(); named here for the import closure (codedeps)
    from fedrepro.kernels import grouped_conv  # noqa: F401


@functools.cache
def onednn_runs_avx2() -> bool:
    """Whether oneDNN runs its AVX2 code on this machine (AVX2 and no AVX-512, no instruction-set cap set through
    ONEDNN_MAX_CPU_ISA): the code whose order fedrepro.kernels.grouped_conv follows."""
    if os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA"):
        return False
    try:
        return bool(torch.cpu._is_avx2_supported()) and not torch.cpu._is_avx512_supported()
    except AttributeError:     # a torch without these queries: keep oneDNN
        return False


class _GroupedOneOutput(torch.autograd.Function):
    """y = conv2d(x, w, padding=pad, groups=G) for w of shape (G, C, K, K), stride 1, and its gradients: the compiled
    loops of fedrepro.kernels.grouped_conv."""

    @staticmethod
    def forward(x, w, pad: int, kernels):
        B, _, H, W = x.shape
        G, C, K, _ = w.shape
        out = x.new_empty(B, G, H + 2 * pad - K + 1, W + 2 * pad - K + 1)
        xp = x.new_empty(B, x.shape[1], H + 2 * pad, W + 2 * pad)
        kernels.pad_into(x.detach().contiguous().numpy(), pad, xp.numpy())
        kernels.forward(xp.numpy(), w.detach().contiguous().numpy(), out.numpy())
        return out, xp

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w, pad, kernels = inputs
        ctx.save_for_backward(output[1], w)     # the padded input, for the weight gradient
        ctx.mark_non_differentiable(output[1])
        ctx.pad, ctx.kernels, ctx.x_shape = pad, kernels, x.shape

    @staticmethod
    def backward(ctx, gy, _):
        xp, w = ctx.saved_tensors
        gy = gy.contiguous()
        gx = gw = None
        if ctx.needs_input_grad[0]:
            gx = gy.new_empty(ctx.x_shape)
            ctx.kernels.input_grad(gy.numpy(), w.detach().contiguous().numpy(), ctx.pad, gx.numpy())
        if ctx.needs_input_grad[1]:
            gw = w.new_empty(w.shape)
            ctx.kernels.weight_grad(xp.numpy(), gy.numpy(), gw.numpy())
        return gx, gw, None, None


class _OneOutputConv(torch.autograd.Function):
    """``F.conv2d(x, w, b, padding=pad)`` with a batching rule for stacked clients (``vmap`` over x, w and b)."""

    @staticmethod
    def forward(x, w, b, pad: int):
        return F.conv2d(x, w, b, padding=pad)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, w, b, pad = inputs
        ctx.save_for_backward(x, w)
        ctx.pad, ctx.has_bias = pad, b is not None

    @staticmethod
    def backward(ctx, gy):       # the call autograd makes for F.conv2d, so the same bits as nn.Conv2d
        x, w = ctx.saved_tensors
        mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.has_bias and ctx.needs_input_grad[2]]
        gx, gw, gb = torch.ops.aten.convolution_backward(gy, x, w, [w.shape[0]] if ctx.has_bias else None, [1, 1],
                                                         [ctx.pad, ctx.pad], [1, 1], False, [0, 0], 1, mask)
        return gx, gw, gb, None

    @staticmethod
    def vmap(info, in_dims, x, w, b, pad):
        x_dim, w_dim, b_dim = in_dims[:3]
        kernels = None
        # the loops follow oneDNN's im2col path, which it takes for two groups or more of two input channels or more
        # (one group: its direct convolution; one channel per group: its depthwise kernel)
        if (x_dim is not None and w_dim is not None and (b is None or b_dim is not None) and x.dim() == 5
                and info.batch_size >= 2 and x.shape[2 if x_dim < 2 else 1] >= 2
                and x.device.type == "cpu" and x.dtype == w.dtype == torch.float32 and onednn_runs_avx2()):
            kernels = compiled("grouped_conv", x.numel() * w.shape[-2] * w.shape[-1])
        if kernels is None:        # PyTorch's own batching rule
            rule = torch.vmap(lambda x_, w_, b_: F.conv2d(x_, w_, b_, padding=pad), in_dims=(x_dim, w_dim, b_dim))
            return rule(x, w, b), 0
        # PyTorch's rule for a batched input and weight (functorch's convolution_batch_rule): the client axis folded
        # into the channels as groups, the output's client axis unfolded, the bias added on its own
        m = info.batch_size
        x_ = x.movedim(x_dim, 1)
        x_ = x_.reshape(x_.shape[0], -1, *x_.shape[3:])                    # (B, m C, H, W)
        w_ = w.movedim(w_dim, 0).flatten(0, 1)                              # (m, C, K, K): one output channel each
        out = _GroupedOneOutput.apply(x_, w_, pad, kernels)[0].unsqueeze(2)   # (B, m, 1, H', W')
        if b is None:
            return out, 1
        return torch.add(out.movedim(1, 0), b.movedim(b_dim, 0).reshape(m, 1, -1, 1, 1)), 0


class OneOutputConv2d(nn.Conv2d):
    """``nn.Conv2d`` (same parameters, initialisation and values) for a layer with one output channel; stride 1,
    no dilation, zero padding. Under ``vmap`` over stacked clients its grouped convolution runs compiled loops."""

    def __init__(self, in_channels: int, kernel_size: int, padding: int = 0, bias: bool = True):
        super().__init__(in_channels, 1, kernel_size, padding=padding, bias=bias)

    def forward(self, x):
        return _OneOutputConv.apply(x, self.weight, self.bias, self.padding[0])

"""fedrepro.kernels.grouped_conv against oneDNN's grouped convolution with one output channel per group (through
F.conv2d and ATen's convolution_backward, one thread): bit for bit where ATen runs oneDNN's AVX2 code, the machine
whose order the loops follow; to float rounding of float64 sums everywhere."""

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from fedrepro import kernels
from fedrepro.models.client_conv import onednn_runs_avx2

pytestmark = [pytest.mark.skipif(not kernels.available(), reason="numba not installed: the kernels are not used"),
              pytest.mark.usefixtures("one_torch_thread")]   # oneDNN's order with one thread

# oneDNN picks its kernels by instruction set; the loops follow its AVX2 ones (and run only where oneDNN does)
ONEDNN_AVX2 = onednn_runs_avx2()

# (groups, images, input channels per group, image side, kernel, padding)
SHAPES = [(10, 12, 8, 28, 5, 2),      # BasicUNet's last layer at quick scale
          (10, 6, 8, 28, 5, 2),
          (3, 4, 3, 9, 3, 1),         # 81 pixels: the transposed kernel's remainders (16 + ... + 1)
          (2, 3, 4, 7, 5, 2),
          (4, 2, 2, 11, 3, 0),        # no padding: a smaller output
          (2, 5, 16, 14, 5, 2),
          (3, 2, 32, 28, 5, 2)]      # the paper's last layer (32 -> 1): 800-entry chains
# oneDNN runs these another way (one group: its direct convolution; one input channel: depthwise), so
# fedrepro.models.client_conv leaves them to it; the loops still compute the convolution
OTHER_SHAPES = [(1, 5, 16, 14, 5, 2), (3, 4, 1, 9, 3, 1)]


def _case(G, B, C, H, K, P, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, G * C, H, H, generator=g)
    w = torch.randn(G, C, K, K, generator=g) * 0.2
    dy = torch.randn(B, G, H + 2 * P - K + 1, H + 2 * P - K + 1, generator=g)
    return x, w, dy


def _ours(x, w, dy, P):
    from fedrepro.kernels import grouped_conv

    xp = F.pad(x, (P,) * 4).contiguous().numpy()
    y = np.empty(dy.shape, np.float32)
    grouped_conv.forward(xp, w.numpy(), y)
    dx = np.empty(x.shape, np.float32)
    grouped_conv.input_grad(dy.numpy(), w.numpy(), P, dx)
    dw = np.empty(w.shape, np.float32)
    grouped_conv.weight_grad(xp, dy.numpy(), dw)
    return torch.from_numpy(y), torch.from_numpy(dx), torch.from_numpy(dw)


def _onednn(x, w, dy, P):
    G = w.shape[0]
    y = F.conv2d(x, w, padding=P, groups=G)
    dx, dw, _ = torch.ops.aten.convolution_backward(dy, x, w, None, [1, 1], [P, P], [1, 1], False, [0, 0], G,
                                                    [True, True, False])
    return y, dx, dw


@pytest.mark.skipif(not ONEDNN_AVX2, reason="ATen does not run oneDNN's AVX2 kernels here: other summation orders")
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_and_both_gradients_are_onednns_bit_for_bit(shape):
    x, w, dy = _case(*shape)
    for name, ours, ref in zip(("forward", "input gradient", "weight gradient"), _ours(x, w, dy, shape[-1]),
                               _onednn(x, w, dy, shape[-1])):
        assert torch.equal(ours, ref), f"{name}: {(ours != ref).sum().item()} of {ref.numel()} entries differ"


@pytest.mark.parametrize("shape", SHAPES + OTHER_SHAPES)
def test_values_are_the_convolution_to_float_rounding(shape):
    """Against the same sums in float64 (an independent oracle, valid on any machine)."""
    x, w, dy = _case(*shape, seed=1)
    P = shape[-1]
    x64, w64, dy64 = (t.double().requires_grad_() for t in (x, w, dy))
    y64 = F.conv2d(x64, w64, padding=P, groups=w.shape[0])
    dx64, dw64 = torch.autograd.grad(y64, (x64, w64), dy64)
    for ours, ref in zip(_ours(x, w, dy, P), (y64, dx64, dw64)):
        torch.testing.assert_close(ours.double(), ref.detach(), rtol=1e-5, atol=1e-5 * ref.abs().max().item())


def test_a_tap_in_the_padding_is_skipped_not_added_as_a_zero_product():
    """oneDNN's col2im never adds a padding tap: an infinite weight must not turn a border pixel's gradient into
    NaN (inf * 0) where oneDNN's is infinite."""
    x, w, dy = _case(1, 1, 1, 6, 3, 1)
    w[0, 0, 0, 0] = float("inf")
    _, dx, _ = _ours(x, w, dy, 1)
    # pixel (5, 5) meets the tap (0, 0) only through output (6, 6), which lies in the padding
    assert torch.isfinite(dx[0, 0, 5, 5])


def test_pad_into_is_f_pad():
    from fedrepro.kernels import grouped_conv

    x = torch.randn(2, 3, 5, 7)
    for pad in (0, 1, 3):
        xp = np.full((2, 3, 5 + 2 * pad, 7 + 2 * pad), np.nan, np.float32)
        grouped_conv.pad_into(x.numpy(), pad, xp)
        assert torch.equal(torch.from_numpy(xp), F.pad(x, (pad,) * 4))


@pytest.mark.skipif(not ONEDNN_AVX2, reason="ATen does not run oneDNN's AVX2 kernels here: other summation orders")
def test_a_tap_on_the_padding_in_the_forward_is_a_product_with_zero_as_in_im2col():
    """The forward's padding taps are fused multiply-adds of zeros, as oneDNN's im2col zeros make them: with an
    infinite weight the border outputs are NaN in both."""
    x, w, dy = _case(2, 2, 3, 8, 3, 1)
    w[1, 2, 0, 2] = float("inf")
    y, _, _ = _ours(x, w, dy, 1)
    ref = F.conv2d(x, w, padding=1, groups=2)
    assert y.isnan().any()
    torch.testing.assert_close(y, ref, rtol=0, atol=0, equal_nan=True)

"""fedrepro.models.small_output_conv: the tap-wise weight gradient against a float64 oracle; forward and input
gradient bit for bit those of nn.Conv2d; nn.Conv2d's own path for larger outputs."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from fedrepro.models.small_output_conv import (
    SmallOutputConv2d,
    weight_grad_by_taps,
    with_small_output_convs,
)

SHAPES = [  # (N, C, O, H, W, kernel, stride, padding)
    (4, 6, 5, 2, 2, 3, 1, 1), (4, 6, 5, 4, 4, 3, 2, 1), (3, 4, 5, 9, 7, 3, 2, 1), (3, 4, 5, 6, 6, 3, 1, 0),
    (2, 3, 4, 5, 5, 5, 3, 2), (2, 3, 4, 4, 4, 1, 2, 0), (2, 3, 4, 3, 5, (3, 1), (1, 2), (1, 0)),
    (1, 2, 3, 1, 1, 3, 1, 1),
]


def _pair(v):
    return v if isinstance(v, tuple) else (v, v)


@pytest.mark.parametrize("N,C,O,H,W,k,s,p", SHAPES)
def test_weight_grad_by_taps_equals_the_float64_gradient(N, C, O, H, W, k, s, p):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, C, H, W, generator=g)
    weight = torch.randn(O, C, *_pair(k), generator=g, dtype=torch.float64, requires_grad=True)
    y = F.conv2d(x.double(), weight, stride=s, padding=p)
    grad_y = torch.randn(y.shape, generator=g)
    (oracle,) = torch.autograd.grad(y, weight, grad_y.double())       # autograd in float64: an independent sum
    ours = weight_grad_by_taps(x, grad_y, _pair(k), _pair(s), _pair(p))
    assert ours.dtype == torch.float32
    torch.testing.assert_close(ours.double(), oracle, rtol=1e-5, atol=1e-5)


def _conv_pair(C, O, k, s, p, seed=0):
    torch.manual_seed(seed)
    plain = nn.Conv2d(C, O, k, s, p, bias=False)
    ours = with_small_output_convs(nn.Sequential(nn.Conv2d(C, O, k, s, p, bias=False)))[0]
    ours.load_state_dict(plain.state_dict())
    return plain, ours


@pytest.mark.parametrize("H,s", [(2, 1), (4, 2), (3, 2), (8, 1), (5, 1)])
def test_forward_and_input_gradient_bit_for_bit(H, s):
    plain, ours = _conv_pair(16, 24, 3, s, 1)
    assert type(ours) is SmallOutputConv2d
    x = torch.randn(10, 16, H, H)
    grads = []
    for conv in (plain, ours):
        xi = x.clone().requires_grad_()
        y = conv(xi)
        gy = torch.linspace(-1, 1, y.numel()).reshape(y.shape)
        gx, gw = torch.autograd.grad(y, (xi, conv.weight), gy)
        grads.append((y, gx, gw))
        tapped = type(y.grad_fn).__name__ == "_WeightGradByTapsBackward"
    small = y.shape[2] * y.shape[3] <= 4      # the measured threshold (2x2 outputs: ResNet-18 stage 4 on 16x16)
    assert tapped == small                 # the tap path is taken exactly for small outputs
    (y0, gx0, gw0), (y1, gx1, gw1) = grads
    assert torch.equal(y0, y1) and torch.equal(gx0, gx1)
    if small:
        torch.testing.assert_close(gw1, gw0, rtol=1e-5, atol=1e-5)
    else:                                  # larger outputs take nn.Conv2d's own backward
        assert torch.equal(gw0, gw1)


def test_the_swap_keeps_parameters_and_their_random_draws():
    import torchvision

    torch.manual_seed(3)
    a = torchvision.models.resnet18(num_classes=4)
    torch.manual_seed(3)
    b = with_small_output_convs(torchvision.models.resnet18(num_classes=4))
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
    assert sum(type(m) is SmallOutputConv2d for m in b.modules()) == sum(type(m) is nn.Conv2d for m in a.modules())
    x = torch.randn(2, 3, 32, 32)                   # layer4's output is 1x1 here: the tap path is taken
    a.train(), b.train()
    la, lb = a(x).square().sum(), b(x).square().sum()
    assert torch.equal(la, lb)
    ga, gb = torch.autograd.grad(la, list(a.parameters())), torch.autograd.grad(lb, list(b.parameters()))
    for p, q in zip(ga, gb):   # float rounding of sums in another order, on the scale of each gradient
        torch.testing.assert_close(q, p, rtol=1e-4, atol=1e-5 * float(p.abs().max()))


def test_under_torch_func_transforms_nn_conv2d_is_used():
    from torch.func import functional_call, grad, vmap

    plain, ours = _conv_pair(3, 4, 3, 1, 1)
    params = {k: v.detach() for k, v in ours.named_parameters()}
    x = torch.randn(5, 2, 3, 2, 2)
    assert torch.equal(vmap(lambda v: functional_call(ours, params, (v,)))(x), vmap(plain)(x))
    g_ours = grad(lambda p: functional_call(ours, p, (x[0],)).sum())(params)["weight"]
    g_plain = grad(lambda p: functional_call(plain, p, (x[0],)).sum())({"weight": plain.weight.detach()})["weight"]
    assert torch.equal(g_ours, g_plain)

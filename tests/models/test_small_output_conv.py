"""fedrepro.models.small_output_conv: the dense path (windows covering the whole image) and the tap-wise weight
gradient against float64 oracles and gradcheck; the tap path's forward and input gradient bit for bit those of
nn.Conv2d; nn.Conv2d's own path for larger outputs."""

import copy

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from fedrepro.models.small_output_conv import (
    SmallOutputConv2d,
    covers_whole_image,
    dense_conv2d,
    dense_conv_matrix,
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


def _windows_cover_the_image(size, k, s, p):
    """The definition, pixel by pixel: every output's window [o·s - p, o·s - p + k) holds every input pixel."""
    out = (size + 2 * p - k) // s + 1
    return out >= 1 and all(o * s - p <= 0 and size - 1 < o * s - p + k for o in range(out))


def test_covers_whole_image_is_its_definition():
    seen = 0
    for size in range(1, 7):
        for k in range(1, 6):
            for s in (1, 2, 3):
                for p in range(0, 3):
                    if size + 2 * p < k:
                        continue
                    expected = _windows_cover_the_image(size, k, s, p)
                    assert covers_whole_image((size, 1), (k, 1), (s, 1), (p, 0)) == expected, (size, k, s, p)
                    assert covers_whole_image((1, size), (1, k), (1, s), (0, p)) == expected, (size, k, s, p)
                    seen += expected
    assert seen > 20
    assert covers_whole_image((2, 2), (3, 3), (1, 1), (1, 1))         # ResNet-18's stage 4 on 16x16 quadrants
    assert not covers_whole_image((4, 4), (3, 3), (2, 2), (1, 1))     # its stride-2 convolution from 4x4
    assert not covers_whole_image((4, 4), (3, 3), (1, 1), (1, 1))     # stage 4 on the ImageNet stem's quadrants


DENSE_SHAPES = [  # (H, W, kernel, stride, padding): every window covers the image
    (2, 2, (3, 3), (1, 1), (1, 1)), (1, 1, (3, 3), (1, 1), (1, 1)), (2, 2, (3, 3), (2, 2), (1, 1)),
    (1, 2, (3, 3), (1, 2), (1, 1)), (2, 3, (3, 3), (1, 1), (1, 0)), (2, 1, (5, 5), (1, 1), (2, 2)),
    (2, 2, (2, 2), (1, 1), (0, 0)), (1, 1, (1, 1), (1, 1), (0, 0)), (1, 1, (3, 3), (1, 1), (2, 2)),
]


@pytest.mark.parametrize("H,W,k,s,p", DENSE_SHAPES)
def test_the_dense_convolution_against_a_float64_oracle(H, W, k, s, p):
    assert covers_whole_image((H, W), k, s, p)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 6, H, W, generator=g)
    weight = torch.randn(5, 6, *k, generator=g)
    oracle = F.conv2d(x.double(), weight.double(), stride=s, padding=p)
    ours = dense_conv2d(x, dense_conv_matrix(weight, (H, W), s, p), oracle.shape)
    assert ours.dtype == torch.float32 and ours.shape == oracle.shape and ours.is_contiguous()
    torch.testing.assert_close(ours.double(), oracle, rtol=1e-5, atol=1e-5)
    last = dense_conv2d(x.contiguous(memory_format=torch.channels_last), dense_conv_matrix(weight, (H, W), s, p),
                        oracle.shape)                    # a channels-last input: the same values, its layout kept
    assert torch.equal(last, ours)
    if H * W > 1:                                         # (a 1x1 image is contiguous in both layouts)
        assert last.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("H,W,k,s,p", DENSE_SHAPES)
def test_the_dense_path_passes_gradcheck(H, W, k, s, p):
    conv = with_small_output_convs(nn.Sequential(nn.Conv2d(3, 4, k, s, p, bias=False)))[0].double()
    x = torch.randn(2, 3, H, W, dtype=torch.float64, requires_grad=True)
    assert type(conv(x).grad_fn).__name__ == "_DenseConvBackward"
    assert torch.autograd.gradcheck(lambda a, w: torch.func.functional_call(conv, {"weight": w}, (a,)),
                                    (x, conv.weight.detach().clone().requires_grad_()))


def _paths_and_grads(H, s):
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
    return type(y.grad_fn).__name__, grads


@pytest.mark.parametrize("H,s,path", [(2, 1, "_DenseConvBackward"), (1, 1, "_DenseConvBackward"),
                                      (4, 2, "_WeightGradByTapsBackward"), (3, 2, "_WeightGradByTapsBackward"),
                                      (8, 1, "ConvolutionBackward0"), (5, 1, "ConvolutionBackward0")])
def test_each_shape_takes_its_path_and_agrees_with_nn_conv2d(H, s, path):
    taken, ((y0, gx0, gw0), (y1, gx1, gw1)) = _paths_and_grads(H, s)
    assert taken == path
    if path == "_DenseConvBackward":          # every value a sum in another order
        for a, b in ((y0, y1), (gx0, gx1), (gw0, gw1)):
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
    else:                                     # oneDNN's forward and input gradient, bit for bit
        assert torch.equal(y0, y1) and torch.equal(gx0, gx1)
        if path == "_WeightGradByTapsBackward":
            torch.testing.assert_close(gw1, gw0, rtol=1e-5, atol=1e-5)
        else:                                 # larger outputs take nn.Conv2d's own backward
            assert torch.equal(gw0, gw1)


def test_the_dense_forward_gives_the_same_bits_with_and_without_autograd():
    """C-VFL reuses the first local forward's values as the round-start forward (Alg. 1)."""
    _, conv = _conv_pair(32, 16, 3, 1, 1)
    x = torch.randn(7, 32, 2, 2)
    with torch.no_grad():
        y0 = conv(x)
    y1 = conv(x)
    assert y1.grad_fn is not None and torch.equal(y0, y1)
    conv.weight.requires_grad_(False)                 # only the input needs a gradient (a frozen layer)
    y2 = conv(x.requires_grad_())
    assert type(y2.grad_fn).__name__ == "_DenseConvBackward" and torch.equal(y0, y2)


def test_the_swap_keeps_parameters_and_their_random_draws():
    import torchvision

    torch.manual_seed(3)
    a = torchvision.models.resnet18(num_classes=4)
    torch.manual_seed(3)
    b = with_small_output_convs(torchvision.models.resnet18(num_classes=4))
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
    assert sum(type(m) is SmallOutputConv2d for m in b.modules()) == sum(type(m) is nn.Conv2d for m in a.modules())
    oracle = copy.deepcopy(a).double()
    x = torch.randn(8, 3, 32, 32)       # layer4 runs on 2x2 and 1x1 images: its 3x3 convs dense
    a.train(), b.train(), oracle.train()
    l64, la, lb = oracle(x.double()).square().sum(), a(x).square().sum(), b(x).square().sum()
    for loss in (la, lb):               # both within float32 rounding of float64 (a batch of 2 is ill-conditioned:
        assert abs(float(loss.detach() / l64.detach()) - 1) < 2e-5    # torchvision's own float32 loss is 5e-4 off there)
    g64 = torch.autograd.grad(l64, list(oracle.parameters()))
    for grads in (torch.autograd.grad(la, list(a.parameters())), torch.autograd.grad(lb, list(b.parameters()))):
        for (name, _), exact, g in zip(oracle.named_parameters(), g64, grads):
            assert float((g.double() - exact).norm() / exact.norm()) < 1e-4, name


def test_under_torch_func_transforms_nn_conv2d_is_used():
    from torch.func import functional_call, grad, vmap

    plain, ours = _conv_pair(3, 4, 3, 1, 1)
    params = {k: v.detach() for k, v in ours.named_parameters()}
    x = torch.randn(5, 2, 3, 2, 2)
    assert torch.equal(vmap(lambda v: functional_call(ours, params, (v,)))(x), vmap(plain)(x))
    g_ours = grad(lambda p: functional_call(ours, p, (x[0],)).sum())(params)["weight"]
    g_plain = grad(lambda p: functional_call(plain, p, (x[0],)).sum())({"weight": plain.weight.detach()})["weight"]
    assert torch.equal(g_ours, g_plain)

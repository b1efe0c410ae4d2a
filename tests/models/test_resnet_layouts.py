"""fedrepro.models.resnet_layouts: the layout-aware ResNet forward against torchvision's own forward (outputs,
gradients and BatchNorm's running statistics to float rounding), the layout each stage gets, and the tiny-image
BatchNorm against nn.BatchNorm2d."""

import copy

import pytest
import torch
import torchvision
from torch import nn

from fedrepro.models.resnet_layouts import (
    CHANNELS_LAST_MIN_SIDE,
    TinyImageBatchNorm2d,
    channels_last_min_side,
    resnet_forward,
    with_tiny_image_norms,
)
from fedrepro.models.small_output_conv import with_small_output_convs

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _resnet(stem: str, depth: int = 18) -> nn.Module:
    torch.manual_seed(0)
    net = getattr(torchvision.models, f"resnet{depth}")(num_classes=6)
    if stem == "cifar":
        net.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        net.maxpool = nn.Identity()
    return net


def _layout(t: torch.Tensor) -> str:
    if t.is_contiguous():
        return "channels-first"
    return "channels-last" if t.is_contiguous(memory_format=torch.channels_last) else "strided"


CL, CF = "channels-last", "channels-first"


@pytest.mark.parametrize("capability,stem,side,expected", [
    # the image side each stage's convolutions see -> the layout they get (module docstring's measurements)
    ("AVX512", "cifar", 16, {"conv1": CL, "layer1": CL, "layer2": CL, "layer3": CF, "layer4": CF}),
    ("AVX512", "imagenet", 112, {"conv1": CL, "layer1": CL, "layer2": CL, "layer3": CF, "layer4": CF}),
    ("AVX512", "cifar", 64, {"conv1": CL, "layer1": CL, "layer2": CL, "layer3": CL, "layer4": CL}),
    ("AVX2", "cifar", 16, {"conv1": CL, "layer1": CL, "layer2": CL, "layer3": CL, "layer4": CF}),
    ("AVX2", "imagenet", 112, {"conv1": CL, "layer1": CL, "layer2": CL, "layer3": CL, "layer4": CL}),
    ("DEFAULT", "cifar", 16, {"conv1": CL, "layer1": CL, "layer2": CL, "layer3": CF, "layer4": CF}),
])
@pytest.mark.parametrize("depth", [18, 50])     # basic blocks, and bottlenecks (stride on their second conv)
def test_each_stage_runs_in_the_layout_of_its_output_size(capability, stem, side, expected, depth, monkeypatch):
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    net = _resnet(stem, depth)
    seen = {}
    for name in expected:
        getattr(net, name).register_forward_pre_hook(lambda m, args, name=name: seen.update({name: _layout(args[0])}))
    resnet_forward(net, torch.randn(2, 3, side, side))
    assert seen == expected
    # the rule: channels-last exactly where the stage's output is at least the kernel family's side wide
    min_side = channels_last_min_side()
    assert min_side == CHANNELS_LAST_MIN_SIDE.get(capability, 8)
    out_side = {"layer1": side if stem == "cifar" else side // 4}
    for a, b in (("layer1", "layer2"), ("layer2", "layer3"), ("layer3", "layer4")):
        out_side[b] = -(-out_side[a] // 2)          # 3x3 stride 2 padding 1: 7 -> 4
    for name, s in out_side.items():
        assert (seen[name] == CL) == (s >= min_side), name


@pytest.mark.parametrize("stem,side,batch", [("cifar", 16, 6), ("imagenet", 112, 4)])
def test_outputs_gradients_and_running_statistics_against_a_float64_oracle(stem, side, batch):
    """torchvision's own forward in float64 is the oracle; ours (layouts, tiny-image BatchNorm, tap-wise weight
    gradients) must stay within float32 rounding of it, as torchvision's float32 forward does. (Small batches on
    small images make BatchNorm's backward ill-conditioned: ImageNet's stem on 64x64 images, batch 6, puts even
    torchvision's float32 gradient 0.6 % from float64's, so the sizes here are the ones C-VFL runs.)"""
    plain = _resnet(stem)
    oracle = copy.deepcopy(plain).double()
    ours = with_tiny_image_norms(with_small_output_convs(copy.deepcopy(plain)))
    x = torch.randn(batch, 3, side, side, generator=torch.Generator().manual_seed(1))
    for train in (True, False):
        oracle.train(train), ours.train(train)
        y64, y = oracle(x.double()), resnet_forward(ours, x)
        assert _layout(y) == "channels-first"
        torch.testing.assert_close(y.double(), y64, rtol=1e-4, atol=2e-5)
        g64 = torch.autograd.grad(y64.square().sum(), list(oracle.parameters()))
        g = torch.autograd.grad(y.square().sum(), list(ours.parameters()))
        for (name, _), a, b in zip(oracle.named_parameters(), g64, g):
            assert float((b.double() - a).norm() / a.norm()) < 1e-4, name
    for (name, a), b in zip(oracle.named_buffers(), ours.buffers()):      # the running statistics of both passes
        torch.testing.assert_close(b.double(), a.double(), rtol=1e-5, atol=1e-6, msg=name)


def test_a_forward_gives_the_same_bits_with_and_without_autograd():
    """C-VFL reuses the first local forward's values as the round-start forward (Alg. 1)."""
    net = with_tiny_image_norms(with_small_output_convs(_resnet("cifar")))
    x = torch.randn(5, 3, 16, 16)
    with torch.no_grad():
        h0 = resnet_forward(net, x)
    assert torch.equal(resnet_forward(net, x).detach(), h0)


@pytest.mark.parametrize("hw,channels_last", [((2, 2), True), ((1, 4), True), ((1, 1), True), ((3, 3), False),
                                               ((8, 8), False)])
def test_tiny_image_batch_norm(hw, channels_last):
    torch.manual_seed(0)
    plain = nn.BatchNorm2d(32)
    with torch.no_grad():
        plain.weight.uniform_(0.5, 1.5), plain.bias.uniform_(-1, 1)
    ours = with_tiny_image_norms(nn.Sequential(copy.deepcopy(plain)))[0]
    assert type(ours) is TinyImageBatchNorm2d
    x = torch.randn(20, 32, *hw) * 3 + 1
    gy = torch.randn(20, 32, *hw)
    for train in (True, False):
        plain.train(train), ours.train(train)
        outs = []
        for bn in (plain, ours):
            xi = x.clone().requires_grad_()
            y = bn(xi)
            outs.append((y, *torch.autograd.grad(y, (xi, bn.weight, bn.bias), gy)))
        assert outs[1][0].is_contiguous()
        for a, b in zip(*outs):
            if channels_last:
                torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
            else:                         # larger images: nn.BatchNorm2d's own path, bit for bit
                assert torch.equal(a, b)
    torch.testing.assert_close(ours.running_mean, plain.running_mean)
    torch.testing.assert_close(ours.running_var, plain.running_var)


def test_off_the_cpu_the_module_runs_its_own_forward():
    net = _resnet("cifar").to("meta")
    seen = []
    net.layer1.register_forward_pre_hook(lambda m, args: seen.extend([_layout(args[0])]))
    assert resnet_forward(net, torch.empty(2, 3, 16, 16, device="meta")).shape == (2, 6)
    assert seen == ["channels-first"]

"""fedrepro.models.client_conv.OneOutputConv2d: nn.Conv2d's values and gradients alone, and under vmap over stacked
clients (its compiled path) the same bits as PyTorch's own batching rule for BasicUNet's whole training step."""

import pytest
import torch
from torch import nn
from torch.func import functional_call, vmap

import fedrepro.models.client_conv as client_conv
from fedrepro import kernels
from fedrepro.adept.fed import client_forward, stacked_init
from fedrepro.models.adept_nets import BasicUNet
from fedrepro.models.client_conv import OneOutputConv2d

ONEDNN_AVX2 = client_conv.onednn_runs_avx2()
pytestmark = pytest.mark.usefixtures("one_torch_thread")   # oneDNN's order with one thread


def _layers(c=8, k=5, p=2):
    torch.manual_seed(3)
    ours = OneOutputConv2d(c, k, padding=p)
    torch.manual_seed(3)
    ref = nn.Conv2d(c, 1, k, padding=p)
    return ours, ref


def test_same_initialisation_as_conv2d():
    ours, ref = _layers()
    assert torch.equal(ours.weight, ref.weight) and torch.equal(ours.bias, ref.bias)


def test_one_model_is_conv2d_bit_for_bit():
    ours, ref = _layers()
    x = torch.randn(4, 8, 12, 12)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    outs = [layer(xi) for layer, xi in zip((ours, ref), xs)]
    assert torch.equal(outs[0], outs[1])
    g = torch.randn_like(outs[0])
    for o in outs:
        o.backward(g)
    assert torch.equal(xs[0].grad, xs[1].grad)
    assert torch.equal(ours.weight.grad, ref.weight.grad) and torch.equal(ours.bias.grad, ref.bias.grad)


def _unet_step(m, B, compiled_on, monkeypatch):
    """BasicUNet's forward and backward for m stacked clients (fedrepro.adept.fed); the loops on or off."""
    used = []

    def compiled(name, work):
        module = kernels.compiled(name, work) if compiled_on else None
        used.append(module is not None)
        return module

    monkeypatch.setattr(client_conv, "compiled", compiled)
    monkeypatch.setattr(client_conv, "onednn_runs_avx2", lambda: True)   # the loops, on any machine
    base, theta = stacked_init(lambda: BasicUNet(1, (8, 16, 16)), m, 0, False)
    for v in theta.values():
        v.requires_grad_(True)
    x = torch.rand(m, B, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    out = client_forward(base)(theta, x)
    ((out - x) ** 2).flatten(2).sum(-1).sum().backward()
    assert used == [compiled_on]         # the last layer asked once, and took the loops exactly when they were on
    return out.detach(), {k: v.grad for k, v in theta.items()}


@pytest.mark.skipif(not kernels.available(), reason="numba not installed: the loops are not used")
@pytest.mark.parametrize("m,B", [(10, 12), (3, 5)])
def test_stacked_clients_training_step_has_the_batching_rules_bits(m, B, monkeypatch):
    out_ref, grads_ref = _unet_step(m, B, False, monkeypatch)
    out, grads = _unet_step(m, B, True, monkeypatch)
    if ONEDNN_AVX2:
        assert torch.equal(out, out_ref)
        assert all(torch.equal(grads[k], grads_ref[k]) for k in grads), [k for k in grads
                                                                         if not torch.equal(grads[k], grads_ref[k])]
    else:                  # another instruction set: oneDNN sums in another order (where the loops are not used)
        torch.testing.assert_close(out, out_ref)
        for k in grads:
            torch.testing.assert_close(grads[k], grads_ref[k], rtol=1e-4, atol=1e-4 * grads_ref[k].abs().max().item())


@pytest.mark.parametrize("in_dims", [(0, None, None), (None, 0, 0), (0, 0, 0)])
@pytest.mark.parametrize("m", [1, 3])
def test_under_vmap_every_batching_agrees_with_conv2d(in_dims, m):
    """Shared weights, shared input, one client: PyTorch's rule; stacked everything: the loops (bits above)."""
    ours, ref = _layers(c=4, k=3, p=1)
    x = torch.randn(m, 2, 4, 9, 9) if in_dims[0] == 0 else torch.randn(2, 4, 9, 9)
    w = torch.randn(m, 1, 4, 3, 3) if in_dims[1] == 0 else ref.weight.detach()
    b = torch.randn(m, 1) if in_dims[2] == 0 else ref.bias.detach()

    def f(module):
        return vmap(lambda xi, wi, bi: functional_call(module, {"weight": wi, "bias": bi}, (xi,)), in_dims=in_dims)

    torch.testing.assert_close(f(ours)(x, w, b), f(ref)(x, w, b), rtol=1e-5, atol=1e-5)


def test_float64_takes_pytorchs_rule_and_keeps_its_bits():
    ours, ref = _layers(c=4, k=3, p=1)
    x, w, b = torch.randn(3, 2, 4, 9, 9).double(), torch.randn(3, 1, 4, 3, 3).double(), torch.randn(3, 1).double()

    def f(module):
        return vmap(lambda xi, wi, bi: functional_call(module, {"weight": wi, "bias": bi}, (xi,)))

    assert torch.equal(f(ours.double())(x, w, b), f(ref.double())(x, w, b))


def test_the_loops_run_only_where_onednn_runs_its_avx2_code(monkeypatch):
    calls = []
    monkeypatch.setattr(client_conv, "compiled", lambda name, work: calls.append(name))
    ours, _ = _layers(c=4, k=3, p=1)
    x, w, b = torch.randn(3, 2, 4, 9, 9), torch.randn(3, 1, 4, 3, 3), torch.randn(3, 1)
    f = vmap(lambda xi, wi, bi: functional_call(ours, {"weight": wi, "bias": bi}, (xi,)))
    monkeypatch.setattr(client_conv, "onednn_runs_avx2", lambda: False)
    f(x, w, b)
    assert calls == []
    monkeypatch.setattr(client_conv, "onednn_runs_avx2", lambda: True)
    f(x, w, b)
    assert calls == ["grouped_conv"]


def test_an_instruction_set_cap_keeps_onednn(monkeypatch):
    client_conv.onednn_runs_avx2.cache_clear()
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    try:
        assert client_conv.onednn_runs_avx2() is False
    finally:
        client_conv.onednn_runs_avx2.cache_clear()

"""fedrepro.models.pooling.max_pool2d against F.max_pool2d: values, indices' choice on ties and NaNs, gradients."""

import pytest
import torch
from torch.nn import functional as F

from fedrepro.models.pooling import MaxPool2d, max_pool2d


def _inputs(shape, kind, seed=0):
    g = torch.Generator().manual_seed(seed)
    if kind == "ties":       # few distinct values: most windows hold their maximum twice or more
        return torch.randint(0, 3, shape, generator=g).float()
    x = torch.randn(shape, generator=g)
    if kind == "nan":
        x[torch.rand(shape, generator=g) < 0.05] = float("nan")
    if kind == "signed-zeros":
        x = torch.where(torch.rand(shape, generator=g) < 0.5, torch.zeros(shape), -torch.zeros(shape))
    return x


CASES = [((6, 16, 14, 14), 2, None), ((3, 4, 15, 13), 2, 2), ((2, 5, 17, 17), 5, 3), ((2, 3, 9, 11), 3, 1),
         ((1, 64, 8, 8), 2, None)]


@pytest.mark.parametrize("shape,k,s", CASES)
@pytest.mark.parametrize("kind", ["normal", "ties", "nan", "signed-zeros"])
def test_values_and_gradients_equal_torch_max_pool_bit_for_bit(shape, k, s, kind):
    x = _inputs(shape, kind)
    ours_x, ref_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours, ref = max_pool2d(ours_x, k, s), F.max_pool2d(ref_x, k, s)
    assert ours.is_contiguous() and ours.shape == ref.shape
    assert torch.equal(ours.isnan(), ref.isnan()) and torch.equal(ours.nan_to_num(), ref.nan_to_num())
    assert torch.equal(torch.signbit(ours), torch.signbit(ref))
    grad_y = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1))
    (g_ours,), (g_ref,) = torch.autograd.grad(ours, ours_x, grad_y), torch.autograd.grad(ref, ref_x, grad_y)
    assert g_ours.is_contiguous() and torch.equal(g_ours, g_ref)   # ties: the gradient goes to the same element
    with torch.no_grad():
        assert torch.equal(max_pool2d(x, k, s).nan_to_num(), ref.detach().nan_to_num())


def test_the_gradient_chooses_the_first_maximum_of_a_window():
    """Independent of torch's own pool: an all-equal 2x2 window sends its gradient to its top-left element."""
    x = torch.ones(1, 1, 4, 4, requires_grad=True)
    (g,) = torch.autograd.grad(max_pool2d(x, 2).sum(), x)
    assert torch.equal(g[0, 0], torch.tensor([[1.0, 0, 1, 0], [0, 0, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]]))


def test_other_inputs_go_to_torch_and_the_module_matches():
    x = torch.randn(2, 3, 8, 8).permute(0, 1, 3, 2)          # not contiguous
    assert torch.equal(max_pool2d(x, 2), F.max_pool2d(x, 2))
    x3 = torch.randn(3, 8, 8)                                   # 3-d
    assert torch.equal(max_pool2d(x3, 2), F.max_pool2d(x3, 2))
    x4 = torch.randn(2, 3, 8, 8)
    assert torch.equal(MaxPool2d(2)(x4), F.max_pool2d(x4, 2))
    batched = torch.func.vmap(lambda v: max_pool2d(v, 2))(torch.randn(4, 2, 3, 8, 8))
    assert batched.shape == (4, 2, 3, 4, 4)


@pytest.mark.parametrize("kind", ["normal", "ties"])
def test_under_vmap_as_adept_uses_it(kind):
    """ADEPT vmaps each client's network over the stacked clients and differentiates outside: same values and
    input gradients as torch's own pool under vmap, with the clients axis in front or in the middle."""
    x = _inputs((3, 5, 4, 12, 12), kind, seed=3)
    grad_y = torch.randn(3, 5, 4, 6, 6, generator=torch.Generator().manual_seed(4))
    for in_dims in (0, 1):
        xs = x if in_dims == 0 else x.transpose(0, 1).contiguous()
        results = []
        for pool in (max_pool2d, F.max_pool2d):
            leaf = xs.clone().requires_grad_()
            y = torch.func.vmap(lambda v: pool(torch.relu(v) * 2, 2), in_dims=in_dims)(leaf)
            (g,) = torch.autograd.grad(y, leaf, grad_y)
            results.append((y, g))
        (y_ours, g_ours), (y_ref, g_ref) = results
        assert torch.equal(y_ours, y_ref) and torch.equal(g_ours, g_ref)
    per_sample = torch.func.vmap(torch.func.grad(lambda v: (max_pool2d(v, 2) * 3).sum()))(x)
    reference = torch.func.vmap(torch.func.grad(lambda v: (F.max_pool2d(v, 2) * 3).sum()))(x)
    assert torch.equal(per_sample, reference)

"""TrackedCopy.apply_difference (in-place, sparse for sparsifiers) against TrackedCopy.update: the same copy to the
last bit, the same message, bits and random draws, numpy and torch, with and without a mask."""

import numpy as np
import pytest
import torch

from fedrepro.comm import TrackedCopy, get_compressor

CASES = [("sign_topk", {"k": 7}), ("topk", {"k": 5}), ("randk", {"k": 9}), ("qsgd_topk", {"k": 8, "s": 3}),
         ("sign_randk", {"k": 4}), ("sign", {}), ("identity", {}), ("qsgd", {"s": 4}),
         ("cutemaxvar", {"q": 3})]


def _rng(lib, seed):
    return torch.Generator().manual_seed(seed) if lib == "torch" else np.random.default_rng(seed)


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("name,params", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("compiled", [False, True], ids=["library", "compiled"])
def test_apply_difference_equals_update(lib, name, params, compiled, monkeypatch):
    """compiled: every call large enough for the compiled kernels (kernels.MIN_WORK = 0), e.g. the scaled sign's
    one-pass x̂ += C(diff) (Compressor._add_compressed) where no message is asked for."""
    from fedrepro import kernels

    if compiled:
        monkeypatch.setattr(kernels, "MIN_WORK", 0)
    gen = np.random.default_rng(0)
    xs = [gen.normal(size=(6, 40)).astype(np.float32) for _ in range(5)]
    masks = [None, np.array([1, 0, 1, 1, 0, 1], bool), None, np.array([0, 0, 0, 0, 0, 1], bool), None]
    as_lib = (lambda a: torch.from_numpy(a.copy())) if lib == "torch" else (lambda a: a.copy())
    ref, new = TrackedCopy(get_compressor(name, **params)), TrackedCopy(get_compressor(name, **params))
    r_ref, r_new = _rng(lib, 3), _rng(lib, 3)
    for x, mask in zip(xs, masks):
        x = as_lib(x)
        a = ref.update(x, r_ref, mask=mask)
        diff = x - (new.value if new.value is not None else 0 * x)
        b = new.apply_difference(diff, r_new, mask=mask)
        assert np.array_equal(np.asarray(ref.value), np.asarray(new.value))
        assert np.array_equal(np.asarray(a.value), np.asarray(b.value))
        assert np.array_equal(a.bits, b.bits)
        assert all(np.array_equal(a.counts[k], b.counts[k]) for k in a.counts)
        c = new.apply_difference(x - new.value, _rng(lib, 5), mask=mask, message=False)
        ref.update(x, _rng(lib, 5), mask=mask)
        assert np.array_equal(np.asarray(ref.value), np.asarray(new.value)) and np.array_equal(a.bits, c.bits)


@pytest.mark.parametrize("name,params", [("cutemaxvar", {"q": 3}), ("identity", {}), ("qsgd", {"s": 4}),
                                         ("sign", {})])
@pytest.mark.parametrize("kernels", ["1", "0"])
def test_update_in_place_is_update(name, params, kernels, monkeypatch):
    """x̂ ← x̂ + C(x - x̂) without the message: the same copy, bits and random draws as update(), with the compiled
    quantizer (where numba is installed) and without it (FEDREPRO_KERNELS=0: the NumPy operations)."""
    from fedrepro import kernels as compiled

    monkeypatch.setenv("FEDREPRO_KERNELS", kernels)
    monkeypatch.setattr(compiled, "MIN_WORK", 0)       # a small x: the kernel only below the size threshold
    rng = np.random.default_rng(0)
    x0, x1 = rng.standard_normal((3, 40, 5)), rng.standard_normal((3, 40, 5))
    a, b = (TrackedCopy(get_compressor(name, **params), init=x0) for _ in range(2))
    ra, rb = np.random.default_rng(1), np.random.default_rng(1)
    for x in (x1, 2 * x1):
        out_a, out_b = a.update(x, ra), b.update_in_place(x, rb)
        assert np.array_equal(a.value, b.value) and np.array_equal(out_a.bits, out_b.bits)
    assert ra.random() == rb.random()

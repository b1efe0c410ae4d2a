"""fedrepro.kernels.node_logits: the per-node products x_i W_i against a scalar transcription of the order it follows
(bit for bit, any machine), against NumPy's matmul (bit for bit where ``logits_like_blas`` finds that BLAS sums that
way here, else to float rounding of float64 sums), and the decentral gradient with the kernels on and off."""

import numpy as np
import pytest
import torch

from fedrepro import kernels
from fedrepro.models.logreg import logits_like_blas, softmax_regression_grad

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba not installed: the kernels are not used")


def _case(n, K, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.random((n, 5, K)) * (rng.random((n, 5, K)) < 0.5)).astype(np.float32)
    W = (rng.standard_normal((n, K, 10)) * 0.05).astype(np.float32)
    return x, W


def _fma32(a, b, c):
    """a b + c rounded once to binary32: the product of two binary32 values is exact in binary64, and the sum of it
    and a binary32 value, rounded to binary64 and then to binary32, can round twice; a Fraction sum rounds once."""
    from fractions import Fraction

    return np.float32(float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))))


def _transcription(x, W, parts):
    """The order in the module's docstring, one rounding at a time."""
    n, b, K = x.shape
    Z = np.zeros((n, b, 10), dtype=np.float32)
    for i in range(n):
        for r in range(b):
            for c in range(10):
                inner = r < 4 and c < 8
                total = np.float32(0.0)
                for start, end in zip(parts[:-1], parts[1:]):
                    chains = [np.float32(0.0), np.float32(0.0)]
                    for k in range(start, end):
                        lane = (k - start) % 2 if inner else 0
                        chains[lane] = _fma32(x[i, r, k], W[i, k, c], chains[lane])
                    total = np.float32(total + np.float32(chains[0] + chains[1]))
                Z[i, r, c] = total
    return Z


def _loops(x, W):
    from fedrepro.kernels import node_logits

    Z = np.empty((x.shape[0], 5, 10), dtype=np.float32)
    node_logits.logits(x, W, Z)
    return Z


def test_k_parts_cut_as_openblas_does():
    from fedrepro.kernels import node_logits

    assert list(node_logits.k_parts(784)) == [0, 320, 552, 784]
    assert list(node_logits.k_parts(300)) == [0, 300]
    assert list(node_logits.k_parts(640)) == [0, 320, 640]
    assert list(node_logits.k_parts(1000)) == [0, 320, 640, 824, 1000]   # 360 left: halves of 180, rounded up to 184


@pytest.mark.parametrize("n, K", [(2, 784), (3, 130), (2, 700)])
def test_the_loops_make_the_documented_roundings_in_the_documented_order(n, K):
    from fedrepro.kernels import node_logits

    x, W = _case(n, K, seed=K)
    assert _loops(x, W).tobytes() == _transcription(x, W, list(node_logits.k_parts(K))).tobytes()


@pytest.mark.parametrize("n, K", [(60, 784), (7, 784), (4, 100), (3, 1000)])
def test_the_loops_agree_with_float64_sums_and_with_blas_wherever_the_probe_says_so(n, K):
    x, W = _case(n, K)
    ours = _loops(x, W)
    exact = np.matmul(x.astype(np.float64), W.astype(np.float64))
    bound = K * 2.0**-24 * np.matmul(np.abs(x).astype(np.float64), np.abs(W).astype(np.float64))
    assert np.all(np.abs(ours - exact) <= bound)
    if logits_like_blas(kernels.compiled("node_logits", 10**9), K):
        assert ours.tobytes() == np.matmul(x, W).tobytes()


def test_the_decentral_gradient_is_the_same_with_the_kernels_on_and_off(monkeypatch):
    """softmax_regression_grad's fused path (residuals through node_logits where the probe agrees) against its
    library path (NumPy's matmul, BLAS's gradient), on MNIST's shapes: 60 nodes, batches of 5, 784 x 10."""
    rng = np.random.default_rng(1)
    X = torch.from_numpy((rng.standard_normal((60, 7840)) * 0.05).astype(np.float32))
    xb = torch.from_numpy((rng.random((60, 5, 784)) * (rng.random((60, 5, 784)) < 0.5)).astype(np.float32))
    yb = torch.from_numpy(rng.integers(0, 10, (60, 5)))
    on = softmax_regression_grad(X, xb, yb, 10, lazy=True)
    on = (on if isinstance(on, torch.Tensor) else on.dense()).numpy().copy()
    assert logits_like_blas.cache_info().currsize >= 1          # the residuals asked for the loops
    monkeypatch.setenv("FEDREPRO_KERNELS", "0")
    monkeypatch.setattr(kernels, "_NUMBA", None)
    off = softmax_regression_grad(X, xb, yb, 10, lazy=True)
    off = off if isinstance(off, torch.Tensor) else off.dense()
    assert on.tobytes() == off.numpy().tobytes()

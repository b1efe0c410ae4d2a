"""fedrepro.kernels.narrow_product and fedrepro.models.fixed_rows: the loops against a scalar transcription of the
order they follow (bit for bit, any machine), against torch's product (bit for bit where FixedRowsProduct's probe
finds that torch sums that way, else to float rounding of float64 sums), and the decentral MNIST task's scores
with the kernels on and off."""

import numpy as np
import pytest
import torch

from fedrepro import kernels
from fedrepro.models.fixed_rows import NARROW_COLUMNS, TORCH_FIRST, FixedRowsProduct

pytestmark = [pytest.mark.skipif(not kernels.available(), reason="numba not installed: the kernels are not used"),
              pytest.mark.usefixtures("one_torch_thread")]   # oneMKL's order with one thread

# (rows, features, columns): the MNIST evaluation shapes, odd row counts and partial blocks, the other width
SHAPES = [(10000, 784, 10), (5000, 784, 10), (999, 784, 10), (7, 784, 10), (333, 100, 10), (50, 784, 8),
          (17, 12, 10)]


def _case(n, K, C, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.random((n, K)) * (rng.random((n, K)) < 0.5)).astype(np.float32)   # half zeros, as MNIST's background
    w = (rng.standard_normal((K, C)) * 0.05).astype(np.float32)
    return x, w


def _transcription(x, w):
    """The order in the module's docstring, one scalar operation at a time (NumPy binary32 scalars)."""
    n, K = x.shape
    C = w.shape[1]
    out = np.zeros((n, C), dtype=np.float32)
    for i in range(n):
        for c in range(C):
            acc = np.float32(0.0)
            special = i % 2 == 1 and c < C % 8
            for g in range(0, K, 4):
                if special and (g // 4) % 2 == 1:
                    group = x[i, g] * w[g, c]
                    for k in range(g + 1, min(K, g + 4)):
                        group = np.float32(group + np.float32(x[i, k] * w[k, c]))
                    acc = np.float32(acc + group)
                else:
                    for k in range(g, min(K, g + 4)):
                        acc = np.float32(acc + np.float32(x[i, k] * w[k, c]))
            out[i, c] = acc
    return out


def _loops(x, w):
    from fedrepro.kernels import narrow_product

    out = np.empty((x.shape[0], w.shape[1]), dtype=np.float32)
    narrow_product.product(narrow_product.blocked_rows(x), x.shape[0], w, out)
    return out


@pytest.mark.parametrize("n, K, C", [(37, 784, 10), (17, 12, 10), (9, 100, 8), (5, 16, 3)])
def test_the_loops_make_the_documented_roundings_in_the_documented_order(n, K, C):
    x, w = _case(n, K, C, seed=n)
    assert _loops(x, w).tobytes() == _transcription(x, w).tobytes()


@pytest.mark.parametrize("n, K, C", SHAPES)
def test_the_loops_agree_with_float64_sums_and_with_torch_wherever_the_probe_says_so(n, K, C):
    x, w = _case(n, K, C)
    ours = _loops(x, w)
    exact = x.astype(np.float64) @ w.astype(np.float64)
    bound = K * 2.0**-24 * (np.abs(x).astype(np.float64) @ np.abs(w).astype(np.float64))   # any order's error
    assert np.all(np.abs(ours - exact) <= bound)
    torchs = (torch.from_numpy(x) @ torch.from_numpy(w)).numpy()
    product = FixedRowsProduct(torch.from_numpy(x))
    if product._probe(kernels.compiled("narrow_product", 10**9), C):
        assert ours.tobytes() == torchs.tobytes()
    else:
        assert (ours != torchs).any()      # the probe said they differ: they do, on these weights too


def test_the_product_is_torchs_product_to_the_bit_on_every_path(monkeypatch):
    x, w = _case(2000, 784, 10, seed=5)
    rows = torch.from_numpy(x)
    product = FixedRowsProduct(rows)
    for call in range(TORCH_FIRST + 3):     # zeros (a run's first model) first, then real weights
        W = torch.from_numpy(w) * (call / 3)
        assert product(W).numpy().tobytes() == (rows @ W).numpy().tobytes()
        assert list(product._agrees) == ([] if call < TORCH_FIRST else [(10, 1)])
    monkeypatch.setenv("FEDREPRO_KERNELS", "0")
    monkeypatch.setattr(kernels, "_NUMBA", None)
    assert FixedRowsProduct(rows)(torch.from_numpy(w)).numpy().tobytes() == (rows @ torch.from_numpy(w)).numpy().tobytes()


def test_shapes_the_loops_do_not_follow_are_torchs():
    x, w = _case(300, 30, 10)                    # 30 features: not a multiple of 4
    rows = torch.from_numpy(x)
    product = FixedRowsProduct(rows)
    for _ in range(TORCH_FIRST + 1):
        assert product(torch.from_numpy(w)).numpy().tobytes() == (rows @ torch.from_numpy(w)).numpy().tobytes()
    assert product._agrees == {}                  # no probe: torch's product
    assert 12 not in NARROW_COLUMNS and FixedRowsProduct(rows)._kernels(torch.zeros(30, 12)) is None
    grad = torch.zeros(784, 10, requires_grad=True)
    assert FixedRowsProduct(torch.zeros(50, 784))._kernels(grad) is None


def test_the_mnist_task_scores_the_same_with_the_kernels_on_and_off(monkeypatch):
    from fedrepro.data.loaders import Split
    from fedrepro.decentral.experiments import MnistTask

    rng = np.random.default_rng(0)
    split = Split(x_train=rng.random((1200, 784)).astype(np.float32), y_train=np.arange(1200) % 10,
                  x_test=rng.random((900, 784)).astype(np.float32), y_test=rng.integers(0, 10, 900), status="test")
    ws = [torch.from_numpy((rng.standard_normal(7840) * s).astype(np.float32)) for s in np.linspace(0, 0.1, 12)]
    task = MnistTask(split, 6, "iid", 5, seed=0, train_eval=500)
    on = [task.evaluate(w) for w in ws]
    assert task._test_logits._agrees and task._train_logits._agrees     # the loops ran (on this machine)
    monkeypatch.setenv("FEDREPRO_KERNELS", "0")
    monkeypatch.setattr(kernels, "_NUMBA", None)
    task = MnistTask(split, 6, "iid", 5, seed=0, train_eval=500)
    assert [task.evaluate(w) for w in ws] == on

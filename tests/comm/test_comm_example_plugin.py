"""docs/comm.md §8's from-scratch compressor (docs/examples/ternary.py): the doc prints the file, the file imports
as a `comm.plugins` entry, and the compressor keeps the `_encode` / `Encoding` contract on numpy and torch."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import REPO

from fedrepro.comm.catalog import COMPRESSORS, get_compressor
from fedrepro.comm.plugins import import_plugins

FILE = "docs/examples/ternary.py"


@pytest.fixture
def ternary():
    import_plugins([FILE], root=REPO)
    yield get_compressor("ternary")
    COMPRESSORS.pop("ternary", None)
    import sys

    for name in [n for n in sys.modules if n.startswith("fedrepro_plugin_ternary_")]:
        del sys.modules[name]


def test_the_doc_prints_the_example_file_whole():
    section = (REPO / "docs" / "comm.md").read_text().split("## 8. Add your own compressor", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert (REPO / FILE).read_text() in blocks


def test_the_example_keeps_the_contract_and_is_unbiased(ternary):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 50)).astype(np.float32)
    out = ternary(x, np.random.default_rng(1))
    assert out.value.dtype == x.dtype and out.value.shape == x.shape
    assert (out.bits == 2 * 50 + 32).all() and out.parts["values"].tolist() == [100] * 3
    m = np.abs(x).max(axis=1, keepdims=True)
    assert np.all(np.isin(out.value / m, [-1.0, 0.0, 1.0]))              # ternary symbols times the row's max
    assert not ternary(np.zeros((2, 5)), np.random.default_rng(0)).value.any()    # C(0) = 0
    draws = 4000
    batch = np.repeat(x[:1].astype(np.float64), draws, axis=0)
    mean = ternary(batch, np.random.default_rng(2)).value.mean(axis=0)
    se = np.sqrt((m[0] * np.abs(x[0]) - x[0] ** 2) / draws)
    assert np.all(np.abs(mean - x[0]) <= 5 * se + 1e-9)                  # E[C(x)] = x, within 5 standard errors
    # the batch compressed one element at a time with one generator equals the batched call (docs/comm.md §1)
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    whole = ternary(x, g1).value
    parts = np.vstack([ternary(x[i:i + 1], g2).value for i in range(3)])
    np.testing.assert_array_equal(whole, parts)


def test_the_example_runs_on_torch(ternary):
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 30, dtype=torch.float32)
    out = ternary(x, torch.Generator().manual_seed(0))
    assert isinstance(out.value, torch.Tensor) and out.value.dtype == x.dtype
    m = x.abs().amax(1, keepdim=True)
    assert torch.isin(out.value / m, torch.tensor([-1.0, 0.0, 1.0])).all()

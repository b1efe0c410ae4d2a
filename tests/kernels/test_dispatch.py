"""How the kernels are reached: the generated per-K CSR file is current, every kernel caches its machine code on
disk, numba is imported only when a kernel runs, calls below the size threshold take the library path (to float
rounding the same values), FEDREPRO_KERNELS=0 switches every kernel off and FEDREPRO_KERNELS=always forces them."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from fedrepro import kernels
from fedrepro.kernels import _generate

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba not installed: the kernels are not used")


@pytest.fixture(autouse=True)
def every_call_compiled(monkeypatch):
    """Small inputs, which the size threshold (kernels.MIN_WORK) would route to the library path: every call
    takes the kernel unless a test sets the threshold itself. (Not a conftest.py: that would shadow tests/conftest.py
    for the modules that import from it.)"""
    monkeypatch.setattr(kernels, "MIN_WORK", 0)


SRC = Path(kernels.__file__).resolve().parents[2]


def _python(code: str, **env) -> str:
    import os

    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(SRC), **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_the_unrolled_csr_file_is_the_generators_output():
    assert _generate.TARGET.read_text() == _generate.source(), "run: python -m fedrepro.kernels._generate"


def test_every_kernel_caches_its_machine_code_on_disk():
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    from fedrepro.kernels import _csr_unrolled, dense, sparse

    found = [f for m in (dense, sparse, _csr_unrolled) for f in vars(m).values() if isinstance(f, CPUDispatcher)]
    assert dense.momentum_step in found and dense.gossip_add in found and sparse.maxabs_quantize_add in found
    assert len(found) >= 2 * _csr_unrolled.MAX_UNROLLED + 6
    assert [f.__name__ for f in found if isinstance(f._cache, NullCache)] == []


@pytest.mark.slow  # seconds per case: kept out of the fast set
def test_a_second_process_loads_the_kernels_from_numba_cache_dir(tmp_path):
    code = """
        import numpy as np, scipy.sparse as sp
        from fedrepro.kernels import _csr_unrolled, sparse
        x = sp.random(50, 20, density=0.2, format="csr", random_state=0)
        Q, out = np.ones((20, 3)), np.empty((50, 3))
        sparse.csr_matmul_into(x.indptr, x.indices, x.data, Q, out)
        s = _csr_unrolled.matmul_3.stats
        print(sum(s.cache_hits.values()), sum(s.cache_misses.values()))
    """
    first = _python(code, NUMBA_CACHE_DIR=str(tmp_path))
    second = _python(code, NUMBA_CACHE_DIR=str(tmp_path))
    assert first.split() == ["0", "1"]               # compiled, then written under NUMBA_CACHE_DIR
    assert second.split() == ["1", "0"]              # loaded, not compiled
    assert list(tmp_path.rglob("*.nbc"))


@pytest.mark.slow  # seconds per case: kept out of the fast set
def test_numba_is_imported_only_when_a_kernel_runs():
    out = _python("""
        import sys
        import numpy as np, torch
        from fedrepro import kernels
        from fedrepro.comm import TrackedCopy, get_compressor, _backend as bk
        from fedrepro.decentral.engine import DecentralEngine, algorithm_config
        from fedrepro.decentral.schedules import InverseLR
        from fedrepro.decentral.topology import ring
        from fedrepro.gcca.generators import sparse_views
        rng = np.random.default_rng(0)
        views = sparse_views(rng, 200, 20, 5, 3, 0.1, d_A=0.05)      # every call far below MIN_WORK
        views.apply(rng.standard_normal((3, 20, 2)))
        TrackedCopy(get_compressor("cutemaxvar", q=3)).update_in_place(rng.standard_normal((3, 200, 2)), rng)
        eng = DecentralEngine(ring(6).W, torch.zeros(6, 100), algorithm_config("dsgd", None, gamma=1.0), InverseLR())
        eng.step(lambda X, t: X - 1.0)
        bk.largest_abs_k(torch.randn(6, 1000), 3)
        print("numba" in sys.modules, eng._compiled)
        kernels.MIN_WORK = 0
        views.apply(rng.standard_normal((3, 20, 2)))
        print("numba" in sys.modules)
    """)
    assert out.split() == ["False", "False", "True"]


def test_calls_below_the_threshold_take_the_library_path(monkeypatch):
    from fedrepro.gcca.views import SparseViews, sample_rows
    from fedrepro.kernels import sparse

    calls = []
    for name in ("csr_matmul_into", "csr_batch_gradient_into"):
        real = getattr(sparse, name)
        monkeypatch.setattr(sparse, name, lambda *a, _real=real, _name=name: (calls.append(_name), _real(*a)))
    rng = np.random.default_rng(3)
    views = SparseViews([sp.random(300, 40, density=0.1, format="csr", random_state=i) for i in range(3)])
    Q, Ghat = rng.standard_normal((3, 40, 4)), rng.standard_normal((300, 4))
    rows = sample_rows(rng, 3, 300, 60, increasing=True)
    results = {}
    for min_work in (0, 10**9):                      # every call compiled; none
        monkeypatch.setattr(kernels, "MIN_WORK", min_work)
        calls.clear()
        results[min_work] = views.apply(Q), views.batch_gradient(rows, Q, Ghat)
        assert len(calls) == (6 if min_work == 0 else 0)
    for a, b in zip(results[0], results[10**9]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * float(np.abs(b).max()))
    monkeypatch.setattr(kernels, "MIN_WORK", views.nnz * 4)   # the product (nnz K) pays, the gradient does not
    calls.clear()
    views.apply(Q), views.batch_gradient(rows, Q, Ghat)
    assert calls == ["csr_matmul_into"] * 3


def test_the_decentral_engine_and_top_k_follow_the_threshold(monkeypatch):
    from fedrepro.comm import _backend as bk
    from fedrepro.decentral.engine import DecentralEngine, algorithm_config
    from fedrepro.decentral.schedules import InverseLR
    from fedrepro.decentral.topology import ring
    from fedrepro.kernels import dense

    monkeypatch.setattr(kernels, "MIN_WORK", 6 * 100)
    small = DecentralEngine(ring(6).W, torch.zeros(6, 99), algorithm_config("dsgd", None, gamma=1.0), InverseLR())
    large = DecentralEngine(ring(6).W, torch.zeros(6, 100), algorithm_config("dsgd", None, gamma=1.0), InverseLR())
    assert not small._compiled and large._compiled

    calls = []
    real = dense.top_magnitudes
    monkeypatch.setattr(dense, "top_magnitudes", lambda *a: (calls.append(a[0].shape), real(*a))[1])
    g = torch.Generator().manual_seed(0)
    for x in (torch.randn(6, 640, generator=g), torch.randn(5, 1280, generator=g)):     # both above 600 entries
        assert torch.equal(bk.largest_abs_k(x, 10), torch.topk(x.abs(), 10, dim=1, sorted=False).indices)
    assert calls == [(6, 640), (5, 1280)]
    monkeypatch.setattr(kernels, "MIN_WORK", 5000)
    calls.clear()
    for x in (torch.randn(6, 640, generator=g), torch.randn(6, 1280, generator=g)):  # 3840 and 7680 entries
        assert torch.equal(bk.largest_abs_k(x, 10), torch.topk(x.abs(), 10, dim=1, sorted=False).indices)
    assert calls == [(6, 1280)]


def test_the_switch_turns_every_kernel_off_or_forces_it(monkeypatch):
    monkeypatch.setattr(kernels, "MIN_WORK", 10**6)
    monkeypatch.setenv("FEDREPRO_KERNELS", "1")
    assert kernels.compiled("sparse", 10) is None and kernels.compiled("sparse", 10**6) is not None
    monkeypatch.setenv("FEDREPRO_KERNELS", "always")
    assert kernels.compiled("sparse", 10) is not None
    monkeypatch.setenv("FEDREPRO_KERNELS", "0")
    assert kernels.compiled("sparse", 10**9) is None and not kernels.available()
    monkeypatch.setenv("FEDREPRO_KERNELS", "yes")
    with pytest.raises(ValueError, match="FEDREPRO_KERNELS must be one of 0, 1, always"):
        kernels.compiled("sparse", 10)


def test_runs_depend_on_the_kernel_modules_they_load_lazily():
    """kernels.compiled() imports by name; the callers name the modules under TYPE_CHECKING so that the import
    closure (fedrepro.workflow.codedeps), and so Snakemake's reruns, still see them."""
    from fedrepro.workflow.codedeps import closure_relpaths

    for runner in ("fedrepro.gcca.experiments", "fedrepro.decentral.experiments"):
        deps = closure_relpaths(SRC.parent, modules=(runner,))
        assert {f"src/fedrepro/kernels/{m}.py" for m in ("sparse", "_csr_unrolled", "dense", "intrinsics")} <= set(deps)


def test_every_module_that_asks_for_a_kernel_depends_on_it():
    """Each `compiled("<name>", ...)` call site in the library (a new one included) has fedrepro/kernels/<name>.py
    in its module's import closure, so editing a kernel reruns the jobs that use it."""
    import re

    from fedrepro.workflow.codedeps import closure_relpaths

    sites = {}
    for path in (SRC / "fedrepro").rglob("*.py"):
        for name in re.findall(r"""compiled\(\s*["'](\w+)["']""", path.read_text()):
            module = ".".join(path.relative_to(SRC).with_suffix("").parts)
            sites.setdefault(module, set()).add(name)
    assert {"fedrepro.gcca.views", "fedrepro.decentral.engine"} <= set(sites) and len(sites) >= 4
    for module, names in sites.items():
        deps = set(closure_relpaths(SRC.parent, modules=(module,)))
        assert {f"src/fedrepro/kernels/{n}.py" for n in names} <= deps, module

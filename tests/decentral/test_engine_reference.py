"""The decentral engine with its compiled passes (fedrepro.kernels.dense, forced for every call size) against the
same engine with them switched off (FEDREPRO_KERNELS=0: torch's operations): the same iterates, momentum and public
copies to float rounding, the same bits and ledger, for every method, topology, dtype and option; and the engine
against a plain NumPy implementation written from Algorithm 1 alone (benchmarks/reference/squarm_numpy.py)."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from decentral_paper_methods import method_config

from fedrepro import kernels
from fedrepro.decentral.engine import DecentralEngine, EngineConfig
from fedrepro.decentral.experiments import MnistTask
from fedrepro.decentral.mixing import (
    DenseMixer,
    GatherMixer,
    SliceMixer,
    make_mixer,
    neighbour_lists,
    shift_runs,
)
from fedrepro.decentral.schedules import InverseLR, SqrtStepThreshold
from fedrepro.decentral.topology import complete, erdos_renyi, ring, torus

REFERENCE = Path(__file__).resolve().parents[2] / "benchmarks" / "reference" / "squarm_numpy.py"


def _split(seed=0, n_train=900, n_test=100, p=784, classes=10):
    """MNIST-like data: pixels on the 1/255 grid (so gradients tie, as real MNIST's do), class-dependent means."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(0.0, 1.0, size=(classes, p)) * (rng.random((classes, p)) < 0.4)

    def draw(m):
        y = np.arange(m) % classes
        x = np.clip(means[y] + 0.3 * rng.normal(size=(m, p)), 0, 1)
        return (np.round(x * 255) / 255).astype(np.float32), y

    xtr, ytr = draw(n_train)
    xte, yte = draw(n_test)
    return SimpleNamespace(x_train=xtr, y_train=ytr, x_test=xte, y_test=yte, n_classes=classes)


SPLIT = _split()


def _pair(W, cfg, n, T, *, threshold=None, lr=InverseLR(), dtype=torch.float32, segments=None):
    """Run the engine with the kernels off, then on for every call size, on the MNIST-like task; return both."""
    engines = []
    with pytest.MonkeyPatch.context() as mp:
        for setting in ("0", "always"):
            mp.setenv("FEDREPRO_KERNELS", setting)
            task = MnistTask(SPLIT, n, "sorted", 5, 0, train_eval=100, dtype=dtype)
            eng = DecentralEngine(W, task.x0(), cfg, lr, threshold, segments=segments,
                                  generator=torch.Generator().manual_seed(7))
            assert eng._compiled == (setting != "0" and kernels.available())
            for _ in range(T):
                eng.step(task.grad)
            engines.append(eng)
    return engines


def _assert_identical(ref, new):
    """Float rounding apart (relative 1e-5 for float32, 1e-10 for float64, grown over the steps); counts exact."""
    rtol = 1e-4 if ref.X.dtype == torch.float32 else 1e-9
    for a, b in ((ref.X, new.X), (ref.V, new.V), (ref.xhat, new.xhat)):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=rtol, atol=rtol * float(a.abs().max()))
    assert np.array_equal(ref.bits, new.bits) and np.array_equal(ref.n_fired, new.n_fired)
    assert ref.sync_log == new.sync_log and ref.rounds == new.rounds and ref.airtime_bits == new.airtime_bits
    if ref.ledger is not None:
        assert ref.ledger.to_rows() == new.ledger.to_rows()


@pytest.mark.slow  # several seconds: kept out of the fast set
@pytest.mark.parametrize("method", ["squarm", "choco_sign", "choco_topk", "vanilla"])
@pytest.mark.parametrize("topology", ["ring", "torus"])
def test_methods_match_without_the_kernels(method, topology):
    n = 24
    W = ring(n).W if topology == "ring" else torus(4, 6).W
    cfg = method_config(method, gamma=0.4 if method == "choco_topk" else 1.0, k=10, H=5 if method == "squarm" else None)
    # a threshold that silences some nodes some of the time (a partial mask), with the forced first round
    thr = SqrtStepThreshold(c0=16000.0, every=1000) if method == "squarm" else None
    ref, new = _pair(W, cfg, n, 40, threshold=thr)
    _assert_identical(ref, new)
    if method == "squarm":
        assert 0 < new.trigger_rate() < 1, "the test threshold should give partial masks"


@pytest.mark.parametrize("W", [complete(8).W, erdos_renyi(20, 0.15, np.random.default_rng(3)).W, ring(2).W, ring(3).W],
                         ids=["complete", "erdos_renyi", "ring2", "ring3"])
def test_other_graphs_match(W):
    n = W.shape[0]
    ref, new = _pair(W, method_config("choco_topk", gamma=0.4, k=10), n, 12)
    _assert_identical(ref, new)


@pytest.mark.parametrize("options", [
    dict(weight_decay=1e-3),
    dict(nesterov=False),
    dict(lr_correction=False, beta=0.5),
    dict(memory_efficient=True),
    dict(flag_bits=1, keep_ledger=False),
], ids=lambda o: ",".join(o))
def test_engine_options_match(options):
    n = 12
    cfg = EngineConfig(**{**method_config("squarm", gamma=0.7, k=10, H=2).as_dict(), **options})
    ref, new = _pair(ring(n).W, cfg, n, 30, threshold=SqrtStepThreshold(c0=16000.0, every=1000))
    _assert_identical(ref, new)


@pytest.mark.parametrize("compressor,params", [("qsgd_topk", {"k": 20, "s": 4}), ("sign_randk", {"k": 15}),
                                               ("randk", {"k": 15}), ("topk", {"k": 400}), ("sign", {})])
def test_random_and_dense_compressors_match(compressor, params):
    """Compressors that draw uniforms (same stream), a top-k above the prefilter's range, a dense quantizer."""
    n = 10
    cfg = EngineConfig(compressor=compressor, compressor_params=params, H=2, gamma=0.5)
    ref, new = _pair(ring(n).W, cfg, n, 20, threshold=SqrtStepThreshold(c0=16000.0, every=1000))
    _assert_identical(ref, new)


def test_segments_and_float64_match():
    n = 10
    cfg = method_config("squarm", gamma=0.8, ratio=0.01, H=3)
    ref, new = _pair(ring(n).W, cfg, n, 30, threshold=SqrtStepThreshold(c0=16000.0, every=1000), dtype=torch.float64,
                     segments=[(0, 3000), (3000, 3010), (3010, 7840)])
    _assert_identical(ref, new)


def test_slice_mixing_equals_gathers_and_the_dense_product():
    g = torch.Generator().manual_seed(0)
    for topo in (ring(60), ring(5), torus(6, 10), torus(3, 4), erdos_renyi(30, 0.1, np.random.default_rng(1))):
        idx, wts = neighbour_lists(topo.W)
        Y = torch.randn(topo.n, 333, generator=g)
        slices = SliceMixer(idx, wts, shift_runs(idx), Y.dtype, Y.device)(Y)
        assert torch.equal(slices, GatherMixer(idx, wts, Y.dtype, Y.device)(Y))
        assert torch.allclose(slices, torch.as_tensor(topo.W, dtype=Y.dtype) @ Y, atol=1e-6)
    assert len(shift_runs(neighbour_lists(ring(60).W)[0])) == 3          # row 0, rows 1..58, row 59
    assert isinstance(make_mixer(ring(60).W, torch.float32, "cpu"), SliceMixer)
    assert isinstance(make_mixer(torus(6, 10).W, torch.float32, "cpu"), SliceMixer)
    assert isinstance(make_mixer(complete(6).W, torch.float32, "cpu"), DenseMixer)


@pytest.mark.parametrize("method,compressor", [("squarm", "sign_topk"), ("choco_sign", "sign"), ("vanilla", "identity")])
def test_engine_agrees_with_the_plain_numpy_implementation(method, compressor):
    """The plain implementation, written from Algorithm 1 alone, on continuous data: the same iterates
    to float32 rounding. (CHOCO-TopK is left out: its copies keep exact values, so a near-tie at the k-th entry
    that rounding resolves the other way changes the trajectory visibly within a few dozen iterations.)"""
    spec = importlib.util.spec_from_file_location("squarm_numpy", REFERENCE)
    npref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(npref)
    rng = np.random.default_rng(4)
    split = SimpleNamespace(x_train=rng.random((600, 30), dtype=np.float32), y_train=np.arange(600) % 10,
                            x_test=rng.random((50, 30), dtype=np.float32), y_test=np.arange(50) % 10, n_classes=10)
    n, H, gamma = 8, (3 if method == "squarm" else 1), (0.4 if method == "choco_topk" else 1.0)
    task, twin = (MnistTask(split, n, "sorted", 5, 0, train_eval=50) for _ in range(2))
    eng = DecentralEngine(ring(n).W, task.x0(), method_config(method, gamma=gamma, k=10, H=H), InverseLR(), None,
                          generator=torch.Generator().manual_seed(0))
    ref = npref.NumpySquarm(split.x_train, split.y_train, n, 10, compressor=compressor, k=10, H=H, gamma=gamma)
    # The scaled sign is discontinuous at 0: once an entry of x - x_hat lies within the two implementations' rounding
    # gap of 0, either sign is right and the trajectories may part (on an AVX2 machine one flips at t = 32 after
    # agreeing to 3e-7). The iterates are compared up to that step, and the comparison must cover at least 10 steps.
    smallest = []
    compress = npref.compress

    def recording(diff, kind, k):
        smallest.append(float(np.abs(diff).min()))
        return compress(diff, kind, k)

    npref.compress = recording
    compared, gap = 0, 0.0
    for _ in range(40):
        smallest.clear()
        eng.step(task.grad)
        ref.step(twin.sampler().numpy())
        if compressor == "sign" and smallest and min(smallest) <= 4 * gap:
            break
        np.testing.assert_allclose(eng.X.numpy(), ref.X, rtol=1e-4, atol=1e-6)
        gap = max(gap, float(np.abs(eng.X.numpy() - ref.X).max()))
        compared += 1
        moved = float(np.abs(ref.X).max())
    assert compared >= 10, compared
    assert moved > 1e-2                                        # the models moved

"""The faster CuteMaxVar kernels (issue 19): the increasing-order minibatch sampler draws the same rows from the
same random stream, and the engine agrees with a plain NumPy/SciPy implementation (benchmarks/reference)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from fedrepro.gcca.engine import EngineConfig, run_maxvar
from fedrepro.gcca.generators import sparse_views
from fedrepro.gcca.mvlsa import mvlsa
from fedrepro.gcca.views import WHOLE_ROW_J, _smallest_keys_increasing, _smallest_keys_increasing_rows, sample_rows

REFERENCE = Path(__file__).resolve().parents[2] / "benchmarks" / "reference" / "cutemaxvar_numpy.py"


# (50000, 5000): the candidate search view by view; the others: one partition of the whole rows (J <= WHOLE_ROW_J)
@pytest.mark.parametrize("J,batch", [(50000, 5000), (WHOLE_ROW_J + 1, 200), (WHOLE_ROW_J, 200), (1000, 10), (300, 299),
                                     (40, 1), (7, 3)])
def test_increasing_sampler_draws_the_same_rows_from_the_same_stream(J, batch):
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(20):
        old = sample_rows(a, 3, J, batch)
        new = sample_rows(b, 3, J, batch, increasing=True)
        assert new.shape == old.shape == (3, batch)
        assert all(np.array_equal(np.sort(o), n) for o, n in zip(old, new))
    assert a.random() == b.random()            # the stream advanced identically


def test_short_rows_are_drawn_for_all_views_at_once(monkeypatch):
    """Up to WHOLE_ROW_J rows, a draw without ties never takes the per-view search (the whole-row path is the fast
    one at the paper's Fig. 3-4 size, J = 500)."""
    import fedrepro.gcca.views as views

    def per_view(*args):
        raise AssertionError("the per-view search ran")

    monkeypatch.setattr(views, "_smallest_keys_increasing", per_view)
    rows = sample_rows(np.random.default_rng(1), 3, 500, 150, increasing=True)
    assert rows.shape == (3, 150) and np.all(np.diff(rows, axis=1) > 0)


def test_sampler_ties_and_outliers_fall_back_to_the_exact_rows():
    keys = np.full(100, 0.5)
    keys[:3] = 0.1                             # 3 smallest, then 97 tied keys: argpartition's choice, sorted
    rows = _smallest_keys_increasing(keys, 5)
    assert rows.size == 5 and np.all(np.diff(rows) > 0) and set(rows[:3]) == {0, 1, 2}
    keys = np.linspace(0.99, 0.999, 1000)      # far above the 6-sigma bound: the full partition
    assert np.array_equal(_smallest_keys_increasing(keys, 10), np.arange(10))
    # all views at once: a tie in one view sends every view the per-view way, which gives the same rows
    rng = np.random.default_rng(0)
    keys = rng.random((3, 100))
    keys[1, :] = 0.5
    keys[1, :3] = 0.1
    rows = _smallest_keys_increasing_rows(keys, 5)
    assert np.array_equal(rows, np.stack([_smallest_keys_increasing(k, 5) for k in keys]))
    assert set(rows[1, :3]) == {0, 1, 2} and np.all(np.diff(rows, axis=1) > 0)


def test_engine_matches_the_plain_reference_implementation():
    spec = importlib.util.spec_from_file_location("cutemaxvar_numpy", REFERENCE)
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    rng = np.random.default_rng(0)
    views = sparse_views(rng, 3000, 120, 20, 3, 0.1, d_A=0.05)
    Q0 = mvlsa(views, 3, 10).Q
    cfg = EngineConfig(K=3, R=6, T=4, batch=300, q=3)
    eng = run_maxvar(views, Q0, cfg, np.random.default_rng(1), np.random.default_rng(2)).objective[1:]
    plain = ref.run(views.Xs, ref.step_sizes(views.Xs), Q0, R=6, T=4, batch=300, q=3,
                    rng_sgd=np.random.default_rng(1), rng_comp=np.random.default_rng(2))
    np.testing.assert_allclose(eng, plain, rtol=1e-9)
    assert eng[-1] < eng[0]

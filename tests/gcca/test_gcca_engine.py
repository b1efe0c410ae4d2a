"""fedrepro.gcca: the optimum, MVLSA, the G-step and the CuteMaxVar/AltMaxVar engine."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.linalg import subspace_angles

from fedrepro.comm.conventions import gcca_bpv, gcca_cr
from fedrepro.gcca.engine import EngineConfig, run_maxvar
from fedrepro.gcca.generators import dense_views, sparse_views
from fedrepro.gcca.mvlsa import mvlsa
from fedrepro.gcca.objective import maxvar_objective, polar
from fedrepro.gcca.optimum import optimum
from fedrepro.gcca.views import DenseViews, SparseViews
from fedrepro.runtime import rng_stream


def _gapped(seed=0, J=120, N=12, D=3, I=3, nu=0.3):
    """A problem with a clear eigengap at K = D (the paper's D=20 > K=5 has a near-zero gap)."""
    return dense_views(rng_stream(seed, "test", "data"), J, N, D, I, nu)


def _v_star_independent(Xs, K):
    P = sum(X @ np.linalg.pinv(X) for X in Xs)
    evals, evecs = np.linalg.eigh(P)
    return 0.5 * (len(Xs) * K - evals[::-1][:K].sum()), evecs[:, ::-1][:, :K]


def test_optimum_matches_independent_pinv_and_closed_form():
    views = _gapped()
    opt = optimum(views, 3)
    v_ref, G_ref = _v_star_independent(list(views.X), 3)
    assert opt.v_star == pytest.approx(v_ref, rel=1e-9)
    assert np.max(subspace_angles(opt.G, G_ref)) < 1e-8
    # plugging G_opt and Q_i* = X_i^+ G_opt into f gives v*
    Q = np.stack([np.linalg.pinv(X) @ opt.G for X in views.X])
    assert maxvar_objective(views.apply(Q), opt.G) == pytest.approx(v_ref, rel=1e-8)


def test_lanczos_on_the_implicit_operator_matches_eigh():
    views = _gapped(seed=1)
    dense = optimum(views, 3, method="eigh")
    lanczos = optimum(views, 3, method="lanczos")
    assert lanczos.v_star == pytest.approx(dense.v_star, rel=1e-8)
    assert np.max(subspace_angles(lanczos.G, dense.G)) < 1e-6
    sparse = optimum(SparseViews([sp.csr_matrix(x) for x in views.X]), 3)
    assert sparse.v_star == pytest.approx(dense.v_star, rel=1e-8)


def test_sparse_generator_density_and_views_agree_with_dense_math():
    views = sparse_views(rng_stream(0, "test", "sparse"), 4000, 400, 40, 3, 0.1, d_Z=0.1, d_A=1 / 400, d_E=0.01)
    assert np.all(np.abs(views.density - 0.02) < 0.004)
    Q = rng_stream(0, "test", "Q").standard_normal((3, 400, 2))
    dense = DenseViews(np.stack([x.toarray() for x in views.Xs]))
    assert np.allclose(views.apply(Q), dense.apply(Q))
    rows = np.stack([np.arange(50)] * 3)
    G = rng_stream(0, "test", "G").standard_normal((4000, 2))
    assert np.allclose(views.batch_gradient(rows, Q, G), dense.batch_gradient(rows, Q, G))


def test_polar_solves_the_procrustes_problem():
    rng = rng_stream(0, "test", "procrustes")
    Y = rng.standard_normal((200, 5))
    G = polar(Y)
    assert np.allclose(G.T @ G, np.eye(5), atol=1e-12)
    U, _, Vt = np.linalg.svd(Y, full_matrices=False)
    assert np.allclose(G, U @ Vt, atol=1e-10)
    # no orthonormal matrix beats it: tr(G^T Y) >= tr(H^T Y) for random orthonormal H
    for _ in range(20):
        H = np.linalg.qr(rng.standard_normal((200, 5)))[0]
        assert np.trace(G.T @ Y) >= np.trace(H.T @ Y) - 1e-12


def test_mvlsa_is_exact_when_the_rank_covers_every_feature():
    views = _gapped(seed=2)
    opt = optimum(views, 3)
    full = mvlsa(views, 3, K_tilde=views.N)
    assert full.cost == pytest.approx(opt.v_star, rel=1e-7)
    truncated = mvlsa(views, 3, K_tilde=2)
    assert truncated.cost > opt.v_star


@pytest.mark.parametrize("start", ["warm", "random"])
def test_altmaxvar_full_gradient_converges_to_the_top_eigenvectors(start):
    views = _gapped(seed=3)
    opt = optimum(views, 3)
    Q0 = mvlsa(views, 3, 2).Q if start == "warm" else rng_stream(3, "test", "Q0").standard_normal((3, views.N, 3))
    res = run_maxvar(views, Q0, EngineConfig(K=3, R=300, T=50), rng_stream(0, "s"), rng_stream(0, "c"))
    assert res.objective[-1] == pytest.approx(opt.v_star, rel=1e-6)
    assert np.max(subspace_angles(res.G, opt.G)) < 1e-5
    assert np.all(np.diff(res.objective) <= 1e-12)  # monotone (exact alternating minimization)


def test_cutemaxvar_error_feedback_reaches_the_optimum_and_copies_track():
    views = _gapped(seed=4)
    opt = optimum(views, 3)
    res = run_maxvar(views, mvlsa(views, 3, 2).Q, EngineConfig(K=3, R=400, T=50, q=3), rng_stream(0, "s"),
                     rng_stream(0, "c"))
    assert res.objective[-1] < 1.01 * opt.v_star
    assert np.max(subspace_angles(res.G, opt.G)) < 1e-2
    assert np.linalg.norm(res.Ghat - res.G) < 1e-3 * np.sqrt(res.G.size)


def test_bits_and_bpv_come_from_the_ledger():
    views = _gapped(seed=5)
    J, K, I, R = views.J, 3, views.I, 7
    Q0 = mvlsa(views, K, 2).Q
    for q in (None, 2, 3, 5):
        res = run_maxvar(views, Q0, EngineConfig(K=K, R=R, batch=40, q=q), rng_stream(0, "s"), rng_stream(0, "c"))
        qb = 32 if q is None else q
        assert np.array_equal(res.bpv, gcca_bpv(np.arange(R + 1), qb))
        scale = 0 if q is None else 32  # CuteMaxVar's per-message max-abs, not in BPV
        per_msg = qb * J * K + scale
        expect = I * (32 * J * K + np.arange(R + 1) * per_msg)
        assert np.array_equal(res.bits_up, expect) and np.array_equal(res.bits_down, expect)
        assert res.ledger.total_bits("up") == expect[-1]
    assert gcca_cr(18, 18, 3) == pytest.approx(0.90625)


def test_identity_compressor_altmaxvar_matches_a_plain_implementation():
    views = _gapped(seed=6)
    Q0 = mvlsa(views, 3, 2).Q
    res = run_maxvar(views, Q0, EngineConfig(K=3, R=5, T=4), rng_stream(0, "s"), rng_stream(0, "c"))
    Q = Q0.copy()
    G = polar(sum(views.X[i] @ Q[i] for i in range(3)))
    f = [maxvar_objective(views.apply(Q), G)]
    for _ in range(5):
        for i in range(3):
            for _ in range(4):
                Q[i] -= (views.X[i].T @ (views.X[i] @ Q[i] - G)) / np.linalg.norm(views.X[i], 2) ** 2
        G = polar(sum(views.X[i] @ Q[i] for i in range(3)))
        f.append(maxvar_objective(views.apply(Q), G))
    assert np.allclose(res.objective, f, rtol=1e-9)


def test_same_seed_same_curves_and_different_seed_differs():
    views = _gapped(seed=7)
    Q0 = mvlsa(views, 3, 2).Q
    cfg = EngineConfig(K=3, R=30, batch=30, q=3)
    a = run_maxvar(views, Q0, cfg, rng_stream(1, "s"), rng_stream(1, "c"))
    b = run_maxvar(views, Q0, cfg, rng_stream(1, "s"), rng_stream(1, "c"))
    c = run_maxvar(views, Q0, cfg, rng_stream(2, "s"), rng_stream(2, "c"))
    assert np.array_equal(a.objective, b.objective) and np.array_equal(a.G, b.G)
    assert not np.array_equal(a.objective, c.objective)


def test_compressor_is_unbiased_with_the_fact2_variance_bound():
    """C28 by Monte Carlo on the shared compressor (gcca §3.1.2, Facts 1-2)."""
    from fedrepro.comm import get_compressor

    rng = rng_stream(0, "test", "fact2")
    delta = rng.standard_normal((60, 5))
    comp = get_compressor("cutemaxvar", q=3)
    draws = np.stack([comp(delta, rng, batched=False).value for _ in range(4000)])
    S, m = 3, np.abs(delta).max()
    assert np.abs(draws.mean(0) - delta).max() < 5 * m / S / np.sqrt(4000)
    mse = ((draws - delta) ** 2).sum(axis=(1, 2)).mean()
    assert mse <= delta.size * m**2 / (4 * S**2)

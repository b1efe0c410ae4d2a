"""ADEPT-PCA: Stiefel iterates, the sigma -> 0 / sigma -> infinity limits, and the closed-form checks."""

import numpy as np

from fedrepro.adept.pca import adept_pca, error_ratio, make_problem, riemannian_gd, top_r
from fedrepro.adept.stiefel import haar, orthonormality_error, proj_tangent, retract


def _prob(sigma_star=0.1, m=4, seed=0):
    rng = np.random.default_rng(seed)
    return make_problem(30, 5, m, 20, sigma_star, 0.1, rng), haar(30, 5, rng)


def test_retraction_stays_on_stiefel():
    rng = np.random.default_rng(1)
    u = np.stack([haar(20, 4, rng) for _ in range(3)])
    xi = proj_tangent(u, rng.standard_normal(u.shape))
    assert orthonormality_error(retract(u, xi)) < 1e-10


def test_adept_iterates_stay_on_stiefel():
    prob, v0 = _prob()
    seen = []
    u, v, _ = adept_pca(prob, v0, T=200, lazy=20, log_every=10,
                        trace=lambda t, u, v, s: seen.append(max(orthonormality_error(u), orthonormality_error(v))))
    assert max(seen) < 1e-10 and orthonormality_error(u) < 1e-10


def test_sigma_to_infinity_is_local_training():
    prob, v0 = _prob(sigma_star=0.3)
    u, _, _ = adept_pca(prob, v0, T=400, sigma0=1e6, learn_sigma=False)
    ul = riemannian_gd(prob.s, prob.n, prob.sigma_eps, v0, T=400)
    assert abs(error_ratio(u, prob) - error_ratio(ul, prob)) < 1e-3 * error_ratio(ul, prob)
    assert abs(error_ratio(ul, prob) - error_ratio(top_r(prob.s, 5), prob)) < 0.02 * error_ratio(ul, prob)


def test_sigma_to_zero_is_global_training():
    prob, v0 = _prob(sigma_star=0.3)
    u, v, _ = adept_pca(prob, v0, T=1500, sigma0=3e-3, learn_sigma=False)   # 1/sigma^2 >> likelihood curvature
    glob = error_ratio(top_r(prob.s.sum(0), 5), prob)
    local = error_ratio(top_r(prob.s, 5), prob)
    ours = error_ratio(u, prob)
    assert abs(ours - glob) < 0.05 * glob, (ours, glob, local)


def test_learned_sigma_is_capped_by_sqrt_r_over_dtheta():
    """adept:A-dtheta.  On the Stiefel manifold d^2(V, U) = ||P_T_V(U)||^2 <= ||U||^2 = r, so the sigma step keeps
    pushing sigma down while sigma^2 > (2 xi + r) / d_theta: with d_theta = d r the learned sigma cannot pass
    1/sqrt(d) whatever the true heterogeneity; with d_theta = d it can, and does at sigma* = 0.5."""
    rng = np.random.default_rng(3)
    v = haar(30, 5, rng)
    u = np.stack([haar(30, 5, rng) for _ in range(50)])
    assert np.sum(proj_tangent(v[None], u) ** 2, axis=(-2, -1)).max() <= 5 + 1e-9
    prob, v0 = _prob(sigma_star=0.5)
    caps = {}
    for mode, dtheta in (("d*r", 30 * 5), ("d", 30)):
        _, _, sigma = adept_pca(prob, v0, T=400, lazy=20, sigma0=1.0, dtheta_mode=mode)
        caps[mode] = sigma
        assert sigma <= np.sqrt((2e-6 + 5) / dtheta) + 1e-2          # one sigma step (eta3 * clip) of slack
    assert caps["d"] > 1.5 * np.sqrt(5 / (30 * 5))                    # d_theta = d learns past the d r cap

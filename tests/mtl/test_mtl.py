"""Thesis ch. 4 (fedrepro.mtl): estimator, projections, constraints, algorithms, reference solver, bits."""

from __future__ import annotations

import numpy as np
import pytest

from fedrepro.comm import get_compressor
from fedrepro.comm.conventions import thesis_bits_from_ledger, thesis_ch4_cumulative_bits, thesis_message_bits
from fedrepro.mtl.algorithms import log_grid, run_scheme
from fedrepro.mtl.experiments import build_instance, crossing
from fedrepro.mtl.graph import Graph, erdos_renyi_connected
from fedrepro.mtl.problems import QCQPProblem, constraint_gradient, edge_values, make_logistic
from fedrepro.mtl.projection import project_ball, project_shrunk
from fedrepro.mtl.reference import kkt_residuals, qcqp_optimum, solve_reference
from fedrepro.mtl.zeroth_order import sphere_directions, two_point_estimate

PATH3 = Graph(n=3, edges=np.array([[0, 1], [1, 2]]))


def qcqp(graph=PATH3, mu=None, c=None, radius=5.0, d=2, var=None):
    n = graph.n
    mu = np.zeros((n, d)) if mu is None else np.asarray(mu, float)
    return QCQPProblem(graph=graph, mu=mu, var=np.zeros(n) if var is None else var,
                       c=np.full(graph.n_edges, -1.0) if c is None else np.asarray(c, float), radius=radius, df=10)


# ---- zeroth-order estimator -----------------------------------------------------------------------

def _mc_mean_and_tol(samples: np.ndarray, z: float = 5.0):
    """Mean over Monte Carlo samples and a per-coordinate tolerance z·sd/√N (z = 5: a false alarm ~1e-6 per coordinate)."""
    N = samples.shape[0]
    return samples.mean(axis=0), z * samples.std(axis=0, ddof=1) / np.sqrt(N)


def test_sphere_directions_are_unit_and_isotropic():
    U = sphere_directions(np.random.default_rng(0), 200_000, 4)
    assert np.allclose(np.linalg.norm(U, axis=1), 1.0)
    cov = U.T @ U / U.shape[0]
    assert np.allclose(cov, np.eye(4) / 4, atol=5 * np.sqrt(2 / U.shape[0]) / 4)


def test_two_point_estimator_unbiased_on_quadratic():
    """φ(x) = xᵀAx + bᵀx: the smoothed gradient is ∇φ~ = ∇φ = 2Ax + b (smoothing adds a constant)."""
    rng = np.random.default_rng(1)
    d, N, zeta = 5, 400_000, 1e-4
    G = rng.standard_normal((d, d))
    A, b, x = G.T @ G, rng.standard_normal(d), rng.standard_normal(d)

    def phi(Y):
        return np.einsum("nd,de,ne->n", Y, A, Y) + Y @ b

    U = sphere_directions(rng, N, d)
    est = two_point_estimate(phi, np.tile(x, (N, 1)), zeta, U)
    mean, tol = _mc_mean_and_tol(est)
    assert np.all(np.abs(mean - (2 * A @ x + b)) < tol)


def test_two_point_estimator_targets_the_smoothed_function_not_phi():
    """φ(x) = Σ x_k⁴ with a large ζ: ∇φ~_k = 4x_k³ + 12 x_k ζ² E[v_k²], E[v_k²] = 1/(d+2) on the unit ball.
    The estimate matches ∇φ~ and is measurably away from ∇φ."""
    rng = np.random.default_rng(2)
    d, N, zeta = 3, 400_000, 0.5
    x = np.array([1.0, -0.5, 0.8])

    def phi(Y):
        return np.sum(Y**4, axis=1)

    est = two_point_estimate(phi, np.tile(x, (N, 1)), zeta, sphere_directions(rng, N, d))
    mean, tol = _mc_mean_and_tol(est)
    smoothed = 4 * x**3 + 12 * x * zeta**2 / (d + 2)
    assert np.all(np.abs(mean - smoothed) < tol)
    assert np.any(np.abs(mean - 4 * x**3) > tol)


# ---- projections --------------------------------------------------------------------------------

def test_project_ball_hand_cases():
    Y = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    P = project_ball(Y, 1.0)
    assert np.allclose(P, [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]])


def test_project_shrunk_is_ball_of_radius_rho_minus_zeta():
    Y = np.array([[3.0, 4.0], [0.3, 0.4]])
    P = project_shrunk(Y, 1.0, 0.1)
    assert np.allclose(P, [[0.54, 0.72], [0.3, 0.4]])
    # general form with y0 ≠ 0, r < radius: points of X~ stay put, x ± ζu stays in X
    y0, r, zeta = np.array([0.2, 0.0]), 0.5, 0.1
    Q = project_shrunk(np.array([[5.0, 0.0], [0.0, 0.1]]), 1.0, zeta, y0=y0, r=r)
    assert np.allclose(Q[0], [(1 - 0.2) * 1 + 0.2 * 0.2, 0.0])
    assert np.allclose(Q[1], [0.0, 0.1])
    assert np.linalg.norm(Q[0]) + zeta <= 1.0 + 1e-12


# ---- constraints --------------------------------------------------------------------------------

def test_edge_values_and_constraint_gradient_hand_case():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 2.0]])
    c = np.array([-3.0, -5.0])
    assert np.allclose(edge_values(X, PATH3, c), [1 - 3, 4 - 5])
    lam = np.array([0.5, 2.0])
    # node i: 2 Σ_j λ_ij · 2 (x_i - x_j)
    want = np.array([4 * 0.5 * (X[0] - X[1]),
                     4 * 0.5 * (X[1] - X[0]) + 4 * 2.0 * (X[1] - X[2]),
                     4 * 2.0 * (X[2] - X[1])])
    assert np.allclose(constraint_gradient(X, lam, PATH3), want)
    assert np.allclose(PATH3.degree, [1, 2, 1])
    B = PATH3.incidence().toarray()
    assert np.allclose(B, [[1, 0], [-1, 1], [0, -1]])


def test_one_iteration_primal_and_dual_bookkeeping():
    """Vanilla, noiseless QCQP (var 0, but A is random: use a deterministic stub): one step by hand."""

    class Det(QCQPProblem):
        def draw(self, rng):
            return None

        def grad(self, X, sample):
            return self.expected_grad(X)

    p = Det(graph=PATH3, mu=np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), var=np.zeros(3),
            c=np.array([-0.5, -3.0]), radius=10.0, df=10)
    X0 = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 2.0]])
    eta, delta = 0.01, 100.0
    res = run_scheme(p, X0, compressor=None, feedback="sample", eta=eta, delta=delta, zeta=1e-4, T=2,
                     rng_samples=np.random.default_rng(0), keep_history=True)
    (t1, x1, lam1), (t2, x2, lam2) = res.history
    g0 = edge_values(X0, PATH3, p.c)  # [0.5, 1.0]
    assert np.allclose(lam1, 0) and np.allclose(x1, X0)
    assert np.allclose(lam2, np.maximum(0, eta * g0))
    assert np.allclose(x2, X0 - eta * p.expected_grad(X0))  # λ(1) = 0: no constraint term yet
    lam3 = np.maximum(0, lam2 + eta * (edge_values(x2, PATH3, p.c) - delta * eta * lam2))
    assert np.allclose(res.lam, lam3)
    x3 = project_ball(x2 - eta * (p.expected_grad(x2) + constraint_gradient(x2, lam2, PATH3)), 10.0)
    assert np.allclose(res.x_tilde, x3)


def test_dual_is_clipped_at_zero():
    p = qcqp(c=[-100.0, -100.0])
    p.draw = lambda rng: None
    p.grad = lambda X, s: p.expected_grad(X)
    res = run_scheme(p, np.zeros((3, 2)), compressor=None, feedback="sample", eta=0.1, delta=1.0, zeta=1e-4, T=5,
                     rng_samples=np.random.default_rng(0))
    assert np.all(res.lam == 0.0)


# ---- algorithms ---------------------------------------------------------------------------------

def _instance(problem="qcqp", T=300):
    params = dict(problem=problem, n=12, d=10, p=0.4, R=40, c_range=[-5, -3], df=10, spread=0.3, n_test=50,
                  seed=3)
    if problem == "logistic":
        params["c_range"] = [-10, -7]
    return build_instance(params, "test", 0)


@pytest.mark.parametrize("feedback", ["sample", "bandit"])
def test_identity_compressor_equals_vanilla(feedback):
    inst = _instance()
    kw = dict(feedback=feedback, eta=1e-3, delta=100.0, zeta=1e-4, T=300, keep_history=True)
    x0 = project_shrunk(inst.x_init, inst.problem.radius, 1e-4) if feedback == "bandit" else inst.x_init
    van = run_scheme(inst.problem, x0, compressor=None, rng_samples=np.random.default_rng(5),
                     rng_directions=np.random.default_rng(6), **kw)
    ide = run_scheme(inst.problem, x0, compressor=get_compressor("identity"), rng_samples=np.random.default_rng(5),
                     rng_directions=np.random.default_rng(6), **kw)
    for (_, xa, la), (_, xb, lb) in zip(van.history, ide.history):
        np.testing.assert_allclose(xb, xa, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(lb, la, rtol=1e-12, atol=1e-13)
    assert van.ledger.total_bits() == ide.ledger.total_bits()


# The registry's schemes (config/papers/thesis.yaml fig4_1, k = 1): vanilla sends x~ itself (no compressor).
def make_compressor(scheme: str, k: int):
    spec = {"sign": ("sign", {"sign_of_zero": 0}), "topk": ("topk", {"k": k}), "sign_topk": ("sign_topk", {"k": k})}
    return None if scheme == "vanilla" else get_compressor(spec[scheme][0], **spec[scheme][1])


def test_first_message_uncompressed_and_topk_k1_equals_sign_topk_iterates():
    inst = _instance()
    kw = dict(feedback="sample", eta=1e-3, delta=100.0, zeta=1e-4, T=50, keep_history=True)
    a = run_scheme(inst.problem, inst.x_init, compressor=make_compressor("topk", 1), rng_samples=np.random.default_rng(5), **kw)
    b = run_scheme(inst.problem, inst.x_init, compressor=make_compressor("sign_topk", 1), rng_samples=np.random.default_rng(5), **kw)
    assert np.array_equal(a.history[0][1], inst.x_init)  # x(1) = Π(x^(1)) = x~(1)
    for (_, xa, _), (_, xb, _) in zip(a.history, b.history):
        np.testing.assert_allclose(xa, xb, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("scheme,conv,kind", [("vanilla", "P", "identity"), ("sign", "P", "sign"),
                                               ("topk", "P", "topk"), ("sign_topk", "P", "sign_topk"),
                                               ("sign", "F", "sign"), ("sign_topk", "F", "sign_topk")])
def test_cumulative_bits_follow_the_chapter_formula(scheme, conv, kind):
    inst = _instance()
    T = 40
    steps = log_grid(T, 10)
    res = run_scheme(inst.problem, inst.x_init, compressor=make_compressor(scheme, 1), feedback="sample", eta=1e-3,
                     delta=100.0, zeta=1e-4, T=T, rng_samples=np.random.default_rng(0), log_steps=steps)
    _, cum = thesis_bits_from_ledger(res.ledger, conv, "p2p")
    b = thesis_message_bits(kind, 10, k=1, convention=conv)
    assert b == {"identity": 320, "sign": {"P": 10, "F": 42}[conv], "topk": 36, "sign_topk": {"P": 5, "F": 37}[conv]}[kind]
    np.testing.assert_array_equal(cum, thesis_ch4_cumulative_bits(steps, b, 10, inst.problem.graph.n_edges))


def test_crossing_interpolates_log_linearly():
    steps = np.array([1, 10, 20])
    gap = np.array([1.0, 1e-1, 1e-3])
    assert crossing(steps, gap, 1e-2) == pytest.approx(15.0)
    assert np.isnan(crossing(steps, gap, 1e-4))


def test_qcqp_runs_and_converges():
    inst = _instance()
    res = run_scheme(inst.problem, inst.x_init, compressor=make_compressor("sign", 1), feedback="bandit", eta=1e-3,
                     delta=100.0, zeta=1e-4, T=2000, rng_samples=np.random.default_rng(0),
                     rng_directions=np.random.default_rng(1))
    p = inst.problem
    gap = lambda X: p.expected_cost(X).sum() - p.expected_cost(inst.x_star).sum()  # noqa: E731
    assert gap(res.xbar) < 0.02 * gap(inst.x_init)
    assert np.all(np.linalg.norm(res.x, axis=1) <= p.radius - 1e-4 + 1e-12)


# ---- problems -----------------------------------------------------------------------------------

def test_er_graph_connected_and_p():
    rng = np.random.default_rng(0)
    g = erdos_renyi_connected(30, 0.3, rng)
    assert g.is_connected() and np.all(g.edges[:, 0] < g.edges[:, 1])
    counts = [erdos_renyi_connected(30, 0.3, rng).n_edges for _ in range(50)]
    assert abs(np.mean(counts) - 0.3 * 435) < 5 * np.sqrt(0.3 * 0.7 * 435 / 50) + 1


def test_qcqp_sample_gradient_unbiased_and_expected_cost():
    p = qcqp(mu=np.ones((3, 2)), var=np.full(3, 0.5))
    X = np.array([[0.3, -0.2], [1.0, 0.5], [0.0, 0.1]])
    rng = np.random.default_rng(0)
    grads = np.stack([p.grad(X, p.draw(rng)) for _ in range(20_000)])
    losses = np.stack([p.loss(X, p.draw(rng)) for _ in range(20_000)])
    m, tol = _mc_mean_and_tol(grads)
    assert np.all(np.abs(m - p.expected_grad(X)) < tol)
    m, tol = _mc_mean_and_tol(losses)
    assert np.all(np.abs(m - p.expected_cost(X)) < tol)


def test_logistic_expected_cost_quadrature_and_gradient():
    rng = np.random.default_rng(4)
    prob = make_logistic(6, 4, 0.6, 40 / np.sqrt(6), (-10, -7), 0.3, 100, rng, rng, rng)
    X = rng.standard_normal((6, 4)) * 0.5
    mc = np.stack([prob.loss(X, prob.draw(rng)) for _ in range(100_000)])
    m, tol = _mc_mean_and_tol(mc)
    assert np.all(np.abs(m - prob.expected_cost(X)) < tol)
    # degenerate covariance (x ∥ x_true) and the minimum at x_true
    F_true = prob.expected_cost(prob.x_true)
    assert np.all(np.isfinite(F_true))
    assert np.all(prob.expected_cost(prob.x_true * 1.1) > F_true)
    assert np.all(prob.expected_cost(prob.x_true * 0.9) > F_true)
    # sample gradient against finite differences of the sample loss
    s = prob.draw(rng)
    h = 1e-6
    fd = np.stack([(prob.loss(X + h * e, s) - prob.loss(X - h * e, s)) / (2 * h) for e in np.eye(4)], axis=1)
    np.testing.assert_allclose(prob.grad(X, s), fd, rtol=1e-6, atol=1e-8)
    assert np.all(edge_values(prob.x_true, prob.graph, prob.c) <= 0)


def test_logistic_expected_cost_is_the_two_softplus_quadrature_to_the_bit():
    """expected_cost evaluates softplus(-b) and softplus(b) from one shared log1p(exp(-|b|)); the value must be the
    plain formula's, sa logaddexp(0, -b) + (1 - sa) logaddexp(0, b), bit for bit (also where b is 0, huge or
    infinite), so the quick ch. 4 numbers do not move."""
    import fedrepro.mtl.problems as problems

    rng = np.random.default_rng(7)
    prob = make_logistic(6, 4, 0.6, 40 / np.sqrt(6), (-10, -7), 0.3, 100, rng, rng, rng)
    for X in (rng.standard_normal((6, 4)) * 0.5, prob.x_true, -prob.x_true, np.zeros((6, 4)),
              rng.standard_normal((6, 4)) * 1e3, rng.standard_normal((6, 4)) * 1e-200):
        s_aa = np.einsum("nd,nd->n", prob.x_true, prob.x_true)
        s_ab = np.einsum("nd,nd->n", prob.x_true, X)
        l11 = np.sqrt(s_aa)
        l21 = s_ab / l11
        l22 = np.sqrt(np.maximum(np.einsum("nd,nd->n", X, X) - l21**2, 0.0))
        z1, z2 = problems._GH_NODES[:, None], problems._GH_NODES[None, :]
        a = l11[:, None, None] * z1
        b = l21[:, None, None] * z1 + l22[:, None, None] * z2
        sa = problems._sigmoid(a)
        plain = sa * np.logaddexp(0.0, -b) + (1.0 - sa) * np.logaddexp(0.0, b)
        w = problems._GH_WEIGHTS[:, None] * problems._GH_WEIGHTS[None, :]
        assert np.array_equal(prob.expected_cost(X), np.einsum("kl,nkl->n", w, plain))
    b = np.array([0.0, -0.0, 1e-300, -1e-300, 3.5, -3.5, 40.0, -40.0, 800.0, -800.0, np.inf, -np.inf])
    shared = np.logaddexp(0.0, -np.abs(b))
    assert np.array_equal(np.maximum(-b, 0.0) + shared, np.logaddexp(0.0, -b))
    assert np.array_equal(np.maximum(b, 0.0) + shared, np.logaddexp(0.0, b))


# ---- reference solver ---------------------------------------------------------------------------

def test_scipy_reference_satisfies_kkt_with_active_constraints():
    """Nodes pulled apart (μ of opposite signs) with tight constraints: edges bind at the optimum."""
    p = qcqp(mu=[[40.0, 0.0], [0.0, 0.0], [-40.0, 0.0]], c=[-0.5, -0.5], radius=5.0)
    x = solve_reference(p)
    kkt = kkt_residuals(p, x)
    assert kkt["n_active"] == 2
    assert kkt["violation"] < 1e-8
    assert kkt["stationarity_rel"] < 1e-5  # SLSQP at ftol 1e-10
    assert kkt["complementarity"] < 1e-6
    assert kkt["min_multiplier"] > 0
    xu, how = qcqp_optimum(p)
    assert how == "slsqp" and np.allclose(xu, x, atol=1e-5)


def test_scipy_reference_with_active_ball_and_closed_form_case():
    p = qcqp(mu=[[400.0, 0.0], [400.0, 0.0], [400.0, 0.0]], c=[-1.0, -1.0], radius=1.0)
    kkt = kkt_residuals(p, solve_reference(p))
    assert kkt["n_active"] == 3 and kkt["stationarity_rel"] < 1e-5 and kkt["violation"] < 1e-8
    inst = _instance()  # the experiments' regime: constraints inactive, x* = -μ/(2 df)
    x, how = qcqp_optimum(inst.problem)
    assert how == "closed-form"
    assert kkt_residuals(inst.problem, x)["stationarity"] < 1e-12
    assert np.allclose(solve_reference(inst.problem), x, atol=1e-6)

"""The reference solution x* of the deterministic problem, from SciPy, and its KKT residuals.

min Σ_i F_i(x_i)  s.t.  g_e(x) = ‖x_i - x_j‖² + c_e ≤ 0 (every edge),  ‖x_i‖² ≤ ρ² (every node).

For the QCQP under A-Q1/A-Q2 the constraints are inactive at the unconstrained minimizer
-μ_i/(2 df) (Sec. 4.5.1); ``qcqp_optimum`` returns it after checking feasibility and otherwise
falls back to the SciPy solve.  ``kkt_residuals`` checks any candidate: the multipliers of the
active constraints are fitted by non-negative least squares.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize, nnls

from fedrepro.mtl.problems import edge_values


def _constraints(x: np.ndarray, graph, c: np.ndarray, radius: float):
    """Values h(x) ≤ 0 and the Jacobian (m × nd) of all constraints: edges first, then balls."""
    n, d = x.shape
    E = graph.n_edges
    D = x[graph.heads] - x[graph.tails]
    h = np.concatenate([np.einsum("ed,ed->e", D, D) + c, np.einsum("nd,nd->n", x, x) - radius**2])
    J = np.zeros((E + n, n, d))
    J[np.arange(E), graph.heads] = 2 * D
    J[np.arange(E), graph.tails] = -2 * D
    J[E + np.arange(n), np.arange(n)] = 2 * x
    return h, J.reshape(E + n, n * d)


def solve_reference(problem, x0: np.ndarray | None = None, tol: float = 1e-10, maxiter: int = 1000) -> np.ndarray:
    """SLSQP on the expected cost with the edge and ball constraints (needs ``expected_grad``).

    The default start is a small fixed perturbation of 0 (at x = 0 every edge constraint has a zero
    gradient, which stalls SLSQP).  A run SLSQP reports as failed is accepted only if its KKT
    residuals are small (scaled stationarity < 1e-5, violation < 1e-8)."""
    n, d = problem.n, problem.d
    graph, c, radius = problem.graph, problem.c, problem.radius

    def fun(z):
        return float(problem.expected_cost(z.reshape(n, d)).sum())

    def jac(z):
        return problem.expected_grad(z.reshape(n, d)).ravel()

    cons = {"type": "ineq",
            "fun": lambda z: -_constraints(z.reshape(n, d), graph, c, radius)[0],
            "jac": lambda z: -_constraints(z.reshape(n, d), graph, c, radius)[1]}
    z0 = 1e-2 * np.random.default_rng(0).standard_normal(n * d) if x0 is None else np.asarray(x0, dtype=float).ravel()
    res = minimize(fun, z0, jac=jac, constraints=[cons], method="SLSQP", options={"ftol": tol, "maxiter": maxiter})
    x = res.x.reshape(n, d)
    if not res.success:
        kkt = kkt_residuals(problem, x)
        if not (kkt["stationarity_rel"] < 1e-5 and kkt["violation"] < 1e-8):
            raise RuntimeError(f"SLSQP did not converge: {res.message}; KKT residuals {kkt}")
    return x


def kkt_residuals(problem, x: np.ndarray, active_tol: float = 1e-6) -> dict[str, float]:
    """Stationarity ‖∇F + Σ μ_k ∇h_k‖ (μ ≥ 0 fitted on the active set by NNLS), the largest
    violation max(h, 0), the complementarity max |μ_k h_k| and the number of active constraints."""
    h, J = _constraints(x, problem.graph, problem.c, problem.radius)
    grad = problem.expected_grad(x).ravel()
    active = h > -active_tol
    mu = np.zeros(h.size)
    if active.any():
        mu[active], _ = nnls(J[active].T, -grad)
    stat = grad + J.T @ mu
    return {"stationarity": float(np.linalg.norm(stat)), "stationarity_rel": float(np.linalg.norm(stat) / max(np.linalg.norm(grad), 1e-300)),
            "violation": float(max(h.max(), 0.0)), "complementarity": float(np.max(np.abs(mu * h))),
            "n_active": int(active.sum()), "min_multiplier": float(mu[active].min()) if active.any() else 0.0}


def qcqp_optimum(problem, check_tol: float = 0.0) -> tuple[np.ndarray, str]:
    """(x*, how): the unconstrained minimizer when it is feasible ('closed-form'), else SciPy ('slsqp')."""
    xu = problem.unconstrained_optimum()
    feasible = np.all(edge_values(xu, problem.graph, problem.c) <= check_tol) and \
        np.all(np.linalg.norm(xu, axis=1) <= problem.radius)
    if feasible:
        return xu, "closed-form"
    return solve_reference(problem, x0=xu), "slsqp"

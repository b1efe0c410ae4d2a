"""The two problems of §4.5: a stochastic QCQP (4.15) and logistic regression (4.16).

Both have per-node stochastic costs f_i(x_i, ξ_i), a closed form (or exact quadrature) for the
expected cost F_i, the pairwise constraints g_ij = ‖x_i - x_j‖² + c_ij ≤ 0 on the edges (one c per
undirected edge, A-Q3) and the feasible ball of radius ρ.  Everything is batched over nodes:
X has shape (n, d); a sample is a tuple of arrays with a leading node axis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

from fedrepro.mtl.graph import Graph

# ---- pairwise constraints -------------------------------------------------------------------------

def edge_values(X: np.ndarray, graph: Graph, c: np.ndarray) -> np.ndarray:
    """g_e(X) = ‖x_i - x_j‖² + c_e for every edge e = (i, j), shape (E,)."""
    D = X[graph.heads] - X[graph.tails]
    return np.einsum("ed,ed->e", D, D) + c


def constraint_gradient(X: np.ndarray, lam: np.ndarray, graph: Graph, incidence=None) -> np.ndarray:
    """2 Σ_{j∈N_i} λ_ij ∇_{x_i} g_ij(x_i, x_j) for every node (the merged form of (4.4); λ_ij = λ_ji),
    with ∇_{x_i} g_ij = 2 (x_i - x_j).  Shape (n, d)."""
    B = graph.incidence() if incidence is None else incidence
    D = X[graph.heads] - X[graph.tails]
    return np.asarray(B @ (4.0 * lam[:, None] * D))


# ---- QCQP (4.15) ---------------------------------------------------------------------------------

@dataclass
class QCQPProblem:
    """f_i(x, ξ) = xᵀA x + bᵀx, A ~ Wishart(df, I_d) (A-Q1: A = GᵀG, G ∈ R^{df×d} standard normal),
    b ~ N(μ_i, v_i I) (A-Q2), both redrawn at every iteration and node.  E A = df I, so
    F_i(x) = df ‖x‖² + μ_iᵀx."""

    graph: Graph
    mu: np.ndarray  # (n, d)
    var: np.ndarray  # (n,)
    c: np.ndarray  # (E,)
    radius: float
    df: int = 10
    name: str = "qcqp"
    x_star: np.ndarray | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return self.mu.shape[0]

    @property
    def d(self) -> int:
        return self.mu.shape[1]

    def draw(self, rng: np.random.Generator):
        G = rng.standard_normal((self.n, self.df, self.d))
        b = self.mu + np.sqrt(self.var)[:, None] * rng.standard_normal((self.n, self.d))
        return G, b

    def loss(self, X: np.ndarray, sample) -> np.ndarray:
        G, b = sample
        GX = np.einsum("nkd,nd->nk", G, X)
        return np.einsum("nk,nk->n", GX, GX) + np.einsum("nd,nd->n", b, X)

    def grad(self, X: np.ndarray, sample) -> np.ndarray:
        G, b = sample
        GX = np.einsum("nkd,nd->nk", G, X)
        return 2.0 * np.einsum("nkd,nk->nd", G, GX) + b  # 2 A x + b with A x = Gᵀ(G x)

    def expected_cost(self, X: np.ndarray) -> np.ndarray:
        return self.df * np.einsum("nd,nd->n", X, X) + np.einsum("nd,nd->n", self.mu, X)

    def expected_grad(self, X: np.ndarray) -> np.ndarray:
        return 2.0 * self.df * X + self.mu

    def expected_hess_diag(self) -> np.ndarray:
        return np.full(self.n, 2.0 * self.df)

    def unconstrained_optimum(self) -> np.ndarray:
        return -self.mu / (2.0 * self.df)


def make_qcqp(n: int, d: int, p: float, radius: float, c_range: tuple[float, float], df: int,
              rng_graph, rng_problem, scalar_mean: bool = False) -> QCQPProblem:
    from fedrepro.mtl.graph import erdos_renyi_connected

    graph = erdos_renyi_connected(n, p, rng_graph)
    mu = rng_problem.random((n, 1)) * np.ones((1, d)) if scalar_mean else rng_problem.random((n, d))
    var = rng_problem.random(n)
    c = rng_problem.uniform(c_range[0], c_range[1], graph.n_edges)
    return QCQPProblem(graph=graph, mu=mu, var=var, c=c, radius=radius, df=df)


# ---- logistic regression (4.16) -------------------------------------------------------------------

_GH_NODES, _GH_WEIGHTS = hermegauss(40)
_GH_WEIGHTS = _GH_WEIGHTS / np.sqrt(2.0 * np.pi)  # probabilists' rule: Σ w h(z) ≈ E h(Z), Z ~ N(0, 1)


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


@dataclass
class LogisticProblem:
    """f_i(x, (p, y)) = log(1 + exp(-y xᵀp)), p ~ N(0, I_d), P(y = 1 | p) = σ(x_trueᵀp); one fresh
    sample per node and iteration (A-L1).  The model is well specified and x_true is feasible, so
    x* = x_true (thesis footnote 3).  F_i is computed exactly by 2-D Gauss–Hermite quadrature (A-L4)."""

    graph: Graph
    x_true: np.ndarray  # (n, d)
    c: np.ndarray
    radius: float
    test_p: np.ndarray  # (n, m, d)
    test_y: np.ndarray  # (n, m)
    batch: int = 1
    name: str = "logistic"

    @property
    def n(self) -> int:
        return self.x_true.shape[0]

    @property
    def d(self) -> int:
        return self.x_true.shape[1]

    @property
    def x_star(self) -> np.ndarray:
        return self.x_true

    def draw(self, rng: np.random.Generator):
        P = rng.standard_normal((self.n, self.batch, self.d))
        prob = _sigmoid(np.einsum("nbd,nd->nb", P, self.x_true))
        y = np.where(rng.random((self.n, self.batch)) < prob, 1.0, -1.0)
        return P, y

    def loss(self, X: np.ndarray, sample) -> np.ndarray:
        P, y = sample
        margin = y * np.einsum("nbd,nd->nb", P, X)
        return np.logaddexp(0.0, -margin).mean(axis=1)

    def grad(self, X: np.ndarray, sample) -> np.ndarray:
        P, y = sample
        margin = y * np.einsum("nbd,nd->nb", P, X)
        coef = -y * _sigmoid(-margin)  # d/dm log(1 + e^{-m}) = -σ(-m)
        return np.einsum("nb,nbd->nd", coef, P) / P.shape[1]

    def expected_cost(self, X: np.ndarray) -> np.ndarray:
        """F_i(x) = E[σ(a) softplus(-b) + (1 - σ(a)) softplus(b)], (a, b) = (x_trueᵀp, xᵀp) jointly Gaussian."""
        s_aa = np.einsum("nd,nd->n", self.x_true, self.x_true)
        s_ab = np.einsum("nd,nd->n", self.x_true, X)
        s_bb = np.einsum("nd,nd->n", X, X)
        l11 = np.sqrt(s_aa)
        l21 = s_ab / l11
        l22 = np.sqrt(np.maximum(s_bb - l21**2, 0.0))
        z1 = _GH_NODES[:, None]
        z2 = _GH_NODES[None, :]
        w = _GH_WEIGHTS[:, None] * _GH_WEIGHTS[None, :]
        a = l11[:, None, None] * z1
        b = l21[:, None, None] * z1 + l22[:, None, None] * z2
        sa = _sigmoid(a)
        # val = sa softplus(-b) + (1 - sa) softplus(b).  The two softplus share log1p(exp(-|b|)): NumPy's
        # logaddexp(0, y) is max(0, y) + that term, evaluated the same way, so one logaddexp gives both bit for bit
        # (tests/mtl).  In place on three (n, 40, 40) buffers: the plain expression's extra temporaries made glibc
        # hand heap memory back and fault it in again on every call (1.9 million page faults in a quick fig4_2 run).
        shared = np.abs(b)
        np.logaddexp(0.0, np.negative(shared, out=shared), out=shared)
        soft_pos = np.maximum(b, 0.0)
        soft_pos += shared
        soft_neg = np.maximum(np.negative(b, out=b), 0.0, out=b)
        soft_neg += shared
        soft_neg *= sa
        soft_pos *= 1.0 - sa
        soft_neg += soft_pos
        return np.einsum("kl,nkl->n", w, soft_neg)

    def accuracy(self, X: np.ndarray) -> float:
        """Pooled test accuracy (A-M3) of sign(xᵢᵀp) against the test labels."""
        pred = np.sign(np.einsum("nmd,nd->nm", self.test_p, X))
        return float(np.mean(pred == self.test_y))

    def bayes_accuracy(self) -> float:
        return self.accuracy(self.x_true)


def make_logistic(n: int, d: int, p: float, radius: float, c_range: tuple[float, float], spread: float,
                  n_test: int, rng_graph, rng_problem, rng_test, batch: int = 1, max_tries: int = 10000) -> LogisticProblem:
    """A-L2: x_true_i = z0 + s ε_i with z0, ε_i ~ N(0, I), redrawn until every edge constraint holds at
    x_true and every ‖x_true_i‖ < ρ; c_e ~ U[c_range] drawn first, once per edge."""
    from fedrepro.mtl.graph import erdos_renyi_connected

    graph = erdos_renyi_connected(n, p, rng_graph)
    c = rng_problem.uniform(c_range[0], c_range[1], graph.n_edges)
    for _ in range(max_tries):
        x_true = rng_problem.standard_normal(d)[None, :] + spread * rng_problem.standard_normal((n, d))
        if np.all(edge_values(x_true, graph, c) <= 0) and np.all(np.linalg.norm(x_true, axis=1) < radius):
            break
    else:
        raise RuntimeError("no feasible ground truth for the logistic problem; lower 'spread' (A-L2)")
    test_p = rng_test.standard_normal((n, n_test, d))
    prob = _sigmoid(np.einsum("nmd,nd->nm", test_p, x_true))
    test_y = np.where(rng_test.random((n, n_test)) < prob, 1.0, -1.0)
    return LogisticProblem(graph=graph, x_true=x_true, c=c, radius=radius, test_p=test_p, test_y=test_y, batch=batch)

"""The exact optimum of linear MAX-VAR (Sec. II-A; Theorem 3, Sec. IV-B).

G_opt = the K principal eigenvectors of P = sum_i X_i X_i^+ (a sum of orthogonal projectors) and
v* = 1/2 (I K - sum_{k<=K} lambda_k(P)).  Dense views: P is formed from the views' eigensystems and
eigh'd (J x J).  Sparse (or large) views: Lanczos (scipy eigsh, k = K) on the implicit operator
P v = sum_i X_i (X_i^T X_i)^+ (X_i^T v), never forming a J x J matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse.linalg import LinearOperator, eigsh

from fedrepro.gcca.views import RANK_CUTOFF, DenseViews, _Views


@dataclass
class Optimum:
    v_star: float
    G: np.ndarray  # (J, K) orthonormal
    eigenvalues: np.ndarray  # the top K (and, for dense, K+1) eigenvalues of P, descending
    method: str


def _projector_factors(views: DenseViews) -> np.ndarray:
    """W = [X_1 V_1 L_1^{-1/2}, ..., X_I V_I L_I^{-1/2}] (J, sum of ranks): P = W W^T."""
    keep = views.lam > RANK_CUTOFF * views.lam[:, -1:]
    scale = np.where(keep, 1.0 / np.sqrt(np.where(keep, views.lam, 1.0)), 0.0)
    B = (views.X @ views.V) * scale[:, None, :]  # (I, J, N): orthonormal columns (or zero)
    return np.concatenate(list(B), axis=1)


def optimum(views: _Views, K: int, *, method: str = "auto", dense_limit: int = 4000, seed: int = 0) -> Optimum:
    """v* and G_opt.  method: "eigh" (form P, dense views only), "lanczos" (implicit P) or "auto"."""
    if method == "auto":
        method = "eigh" if isinstance(views, DenseViews) and views.J <= dense_limit else "lanczos"
    I = views.I
    if method == "eigh":
        if not isinstance(views, DenseViews):
            raise ValueError("method 'eigh' needs dense views; use 'lanczos' for sparse ones")
        W = _projector_factors(views)
        evals, evecs = np.linalg.eigh(W @ W.T)
        order = np.argsort(evals)[::-1]
        evals, evecs = evals[order], evecs[:, order]
        top = evals[:K]
        return Optimum(0.5 * (I * K - float(top.sum())), evecs[:, :K], evals[: K + 1], "eigh")
    if method != "lanczos":
        raise ValueError(f"method must be 'auto', 'eigh' or 'lanczos'; got {method!r}")

    def matmat(V):
        V2 = np.asarray(V, dtype=np.float64).reshape(views.J, -1)
        return views.apply(views.pinv_apply(views.xt(V2))).sum(axis=0)

    op = LinearOperator((views.J, views.J), matvec=lambda v: matmat(v).ravel(), matmat=matmat, dtype=np.float64)
    v0 = np.random.default_rng(seed).standard_normal(views.J)
    # tol 1e-8 on eigenvalues near I gives v* to ~1e-7 absolute; a wide Krylov space copes with the clustered top
    evals, evecs = eigsh(op, k=K, which="LA", v0=v0, tol=1e-8, ncv=min(views.J, max(2 * K + 1, 40)))
    order = np.argsort(evals)[::-1]
    evals, evecs = evals[order], evecs[:, order]
    return Optimum(0.5 * (I * K - float(evals.sum())), evecs, evals, "lanczos")

"""The MAX-VAR cost and the G-step (Sec. II-A, eq. 2; Sec. III-A)."""

from __future__ import annotations

import numpy as np


def polar(Y: np.ndarray) -> np.ndarray:
    """U V^T of the thin SVD Y = U S V^T: argmax_{G^T G = I} tr(G^T Y), the orthogonal Procrustes solution (eq. 9/16).

    Computed from the K x K Gram matrix (O(J K^2), no J x J work): with Y^T Y = W diag(s^2) W^T,
    U V^T = Y W diag(1/s) W^T.  Falls back to LAPACK's thin SVD when Y is ill-conditioned.
    """
    gram = Y.T @ Y
    s2, W = np.linalg.eigh(gram)
    if s2[0] > 1e-10 * s2[-1] and s2[0] > 0:
        return Y @ (W / np.sqrt(s2)) @ W.T
    U, _, Vt = np.linalg.svd(Y, full_matrices=False)
    return U @ Vt


def maxvar_objective(M: np.ndarray, G: np.ndarray) -> float:
    """f = sum_i 1/2 ||M_i - G||_F^2 for the stacked representations M (I, J, K) = X_i Q_i (eq. 2/7)."""
    return 0.5 * float(np.sum((M - G[None]) ** 2))

"""MVLSA (Rastogi et al. 2015): the warm start and the reference baseline (Sec. V-A.2).

Node i sends W_i = U_i T_i (rank-K~ truncated SVD of X_i, T_i = diag(s/sqrt(s^2 + mu)) = I at mu = 0);
the server takes G = the top-K left singular vectors of [W_1, ..., W_I]; node i sets
Q_i = V_i S_i^{-1} U_i^T G.  The truncated SVD comes from the Gram eigensystem the views hold
(X_i^T X_i = V L V^T, U = X V L^{-1/2}), which is exact and avoids a separate svds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.gcca.objective import maxvar_objective
from fedrepro.gcca.views import _Views


@dataclass
class MvlsaResult:
    Q: np.ndarray  # (I, N, K)
    G: np.ndarray  # (J, K)
    cost: float  # f on the full views (the cost of Problem (7))


def mvlsa(views: _Views, K: int, K_tilde: int, mu: float = 0.0) -> MvlsaResult:
    if K_tilde > views.N:
        raise ValueError(f"K_tilde ({K_tilde}) must be at most N ({views.N})")
    lam = views.lam[:, ::-1][:, :K_tilde]  # (I, Kt) descending
    V = views.V[:, :, ::-1][:, :, :K_tilde]  # (I, N, Kt)
    s = np.sqrt(lam)
    U = views.apply(V / s[:, None, :])  # (I, J, Kt): X V S^{-1}
    T = s / np.sqrt(s**2 + mu)
    W = np.concatenate(list(U * T[:, None, :]), axis=1)  # (J, I Kt)
    # top-K left singular vectors of W via the (I Kt)^2 Gram matrix
    evals, evecs = np.linalg.eigh(W.T @ W)
    top = np.argsort(evals)[::-1][:K]
    G = W @ evecs[:, top] / np.sqrt(evals[top])
    Q = (V / s[:, None, :]) @ (np.swapaxes(U, 1, 2) @ G)  # V S^{-1} U^T G
    return MvlsaResult(Q=Q, G=G, cost=maxvar_objective(views.apply(Q), G))

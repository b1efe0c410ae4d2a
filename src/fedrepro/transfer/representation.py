"""Phase 1 / Phase 2 / Scratch estimators of thesis ch. 5 (eqs. 5.5-5.7), batched over right-hand sides.

Every function takes targets ``y`` of shape (n, B): B problems that share one design matrix
(Table 5.1 shares the designs of one run across its five in-out ratios), so one
eigendecomposition serves all of them.
"""

from __future__ import annotations

import numpy as np


def phase1_fit(X1: np.ndarray, V: np.ndarray, y1: np.ndarray) -> np.ndarray:
    """Eq. (5.5): least squares on the span of the source representation, theta = V w_hat.

    theta depends only on the column space of V, so V need not be orthonormal.
    """
    w, *_ = np.linalg.lstsq(X1 @ V, y1, rcond=None)
    return V @ w


def _spectral_gd_filter(s2: np.ndarray, steps: float) -> np.ndarray:
    """Per-eigendirection factor f/s^2 of K gradient steps with step 1/L, L = s_max^2 (see gd_least_squares).

    K steps of GD from theta0 on ||y - X theta||^2 move theta by
    V diag((1 - (1 - s_i^2/s_max^2)^K) / s_i) U^T r  with r = y - X theta0.
    K = inf gives the pseudo-inverse (minimum-distance interpolant, or OLS when n > d).
    """
    s2_max = s2.max()
    tol = s2_max * max(s2.shape[0], 1) * np.finfo(s2.dtype).eps
    live = s2 > tol
    out = np.zeros_like(s2)
    if np.isinf(steps):
        out[live] = 1.0 / s2[live]
    else:
        # 1 - (1 - x)^K computed without cancellation for small x = s^2 / s_max^2
        x = s2[live] / s2_max
        out[live] = -np.expm1(steps * np.log1p(-np.minimum(x, 1.0 - 1e-16))) / s2[live]
        out[live & (s2 >= s2_max)] = 1.0 / s2_max  # the top direction converges in one step
    return out


def gd_least_squares(X: np.ndarray, y: np.ndarray, theta0: np.ndarray, steps: float) -> np.ndarray:
    """Eqs. (5.6)-(5.7): `steps` full-batch GD steps with eta = n / (2 s_max^2), i.e. step 1/L, from theta0.

    Computed in closed form through the eigendecomposition of the smaller Gram matrix (exact for
    any K, and K = inf gives the interpolant closest to theta0, Lemma 9). Shapes: X (n, d),
    y and the returned theta (n, B) and (d, B); theta0 (d, B).
    """
    n, d = X.shape
    r = y - X @ theta0
    if n <= d:
        s2, U = np.linalg.eigh(X @ X.T)
        filt = _spectral_gd_filter(s2, steps)
        return theta0 + X.T @ (U @ (filt[:, None] * (U.T @ r)))
    s2, W = np.linalg.eigh(X.T @ X)
    filt = _spectral_gd_filter(s2, steps)
    return theta0 + W @ (filt[:, None] * (W.T @ (X.T @ r)))


def gd_least_squares_iterative(X: np.ndarray, y: np.ndarray, theta0: np.ndarray, steps: int) -> np.ndarray:
    """The same GD run literally, step by step (reference for tests; O(steps * n * d))."""
    n = X.shape[0]
    s_max = np.linalg.norm(X, 2)
    eta = n / (2.0 * s_max**2)
    theta = theta0.copy()
    for _ in range(steps):
        theta -= (2.0 * eta / n) * (X.T @ (X @ theta - y))
    return theta


def error_ratios(X_te: np.ndarray, y_te: np.ndarray, theta_hat: np.ndarray, theta_true: np.ndarray,
                      sigma_diag: np.ndarray) -> dict[str, np.ndarray]:
    """Table 5.1's measures for each of B problems.

    root_ratio: ||X_te theta_hat - y_te|| / ||X_te theta* - y_te||   (A-T6, the primary reading)
    mse_ratio:  the square of it (the literal "ratio of the errors")
    eer:        ||Sigma^{1/2} (theta_hat - theta*)||^2, the excess risk of eq. (5.2)
    """
    err_hat = np.linalg.norm(X_te @ theta_hat - y_te, axis=0)
    err_true = np.linalg.norm(X_te @ theta_true - y_te, axis=0)
    root = err_hat / err_true
    diff = theta_hat - theta_true
    eer = np.einsum("db,d,db->b", diff, sigma_diag, diff)
    return {"root_ratio": root, "mse_ratio": root**2, "eer": eer}

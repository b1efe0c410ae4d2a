"""Stiefel-manifold primitives, batched over a leading client axis (adept.md 3.1).

All functions accept (..., d, r) arrays; the leading axes are batch axes (clients).
"""

from __future__ import annotations

import numpy as np


def sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def proj_tangent(u: np.ndarray, g: np.ndarray) -> np.ndarray:
    """P_{T_U}(G) = G - 1/2 U (U^T G + G^T U)."""
    return g - u @ sym(np.swapaxes(u, -1, -2) @ g)


def polar(a: np.ndarray) -> np.ndarray:
    """Orthogonal polar factor P Q^T of A = P S Q^T (thin SVD); the polar retraction of U + Xi when A = U + Xi."""
    p, _, qt = np.linalg.svd(a, full_matrices=False)
    return p @ qt


def retract(u: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """R_U(Xi) = (U + Xi)(I + Xi^T Xi)^{-1/2} for tangent Xi, computed as the polar factor of U + Xi."""
    return polar(u + xi)


def haar(d: int, r: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform point on St(d, r): Q of a Gaussian d x r matrix, columns sign-fixed by diag(R)."""
    q, rr = np.linalg.qr(rng.standard_normal((d, r)))
    return q * np.sign(np.diag(rr))


def dist2(v: np.ndarray, u: np.ndarray) -> np.ndarray:
    """d^2(V, U) = ||P_{T_V}(U)||_F^2, over the trailing two axes."""
    return np.sum(proj_tangent(v, u) ** 2, axis=(-2, -1))


def orthonormality_error(u: np.ndarray) -> float:
    r = u.shape[-1]
    return float(np.max(np.abs(np.swapaxes(u, -1, -2) @ u - np.eye(r))))

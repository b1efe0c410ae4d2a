"""Projections of Algorithms 2 and 3, batched over nodes (rows).

X is the centered Euclidean ball of radius ρ (both experiments).  The bandit algorithm projects
onto the shrunk set X~ = {(1 - ζ/r) x + (ζ/r) y0 : x ∈ X} (Assumption 8); for the centered ball
with y0 = 0 and r = ρ this is the ball of radius ρ - ζ, so x ± ζu stays in X for every unit u.
"""

from __future__ import annotations

import numpy as np


def project_ball(Y: np.ndarray, radius: float) -> np.ndarray:
    """Each row of Y projected onto {‖x‖ ≤ radius}."""
    norms = np.linalg.norm(Y, axis=-1, keepdims=True)
    scale = np.where(norms > radius, radius / np.where(norms > radius, norms, 1.0), 1.0)
    return Y * scale


def project_shrunk(Y: np.ndarray, radius: float, zeta: float, y0: np.ndarray | None = None,
                   r: float | None = None) -> np.ndarray:
    """Projection onto X~ for X the ball of `radius` (general form, Sec. 4.4.1):
    Π_X~(y) = (1 - α) Π_X((y - α y0)/(1 - α)) + α y0 with α = ζ/r (default y0 = 0, r = radius)."""
    r = radius if r is None else r
    alpha = zeta / r
    if not 0 <= alpha < 1:
        raise ValueError(f"zeta/r must lie in [0, 1); got zeta={zeta}, r={r}")
    y0 = np.zeros(Y.shape[-1]) if y0 is None else np.asarray(y0, dtype=float)
    return (1 - alpha) * project_ball((Y - alpha * y0) / (1 - alpha), radius) + alpha * y0

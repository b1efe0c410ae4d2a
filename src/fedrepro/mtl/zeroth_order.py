"""The two-point zeroth-order gradient estimator of Algorithm 3 (thesis (4.12), Fact 1).

For φ and ζ > 0, with u uniform on the unit sphere S^{d-1},
    ĝ(x) = d/(2ζ) [φ(x + ζu) - φ(x - ζu)] u
is an unbiased estimate of ∇φ~(x), φ~(x) = E_{v ~ U(ball)} φ(x + ζv) (Flaxman et al.): the
symmetric form is the one-point estimate d/ζ φ(x+ζu)u averaged with its reflection u → -u.
The thesis prints d/(2ξ); it must be d/(2ζ) (Algorithm 3, Sec. 4.4.1).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def sphere_directions(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """n directions uniform on S^{d-1}: normalized standard Gaussians."""
    z = rng.standard_normal((n, d))
    return z / np.linalg.norm(z, axis=1, keepdims=True)


def two_point_estimate(loss: Callable[[np.ndarray], np.ndarray], X: np.ndarray, zeta: float,
                       U: np.ndarray) -> np.ndarray:
    """Rows: d/(2ζ) [loss(X + ζU) - loss(X - ζU)] U.  `loss` maps (n, d) points to (n,) values (the SAME
    sample at both queries); one direction per node."""
    d = X.shape[1]
    diff = loss(X + zeta * U) - loss(X - zeta * U)
    return (d / (2.0 * zeta)) * diff[:, None] * U

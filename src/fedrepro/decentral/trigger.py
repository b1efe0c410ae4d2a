"""The event trigger (Algorithm 1, step 4): node i fires at a sync round iff ‖x_i^{t+1/2} - x̂_i^t‖² > c_t η_t²
(strict), and every node fires at the first sync round (force_first)."""

from __future__ import annotations

import numpy as np


def trigger_mask(sq_drift: np.ndarray, c_t: float, eta: float, first: bool, force_first: bool = True) -> np.ndarray:
    """sq_drift: (n,) squared drift norms over the whole flattened vector (A-06)."""
    sq = np.asarray(sq_drift, dtype=np.float64)
    if first and force_first:
        return np.ones(sq.shape, dtype=bool)
    return sq > c_t * eta * eta

"""Cross-language alignment accuracy AC (Sec. V-A.5, gcca:A-11), vectorized.

AC = 1/(I(I-1)) sum over ordered pairs i != m of 1/J sum_p [dist_im(p, p) <= dist_im(p, p') for all p' != p],
dist_im(p, p') = ||Z_i(p,:) - Z_m(p',:)||_2, Z_i = X_i^test Q_i.  Ties count as success.

For a fixed query row p of view i, ||Z_i(p)||^2 is common to the whole row, so the comparison uses the score
||Z_m(p')||^2 - 2 <Z_i(p), Z_m(p')>.  Query rows are processed in blocks (one einsum per block covers every
ordered pair at once): memory I^2 x block x J floats, chosen from ``max_bytes``.  No Python loop over pairs.
"""

from __future__ import annotations

import numpy as np


def alignment_hits(Z: np.ndarray, max_bytes: int = 256 * 2**20) -> np.ndarray:
    """(I, I) counts of aligned rows (the diagonal i == m is included; AC leaves it out)."""
    Z = np.asarray(Z, dtype=np.float64)
    I, J, _ = Z.shape
    sq = np.einsum("mqk,mqk->mq", Z, Z)  # (I, J)
    block = max(1, int(max_bytes // (8 * I * I * J)))
    hits = np.zeros((I, I), dtype=np.int64)
    for s in range(0, J, block):
        b = min(block, J - s)
        S = sq[None, :, None, :] - 2.0 * np.einsum("ipk,mqk->impq", Z[:, s:s + b], Z)  # (I, I, b, J)
        diag = S[:, :, np.arange(b), s + np.arange(b)]  # (I, I, b): the true partner p' = p
        hits += (diag <= S.min(axis=-1)).sum(axis=-1)
    return hits


def alignment_accuracy(Z: np.ndarray, max_bytes: int = 256 * 2**20) -> float:
    """AC over the ordered pairs i != m (Sec. V-A.5), Z: (I, J_test, K) test representations."""
    I, J = Z.shape[:2]
    hits = alignment_hits(Z, max_bytes)
    return float(hits[~np.eye(I, dtype=bool)].sum() / (I * (I - 1) * J))

"""A plain NumPy/SciPy CuteMaxVar (gcca Algorithm 1, SGD θ-step) written from the paper's equations alone, with the
engine's random streams: the peer that benchmarks/bench_gcca.py times fedrepro.gcca.run_maxvar against, and an
independent check of it (to rounding). It samples minibatch rows as the engine did before issue 19 (argpartition
order), so it also stands for the engine's earlier arithmetic.

Per outer iteration: T steps Q_i -= (1/λ_max(X_iᵀX_i)) (J/B) X_Fᵀ(X_F Q_i - Ĝ_F) with F the B rows of the smallest
of J uniform keys; M_i = X_i Q_i; M̂_i += C(M_i - M̂_i); G = polar(Σ_i M̂_i); Ĝ += C(G - Ĝ); f = ½ Σ_i ‖M_i - G‖².
C: m = max|Δ| per message, h = ⌊|Δ| S/m⌋ + [u < frac], C(Δ) = sign(Δ) h m / S with S = 2^(q-1) - 1 (eq. 18).
"""

from __future__ import annotations

import numpy as np


def quantize(delta: np.ndarray, q: int, rng: np.random.Generator) -> np.ndarray:
    """Eq. 18 per leading-axis element (one uniform per entry, drawn in one block as the engine does)."""
    B = delta.shape[0]
    x = delta.reshape(B, -1)
    u = rng.random(x.shape)
    S = 2 ** (q - 1) - 1
    m = np.abs(x).max(axis=1, keepdims=True)
    t = np.abs(x) * (S / np.where(m > 0, m, 1.0))
    low = np.floor(t)
    h = low + (u < t - low)
    return (np.sign(x) * h * (m / S)).reshape(delta.shape)


def polar(Y: np.ndarray) -> np.ndarray:
    U, _, Vt = np.linalg.svd(Y, full_matrices=False)
    return U @ Vt


def step_sizes(Xs: list) -> np.ndarray:
    """λ_max(X_iᵀX_i) per view (setup, not timed)."""
    return np.array([np.linalg.eigvalsh((x.T @ x).toarray())[-1] for x in Xs])


def run(Xs: list, lam: np.ndarray, Q0: np.ndarray, *, R: int, T: int, batch: int, q: int,
        rng_sgd: np.random.Generator, rng_comp: np.random.Generator) -> np.ndarray:
    """f after each of R outer iterations (the initial round is sent uncompressed)."""
    I = len(Xs)
    J = Xs[0].shape[0]
    Q = Q0.copy()
    Mhat = np.stack([x @ qi for x, qi in zip(Xs, Q)])
    G = polar(Mhat.sum(axis=0))
    Ghat = G.copy()
    f = []
    for _ in range(R):
        for _ in range(T):
            rows = np.argpartition(rng_sgd.random((I, J)), batch, axis=1)[:, :batch]
            for i, (x, r) in enumerate(zip(Xs, rows)):
                XF = x[r]
                Q[i] -= (J / batch) * (XF.T @ (XF @ Q[i] - Ghat[r])) / lam[i]
        M = np.stack([x @ qi for x, qi in zip(Xs, Q)])
        Mhat += quantize(M - Mhat, q, rng_comp)
        G = polar(Mhat.sum(axis=0))
        Ghat += quantize((G - Ghat)[None], q, rng_comp)[0]
        f.append(0.5 * float(((M - G[None]) ** 2).sum()))
    return np.array(f)

"""Graphs and their mixing matrices W (symmetric, doubly stochastic) with the spectral gap δ = 1 - |λ2(W)|.

ring:     thesis A-01, w_ii = w_{i,i±1} = 1/3 (CHOCO code's RingGraph); n = 2: w = 1/2; n = 1: [1].
torus:    r x c grid with wrap-around, uniform weights 1/(degree + 1) (degree 4 when r, c >= 3).
complete: W = 11ᵀ/n (exact averaging in one step, δ = 1).
erdos_renyi: G(n, p) redrawn until connected, Metropolis-Hastings weights w_ij = 1/(1 + max(deg_i, deg_j)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse.csgraph import connected_components


@dataclass(frozen=True)
class Topology:
    name: str
    W: np.ndarray          # (n, n) float64 mixing matrix

    @property
    def n(self) -> int:
        return int(self.W.shape[0])

    @property
    def adjacency(self) -> np.ndarray:
        A = (self.W > 0).astype(bool)
        np.fill_diagonal(A, False)
        return A

    @property
    def degree(self) -> np.ndarray:
        return self.adjacency.sum(axis=1)

    @property
    def spectral_gap(self) -> float:
        return spectral_gap(self.W)

    @property
    def lam(self) -> float:
        """λ := max_i (1 - λ_i(W)) = 1 - λ_min(W) (theory only)."""
        return float(1.0 - np.linalg.eigvalsh(self.W).min())


def spectral_gap(W: np.ndarray) -> float:
    """δ = 1 - max_{i>=2} |λ_i(W)|, eigenvalues ordered by modulus (thesis Sec. 3.2)."""
    ev = np.sort(np.abs(np.linalg.eigvalsh(np.asarray(W, dtype=np.float64))))[::-1]
    return float(1.0 - (ev[1] if ev.size > 1 else 0.0))


def ring_gap_closed_form(n: int) -> float:
    """δ of the 1/3-weight ring: λ_k = 1/3 + 2/3 cos(2πk/n), so δ = 2/3 (1 - cos(2π/n)) for n >= 5."""
    return float(2.0 / 3.0 * (1.0 - np.cos(2.0 * np.pi / n)))


def ring(n: int) -> Topology:
    if n == 1:
        return Topology("ring", np.ones((1, 1)))
    if n == 2:
        return Topology("ring", np.full((2, 2), 0.5))
    W = np.zeros((n, n))
    idx = np.arange(n)
    W[idx, idx] = 1.0 / 3.0
    W[idx, (idx + 1) % n] += 1.0 / 3.0
    W[idx, (idx - 1) % n] += 1.0 / 3.0
    return Topology("ring", W)


def complete(n: int) -> Topology:
    return Topology("complete", np.full((n, n), 1.0 / n))


def _uniform_from_adjacency(A: np.ndarray) -> np.ndarray:
    deg = A.sum(axis=1)
    dmax = deg.max()
    W = A / (dmax + 1.0)
    W[np.diag_indices_from(W)] = 1.0 - W.sum(axis=1)
    return W


def torus(rows: int, cols: int) -> Topology:
    n = rows * cols
    A = np.zeros((n, n), dtype=float)
    r, c = np.divmod(np.arange(n), cols)
    for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0)):
        j = ((r + dr) % rows) * cols + (c + dc) % cols
        A[np.arange(n), j] = 1.0
    np.fill_diagonal(A, 0.0)
    return Topology("torus", _uniform_from_adjacency(A))


def metropolis_hastings(A: np.ndarray) -> np.ndarray:
    A = np.asarray(A, dtype=bool)
    deg = A.sum(axis=1)
    W = np.where(A, 1.0 / (1.0 + np.maximum(deg[:, None], deg[None, :])), 0.0)
    W[np.diag_indices_from(W)] = 1.0 - W.sum(axis=1)
    return W


def erdos_renyi(n: int, p: float, rng: np.random.Generator, max_tries: int = 1000) -> Topology:
    iu, ju = np.triu_indices(n, k=1)
    for _ in range(max_tries):
        keep = rng.random(iu.size) < p
        A = np.zeros((n, n), dtype=bool)
        A[iu[keep], ju[keep]] = True
        A |= A.T
        if connected_components(A, directed=False)[0] == 1:
            return Topology("erdos_renyi", metropolis_hastings(A))
    raise ValueError(f"no connected G({n}, {p}) in {max_tries} draws")


def make_topology(name: str, n: int, *, p: float = 0.3, rng: np.random.Generator | None = None,
                  shape: tuple[int, int] | None = None) -> Topology:
    if name in ("ring", "ring_third"):
        return ring(n)
    if name == "complete":
        return complete(n)
    if name == "torus":
        if shape is None:
            r = int(np.floor(np.sqrt(n)))
            while n % r:
                r -= 1
            shape = (r, n // r)
        return torus(*shape)
    if name in ("erdos_renyi", "er"):
        return erdos_renyi(n, p, rng if rng is not None else np.random.default_rng(0))
    raise ValueError(f"topology must be ring, torus, complete or erdos_renyi; got {name!r}")

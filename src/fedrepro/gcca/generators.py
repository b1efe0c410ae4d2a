"""The linear synthetic views X_i = Z A_i + nu E_i (Sec. V-A.1).

Dense (Figs. 3-7): Z (J, D), A_i (D, N), E_i (J, N) i.i.d. N(0, 1); views column-centred (A-2).
Noise multiplier nu: gcca:A-10 takes 0.1 (the authors' code; reproduces Table I's iteration
counts) although the paper prints nu = 0.01; both are configurations of the registry.

Sparse (Fig. 8): Z, A_i, E_i sparse with standard-normal nonzeros, densities (d_Z, d_A, d_E)
(A-25: 0.1, 5e-4, 0.01 at N = 2000, giving rho = nnz(X_i)/(J N) ~ 0.02); not centred.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from fedrepro.gcca.views import DenseViews, SparseViews


def dense_views(rng: np.random.Generator, J: int, N: int, D: int, I: int, nu: float, center: bool = True) -> DenseViews:
    Z = rng.standard_normal((J, D))
    A = rng.standard_normal((I, D, N))
    E = rng.standard_normal((I, J, N))
    X = Z @ A + nu * E
    if center:
        X -= X.mean(axis=1, keepdims=True)
    return DenseViews(X)


def _sprandn(rng: np.random.Generator, m: int, n: int, density: float) -> sp.csr_matrix:
    return sp.random(m, n, density=density, format="csr", random_state=rng, data_rvs=rng.standard_normal)


def sparse_views(rng: np.random.Generator, J: int, N: int, D: int, I: int, nu: float,
                 d_Z: float = 0.1, d_A: float = 5e-4, d_E: float = 0.01) -> SparseViews:
    Z = _sprandn(rng, J, D, d_Z)
    Xs = [(Z @ _sprandn(rng, D, N, d_A) + nu * _sprandn(rng, J, N, d_E)).tocsr() for _ in range(I)]
    return SparseViews(Xs)

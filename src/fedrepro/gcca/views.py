"""The I private views of one problem, dense or sparse, with the per-view operations the nodes run.

Every view has the same feature dimension N in the paper's experiments, so the per-view transforms
are one (I, N, K) array.  Dense views are one (I, J, N) array and every node operation is a batched
matmul (no loop over views); sparse views are a list of CSR matrices (one sparse product per view).
Each view's Gram matrix X_i^T X_i (N x N) and its eigensystem are computed once: they give the step
size 1/lambda_max (Sec. V-A.4), the full gradient X^T X Q - X^T G in O(N^2 K), MVLSA's truncated
SVD (§3.2) and the pseudo-inverse for v* (§3.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:  # imported at run time by kernels.compiled(); named here for the import closure (codedeps)
    from fedrepro.kernels import sparse  # noqa: F401

RANK_CUTOFF = 1e-10  # relative eigenvalue cut-off of the pseudo-inverse (docs/gcca.md)


# Up to this many rows, one partition of every view's whole key row beats the candidate search view by view (Python
# overhead per view); above it the search wins (measured: 23 against 44 us at (I, J, B) = (3, 500, 150), 110 against
# 92 us at (3, 4000, 500)).  Both give the same rows.
WHOLE_ROW_J = 2048


def sample_rows(rng: np.random.Generator, n_views: int, J: int, batch: int, increasing: bool = False) -> np.ndarray:
    """(I, batch) row indices, uniform without replacement, drawn independently per view (Sec. III-C.3, Fact 3): per view
    the rows of the `batch` smallest of J uniform keys.

    ``increasing=True``: the same rows (the same random stream) in increasing order, found about ten times
    faster than by a full partition; a sparse row slice is then also three times faster (sequential memory).
    Sums over the minibatch then run in another order, so results agree with the default to rounding only."""
    keys = rng.random((n_views, J))
    if batch >= J:
        return np.tile(np.arange(J), (n_views, 1))
    if increasing:
        if J <= WHOLE_ROW_J:
            return _smallest_keys_increasing_rows(keys, batch)
        return np.stack([_smallest_keys_increasing(k, batch) for k in keys])
    return np.argpartition(keys, batch, axis=1)[:, :batch]


def _smallest_keys_increasing_rows(keys: np.ndarray, batch: int) -> np.ndarray:
    """`_smallest_keys_increasing` for every row of `keys` (n_views, J) at once: the keys at or below each row's
    batch-th smallest, in increasing order.  A tie at a threshold (more than `batch` in a row) takes the per-view
    path, whose own fallback decides it."""
    kth = np.partition(keys, batch - 1, axis=1)[:, batch - 1 : batch]
    cols = np.flatnonzero(keys <= kth) % keys.shape[1]
    if cols.size != len(keys) * batch:
        return np.stack([_smallest_keys_increasing(k, batch) for k in keys])
    return cols.reshape(len(keys), batch)


def _smallest_keys_increasing(keys: np.ndarray, batch: int) -> np.ndarray:
    """Indices of the `batch` smallest of the U[0, 1) keys, in increasing order.

    The batch-th smallest of J uniforms is within 6 standard deviations of batch/J except with probability
    ~1e-9, so it is found among the few keys below that bound (a full partition otherwise); the rows are then
    those with a key at or below it. A tie at the threshold (a float64 draw repeated) falls back to argpartition."""
    J = keys.size
    p = batch / J
    bound = p + 6.0 * np.sqrt(p * (1.0 - p) / J) + 1.0 / J
    cand = np.flatnonzero(keys < bound)
    if cand.size < batch:
        cand = np.arange(J)
    kth = np.partition(keys[cand], batch - 1)[batch - 1]
    rows = cand[keys[cand] <= kth]
    if rows.size != batch:
        rows = np.sort(np.argpartition(keys, batch)[:batch])
    return rows


def _sparse_kernels(work: int, *arrays: np.ndarray):
    """fedrepro.kernels.sparse where it applies (every dense operand float64 and C-contiguous) and pays (work:
    the call's multiply-adds, against kernels.MIN_WORK); None: SciPy's products."""
    from fedrepro import kernels

    if all(a.dtype == np.float64 and a.flags.c_contiguous for a in arrays):
        return kernels.compiled("sparse", work)
    return None


@dataclass
class _Views:
    J: int
    N: int
    I: int
    gram: np.ndarray = field(repr=False)  # (I, N, N)
    lam: np.ndarray = field(init=False, repr=False)  # (I, N) ascending eigenvalues of X_i^T X_i
    V: np.ndarray = field(init=False, repr=False)  # (I, N, N) eigenvectors

    def __post_init__(self):
        self.lam, self.V = np.linalg.eigh(self.gram)
        self.lam = np.maximum(self.lam, 0.0)

    @property
    def lambda_max(self) -> np.ndarray:
        """lambda_max(X_i^T X_i) = sigma_1(X_i)^2 per view: the constant step is its inverse."""
        return self.lam[:, -1]

    def full_gradient_setup(self, G: np.ndarray) -> np.ndarray:
        """X_i^T G for every view (I, N, K): fixed during one outer iteration's T steps."""
        return self.xt(G)

    def full_gradient(self, Q: np.ndarray, XtG: np.ndarray) -> np.ndarray:
        """X_i^T (X_i Q_i - G) = (X_i^T X_i) Q_i - X_i^T G, batched (I, N, K)."""
        return self.gram @ Q - XtG

    def pinv_apply(self, W: np.ndarray) -> np.ndarray:
        """(X_i^T X_i)^+ W_i per view, with the relative cut-off (W: (I, N, K))."""
        inv = np.where(self.lam > RANK_CUTOFF * self.lam[:, -1:], 1.0 / np.where(self.lam > 0, self.lam, 1.0), 0.0)
        return self.V @ (inv[..., None] * (np.swapaxes(self.V, 1, 2) @ W))


class DenseViews(_Views):
    """X: (I, J, N) float64 (column-centred by the generator for the dense experiments, spec A-2)."""

    def __init__(self, X: np.ndarray):
        X = np.ascontiguousarray(X, dtype=np.float64)
        self.X = X
        I, J, N = X.shape
        super().__init__(J=J, N=N, I=I, gram=np.swapaxes(X, 1, 2) @ X)
        self._view_offsets = (np.arange(I) * J)[:, None]  # row r of view i is row i J + r of X.reshape(I J, N)

    def apply(self, Q: np.ndarray) -> np.ndarray:
        """M_i = X_i Q_i, (I, J, K)."""
        return self.X @ Q

    def xt(self, G: np.ndarray) -> np.ndarray:
        """X_i^T G per view for one shared G (J, K) -> (I, N, K); or per view for G (I, J, K)."""
        return np.swapaxes(self.X, 1, 2) @ G

    def batch_gradient(self, rows: np.ndarray, Q: np.ndarray, Ghat: np.ndarray) -> np.ndarray:
        """(J/B) X_F^T (X_F Q - Ghat_F) per view with its own rows F (I, B): unbiased (Fact 3)."""
        B = rows.shape[1]
        # the gathers as np.take on the (I J, N) stack: the same rows as X[arange(I)[:, None], rows] and Ghat[rows],
        # 2-3x faster at the paper's B = 150 (per step: 15 -> 6 and 6.6 -> 2.6 us)
        XF = np.take(self.X.reshape(-1, self.N), rows + self._view_offsets, axis=0)  # (I, B, N)
        resid = XF @ Q - np.take(Ghat, rows, axis=0)  # (I, B, K)
        return (self.J / B) * (np.swapaxes(XF, 1, 2) @ resid)


class SparseViews(_Views):
    """A list of I scipy.sparse matrices (J, N), not centred (spec A-2)."""

    def __init__(self, Xs: list):
        Xs = [sp.csr_matrix(x, dtype=np.float64) for x in Xs]
        shapes = {x.shape for x in Xs}
        if len(shapes) != 1:
            raise ValueError(f"every view must have the same shape (J, N); got {sorted(shapes)}")
        J, N = Xs[0].shape
        self.Xs = Xs
        self.XTs = [x.T.tocsr() for x in Xs]
        gram = np.stack([(xt @ x).toarray() for x, xt in zip(Xs, self.XTs)])
        super().__init__(J=J, N=N, I=len(Xs), gram=gram)

    @property
    def nnz(self) -> int:
        """Stored entries over all views."""
        return sum(x.nnz for x in self.Xs)

    @property
    def density(self) -> np.ndarray:
        return np.array([x.nnz / (self.J * self.N) for x in self.Xs])

    def apply(self, Q: np.ndarray) -> np.ndarray:
        compiled = _sparse_kernels(self.nnz * Q.shape[2], Q)
        if compiled is not None:
            out = np.empty((self.I, self.J, Q.shape[2]))
            for x, q, o in zip(self.Xs, Q, out):
                compiled.csr_matmul_into(x.indptr, x.indices, x.data, q, o)
            return out
        return np.stack([x @ q for x, q in zip(self.Xs, Q)])

    def xt(self, G: np.ndarray) -> np.ndarray:
        if G.ndim == 2:
            return np.stack([xt @ G for xt in self.XTs])
        return np.stack([xt @ g for xt, g in zip(self.XTs, G)])

    def batch_gradient(self, rows: np.ndarray, Q: np.ndarray, Ghat: np.ndarray) -> np.ndarray:
        B = rows.shape[1]
        out = np.empty((self.I, self.N, Q.shape[2]))
        # the same sums without building X_F: two passes over B rows of about nnz / J entries, K columns each
        work = 2 * rows.size * self.nnz * Q.shape[2] // (self.I * self.J)
        compiled = _sparse_kernels(work, Q, Ghat) if rows.dtype.kind == "i" else None
        if compiled is not None:
            for x, r, q, o in zip(self.Xs, rows, Q, out):
                compiled.csr_batch_gradient_into(x.indptr, x.indices, x.data, np.ascontiguousarray(r), q, Ghat, o)
            return (self.J / B) * out
        for i, (x, r) in enumerate(zip(self.Xs, rows)):  # one sparse row slice per view (no batched sparse op)
            XF = x[r]
            out[i] = XF.T @ (XF @ Q[i] - Ghat[r])
        return (self.J / B) * out

"""Multinomial logistic regression W ∈ R^{p x C} without bias (thesis A-28: 784 x 10, d = 7840), batched over
n nodes: parameters are rows of a matrix (n, p*C) in C order (W = row.view(p, C)).

On CPU the batched products run through numpy on zero-copy views (numpy's small batched matmuls are about
twice as fast as torch.bmm for these shapes on this machine); the result is a torch tensor either way."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np
import torch

from fedrepro import kernels

if TYPE_CHECKING:  # imported at run time by kernels.compiled(); named here for the import closure (codedeps)
    from fedrepro.kernels import dense, node_logits  # noqa: F401


# The gemm that forms aᵀz (OpenBLAS here) sums each entry over the batch as one chain of fused multiply-adds from
# +0 for at least C >= 2 classes and batches below 32 (float32) / 16 (float64); from there, and for C = 1 (a
# matrix-vector product), it splits the sum differently. The compiled pass takes batches up to half those sizes
# (tests/kernels/test_dense_kernels.py checks every one, to the bit); others are always formed by BLAS. OpenBLAS
# picks its kernels by CPU and shape: on an AVX2 machine without AVX-512 its float64 product of batch 8 over 61
# features and 10 classes, and its float32 product of batch 16 over 784 features, sum in another order. So each
# (dtype, batch, classes, features) is also probed once a process (``fuses_like_blas``), and formed by BLAS wherever
# the two differ.
MAX_OUTER_BATCH = {np.dtype(np.float32): 16, np.dtype(np.float64): 8}


@functools.cache
def fuses_like_blas(compiled, dtype: np.dtype, b: int, C: int, p: int) -> bool:
    """Whether the compiled momentum pass with G formed inside it (``compiled``: fedrepro.kernels.dense) gives the
    bits of BLAS's G followed by the momentum pass, on this machine, for batches of b rows of p features and C
    classes: one probe on random rows (half of them zeros, as MNIST's background) and residuals."""
    rng = np.random.default_rng(b * 1000 + C)
    n = 3
    a = (rng.random((n, b, p)) * (rng.random((n, b, p)) < 0.5)).astype(dtype)
    z = rng.standard_normal((n, b, C)).astype(dtype)
    X, V = (rng.standard_normal((n, p * C)).astype(dtype) for _ in range(2))
    f = np.dtype(dtype).type
    scalars = (f(0.9 * 1.0137), f(0.9), f(-0.0123), f(0.0), True)
    Xk, Vk = X.copy(), V.copy()
    G = OuterGradient(a, z).dense().numpy()
    compiled.momentum_step(X.reshape(-1), V.reshape(-1), G.reshape(-1), *scalars)
    compiled.outer_momentum_step(Xk, Vk, a, z, f(b), *scalars)
    return X.tobytes() == Xk.tobytes() and V.tobytes() == Vk.tobytes()


@functools.cache
def logits_like_blas(compiled, p: int) -> bool:
    """Whether fedrepro.kernels.node_logits (``compiled``) gives NumPy's matmul bits (BLAS's) on this machine for
    batches of 5 binary32 rows of p features against 10 classes: one probe on random rows (half of them zeros, as
    MNIST's background) and weights."""
    rng = np.random.default_rng(p)
    n, b, C = 4, compiled.ROWS, compiled.COLUMNS
    x = (rng.random((n, b, p)) * (rng.random((n, b, p)) < 0.5)).astype(np.float32)
    W = rng.standard_normal((n, p, C)).astype(np.float32)
    Z = np.empty((n, b, C), dtype=np.float32)
    compiled.logits(x, W, Z)
    return Z.tobytes() == np.matmul(x, W).tobytes()


def _node_logits(Wm: np.ndarray, x: np.ndarray) -> np.ndarray:
    """x @ Wm per node (NumPy's matmul), by fedrepro.kernels.node_logits where it gives the same bits here: binary32
    batches of 5 rows, 10 classes, an even feature count. Called only where numba is loaded anyway."""
    n, b, p = x.shape
    C = Wm.shape[2]
    if (x.dtype == Wm.dtype == np.float32 and (b, C) == (5, 10) and p % 2 == 0
            and x.flags.c_contiguous and Wm.flags.c_contiguous):
        compiled = kernels.compiled("node_logits", n * b * p * C)
        if compiled is not None and logits_like_blas(compiled, p):
            Z = np.empty((n, b, C), dtype=np.float32)
            compiled.logits(x, Wm, Z)
            return Z
    return np.matmul(x, Wm)


class OuterGradient:
    """The CPU minibatch gradient G_i = a_iᵀ z_i / b per node, not formed yet: a (n, b, p) the rows, z (n, b, C)
    the residuals softmax - one-hot, G (n, p*C). A decentral grad_fn may return this instead of a tensor: the
    engine's compiled momentum pass forms G entry by entry (fedrepro.kernels.dense.outer_momentum_step) instead
    of writing G, dividing it and reading it back; ``dense()`` forms it with BLAS, the same bits.

    Valid until the task's next gradient call (the arrays are the task's buffers)."""

    def __init__(self, a: np.ndarray, z: np.ndarray, out: torch.Tensor | None = None, xt: np.ndarray | None = None):
        self.a, self.z = a, z
        self._out, self._xt = out, xt

    @property
    def shape(self) -> tuple[int, int]:
        n, _, p = self.a.shape
        return n, p * self.z.shape[2]

    @property
    def batch(self) -> int:
        return self.a.shape[1]

    def dense(self) -> torch.Tensor:
        """G as a tensor (n, p*C): xt @ z with xt = aᵀ copied to (n, p, b) first (BLAS's non-transposed small
        kernel is about three times faster than its transposed one at these shapes, and the copy costs less than
        the difference; the products and sums are the same, and so are the bits), then G /= b."""
        a, z = self.a, self.z
        n, b, p = a.shape
        C = z.shape[2]
        xt = self._xt if self._xt is not None else np.empty((n, p, b), dtype=a.dtype)
        for j in range(b):
            np.copyto(xt[:, :, j], a[:, j, :])
        G = np.matmul(xt, z, out=None if self._out is None else self._out.numpy().reshape(n, p, C))
        G = G.reshape(n, p * C)
        G /= b
        return torch.from_numpy(G) if self._out is None else self._out


def softmax_regression_residuals(Wm: np.ndarray, x: np.ndarray, y: np.ndarray, compiled=None) -> np.ndarray:
    """z = softmax(x W) - onehot(y) per node: Wm (n, p, C), x (n, b, p), y (n, b) -> (n, b, C) (NumPy, CPU).

    ``compiled``: fedrepro.kernels.dense, whose two loops do the small passes around np.exp (the same bits); with
    it, the product x W is fedrepro.kernels.node_logits's where that gives BLAS's bits (``_node_logits``)."""
    n, b, _ = x.shape
    Z = np.matmul(x, Wm) if compiled is None else _node_logits(Wm, x)
    if compiled is not None and Z.shape[2] <= compiled.PAIRWISE_BLOCK:
        compiled.subtract_row_max(Z)
        np.exp(Z, out=Z)
        compiled.normalize_residuals(Z, y)
        return Z
    Z -= Z.max(axis=2, keepdims=True)
    np.exp(Z, out=Z)
    Z /= Z.sum(axis=2, keepdims=True)
    Z[np.arange(n)[:, None], np.arange(b)[None, :], y] -= 1.0
    return Z


def softmax_regression_grad(X: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor, n_classes: int,
                            out: torch.Tensor | None = None, xt: np.ndarray | None = None, *,
                            lazy: bool = False) -> torch.Tensor | OuterGradient:
    """Mean cross-entropy gradient per node.  X (n, p*C), xb (n, b, p), yb (n, b) int -> (n, p*C).

    CPU, no autograd: through NumPy (`OuterGradient.dense`). `out` (a CPU tensor (n, p*C) of X's dtype) and `xt`
    (a numpy array (n, p, b)) are buffers to write into, since a fresh 1.9 MB array costs about as much as the
    product that fills it (page faults). ``lazy``: return the OuterGradient where its compiled pass applies
    (float32/float64, b <= MAX_OUTER_BATCH, C >= 2, and BLAS sums the same way here: ``fuses_like_blas``) rather than
    the tensor."""
    n, b, p = xb.shape
    if X.device.type == "cpu" and not X.requires_grad:
        x = xb.numpy()
        fusable = (lazy and x.dtype == X.numpy().dtype and b <= MAX_OUTER_BATCH.get(x.dtype, 0)
                   and n_classes >= 2)
        # the residual loops where the engine's compiled pass will take the gradient (numba is loaded anyway)
        compiled = kernels.compiled("dense", X.numel()) if fusable else None
        if compiled is not None and not fuses_like_blas(compiled, x.dtype, b, n_classes, p):
            fusable, compiled = False, None
        Z = softmax_regression_residuals(X.numpy().reshape(n, p, n_classes), x, yb.numpy(), compiled)
        grad = OuterGradient(x, Z, out, xt)
        return grad if fusable else grad.dense()
    Wm = X.view(n, p, n_classes)
    P = torch.softmax(torch.bmm(xb, Wm), dim=2)
    P.scatter_add_(2, yb.unsqueeze(2), torch.full((n, b, 1), -1.0, dtype=P.dtype, device=P.device))
    return torch.bmm(xb.transpose(1, 2), P).reshape(n, p * n_classes) / b


def softmax_regression_predict(w: torch.Tensor, x: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Class predictions of one model w (p*C,) on x (m, p)."""
    return (x @ w.view(-1, n_classes)).argmax(dim=1)


def softmax_regression_loss(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, n_classes: int) -> float:
    return float(torch.nn.functional.cross_entropy(x @ w.view(-1, n_classes), y))

"""Multinomial logistic regression W ∈ R^{p x C} without bias (thesis A-28: 784 x 10, d = 7840), batched over
n nodes: parameters are rows of a matrix (n, p*C) in C order (W = row.view(p, C)).

On CPU the batched products run through numpy on zero-copy views (numpy's small batched matmuls are about
twice as fast as torch.bmm for these shapes on this machine); the result is a torch tensor either way."""

from __future__ import annotations

import numpy as np
import torch


def outer_gradient(a: np.ndarray, z: np.ndarray, out: torch.Tensor | None = None,
                   xt: np.ndarray | None = None) -> torch.Tensor:
    """G_i = a_iᵀ z_i / b per node as a tensor (n, p*C): a (n, b, p) the rows, z (n, b, C) the residuals.

    xt = aᵀ is copied to (n, p, b) first (BLAS's non-transposed small kernel is about three times faster than its
    transposed one at these shapes, and the copy costs less than the difference), then G = xt @ z, G /= b.
    ``out``/``xt``: buffers to write into (a fresh 1.9 MB array costs about as much as the product)."""
    n, b, p = a.shape
    C = z.shape[2]
    xt = xt if xt is not None else np.empty((n, p, b), dtype=a.dtype)
    for j in range(b):
        np.copyto(xt[:, :, j], a[:, j, :])
    G = np.matmul(xt, z, out=None if out is None else out.numpy().reshape(n, p, C))
    G = G.reshape(n, p * C)
    G /= b
    return torch.from_numpy(G) if out is None else out


def softmax_regression_residuals(Wm: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """z = softmax(x W) - onehot(y) per node: Wm (n, p, C), x (n, b, p), y (n, b) -> (n, b, C) (NumPy, CPU)."""
    n, b, _ = x.shape
    Z = np.matmul(x, Wm)
    Z -= Z.max(axis=2, keepdims=True)
    np.exp(Z, out=Z)
    Z /= Z.sum(axis=2, keepdims=True)
    Z[np.arange(n)[:, None], np.arange(b)[None, :], y] -= 1.0
    return Z


def softmax_regression_grad(X: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor, n_classes: int,
                            out: torch.Tensor | None = None, xt: np.ndarray | None = None) -> torch.Tensor:
    """Mean cross-entropy gradient per node.  X (n, p*C), xb (n, b, p), yb (n, b) int -> (n, p*C).

    CPU, no autograd: through NumPy (`outer_gradient`). `out` (a CPU tensor (n, p*C) of X's dtype) and `xt`
    (a numpy array (n, p, b)) are buffers to write into."""
    n, b, p = xb.shape
    if X.device.type == "cpu" and not X.requires_grad:
        x = xb.numpy()
        Z = softmax_regression_residuals(X.numpy().reshape(n, p, n_classes), x, yb.numpy())
        return outer_gradient(x, Z, out, xt)
    Wm = X.view(n, p, n_classes)
    P = torch.softmax(torch.bmm(xb, Wm), dim=2)
    P.scatter_add_(2, yb.unsqueeze(2), torch.full((n, b, 1), -1.0, dtype=P.dtype, device=P.device))
    return torch.bmm(xb.transpose(1, 2), P).reshape(n, p * n_classes) / b


def softmax_regression_predict(w: torch.Tensor, x: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Class predictions of one model w (p*C,) on x (m, p)."""
    return (x @ w.view(-1, n_classes)).argmax(dim=1)


def softmax_regression_loss(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, n_classes: int) -> float:
    return float(torch.nn.functional.cross_entropy(x @ w.view(-1, n_classes), y))

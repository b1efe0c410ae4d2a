"""A plain NumPy SQuARM-SGD / CHOCO-SGD / vanilla decentralized SGD on the thesis Fig. 3.4 task (multinomial
logistic regression, n nodes on a ring), vectorized over nodes and written from Algorithm 1 alone: the peer that
benchmarks/bench_decentral.py times the engine against, and an independent check of the engine's arithmetic (to
float tolerance: ties in top-k may break differently).

Per iteration: g = ∇F_i(x_i; ξ_i); v = β (η_{t-1}/η_t) v + g; x½ = x - η (β v + g); on sync iterations
((t + 1) % H == 0) node i fires iff ‖x½_i - x̂_i‖² > c_t η² (all at the first sync), x̂_i += C(x½_i - x̂_i) on firing
rows, x = x½ + γ (W x̂ - x̂) with W x̂ = (x̂_{i-1} + x̂_i + x̂_{i+1}) / 3 (two rolls); vanilla: x = W x½.
"""

from __future__ import annotations

import numpy as np


def compress(diff: np.ndarray, kind: str, k: int) -> np.ndarray:
    """C(diff) row by row: sign_topk, topk, sign (scaled, sign(0) = +1) or identity."""
    if kind == "identity":
        return diff.copy()
    if kind == "sign":
        return np.abs(diff).mean(axis=1, keepdims=True) * np.where(diff < 0, -1.0, 1.0).astype(diff.dtype)
    idx = np.argpartition(-np.abs(diff), k - 1, axis=1)[:, :k]
    kept = np.take_along_axis(diff, idx, axis=1)
    if kind == "sign_topk":
        kept = np.abs(kept).sum(axis=1, keepdims=True) / k * np.where(kept < 0, -1.0, 1.0).astype(diff.dtype)
    out = np.zeros_like(diff)
    np.put_along_axis(out, idx, kept, axis=1)
    return out


def ring_mix(Y: np.ndarray) -> np.ndarray:
    return (np.roll(Y, 1, axis=0) + Y + np.roll(Y, -1, axis=0)) / np.float32(3.0)


class NumpySquarm:
    def __init__(self, x_train: np.ndarray, y_train: np.ndarray, n: int, n_classes: int, *, compressor: str, k: int,
                 H: int, gamma: float, beta: float = 0.9, lr=lambda t: 1.0 / (t + 100.0), threshold=None):
        self.x, self.y, self.C = x_train, y_train, n_classes
        self.n, self.p = n, x_train.shape[1]
        self.X = np.zeros((n, self.p * n_classes), dtype=x_train.dtype)
        self.V = np.zeros_like(self.X)
        self.Xhat = np.zeros_like(self.X)
        self.compressor, self.k, self.H, self.gamma, self.beta = compressor, k, H, gamma, beta
        self.lr, self.threshold = lr, threshold
        self.t, self.eta_prev, self.first = 0, None, True
        self.fired = 0

    def grad(self, idx: np.ndarray) -> np.ndarray:
        n, b = idx.shape
        x = self.x[idx]                                            # (n, b, p)
        Z = x @ self.X.reshape(n, self.p, self.C)
        P = np.exp(Z - Z.max(axis=2, keepdims=True))
        P /= P.sum(axis=2, keepdims=True)
        P[np.arange(n)[:, None], np.arange(b), self.y[idx]] -= 1.0
        return (x.transpose(0, 2, 1) @ P).reshape(n, -1) / b

    def step(self, idx: np.ndarray) -> None:
        t = self.t
        eta = self.lr(t)
        eta_prev = eta if self.eta_prev is None else self.eta_prev
        G = self.grad(idx)
        self.V = self.beta * (eta_prev / eta) * self.V + G
        Xh = self.X - eta * (self.beta * self.V + G)
        if self.compressor == "identity" and self.H == 1 and self.threshold is None:
            self.X = ring_mix(Xh)                                  # vanilla: x = W x½
        elif (t + 1) % self.H == 0:
            diff = Xh - self.Xhat
            sq = (diff.astype(np.float64) ** 2).sum(axis=1)
            c = self.threshold(t, eta) if self.threshold is not None else 0.0
            fire = np.ones(self.n, bool) if self.first else sq > c * eta * eta
            self.first = False
            self.fired += int(fire.sum())
            if fire.any():
                self.Xhat[fire] += compress(diff[fire], self.compressor, self.k)
            self.X = Xh + self.gamma * (ring_mix(self.Xhat) - self.Xhat)
        else:
            self.X = Xh
        self.eta_prev = eta
        self.t += 1

"""ADEPT-PCA (Algorithm 1) and the local / global PCA baselines on synthetic data (adept.md 2.2, 3.1-3.2, 5.1).

Every client is one slice of a stacked (m, d, r) array; one iteration is a handful of batched matmuls
and one batched SVD (no Python loop over clients).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedrepro.adept.stiefel import dist2, haar, polar, proj_tangent, retract

# What `run` reads (adept.yaml fig2), checked when the registry loads; format: fedrepro/registry/params.py.
PARAMETERS = {
    "d": "int>=1", "r": "int>=1", "m": "int>=1", "n": "int>=1",   # dimension, rank, clients, samples per client
    "sigma_eps": "float>=0",
    "sigma_stars": "list[float>=0]",        # heterogeneity levels (one cell each)
    "seeds": "int>=1",
    "T": "int>=0",                          # iterations
    "c1": "float>0", "c2": "float>0", "eta3": "float>0", "sigma0": "float>0", "xi": "float>=0",
    "lazy": "int>=0", "sigma_min": "float>=0",
    "dtheta_mode": "d*r|d",
    "lik_grad_factor": "float",
    "gd_baselines?": "bool",                # also run the Riemannian-GD local / global baselines
}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py): iterations x clients x data x model.
WORK = {"units": "len(sigma_stars) * seeds * T * m * d * (n + r) * r * (2 if gd_baselines else 1)",
        "memory": "m * d * (n + r)", "defaults": {"gd_baselines": "False"}}


@dataclass
class PCAProblem:
    v_star: np.ndarray      # (d, r)
    u_star: np.ndarray      # (m, d, r)
    s: np.ndarray           # (m, d, d) sample covariances S_i = X_i X_i^T / n
    n: int
    sigma_eps: float


def make_problem(d: int, r: int, m: int, n: int, sigma_star: float, sigma_eps: float,
                 rng: np.random.Generator) -> PCAProblem:
    """Fig. 2 data (Sec. 5.1): V* Haar; U*_i = R_{V*}(sigma* P_{T_V*}(G_i)); x = U*_i z + eps, n samples per client."""
    v = haar(d, r, rng)
    g = rng.standard_normal((m, d, r))
    u = polar(v[None] + sigma_star * proj_tangent(v[None], g))   # retraction as printed (Sec. 5.1)
    z = rng.standard_normal((m, r, n))
    x = u @ z + sigma_eps * rng.standard_normal((m, d, n))
    s = x @ np.swapaxes(x, -1, -2) / n
    return PCAProblem(v, u, s, n, sigma_eps)


def population_error(u_hat: np.ndarray, u_star: np.ndarray, sigma_eps: float) -> np.ndarray:
    """E_i(U) = r - ||U^T U*_i||_F^2 + sigma_eps^2 (d - r) per client (the Fig. 2 y-axis, Sec. 5.1)."""
    d, r = u_star.shape[-2:]
    overlap = np.sum((np.swapaxes(u_hat, -1, -2) @ u_star) ** 2, axis=(-2, -1))
    return r - overlap + sigma_eps ** 2 * (d - r)


def error_ratio(u_hat: np.ndarray, prob: PCAProblem) -> float:
    """Mean population error of the estimates over that of the true models (>= 1)."""
    d, r = prob.u_star.shape[-2:]
    u_hat = np.broadcast_to(u_hat, prob.u_star.shape)
    return float(np.mean(population_error(u_hat, prob.u_star, prob.sigma_eps)) / (prob.sigma_eps ** 2 * (d - r)))


def lik_grad(u: np.ndarray, s: np.ndarray, n: int, sigma_eps: float, factor: float = 1.0) -> np.ndarray:
    """Euclidean gradient of n/2 (log|W| + tr(W^-1 S)), W = U U^T + s2 I, for U on St (Sec. 3.1, eq. 3, in its cheap form)."""
    s2 = sigma_eps ** 2
    a = u / (1 + s2)                                              # W^-1 U
    b = s @ a
    c = (b - u @ (np.swapaxes(u, -1, -2) @ b) / (1 + s2)) / s2     # W^-1 S W^-1 U
    return factor * n * (a - c)


def lik_lipschitz(s: np.ndarray, n: int, sigma_eps: float) -> np.ndarray:
    lam = np.linalg.eigvalsh(s)[..., -1]
    return n * lam / (sigma_eps ** 2 * (1 + sigma_eps ** 2))


def top_r(s: np.ndarray, r: int) -> np.ndarray:
    """Closed-form PCA: the top-r eigenvectors (last axes)."""
    _, vecs = np.linalg.eigh(s)
    return vecs[..., ::-1][..., :r]


def adept_pca(prob: PCAProblem, v0: np.ndarray, *, T: int = 1500, c1: float = 0.5, c2: float = 0.5,
              eta3: float = 1e-3, sigma0: float = 1.0, xi: float = 1e-6, lazy: int = 100,
              sigma_clip: float = 10.0, sigma_min: float = 1e-3, sigma_max: float = 1e2,
              dtheta_mode: str = "d*r", lik_grad_factor: float = 1.0, learn_sigma: bool = True,
              log_every: int = 0, trace=None):
    """Algorithm 1 with practical step sizes (docs/adept.md).  Returns (U (m,d,r), V (d,r), sigma)."""
    m, d, _ = prob.s.shape
    r = v0.shape[1]
    dtheta = d * r if dtheta_mode == "d*r" else d
    L_lik = lik_lipschitz(prob.s, prob.n, prob.sigma_eps)              # (m,)
    v = v0.copy()
    u = np.broadcast_to(v0, (m, d, r)).copy()
    sigma = float(sigma0)
    for t in range(1, T + 1):
        pv_u = proj_tangent(v[None], u)                                # P_{T_V}(U_i)
        d2 = np.sum(pv_u ** 2, axis=(-2, -1))
        # line 7: sigma step with the OLD U (lazy start; clipped gradient)
        if learn_sigma and t > lazy:
            g_sig = np.clip(dtheta / sigma - (2 * xi + d2) / sigma ** 3, -sigma_clip, sigma_clip)
            sig_i = sigma - eta3 * g_sig
        else:
            sig_i = np.full(m, sigma)
        # lines 8-9: Riemannian step on U_i
        g = lik_grad(u, prob.s, prob.n, prob.sigma_eps, lik_grad_factor) + pv_u / sigma ** 2
        eta1 = c1 / (L_lik + 1.0 / sigma ** 2)
        u_new = retract(u, -eta1[:, None, None] * proj_tangent(u, g))
        # lines 10-11: V step with the NEW U_i (no retraction on the client)
        pv_un = proj_tangent(v[None], u_new)
        ut_v = np.swapaxes(u_new, -1, -2) @ v[None]
        gv = -pv_un @ (ut_v + np.swapaxes(ut_v, -1, -2)) / (2 * sigma ** 2)
        v_i = v[None] - c2 * sigma ** 2 * proj_tangent(v[None], gv)
        # lines 16-17: server
        v = retract(v, v_i.mean(0) - v)
        sigma = float(np.clip(sig_i.mean(), sigma_min, sigma_max))
        u = u_new
        if trace is not None and log_every and (t % log_every == 0 or t == T):
            trace(t, u, v, sigma)
    return u, v, sigma


def riemannian_gd(s: np.ndarray, n: int, sigma_eps: float, u0: np.ndarray, *, T: int = 1500, c: float = 0.5,
                  shared: bool = False) -> np.ndarray:
    """Local (per client) or global (shared=True: one model, mean of the clients' gradients) Riemannian GD."""
    L = lik_lipschitz(s, n, sigma_eps)
    if shared:
        v = u0.copy()
        eta = c / L.max()
        for _ in range(T):
            g = lik_grad(v[None], s, n, sigma_eps).mean(0)
            v = retract(v, -eta * proj_tangent(v, g))
        return v
    u = np.broadcast_to(u0, s.shape[:1] + u0.shape).copy()
    eta = (c / L)[:, None, None]
    for _ in range(T):
        u = retract(u, -eta * proj_tangent(u, lik_grad(u, s, n, sigma_eps)))
    return u


def run_fig2(params: dict, rng_for) -> list[dict]:
    """One row per (sigma*, seed, method): the error ratio, the learned sigma, and the closed-form checks.

    rng_for(sigma_index, seed_index) -> numpy Generator (so every cell has its own stream)."""
    d, r, m, n = (int(params[k]) for k in ("d", "r", "m", "n"))
    s_eps = float(params["sigma_eps"])
    T = int(params["T"])
    rows = []
    for a, sstar in enumerate(params["sigma_stars"]):
        for seed in range(int(params["seeds"])):
            rng = rng_for(a, seed)
            prob = make_problem(d, r, m, n, float(sstar), s_eps, rng)
            v0 = haar(d, r, rng)
            u, v, sig = adept_pca(prob, v0, T=T, c1=params["c1"], c2=params["c2"], eta3=params["eta3"],
                                  sigma0=params["sigma0"], xi=params["xi"], lazy=int(params["lazy"]),
                                  sigma_min=params["sigma_min"], dtheta_mode=params["dtheta_mode"],
                                  lik_grad_factor=params["lik_grad_factor"])
            base = dict(sigma_star=float(sstar), seed=seed)
            rows.append({**base, "method": "adept", "metric": "ratio", "value": error_ratio(u, prob)})
            rows.append({**base, "method": "adept", "metric": "sigma", "value": sig})
            rows.append({**base, "method": "adept", "metric": "dist2_mean",
                         "value": float(dist2(v[None], u).mean())})
            if params.get("gd_baselines", True):
                ul = riemannian_gd(prob.s, n, s_eps, v0, T=T)
                vg = riemannian_gd(prob.s, n, s_eps, v0, T=T, shared=True)
                rows.append({**base, "method": "local", "metric": "ratio", "value": error_ratio(ul, prob)})
                rows.append({**base, "method": "global", "metric": "ratio", "value": error_ratio(vg, prob)})
            rows.append({**base, "method": "local_closed", "metric": "ratio",
                         "value": error_ratio(top_r(prob.s, r), prob)})
            rows.append({**base, "method": "global_closed", "metric": "ratio",
                         "value": error_ratio(top_r(prob.s.sum(0), r), prob)})
    return rows


def _rng_for(ctx):
    """Named numpy streams per cell: rng_stream(seed, 'adept', experiment, *keys)."""
    from fedrepro.runtime import rng_stream

    return lambda *keys: rng_stream(ctx.seed, "adept", ctx.experiment, *[k if isinstance(k, int) else str(k) for k in keys])


STREAMS = "rng_stream(seed, 'adept', '{}', cell..., name); torch seeds 1000*run_seed + client"


def run(ctx):
    """Runner of Fig. 2 (personalized PCA on synthetic data)."""
    import pandas as pd

    from fedrepro.runner import RunResult

    rows = run_fig2(ctx.params, _rng_for(ctx))
    return RunResult(pd.DataFrame(rows), data={"adept-fig2-synthetic-pca": "real"},
                     extra={"streams": STREAMS.format(ctx.experiment)})

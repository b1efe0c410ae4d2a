"""δ (= ω) of a compressor, measured on random vectors with an explicit seed (config/leaderboard.yaml `measure`).

One definition, docs/comm.md's (§1: "δ (gcca) = ω (thesis)"; §2's table): the contraction parameter of the
operator as registered, E||C(x) - x||^2 <= (1 - δ)||x||^2.  For x and draws C(x) (one U[0, 1) block per draw from
`rng_stream(seed, "leaderboard", name, ...)`):

  relative error   e(x) = mean ||C(x) - x||^2 / ||x||^2     (an unbiased operator's variance factor)
  δ = ω            = 1 - e, a contraction only where e < 1 (QSGD: ω = 1 - β_{d,s} where β < 1, docs/comm.md §2);
                     where e >= 1 the operator is no contraction (δ NaN) and C/(1 + e), an unbiased operator scaled
                     down, is one with δ = 1/(1 + e) (`delta_scaled`)
  bias             ||mean C(x) - x|| / ||x||   (Monte Carlo; ~0 for an unbiased operator)

each reported as the worst (largest e) over N(0, I) vectors and the worst case of a top-k (every magnitude
equal, where top-k's δ = k/d exactly).  Closed forms the tests check: top-k δ = k/d on the worst case; random-k
(kept entries unscaled) δ = k/d on every x; unbiased random-k (d/k rescaling) e = d/k - 1.
"""

from __future__ import annotations

import numpy as np

from fedrepro.leaderboard.candidates import spec_with_knobs
from fedrepro.runtime import rng_stream


def test_vectors(d: int, n: int, seed: int) -> np.ndarray:
    """n standard normal vectors and the all-equal-magnitude vector (alternating signs), shape (n + 1, d)."""
    gauss = rng_stream(seed, "leaderboard", "vectors").standard_normal((n, d))
    flat = np.where(np.arange(d) % 2 == 0, 1.0, -1.0)
    return np.vstack([gauss, flat])


def measure(name: str, *, d: int = 100, draws: int = 400, vectors: int = 4, seed: int = 0,
            knobs: dict | None = None) -> dict:
    """{compressor, params, unbiased, delta, error, delta_scaled, bias, bits_per_entry, delta_library, note}."""
    from fedrepro.comm.catalog import get_compressor

    try:
        spec = spec_with_knobs(name, knobs)
    except (ValueError, TypeError) as exc:
        return {"compressor": name, "note": f"n/a: {str(exc).splitlines()[0]}"}
    params = {k: v for k, v in spec.items() if k != "name"}
    comp = get_compressor(name, **params)
    X = test_vectors(d, vectors, seed)
    errors, biases, bits = [], [], []
    for i, x in enumerate(X):
        batch = np.repeat(x[None, :], draws, axis=0)
        try:
            out = comp(batch, rng_stream(seed, "leaderboard", name, i))
        except Exception as exc:  # a compressor that needs more than a vector (e.g. C-VFL's gradient-ranked columns)
            return {"compressor": name, "params": _fmt(params), "note": f"n/a: {type(exc).__name__}: "
                                                                        f"{str(exc).splitlines()[0][:160]}"}
        value = np.asarray(out.value, dtype=float)
        sq = float((x ** 2).sum())
        errors.append(float(((value - x) ** 2).sum(axis=1).mean() / sq))
        biases.append(float(np.linalg.norm(value.mean(axis=0) - x) / np.sqrt(sq)))
        bits.append(float(np.asarray(out.bits).mean() / d))
    e = max(errors)
    unbiased = bool(getattr(comp, "unbiased", False))
    return {"compressor": name, "params": _fmt(params), "unbiased": unbiased,
            "delta": 1.0 - e if e < 1 else np.nan, "error": e, "delta_scaled": 1.0 / (1.0 + e),
            "bias": max(biases), "bits_per_entry": float(np.mean(bits)),
            "delta_library": _library(comp, d), "note": ""}


def _library(comp, d: int) -> float:
    """The compressor's own worst-case closed form `comp.delta(d)` (fedrepro.comm), NaN where it has none."""
    try:
        v = comp.delta(d)
    except Exception:  # noqa: BLE001 - a compressor without a closed form may raise instead of returning None
        return np.nan
    return float(v) if v is not None and np.isscalar(v) else np.nan


def _fmt(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())

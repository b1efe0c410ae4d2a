"""Table 5.1 of the thesis (§5.5): Phase 1, Phase 2 and Scratch against the in-out mixture ratio.

One run draws V*, the three Gaussian designs and the test set once per sample configuration and
shares them across the five in-out ratios (common random numbers: each ratio gets its own target
model and label noise).  The generative details the thesis leaves open are the ``configuration``
keys below; docs/thesis_ch5.md, "Assumptions", names them A-T1 ... A-T6.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedrepro.runtime import rng_stream
from fedrepro.transfer.representation import error_ratios, gd_least_squares, phase1_fit

# What `run` reads (thesis.yaml table5_1: the fields of Table51Config), checked when the registry loads; format:
# fedrepro/registry/params.py.
PARAMETERS = {
    "d": "int>=1", "q": "int>=1",
    "sample_configs": "list[list[int>=1, int>=1]]",     # [n1, n2] per cell
    "ratios_db": "list[float]",
    "n_test": "int>=1", "runs": "int>=1",
    "spectrum": "normalized|literal",
    "tau": "float>0", "eps": "float>=0", "c_u": "float>=0",
    "sigma_train": "float>=0", "sigma_test": "float>=0",
    "gd_steps": "float>=0",                 # K of A-T1/A-T2; .inf: the exact solution
    "metric": "root_ratio|mse_ratio",
    "noise_scale?": "float>=0",
}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py): runs x configurations x ratios x d^2 x q.
WORK = {"units": "runs * len(sample_configs) * len(ratios_db) * d * d * q", "memory": "d * d"}

METHODS = ("phase1", "phase2", "scratch")


@dataclass(frozen=True)
class Table51Config:
    d: int
    q: int
    sample_configs: tuple[tuple[int, int], ...]
    ratios_db: tuple[float, ...]
    n_test: int
    runs: int
    spectrum: str            # "normalized": exp(-j/(tau d)) + eps (A-T3 primary);  "literal": exp(-j/tau) + eps
    tau: float
    eps: float
    c_u: float               # u = c_u V a  (A-T4: 1 nominal, sqrt(0.54) calibrated)
    sigma_train: float       # label noise of the Phase 1/2 and Scratch samples (A-T5)
    sigma_test: float        # label noise of the test samples (A-T5)
    gd_steps: float          # K of A-T1/A-T2; inf = exact interpolant / OLS (the literal eq. 5.7)
    metric: str              # reported column: "root_ratio" (A-T6) or "mse_ratio"
    noise_scale: float = 1.0  # multiplies both noise levels (smoke shrinks d, q and n by 5 and the noise with them)
    seed: int = 0
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, cfg: dict) -> Table51Config:
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        unknown = set(cfg) - known
        if unknown:
            raise KeyError(f"unknown Table 5.1 configuration keys {sorted(unknown)}; allowed: {sorted(known)}")
        missing = known - set(cfg) - {"seed", "noise_scale"}
        if missing:
            raise KeyError(f"Table 5.1 configuration is missing keys {sorted(missing)}")
        vals = dict(cfg)
        vals["sample_configs"] = tuple(tuple(int(n) for n in pair) for pair in cfg["sample_configs"])
        vals["ratios_db"] = tuple(float(r) for r in cfg["ratios_db"])
        vals["gd_steps"] = float(cfg["gd_steps"])  # YAML ".inf" or a number
        if vals["spectrum"] not in {"normalized", "literal"}:
            raise ValueError(f"spectrum must be 'normalized' or 'literal', got {vals['spectrum']!r}")
        if vals["metric"] not in {"root_ratio", "mse_ratio"}:
            raise ValueError(f"metric must be 'root_ratio' or 'mse_ratio', got {vals['metric']!r}")
        return cls(**vals)

    def eigenvalues(self) -> np.ndarray:
        j = np.arange(1, self.d + 1, dtype=float)
        scale = self.tau * self.d if self.spectrum == "normalized" else self.tau
        return np.exp(-j / scale) + self.eps


def run_one(cfg: Table51Config, cell: int, run: int) -> Iterator[dict]:
    """All ratios of one (sample configuration, run): yields tidy rows (one per method x ratio x metric)."""
    n1, n2 = cfg.sample_configs[cell]
    d, q, nr = cfg.d, cfg.q, len(cfg.ratios_db)
    lam = cfg.eigenvalues()
    sd = np.sqrt(lam)
    stream = lambda name: rng_stream(cfg.seed, "table5_1", cell, run, name)  # noqa: E731

    V = stream("V").standard_normal((d, q))                 # V* has i.i.d. N(0,1) entries, not orthonormal [PAPER]
    X1 = stream("X1").standard_normal((n1, d)) * sd         # rows ~ N(0, Sigma_T), Sigma_T = diag(lam)
    X2 = stream("X2").standard_normal((n2, d)) * sd
    Xte = stream("Xte").standard_normal((cfg.n_test, d)) * sd

    g = stream("theta")
    a = g.standard_normal((q, nr))
    sigma_v = np.sqrt(q * 10.0 ** (-np.asarray(cfg.ratios_db) / 10.0))   # A-T4: E|u|^2 / E|v|^2 = c_u^2 10^(dB/10)
    theta = cfg.c_u * (V @ a) + g.standard_normal((d, nr)) * sigma_v

    z = stream("noise")
    s_tr, s_te = cfg.noise_scale * cfg.sigma_train, cfg.noise_scale * cfg.sigma_test
    y1 = X1 @ theta + s_tr * z.standard_normal((n1, nr))
    y2 = X2 @ theta + s_tr * z.standard_normal((n2, nr))
    yte = Xte @ theta + s_te * z.standard_normal((cfg.n_test, nr))

    th1 = phase1_fit(X1, V, y1)
    th2 = gd_least_squares(X2, y2, th1, cfg.gd_steps)
    th0 = gd_least_squares(np.vstack([X1, X2]), np.vstack([y1, y2]), np.zeros_like(th1), cfg.gd_steps)

    for method, est in zip(METHODS, (th1, th2, th0)):
        measures = error_ratios(Xte, yte, est, theta, lam)
        for metric, values in measures.items():
            for k, db in enumerate(cfg.ratios_db):
                yield {"n1": n1, "n2": n2, "db": db, "method": method, "seed": run, "step": 0,
                       "metric": metric, "value": float(values[k])}


def run_experiment(cfg: Table51Config, progress=None) -> pd.DataFrame:
    """Every sample configuration x run; tidy long format (seed, step, metric, value + keys)."""
    jobs = [(c, r) for c in range(len(cfg.sample_configs)) for r in range(cfg.runs)]
    rows: list[dict] = []
    for c, r in (progress(jobs) if progress else jobs):
        rows.extend(run_one(cfg, c, r))
    return pd.DataFrame(rows)


def summarize(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean and sd over runs of the reported metric, one row per (n1, n2, dB), a column per method."""
    sel = runs[runs["metric"] == metric]
    agg = sel.groupby(["n1", "n2", "db", "method"])["value"].agg(["mean", "std", "count"]).reset_index()
    wide = agg.pivot(index=["n1", "n2", "db"], columns="method", values=["mean", "std"])
    wide.columns = [m if stat == "mean" else f"{m}_sd" for stat, m in wide.columns]
    wide = wide.reset_index().sort_values(["n1", "db"], ascending=[True, False])
    return wide[["n1", "n2", "db", *METHODS, *(f"{m}_sd" for m in METHODS)]].reset_index(drop=True)


def run(ctx):
    """Runner of Table 5.1: every cell x run of one configuration."""
    from fedrepro.runner import RunResult

    cfg = Table51Config.from_dict(ctx.params)
    rows = run_experiment(cfg, progress=lambda jobs: ctx.progress(jobs, desc="cells x runs"))
    return RunResult(rows, seeds=[cfg.seed], data={"thesis-ch5-synthetic": "real"},
                     extra={"runs": cfg.runs, "streams": "rng_stream(seed, 'table5_1', cell, run, name)"})

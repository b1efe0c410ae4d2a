"""The runs behind Figs. 3-8 and Table I (Sec. V-A.4): tidy long rows, one per (trial, variant, step, metric).

Parameters (the registry's resolved configuration):
  J, N, D, K, I (or I_values: a list, Fig. 7), nu, K_tilde, T, R, trials, sparse (bool) with d_Z, d_A, d_E,
  record ("all": every step; "log": every step up to 300, then 80 log-spaced steps),
  record_objective ("all": the objective at every step whatever `record` says, so that crossings after step 300
  stay exact, e.g. Fig. 3's randn start at R = 4000; time and bpv keep `record`),
  variants: [{label, q (null: AltMaxVar), batch (null: full gradient), start (warm|randn), compressor (optional: any
  fedrepro.comm compressor in CuteMaxVar's place; the rows' method is then its name)}].
Streams (fedrepro.runtime.rng_stream): data  (seed, experiment, trial[, I], "data"),
  random start (seed, experiment, trial[, I], "init"), per variant (..., label, "sgd" | "compressor").
Rows: variant, method, start, q (32 for AltMaxVar), batch (J = full gradient), I, seed (= trial), step,
metric (objective | time | bpv), value, bits_up, bits_down (cumulative, all nodes); plus per-trial
reference rows (variant "reference", metrics v_star, mvlsa, density, lambda_K, lambda_K1) at step 0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from fedrepro.gcca.engine import EngineConfig, run_maxvar
from fedrepro.gcca.generators import dense_views, sparse_views
from fedrepro.gcca.mvlsa import mvlsa
from fedrepro.gcca.optimum import optimum
from fedrepro.leaderboard.candidates import BOARD_KEYS
from fedrepro.registry.methods import compressor_spec
from fedrepro.runtime import rng_stream

# What `run` reads (gcca.yaml fig3-fig8), checked when the registry loads; format: fedrepro/registry/params.py.
PARAMETERS = {
    "J": "int>=1", "N": "int>=1", "D": "int>=1", "K": "int>=1", "K_tilde": "int>=1",
    "I": "int>=2",                          # views (nodes)
    "I_values?": "list[int>=2]",            # Fig. 7: one run per I (replaces I)
    "nu": "float>=0",
    "sparse?": "bool", "d_Z?": "float>0<=1", "d_A?": "float>0<=1", "d_E?": "float>0<=1",   # sparse views (Fig. 8)
    "T": "int>=1", "R": "int>=1", "trials": "int>=1",
    "prox_weight?": "float>=0",
    "record?": "all|log",
    "record_objective?": "all|log",         # "all": the objective at every step whatever `record` says (Fig. 3, paper)
    "variants": [{"label": "str",
                  "q": "int>=2|null",       # CuteMaxVar bits per entry; null: AltMaxVar
                  "compressor?": "compressor",   # any fedrepro.comm compressor in CuteMaxVar's place (overrides q)
                  "batch": "int>=1|null",   # SGD minibatch; null: full gradient
                  "start?": "warm|randn"}],
}


# The leaderboard's board run (config/leaderboard.yaml): this runner's parameters, the board's keys and the
# figure method whose settings each compressor takes (`template`).
BOARD_PARAMETERS = {**PARAMETERS, **BOARD_KEYS, "template": "str"}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py).  Units: the inner steps (trials x
# iterations x inner steps x variants, or the board's compressors) times, per step, the views (Fig. 7 sums over its
# view counts) plus the step's fixed work (aggregation, objective, compression), about two views' worth at the dense
# views' size (quick scale: 9e-5 to 1.5e-4 CPU s a step with 3 views, 1.3e-3 with 53 on average); the sparse views
# of Fig. 8 cost their size (J x N x K a view).  Plus, for dense views, each (trial, I) set-up (the views, v* and the
# MVLSA start; the board repeats it per compressor): about 1,500 units (benchmarks/cost_terms.py: 23 ms against
# 15 us a unit at the paper's sizes).  Rows: what the run logs, the objective at every step or at the
# `record_steps` grid, time and bits at the grid.
WORK = {"units": "trials * R * T * (len(board_compressors) if board_compressors else len(variants)) * "
                 "(J * N * K * sum(I_values if I_values else [I]) if sparse else "
                 "sum(I_values if I_values else [I]) + 2 * len(I_values if I_values else [I])) + "
                 "(0 if sparse else 1500 * trials * len(I_values if I_values else [I]) * "
                 "(len(board_compressors) if board_compressors else 1))",
        "memory": "J * N * max(I_values if I_values else [I])",
        "rows": "trials * len(I_values if I_values else [I]) * "
                "(len(board_compressors) if board_compressors else len(variants)) * "
                "((R + 1 if record_objective == 'all' else min(R, 300) + 1 + (80 if R > 300 else 0)) + "
                "2 * (R + 1 if record == 'all' else min(R, 300) + 1 + (80 if R > 300 else 0)))",
        "defaults": {"I_values": "None", "sparse": "False", "board_compressors": "None", "record": "'all'",
                     "record_objective": "record"},
        "shape": ["sparse"]}

COLUMNS = ["variant", "method", "start", "q", "batch", "I", "seed", "step", "metric", "value", "bits_up", "bits_down"]


def record_steps(R: int, mode: str) -> tuple[int, ...] | None:
    if mode == "all":
        return None
    if mode != "log":
        raise ValueError(f"record must be 'all' or 'log'; got {mode!r}")
    dense = np.arange(min(R, 300) + 1)
    tail = np.unique(np.round(np.geomspace(300, R, 80)).astype(int)) if R > 300 else np.array([], dtype=int)
    return tuple(int(s) for s in np.unique(np.concatenate([dense, tail, [R]])))


def _views(p: dict, rng: np.random.Generator, I: int):
    if p.get("sparse"):
        return sparse_views(rng, p["J"], p["N"], p["D"], I, p["nu"], d_Z=p["d_Z"], d_A=p["d_A"], d_E=p["d_E"])
    return dense_views(rng, p["J"], p["N"], p["D"], I, p["nu"])


def random_start(rng: np.random.Generator, I: int, N: int, J: int, K: int) -> np.ndarray:
    """The "randn" start Q_i^(0) (A-19) in the authors' convention.

    The authors' drivers (small_1.m) draw randn in their scaled variable Q' = sqrt(J) Q (their objective is
    1/2 ||X Q' / sqrt(J) - G||^2), so in the paper's unscaled Q the start is N(0, 1/J):
    E ||X_i Q_i^(0)||^2 = K tr(X_i^T X_i) / J, J times smaller than a N(0, 1) draw (issue 17)."""
    return rng.standard_normal((I, N, K)) / np.sqrt(J)


def _bits_per_entry(cfg: EngineConfig) -> int:
    """The `q` column: CuteMaxVar's q, 32 for AltMaxVar, 0 for another compressor (its bits are in bits_up/down)."""
    return 32 if cfg.method == "altmaxvar" else int(compressor_spec(cfg.compressor_spec())[1].get("q", 0))


def run_experiment(experiment: str, p: dict, progress: Callable | None = None) -> pd.DataFrame:
    seed = int(p["seed"])
    I_values = p.get("I_values") or [p["I"]]
    record = record_steps(int(p["R"]), p.get("record", "all"))
    dense_objective = p.get("record_objective", p.get("record", "all")) == "all"
    jobs = [(t, I) for t in range(int(p["trials"])) for I in I_values]
    frames = []
    for trial, I in (progress(jobs) if progress else jobs):
        key = (seed, experiment, trial) + ((I,) if p.get("I_values") else ())
        views = _views(p, rng_stream(*key, "data"), I)
        K = int(p["K"])
        opt = optimum(views, K)
        warm = mvlsa(views, K, int(p["K_tilde"]))
        ref = {"v_star": opt.v_star, "mvlsa": warm.cost, "lambda_K": opt.eigenvalues[K - 1]}
        if len(opt.eigenvalues) > K:
            ref["lambda_K1"] = opt.eigenvalues[K]
        if p.get("sparse"):
            ref["density"] = float(views.density.mean())
        frames.append(pd.DataFrame({"variant": "reference", "method": "reference", "start": "", "q": 0, "batch": 0,
                                    "I": I, "seed": trial, "step": 0, "metric": list(ref), "value": list(ref.values()),
                                    "bits_up": 0, "bits_down": 0}))
        randn = random_start(rng_stream(*key, "init"), I, views.N, views.J, K)
        for v in p["variants"]:
            batch = v.get("batch")
            cfg = EngineConfig(K=K, R=int(p["R"]), T=int(p["T"]), batch=batch, q=v.get("q"), compressor=v.get("compressor"),
                               prox_weight=float(p.get("prox_weight", 0.0)), record=None if dense_objective else record)
            Q0 = warm.Q if v.get("start", "warm") == "warm" else randn
            res = run_maxvar(views, Q0, cfg, rng_stream(*key, v["label"], "sgd"), rng_stream(*key, v["label"], "compressor"))
            base = {"variant": v["label"], "method": cfg.method, "start": v.get("start", "warm"),
                    "q": _bits_per_entry(cfg), "batch": views.J if batch is None else min(batch, views.J),
                    "I": I, "seed": trial}
            thin = np.ones(len(res.steps), bool) if record is None else np.isin(res.steps, record)
            for metric, values in (("objective", res.objective), ("time", res.time), ("bpv", res.bpv)):
                keep = np.ones(len(res.steps), bool) if metric == "objective" else thin
                frames.append(pd.DataFrame({**base, "step": res.steps[keep], "metric": metric, "value": values[keep],
                                            "bits_up": res.bits_up[keep], "bits_down": res.bits_down[keep]}))
    return pd.concat(frames, ignore_index=True)[COLUMNS]


# ---- analysis helpers shared by the notebooks ---------------------------------------------------------------


def mean_curves(runs: pd.DataFrame, by: list[str], metric: str = "objective") -> pd.DataFrame:
    """Trial-averaged curves (arithmetic means over trials at each iteration, as Sec. V-A.4 averages its Monte Carlo trials)."""
    sel = runs[runs.metric == metric]
    out = sel.groupby(by + ["step"], as_index=False).agg(value=("value", "mean"), bits_up=("bits_up", "mean"),
                                                          bits_down=("bits_down", "mean"))
    return out.rename(columns={"value": metric})


def reference(runs: pd.DataFrame, metric: str, by: list[str] | None = None):
    sel = runs[(runs.variant == "reference") & (runs.metric == metric)]
    return sel.groupby(by)["value"].mean() if by else float(sel["value"].mean())


def iterations_to_level(curve: np.ndarray, steps: np.ndarray, level: float) -> float:
    """R of the CR (Sec. V-A.3): 1-based index of the first entry of [f(0), f(1), ...] strictly below the level (NaN: never).

    The curve must be recorded at every step from 0 up to the crossing (checked)."""
    from fedrepro.comm.conventions import gcca_iterations_to_level

    R = gcca_iterations_to_level(curve, level)
    if R is None:
        return float("nan")
    if not np.array_equal(steps[:R], np.arange(R)):
        raise ValueError("the curve is not recorded at every step before its crossing")
    return float(R)


def run(ctx):
    """Runner (registry `runner:`) of Figs. 3-8 and Table I: every trial and variant of one configuration."""
    from fedrepro.runner import RunResult

    p = ctx.params
    rows = run_experiment(ctx.experiment, p, progress=lambda jobs: ctx.progress(jobs, desc="trials"))
    return RunResult(rows, seeds=[p["seed"]], data={"gcca-linear-synthetic": "real"},
                     extra={"trials": p["trials"], "blas_threads": ctx.threads,
                            "streams": f"rng_stream(seed, '{ctx.experiment}', trial[, I], 'data'|'init'|label+'sgd'|"
                                       "'compressor')"})


def board(ctx):
    """Leaderboard runner: each compressor of `compressors` in CuteMaxVar's place, with the batch and start of the
    figure's variant `template`, one engine call each (fedrepro.leaderboard.candidates)."""
    from dataclasses import replace

    from fedrepro.leaderboard.candidates import run_each
    from fedrepro.runner import RunResult

    p = ctx.params
    template = _variant(p["variants"], p["template"])

    def one(name, spec):
        variant = {**template, "label": name, "q": None, "compressor": spec}
        return run(replace(ctx, params={**p, "variants": [variant]})).rows

    rows = run_each(p["board_compressors"], p.get("knobs"), one, ctx.log)
    return RunResult(rows, seeds=[p["seed"]], data={"gcca-linear-synthetic": "real"},
                     extra={"trials": p["trials"], "template": p["template"],
                            "streams": f"rng_stream(seed, '{ctx.experiment}', trial, 'data'|'init'|<compressor>+'sgd'|"
                                       "'compressor')"})


def _variant(variants: list[dict], label: str) -> dict:
    for v in variants:
        if v["label"] == label:
            return dict(v)
    raise ValueError(f"template: no variant labelled {label!r}; the variants: {', '.join(v['label'] for v in variants)}")

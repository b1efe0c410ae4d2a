"""Weigh the cost-plan terms that a run's work units leave out, at the paper's sizes, independently of any build.

    PYTHONPATH=src python benchmarks/cost_terms.py [--repeat 5] [--append]

Two terms of the gcca runners' `WORK` (fedrepro/workflow/plan.py):

* **a trial's set-up** (gcca Figs. 3-7 and the board, `fedrepro.gcca.experiments`): the views, v* and the MVLSA
  start of one (trial, I) pair, against one work unit (one view of one inner CuteMaxVar step, q = 3, batch 150);
  the board repeats the set-up for every compressor (each compressor is a run of its own).
* **the deep toy's evaluation** (gcca Figs. 10-11, `fedrepro.gcca.deep_experiments`): what an outer iteration
  costs beyond its Adam steps (the forward pass over the J training samples, the G-step, the objective and the
  callback's test representation and linear SVM), against one training sample of an Adam step.

Prints each ratio (set-up: in work units; evaluation: in training samples per evaluated sample, J + J_test) and,
with `--append`, adds them to benchmarks/results/speedups.csv.  One thread, as the run rule runs them.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import time
from datetime import date
from pathlib import Path

import numpy as np

from fedrepro.runtime import limit_threads
from fedrepro.workflow.plan import machine_name


def _cpu(fn, repeat: int) -> float:
    """The median process CPU seconds of `repeat` calls of fn(), after one untimed call (first-use costs: imports,
    library initialisation)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return float(np.median(times))


def gcca_setup(repeat: int) -> tuple[float, float, float]:
    """(set-up CPU s, CPU s per work unit, set-up in work units) at gcca Fig. 3's paper sizes."""
    from fedrepro.gcca.engine import EngineConfig, run_maxvar
    from fedrepro.gcca.generators import dense_views
    from fedrepro.gcca.mvlsa import mvlsa
    from fedrepro.gcca.optimum import optimum

    J, N, D, K, I, nu, K_tilde, R, T = 500, 25, 20, 5, 3, 0.1, 10, 200, 10
    rng = np.random.default_rng(0)

    def setup():
        views = dense_views(rng, J, N, D, I, nu)
        optimum(views, K)
        return mvlsa(views, K, K_tilde)

    per_setup = _cpu(setup, repeat)
    views = dense_views(rng, J, N, D, I, nu)
    warm = mvlsa(views, K, K_tilde)
    cfg = EngineConfig(K=K, R=R, T=T, batch=150, q=3)
    steps = _cpu(lambda: run_maxvar(views, warm.Q, cfg, np.random.default_rng(1), np.random.default_rng(2)), repeat)
    per_unit = steps / (R * T * (I + 2 * 1))     # the WORK's per-step units: sum(I) + 2 x the I values
    return per_setup, per_unit, per_setup / per_unit


def deep_toy_evaluation(repeat: int) -> tuple[float, float, float]:
    """(evaluation CPU s per outer iteration, CPU s per training sample, evaluation in training samples per
    evaluated sample) at the deep toy's paper sizes (gcca.yaml deep_toy as-stated)."""
    import torch

    from fedrepro.gcca.deep import run_deep, test_representation
    from fedrepro.gcca.deep_experiments import _cfg, linear_svm_accuracy, toy_views

    p = {"J": 10000, "J_test": 1000, "K": 2, "hidden": [128, 64], "T": 10, "batch": 1000, "lr": 0.001, "q": 3,
         "R": 3, "loss_form": "sq", "inner_unit": "steps", "dtype": "float32"}
    X, y = toy_views(np.random.default_rng(0), p["J"])
    Xte, yte = toy_views(np.random.default_rng(1), p["J_test"], shuffle=False)
    Xte_t = torch.as_tensor(Xte, dtype=torch.float32)

    def callback(model, r, G):
        _, G_test = test_representation(model, Xte_t)
        return {"accuracy": linear_svm_accuracy(G, y, G_test, yte)}

    def run(T):
        run_deep(X, _cfg({**p, "T": T}, 3), np.random.default_rng(2), np.random.default_rng(3), callback=callback)

    evaluation_only = _cpu(lambda: run(0), repeat) / (p["R"] + 1)           # R + 1 evaluations, no Adam step
    with_steps = _cpu(lambda: run(p["T"]), repeat)
    per_sample = (with_steps - evaluation_only * (p["R"] + 1)) / (p["R"] * p["T"] * p["batch"])
    return evaluation_only, per_sample, evaluation_only / per_sample / (p["J"] + p["J_test"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--append", action="store_true", help="add the ratios to benchmarks/results/speedups.csv")
    args = ap.parse_args()
    limit_threads(1)
    setup_s, unit_s, setup_units = gcca_setup(args.repeat)
    print(f"gcca set-up of one (trial, I): {setup_s * 1e3:.1f} ms CPU; a work unit {unit_s * 1e6:.2f} us; "
          f"the set-up = {setup_units:,.0f} work units")
    eval_s, sample_s, eval_weight = deep_toy_evaluation(args.repeat)
    print(f"deep toy evaluation per outer iteration: {eval_s:.3f} s CPU; a training sample {sample_s * 1e6:.2f} us; "
          f"the evaluation = {eval_weight:.2f} training samples per evaluated sample (J + J_test)")
    if args.append:
        out = Path(__file__).resolve().parent / "results" / "speedups.csv"
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        machine = machine_name()
        with out.open("a", newline="") as f:
            w = csv.writer(f)
            w.writerow(["cost_terms.py gcca set-up", commit, date.today().isoformat(), machine, "idle",
                        "set-up in work units", round(setup_units), "units",
                        f"one (trial, I) at Fig. 3's paper sizes {setup_s * 1e3:.1f} ms, a unit {unit_s * 1e6:.2f} us"])
            w.writerow(["cost_terms.py deep toy evaluation", commit, date.today().isoformat(), machine, "idle",
                        "evaluation weight", round(eval_weight, 2), "training samples per evaluated sample",
                        f"{eval_s:.3f} s per outer iteration, a training sample {sample_s * 1e6:.2f} us"])


if __name__ == "__main__":
    main()

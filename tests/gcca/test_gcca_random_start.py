"""Fig. 3's randn start (A-19) follows the authors' convention (issue 17).

The authors' drivers (small_1.m in the Federated-MaxVar-GCCA code) write the cost as 1/2 ||X Q' / sqrt(J) - G||^2
and draw Q' = randn(N, K), i.e. Q = Q' / sqrt(J) ~ N(0, 1/J) in the paper's unscaled variable.  Their G^(0) is a
separate randn(J, K); we keep the paper's G^(0) = polar(sum_i X_i Q_i^(0)) (spec A-19), so the first objective
is compared with that G.
"""

import numpy as np

from fedrepro.gcca.experiments import random_start, run_experiment
from fedrepro.gcca.generators import dense_views
from fedrepro.gcca.objective import polar
from fedrepro.runtime import rng_stream

# Fig. 3's sizes (J, N, D, K, I) = (500, 25, 20, 5, 3), nu = 0.1: the first objective is J-sensitive only here
PAPER = dict(J=500, N=25, D=20, K=5, I=3, nu=0.1, K_tilde=10, T=10, trials=1, R=1, record="all", seed=0,
             variants=[{"label": "alt-randn", "q": None, "batch": None, "start": "randn"}])


def _first_objective(runs):
    sel = runs[(runs.variant == "alt-randn") & (runs.metric == "objective") & (runs.step == 0)]
    return float(sel.value.iloc[0])


def test_first_objective_is_the_authors_cost_at_their_randn_draw():
    p = PAPER
    runs = run_experiment("fig3", p)
    # the authors' variables, rebuilt from the same streams: Q' ~ randn, M_i = X_i Q'_i / sqrt(J)
    X = dense_views(rng_stream(0, "fig3", 0, "data"), p["J"], p["N"], p["D"], p["I"], p["nu"]).X
    Qp = rng_stream(0, "fig3", 0, "init").standard_normal((p["I"], p["N"], p["K"]))
    M = [X[i] @ Qp[i] / np.sqrt(p["J"]) for i in range(p["I"])]
    G = polar(sum(M))
    authors = sum(0.5 * np.sum((m - G) ** 2) for m in M)
    assert np.isclose(_first_objective(runs), authors, rtol=1e-10)


def test_first_objective_has_the_expected_size_and_does_not_grow_with_J():
    """E 1/2 sum_i ||X_i Q_i||^2 = K/(2J) sum_i tr(X_i^T X_i): about 3,750 here, not J = 500 times that."""
    p = PAPER
    X = dense_views(rng_stream(0, "fig3", 0, "data"), p["J"], p["N"], p["D"], p["I"], p["nu"]).X
    expected = p["K"] / (2 * p["J"]) * sum(np.sum(x ** 2) for x in X)
    f0 = _first_objective(run_experiment("fig3", p))
    assert 0.75 < f0 / expected < 1.25
    # over independent draws the mean of ||X Q||^2 matches K tr(X^T X) / J (the N(0, 1) draw is J times larger)
    draws = random_start(np.random.default_rng(1), 400, p["N"], p["J"], p["K"])
    mean = np.mean([np.sum((X[0] @ q) ** 2) for q in draws])
    assert np.isclose(mean, p["K"] * np.sum(X[0] ** 2) / p["J"], rtol=0.05)


def test_record_objective_all_keeps_every_step_while_time_and_bpv_stay_log_spaced():
    from fedrepro.gcca.experiments import record_steps

    p = dict(PAPER, J=60, N=8, D=6, K=2, K_tilde=4, R=400, record="log", record_objective="all")
    runs = run_experiment("fig3", p)
    steps = {m: np.sort(runs[(runs.variant == "alt-randn") & (runs.metric == m)].step.to_numpy())
             for m in ("objective", "time", "bpv")}
    assert np.array_equal(steps["objective"], np.arange(401))
    assert np.array_equal(steps["time"], np.array(record_steps(400, "log"))) and len(steps["time"]) < 401
    assert np.array_equal(steps["bpv"], steps["time"])

"""Thesis ch. 5 estimators against closed forms and a literal gradient-descent loop; Table 5.1 as an artifact."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedrepro.artifact import open_artifact
from fedrepro.transfer.artifacts import log_error_summary, table5_1
from fedrepro.transfer.representation import (
    error_ratios,
    gd_least_squares,
    gd_least_squares_iterative,
    phase1_fit,
)
from fedrepro.transfer.table5_1 import METHODS, Table51Config, run_experiment


def _problem(n, d, b=3, seed=0):
    g = np.random.default_rng(seed)
    return g.standard_normal((n, d)) * np.linspace(1.0, 0.3, d), g.standard_normal((n, b)), g.standard_normal((d, b))


def test_phase1_noise_free_recovers_theta_in_span():
    g = np.random.default_rng(1)
    d, q, n = 60, 5, 20
    V = g.standard_normal((d, q))
    theta = V @ g.standard_normal((q, 2))
    X = g.standard_normal((n, d))
    np.testing.assert_allclose(phase1_fit(X, V, X @ theta), theta, atol=1e-9)


def test_phase1_equals_closed_form_least_squares():
    g = np.random.default_rng(2)
    d, q, n = 40, 6, 15
    V, X, y = g.standard_normal((d, q)), g.standard_normal((n, d)), g.standard_normal((n, 1))
    closed = V @ np.linalg.solve((X @ V).T @ (X @ V), (X @ V).T @ y)
    np.testing.assert_allclose(phase1_fit(X, V, y), closed, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n,d", [(12, 30), (40, 10)])
def test_closed_form_gd_equals_literal_gd(n, d):
    X, y, theta0 = _problem(n, d)
    np.testing.assert_allclose(gd_least_squares(X, y, theta0, 200), gd_least_squares_iterative(X, y, theta0, 200),
                               rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("n,d", [(12, 30), (40, 10)])
def test_infinite_steps_give_the_interpolant_closest_to_start(n, d):
    """K = inf: theta0 + X^+ (y - X theta0) (eq. 5.7 / Lemma 9 for n < d, OLS for n > d)."""
    X, y, theta0 = _problem(n, d)
    expected = theta0 + np.linalg.pinv(X) @ (y - X @ theta0)
    np.testing.assert_allclose(gd_least_squares(X, y, theta0, np.inf), expected, rtol=1e-8, atol=1e-9)


def test_ratios_of_the_true_model_are_one_and_eer_zero():
    g = np.random.default_rng(3)
    X, theta = g.standard_normal((50, 8)), g.standard_normal((8, 2))
    y = X @ theta + g.standard_normal((50, 2))
    out = error_ratios(X, y, theta, theta, np.ones(8))
    np.testing.assert_allclose(out["root_ratio"], 1.0)
    np.testing.assert_allclose(out["eer"], 0.0)


SMALL = {"d": 40, "q": 4, "sample_configs": [[8, 8], [40, 40]], "ratios_db": [50, 1], "n_test": 30, "runs": 2,
         "spectrum": "normalized", "tau": 1.0, "eps": 1e-4, "c_u": 1.0, "sigma_train": 0.1, "sigma_test": 1.0,
         "gd_steps": 100, "metric": "root_ratio"}


def test_same_seed_same_numbers_and_another_seed_differs():
    a = run_experiment(Table51Config.from_dict(SMALL))
    b = run_experiment(Table51Config.from_dict(SMALL))
    c = run_experiment(Table51Config.from_dict({**SMALL, "seed": 1}))
    assert a.equals(b)
    assert not np.allclose(a["value"], c["value"])
    assert set(a["method"]) == {"phase1", "phase2", "scratch"} and len(a) == 2 * 2 * 2 * 3 * 3


def test_config_rejects_unknown_and_missing_keys():
    with pytest.raises(KeyError, match="gd_step"):
        Table51Config.from_dict({**SMALL, "gd_step": 3})
    with pytest.raises(KeyError, match="n_test"):
        Table51Config.from_dict({k: v for k, v in SMALL.items() if k != "n_test"})


def test_literal_spectrum_collapses_to_eps_and_normalized_decays_slowly():
    lit = Table51Config.from_dict({**SMALL, "spectrum": "literal"}).eigenvalues()
    norm = Table51Config.from_dict(SMALL).eigenvalues()
    assert lit[-1] == pytest.approx(1e-4, rel=1e-3) and lit[20] < 1e-3
    assert norm.min() > np.exp(-1)


# ---- Table 5.1 as an artifact (fedrepro.transfer.artifacts), on a synthetic run frame without a kernel ----

REPO = Path(__file__).resolve().parents[1]
CELLS = [(100, 100), (1000, 1000)]
DBS = [50.0, 1.0]


def _runs(configuration, metric):
    """Two runs per cell: method value = base ± 0.1 (mean base, sd 0.1·√2), base = 1 + index of the method."""
    rows = []
    for n1, n2 in CELLS:
        for db in DBS:
            for i, m in enumerate(METHODS):
                for seed, delta in ((0, -0.1), (1, 0.1)):
                    for name in ("mse_ratio", "root_ratio"):
                        value = (1 + i + delta) * (1 if name == metric else 100)
                        rows.append({"configuration": configuration, "n1": n1, "n2": n2, "db": db, "method": m,
                                     "seed": seed, "step": 0, "metric": name, "value": value})
    return pd.DataFrame(rows)


def test_table5_1_means_sds_and_paper_values(tmp_path):
    files = []
    for c, metric in (("as-stated", "mse_ratio"), ("calibrated", "root_ratio")):
        path = tmp_path / "runs" / "table5_1" / f"{c}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        _runs(c, metric).to_csv(path, index=False)
        files.append(str(path))
    outputs = {s: str(tmp_path / "out" / f"table5_1.{s}") for s in ("csv", "md")}
    art = open_artifact("thesis", "table5_1", root=REPO, scale="quick", configuration="calibrated", run_files=files,
                        outputs=outputs)
    md = table5_1(art).data
    table = pd.read_csv(outputs["csv"])
    assert len(table) == 2 * len(CELLS) * len(DBS)
    # each configuration reads its own metric (the other one is 100x off)
    assert np.allclose(table[list(METHODS)].to_numpy(), [1, 2, 3])
    assert np.allclose(table[[f"{m}_sd" for m in METHODS]].to_numpy(), 0.1 * np.sqrt(2))
    # the paper's value of (100, 100) at 50 dB from the registry's cells claim: 1.01, 1.01, 10.17
    row = table[(table.configuration == "calibrated") & (table.n1 == 100) & (table.db == 50)].iloc[0]
    assert (row.paper_phase1, row.paper_phase2, row.paper_scratch) == (1.01, 1.01, 10.17)
    # every cell: ours (mean ± sd) and the paper's; the runs behind each mean, counted from the run frame
    assert ("| (100, 100) | 50 | 1.00 ± 0.14 (paper 1.01) | 2.00 ± 0.14 (paper 1.01) | 3.00 ± 0.14 (paper 10.17) | 2 |"
            in md)
    assert (table.n_runs == 2).all() and "mean ± sd over 2 runs" in md
    assert Path(outputs["md"]).read_text().startswith("# Table 5.1 — configuration `calibrated`")
    assert "over 12 cells" in log_error_summary(art).data

"""The ADEPT artifact functions on small synthetic runs, without a kernel: means and stds against numpy."""

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from fedrepro.adept import artifacts as A
from fedrepro.artifact import open_artifact
from fedrepro.io import write_csv

REPO = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(0)


def open_frames(name, frames: dict, tmp_path, scale="quick"):
    """An Artifact over run CSVs written from `frames` (experiment -> runs), outputs in tmp_path."""
    files = []
    for exp, frame in frames.items():
        path = tmp_path / "runs" / exp / "as-stated.csv"
        write_csv(path, frame)
        files.append(str(path))
    art = open_artifact("adept", name, root=REPO, scale=scale, configuration="as-stated", run_files=files)
    kinds = ("csv", "md") if art.kind == "table" else ("csv", "pdf", "png")
    art.outputs = {k: str(tmp_path / "out" / f"{name}.{k}") for k in kinds}
    return art


def energy_runs(keys: dict, methods, seeds=3):
    """Energy rows for every combination of `keys` (column -> values), method and seed."""
    grid = pd.MultiIndex.from_product([*keys.values(), methods, range(seeds)],
                                      names=[*keys, "method", "seed"]).to_frame(index=False)
    return grid.assign(configuration="as-stated", step=150, metric="energy", value=RNG.uniform(50, 99, len(grid)))


def test_table1_means_stds_and_the_papers_orientation(tmp_path):
    runs = energy_runs({"sigma_star": [0.05, 0.025, 0.01]}, ["baseline", "adept", "global", "local"])
    runs["snr_db"] = runs.sigma_star.map({0.05: 6, 0.025: 12, 0.01: 20})
    art = open_frames("table1", {"table1": runs}, tmp_path)
    md = A.table1(art).data
    data = pd.read_csv(art.outputs["csv"])
    cell = runs[(runs.sigma_star == 0.025) & (runs.method == "global")].value
    row = data[data.sigma_star == 0.025].iloc[0]
    assert row.global_training == pytest.approx(cell.mean()) and row.global_training_std == pytest.approx(cell.std(ddof=0))
    # the paper's layout: methods as rows, sigma* (SNR) as columns, the paper's number in every cell
    lines = [line for line in md.splitlines() if line.startswith("| ")]
    assert lines[0] == "| Method | σ* = 0.05 (6 dB) | σ* = 0.025 (12 dB) | σ* = 0.01 (20 dB) |"
    adept = next(line for line in lines if line.startswith("| ADEPT-AE |"))
    assert f"{row.adept:.1f} ± {row.adept_std:.1f} (paper 95.9)" in adept
    assert all(line.count("(paper ") == 3 for line in lines[1:]) and "over 3 runs" in md


def test_table2_error_reduction(tmp_path):
    keys = {"dataset": ["mnist"], "latent": ["low", "high"], "latent_dim": [10]}
    runs = energy_runs(keys, ["baseline", "adept", "fedavg", "local"], seeds=1).assign(n_train_mean=120.0)
    art = open_frames("table2", {"table2_mnist": runs}, tmp_path)
    md = A.table2(art).data
    row = pd.read_csv(art.outputs["csv"]).iloc[0]
    assert row.err_reduction_vs_fedavg == pytest.approx(1 - (100 - row.adept) / (100 - row.fedavg))
    # one run: the mean alone, never '± 0.0'; the paper's MNIST Low FedAvg is 66.2
    assert "± 0.0" not in md and "one run per cell" in md and f"{row.fedavg:.1f} (paper 66.2)" in md


def dgm_runs(seeds=2, clients=3, side=4):
    rows = []
    for seed in range(seeds):
        for regime in ("high", "low"):
            for k, method in enumerate(A.DGM_METHODS):
                key = {"regime": regime, "method": method, "seed": seed, "step": 5}
                for c in range(clients):
                    for metric, scale in (("fid", 10.0), ("kid", 0.01)):
                        rows.append({**key, "client": c, "metric": metric,
                                     "value": scale * (1 + k + 0.1 * c + 0.05 * seed)})
                for metric in ("noise_grid", "noise_all"):
                    rows.append({**key, "client": 0, "metric": metric, "value": 0.02 + 0.005 * k})
                if seed == 0 and regime == "high":
                    rows += [{**key, "client": 0, "step": s, "metric": "pixel", "value": float(RNG.uniform()),
                              "pixel": j} for s in range(16) for j in range(side * side)]
    return pd.DataFrame(rows).assign(configuration="as-stated", feature_extractor="featnet")


def test_table3_and_figures_3_4(tmp_path):
    runs = dgm_runs()
    art = open_frames("table3", {"table3": runs}, tmp_path / "t3")
    A.table3(art)
    t3 = pd.read_csv(art.outputs["csv"])
    high = t3[t3.regime == "high"].iloc[0]
    # per run: the mean over clients; then mean over runs
    per_run = runs.query("regime == 'high' and method == 'local' and metric == 'fid'").groupby("seed").value.mean()
    assert high.fid_local == pytest.approx(per_run.mean()) and high.n_runs == 2
    assert high.imp_fid_vs_local == pytest.approx(1 - high.fid_adept / high.fid_local)
    md = Path(art.outputs["md"]).read_text()
    assert "| Baseline | not run (paper 72.3) | not run (paper 0.062) |" in md
    assert f"| ADEPT-DGM | {high.fid_adept:.1f} ± {high.fid_adept_std:.1f} (paper 80.0) |" in md

    art = open_frames("fig3", {"table3": runs}, tmp_path / "f3")
    fig = A.fig3(art)
    summ = pd.read_csv(art.outputs["csv"]).query("row == 'summary'").iloc[0]
    assert summ.local_over_adept == pytest.approx(0.03 / 0.02) and len(fig.axes) == 3

    art = open_frames("fig4", {"table3": runs}, tmp_path / "f4")
    fig = A.fig4(art)
    summ = pd.read_csv(art.outputs["csv"]).query("row == 'summary'").iloc[0]
    kid = runs.query("regime == 'high' and method == 'adept' and metric == 'kid'").value
    assert summ.kid_max_adept == pytest.approx(kid.max()) and summ.kid_var_adept == pytest.approx(kid.var(ddof=0))
    assert isinstance(fig, matplotlib.figure.Figure) and Path(art.outputs["png"]).stat().st_size > 5_000


def test_fig2_draws_every_method(tmp_path):
    rows = []
    for s in (0.0, 0.02, 0.1):
        for seed in range(2):
            for m, v in (("adept", 1.1), ("local_closed", 1.5), ("global_closed", 1.2 + 10 * s)):
                rows.append({"sigma_star": s, "seed": seed, "method": m, "metric": "ratio", "value": v + 0.01 * seed})
            rows.append({"sigma_star": s, "seed": seed, "method": "adept", "metric": "sigma", "value": max(s, 1e-3)})
    art = open_frames("fig2", {"fig2": pd.DataFrame(rows).assign(configuration="as-stated")}, tmp_path)
    fig = A.fig2(art)
    data = pd.read_csv(art.outputs["csv"])
    assert data.best_other.tolist() == pytest.approx(np.minimum(data.local, data.global_training).tolist())
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["ADEPT-PCA", "Local training", "Global training"]

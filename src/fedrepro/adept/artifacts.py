"""Every ADEPT artifact (Figures 2-4, Tables 1-3): one function per artifact taking a `fedrepro.artifact.Artifact`.

`<artifact>(art)` writes the artifact's data CSV (what the claims read) and its Markdown table or PDF + PNG, and
returns the `Markdown` table or the matplotlib Figure.  The `*_data` functions turn the tidy run CSVs into that
data frame; the `_plot_*` functions draw it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fedrepro.plotting import apply_style, color, label, markdown_table
from fedrepro.plotting.paper_values import (
    beside,
    mean_std,
    paper_value,
    runs_text,
    stand_in_line,
)

DATASET_ID = {"mnist": 0, "fashion_mnist": 1, "cifar10": 2}
DATASET_LABEL = {"mnist": "MNIST", "fashion_mnist": "F. MNIST", "cifar10": "CIFAR-10"}   # the paper's row names


def fig2_data(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (configuration, sigma*): mean/std ratio per method, learned sigma; local/global use GD when run,
    else the closed form (both agree within ~1%; Sec. 5.1)."""
    r = runs[runs.metric == "ratio"]
    piv = r.pivot_table(index=["configuration", "sigma_star", "seed"], columns="method", values="value").reset_index()
    for m in ("local", "global"):
        if m not in piv:
            piv[m] = piv[f"{m}_closed"]
    sig = runs[runs.metric == "sigma"].set_index(["configuration", "sigma_star", "seed"])["value"]
    piv["sigma_learned"] = piv.set_index(["configuration", "sigma_star", "seed"]).index.map(sig)
    cols = ["adept", "local", "global", "local_closed", "global_closed", "sigma_learned"]
    g = piv.groupby(["configuration", "sigma_star"])[cols]
    out = g.mean().join(g.std(ddof=0).add_suffix("_std")).reset_index()
    out["best_other"] = np.minimum(out["local"], out["global"])
    return out.rename(columns=lambda c: c.replace("global", "global_training"))


def _plot_fig2(data: pd.DataFrame, configuration: str, title: str, adept_label: str, sigma_caps: dict | None = None):
    """The shown configuration in full; every other configuration's ADEPT curve and learned sigma dashed beside it.

    sigma_caps: configuration -> sqrt(r / d_theta), the largest sigma the sigma-step can keep (adept:A-dtheta)."""
    import matplotlib.pyplot as plt

    d = data[data.configuration == configuration].sort_values("sigma_star")
    x = d["sigma_star"].to_numpy()
    xpos = np.where(x > 0, x, (x[x > 0].min() / 3 if (x > 0).any() else 1e-3))
    others = [c for c in dict.fromkeys(data.configuration) if c != configuration]
    several = bool(others)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [2, 1]})
    for m, mk in (("adept", "o"), ("local", "s"), ("global_training", "^")):
        name = adept_label if m == "adept" else label(m)
        ax.errorbar(xpos, d[m], yerr=d[m + "_std"], marker=mk, capsize=3, color=color(m),
                    label=f"{name} ({configuration})" if several and m == "adept" else name)
    ax2.plot(xpos, d["sigma_learned"], "o-", color=color("adept"), label=configuration if several else None)
    for i, c in enumerate(others):
        o = data[data.configuration == c].sort_values("sigma_star")
        ls = ("--", "-.", ":")[i % 3]
        ax.errorbar(xpos, o["adept"], yerr=o["adept_std"], marker="o", mfc="none", ls=ls, capsize=3,
                    color=color("adept"), label=f"{adept_label} ({c})")
        ax2.plot(xpos, o["sigma_learned"], marker="o", mfc="none", ls=ls, color=color("adept"), label=c)
    for c, cap in (sigma_caps or {}).items():
        if c == configuration or c in others:
            ax2.axhline(cap, color="grey", lw=0.8, ls="--" if c != configuration else "-")
            ax2.annotate(rf"$\sqrt{{r/d_\theta}}$, {c}", (xpos[0], cap), fontsize=7, va="bottom", color="grey")
    ax.set(xscale="log", yscale="log", xlabel="true heterogeneity σ* (leftmost point: σ* = 0)",
           ylabel="reconstruction error / true model's", title="error ratio")
    ax.legend(fontsize=8)
    ax2.plot(xpos, xpos, ":", color="grey", label="σ = σ*")
    ax2.set(xscale="log", yscale="log", xlabel="σ*", ylabel=f"learned σ ({adept_label})", title="learned σ")
    ax2.legend(fontsize=7)
    fig.suptitle(title)
    return fig


def _mean_std(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    g = runs.groupby(keys + ["method"])["value"]
    out = g.mean().to_frame("mean").join(g.std(ddof=0).to_frame("std")).join(g.size().to_frame("n_runs")).reset_index()
    wide = out.pivot_table(index=keys, columns="method", values=["mean", "std"])
    wide.columns = [m if s == "mean" else f"{m}_std" for s, m in wide.columns]
    wide["n_runs"] = out.groupby(keys)["n_runs"].min()
    # "global" is a Python keyword, and claims are Python expressions over the columns
    return wide.reset_index().rename(columns=lambda c: c.replace("global", "global_training"))


def table1_data(runs: pd.DataFrame) -> pd.DataFrame:
    return _mean_std(runs[runs.metric == "energy"], ["configuration", "sigma_star", "snr_db"])


def table2_data(runs: pd.DataFrame) -> pd.DataFrame:
    r = runs[runs.metric == "energy"].copy()
    t = _mean_std(r, ["configuration", "dataset", "latent", "latent_dim"])
    t["dataset_id"] = t["dataset"].map(DATASET_ID)
    t["high"] = (t["latent"] == "high").astype(int)
    for m in ("fedavg", "local"):
        if m in t and "adept" in t:
            t[f"err_reduction_vs_{m}"] = 1 - (100 - t["adept"]) / (100 - t[m])
    return t.sort_values(["configuration", "dataset_id", "high"]).reset_index(drop=True)


DGM_METHODS = ("adept", "fedavg_ft", "local")


def _client_means(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (configuration, regime, method, seed): the mean over clients of FID and KID (one run's number)."""
    r = runs[runs.metric.isin(["fid", "kid"])]
    return r.groupby(["configuration", "regime", "method", "seed", "metric", "feature_extractor"])["value"].mean().reset_index()


def table3_data(runs: pd.DataFrame) -> pd.DataFrame:
    c = _client_means(runs)
    g = c.groupby(["configuration", "regime", "feature_extractor", "metric", "method"])["value"]
    s = g.mean().to_frame("mean").join(g.std(ddof=0).to_frame("std")).join(g.size().to_frame("n_runs")).reset_index()
    wide = s.pivot_table(index=["configuration", "regime", "feature_extractor"], columns=["metric", "method"],
                         values=["mean", "std"])
    wide.columns = [f"{met}_{m}" + ("_std" if stat == "std" else "") for stat, met, m in wide.columns]
    t = wide.reset_index()
    t["high"] = (t["regime"] == "high").astype(int)
    t["inception"] = t["feature_extractor"].str.startswith("inception").astype(int)
    t["n_runs"] = int(s["n_runs"].min())
    imps = []
    for met in ("fid", "kid"):
        for m in ("fedavg_ft", "local"):
            col = f"imp_{met}_vs_{m}"
            t[col] = 1 - t[f"{met}_adept"] / t[f"{met}_{m}"]
            imps.append(col)
    t["min_imp"] = t[imps].min(axis=1)
    t["max_imp"] = t[imps].max(axis=1)
    for m in DGM_METHODS:   # FID increase when the local data is halved (claim 21), repeated on every row
        hi = t.loc[t.high == 1].set_index("configuration")[f"fid_{m}"]
        lo = t.loc[t.high == 0].set_index("configuration")[f"fid_{m}"]
        t[f"fid_drop_{m}"] = t["configuration"].map(lo - hi)
    return t.sort_values(["configuration", "high"], ascending=[True, False]).reset_index(drop=True)


def fig3_data(runs: pd.DataFrame) -> pd.DataFrame:
    """Pixel rows of the class-0 client's 16 samples (row == 'pixel') and one summary row of noise estimates."""
    px = runs[(runs.metric == "pixel") & (runs.regime == "high") & (runs.seed == 0)]
    px = px[["configuration", "method", "step", "pixel", "value"]].rename(columns={"step": "sample"})
    px.insert(0, "row", "pixel")
    nz = runs[(runs.metric.isin(["noise_grid", "noise_all"])) & (runs.regime == "high") & (runs.seed == 0)]
    summ = nz.pivot_table(index="configuration", columns=["metric", "method"], values="value")
    summ.columns = [f"{met}_{m}" for met, m in summ.columns]
    summ = summ.reset_index()
    summ.insert(0, "row", "summary")
    summ["local_over_adept"] = summ["noise_grid_local"] / summ["noise_grid_adept"]
    return pd.concat([summ, px], ignore_index=True)


def _plot_fig3(data: pd.DataFrame, configuration: str, title: str, labels: dict):
    import matplotlib.pyplot as plt

    px = data[(data.row == "pixel") & (data.configuration == configuration)]
    summ = data[(data.row == "summary") & (data.configuration == configuration)].iloc[0]
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.8))
    for ax, m in zip(axes, DGM_METHODS):
        g = px[px.method == m].sort_values(["sample", "pixel"])
        n = int(g["sample"].max()) + 1
        side = round(np.sqrt(g["pixel"].max() + 1))
        imgs = g["value"].to_numpy().reshape(n, side, side)
        k = int(np.ceil(np.sqrt(n)))
        grid = np.ones((k * (side + 1), k * (side + 1)))
        for s in range(n):
            r, c = divmod(s, k)
            grid[r * (side + 1): r * (side + 1) + side, c * (side + 1): c * (side + 1) + side] = imgs[s]
        ax.imshow(grid, cmap="gray", vmin=0, vmax=1)
        ax.set_title(f"{labels[m]}\nnoise σ̂ = {summ[f'noise_grid_{m}']:.3f}")
        ax.axis("off")
        ax.grid(False)
    fig.suptitle(title)
    return fig


def fig4_data(runs: pd.DataFrame) -> pd.DataFrame:
    """Per-client KID (High regime, every seed: row == 'client') and one summary row per configuration."""
    k = runs[(runs.metric == "kid") & (runs.regime == "high")]
    k = k[["configuration", "method", "seed", "client", "value", "feature_extractor"]].rename(columns={"value": "kid"})
    k.insert(0, "row", "client")
    g = k.groupby(["configuration", "method"])["kid"]
    s = pd.DataFrame({"max": g.max(), "var": g.var(ddof=0), "mean": g.mean()}).reset_index()
    summ = s.pivot_table(index="configuration", columns="method", values=["max", "var", "mean"])
    summ.columns = [f"kid_{stat}_{m}" for stat, m in summ.columns]
    summ = summ.reset_index()
    summ.insert(0, "row", "summary")
    return pd.concat([summ, k], ignore_index=True)


def _plot_fig4(data: pd.DataFrame, configuration: str, title: str, labels: dict):
    import matplotlib.pyplot as plt
    import seaborn as sns

    d = data[(data.row == "client") & (data.configuration == configuration)].copy()
    d["method"] = d["method"].map(labels)
    fig, ax = plt.subplots(figsize=(6, 4))
    sns.violinplot(data=d, x="method", y="kid", hue="method", order=[labels[m] for m in DGM_METHODS], cut=0, ax=ax,
                   palette={labels[m]: color(m) for m in DGM_METHODS}, legend=False)
    ext = d["feature_extractor"].iloc[0] if len(d) else ""
    ax.set(xlabel="", ylabel="per-client KID (lower is better)")
    fig.suptitle(title)
    ax.text(0.01, -0.16, f"features: {ext}", transform=ax.transAxes, fontsize=8)
    return fig


# ---- the artifacts ---------------------------------------------------------------------------------------
def _markdown(art, text: str):
    from IPython.display import Markdown

    art.write_markdown(text)
    return Markdown(text)


def _figure(art, fig):
    art.save_figure(fig)
    return fig


def _head(art, sizes: str) -> str:
    """The table's caption, what we ran (from the run parameters) and, for stand-in data, the mark."""
    lines = [f"{art.label}: {art.caption}", "", f"Ours ({art.scale} scale): {sizes}"]
    if art.stand_in:
        lines += ["", stand_in_line(art.data_status)]
    return "\n".join(lines) + "\n\n"


def _method(art, m: str) -> str:
    """The paper's name of a method in this artifact (parameter `labels`, e.g. ADEPT-AE), else the common one."""
    return (art.params.get("labels") or {}).get(m, label(m))


def _cell(art, row, m: str, digits: int = 1) -> str:
    """'ours ± std (paper x)' for method m in a data row; the paper's number from the artifact's claims."""
    ours = mean_std(row[m], row.get(m + "_std"), int(row["n_runs"]), digits) if m in row else "not run"
    return beside(ours, paper_value(art.claims(), dict(row), m), digits)


def fig2(art):
    """Figure 2: ADEPT-PCA vs local and global training against σ*, and the learned σ."""
    data = fig2_data(art.runs)
    art.write_data(data)
    apply_style()
    p = art.run_params("fig2")
    sizes = (f"d = {p['d']}, r = {p['r']}, m = {p['m']}, n = {p['n']}, {p['T']} iterations, "
             f"{p['seeds']} seeds; {art.scale} scale")
    caps = {}
    for c in dict.fromkeys(data.configuration):   # the sigma the Stiefel constraint allows: d^2(V, U) <= r
        q = art.run_params("fig2", c)
        caps[c] = float(np.sqrt(q["r"] / (q["d"] * q["r"] if q["dtheta_mode"] == "d*r" else q["d"])))
    return _figure(art, _plot_fig2(data, art.shown, f"{art.label} ({sizes})", _method(art, "adept"), caps))


BASELINE_TEXT = {"frozen": "the true decoder, frozen", "init_only": "local training from the true decoder",
                 "adept_init": "ADEPT-AE from the true decoder"}


def table1(art):
    """Table 1 as the paper prints it: methods as rows, the heterogeneity levels σ* (SNR) as columns."""
    data = table1_data(art.runs)
    art.write_data(data)
    d = data[data.configuration == art.shown].sort_values("sigma_star", ascending=False)
    methods = ["baseline", "adept", "global_training", "local"]
    table = pd.DataFrame({"Method": [_method(art, m) for m in methods]})
    for _, row in d.iterrows():
        table[f"σ* = {row.sigma_star:g} ({row.snr_db:g} dB)"] = [_cell(art, row, m) for m in methods]
    p = art.run_params("table1")
    sizes = (f"linear AE {p['d']} → {p['latent']} → {p['d']}, {p['m']} clients × {p['n_train']} samples, "
             f"{p['epochs']} full-batch iterations, ADEPT communicating every {p.get('round_iters', 1)} "
             f"iterations (σ gradient: {p.get('sigma_grad', 'fresh')}), Baseline: "
             f"{BASELINE_TEXT.get(p.get('baseline_decoder', 'frozen'), p.get('baseline_decoder'))}; "
             f"configuration `{art.shown}`; energy captured %, {runs_text(d.n_runs)}.")
    # the rows another configuration changes (docs/adept.md: adept:A-sigma-schedule, adept:A-baseline)
    rows = []
    for c in [c for c in dict.fromkeys(data.configuration) if c != art.shown]:
        o = data[data.configuration == c].sort_values("sigma_star", ascending=False)
        for m in methods:
            if m in o and m in d and not np.allclose(o[m].to_numpy(), d[m].to_numpy()):
                rows.append({"Method": f"{_method(art, m)} [{c}]",
                             **{col: _cell(art, row, m) for col, (_, row) in zip(table.columns[1:], o.iterrows())}})
    text = _head(art, sizes) + markdown_table(table)
    if rows:
        text += "\n\nOther configurations (the rows they change):\n\n" + markdown_table(pd.DataFrame(rows))
    return _markdown(art, text)


def _table2(art):
    """Table 2 as the paper prints it: dataset and method as rows, Low / High latent size as columns."""
    data = table2_data(art.runs)
    art.write_data(data)
    d = data[data.configuration == art.shown]
    methods = ["baseline", "adept", "fedavg", "local"]
    rows = []
    for ds, g in d.groupby("dataset", sort=False):
        g = g.sort_values("high")
        dims = " / ".join(str(int(v)) for v in g.latent_dim)
        for i, m in enumerate(methods):
            cells = {f"{lat.capitalize()} latent": _cell(art, row, m) for lat, (_, row) in zip(g.latent, g.iterrows())}
            rows.append({"Dataset": f"{DATASET_LABEL[ds]} (latent {dims})" if i == 0 else "",
                         "Method": _method(art, m), **cells})
    exps = [e for e in art.experiments if e in {Path(f).parent.name for f in art.run_files}] or art.experiments
    p = art.run_params(exps[0])
    n_train = art.runs["n_train_mean"].mean() if "n_train_mean" in art.runs else float("nan")
    sizes = (f"{p['m']} clients, one class each, ≈{n_train:.0f} training samples per client, {p['model']} AE, "
             f"{p['epochs']} rounds of τ = {p['tau']} local steps; energy captured %, {runs_text(d.n_runs)}.")
    return _markdown(art, _head(art, sizes) + markdown_table(pd.DataFrame(rows)))


def table2(art):
    """Table 2, MNIST and Fashion-MNIST rows: ADEPT-AE vs FedAvg, local and the Baseline."""
    return _table2(art)


def table2_cifar10(art):
    """Table 2, CIFAR-10 rows (a separate artifact: the CIFAR-10 stand-in marks only these)."""
    return _table2(art)


def table3(art):
    """Table 3 as the paper prints it: the Baseline, then each regime's methods as rows; FID and KID as columns."""
    data = table3_data(art.runs)
    art.write_data(data)
    d = data[data.configuration == art.shown]
    claims = art.claims()
    digits = {"fid": 1, "kid": 3}

    def cell(row, met, m):
        col = f"{met}_{m}"
        ours = mean_std(row[col], row.get(col + "_std"), int(row["n_runs"]), digits[met]) if col in row else "not run"
        # the paper's numbers are Inception-feature numbers: look them up as such
        paper = paper_value(claims, {**dict(row), "inception": 1}, col)
        return beside(ours, paper, digits[met])

    baseline = {"regime": "", "high": -1}
    rows = [{"Method": _method(art, "baseline"), "FID": cell(baseline, "fid", "baseline"),
             "KID": cell(baseline, "kid", "baseline")}]
    for _, row in d.sort_values("high", ascending=False).iterrows():
        rows.append({"Method": f"{row.regime.capitalize()} number of samples", "FID": "", "KID": ""})
        rows += [{"Method": _method(art, m), "FID": cell(row, "fid", m), "KID": cell(row, "kid", m)}
                 for m in DGM_METHODS]
    p = art.run_params("table3")
    features = ", ".join(sorted(set(d.feature_extractor)))
    sizes = (f"{p['m']} clients (one MNIST class each; High / Low: {p['regimes']['high']:g} / "
             f"{p['regimes']['low']:g} of the class), U-Net widths {p['widths']}, {p['epochs']} rounds, "
             f"{p['n_samples']} generated samples per client; features: {features} (the paper: Inception); "
             f"{runs_text(d.n_runs)}.")
    return _markdown(art, _head(art, sizes) + markdown_table(pd.DataFrame(rows)))


def fig3(art):
    """Figure 3: the class-0 client's samples per method, with their noise estimates."""
    data = fig3_data(art.runs)
    art.write_data(data)
    apply_style()
    return _figure(art, _plot_fig3(data, art.shown, f"{art.label} ({_dgm_sizes(art)})", _labels(art)))


def fig4(art):
    """Figure 4: per-client KID violins (High-sample setting)."""
    data = fig4_data(art.runs)
    art.write_data(data)
    apply_style()
    return _figure(art, _plot_fig4(data, art.shown, f"{art.label} ({_dgm_sizes(art)})", _labels(art)))


def _labels(art) -> dict:
    return {m: _method(art, m) for m in DGM_METHODS}


def _dgm_sizes(art) -> str:
    p = art.run_params("table3")
    return f"{p['m']} clients, {p['epochs']} rounds, {p['n_samples']} samples per client; {art.scale} scale"

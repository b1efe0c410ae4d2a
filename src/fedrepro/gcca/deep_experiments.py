"""The deep runs behind Figs. 10-11 (2-D toy, Sec. V-B.2-3) and Figs. 12-13 (EHR, Sec. V-B.4): tidy long rows.

Every run CSV has the columns ``kind, method, q, seed, step, metric, value, view, x, y, label``:
  kind "curve":   per (method, trial, step) the metrics objective, bpv and accuracy (test)
  kind "final":   per method of trial 0, the clustering accuracy (toy: spectral clustering, view 1-3 and G)
                  or the RBF-SVM accuracy (EHR: raw X_1, Alt, Cute)
  kind "points":  trial 0's plotted points (toy: raw and transformed test views and G; EHR: t-SNE of the test rows)
  kind "info":    data facts (EHR: counts of diagnoses, medicines, groups, train/test)
Streams (fedrepro.runtime.rng_stream): data (seed, experiment, trial, "train"|"test"), the network init
(seed, experiment, trial, "init"; the same for both methods), per method (..., method, "sgd"|"compressor").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import torch

from fedrepro.gcca.deep import DeepConfig, run_deep, test_representation
from fedrepro.runtime import rng_stream

# What `deep_toy` and `ehr` read (gcca.yaml), checked when the registry loads; format: fedrepro/registry/params.py.
_DEEP = {
    "K": "int>=1", "hidden": "list[int>=1]", "T": "int>=1", "batch": "int>=1", "lr": "float>0",
    "q": "int>=2",                          # CuteMaxVar bits per entry (AltMaxVar runs beside it)
    "R": "int>=1", "trials": "int>=1",
    "loss_form?": "sq|nonsq", "inner_unit?": "steps|epochs", "dtype?": "float32|float64",
}
DEEP_TOY_PARAMETERS = {**_DEEP, "J": "int>=2", "J_test": "int>=2"}
EHR_PARAMETERS = {
    **_DEEP,
    "n_test": "int>=1",
    "log1p?": "bool",
    "svm_feature_scaling?": "none|sqrtJ",
    "within_group_shuffle_per_view?": "bool",
    "tsne_seed?": "int>=0",
}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py): trials x rounds x the samples an
# outer iteration passes x the networks' width.  An outer iteration takes T Adam steps of `batch` samples, or T epochs
# of J / batch steps (`inner_unit`, gcca:A-29), then evaluates: the forward pass over the J training samples (the
# G-step, the objective) and the J_test test samples, and a linear SVM on G, about half a training sample's cost per
# evaluated sample (benchmarks/cost_terms.py).
DEEP_TOY_WORK = {"units": "trials * R * (T * (max(1, J // batch) if inner_unit == 'epochs' else 1) * batch + "
                          "(J + J_test) / 2) * sum(hidden)",
                 "memory": "J * sum(hidden)", "defaults": {"inner_unit": "'steps'"}}
EHR_WORK = {"units": "trials * R * T * batch * sum(hidden)"}

COLUMNS = ["kind", "method", "q", "seed", "step", "metric", "value", "view", "x", "y", "label"]


# ---- data ---------------------------------------------------------------------------------------------------------

def toy_views(rng: np.random.Generator, n: int, shuffle: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The DGCCA 2-D three-view mixture (Sec. V-B.3, after Benton et al. [8]): (3, n, 2) float64 and labels (first n/2 class 0)."""
    half = n // 2
    y = np.r_[np.zeros(half, int), np.ones(n - half, int)]
    eps = rng.standard_normal((3, n, 2))
    phi = rng.uniform(0, 2 * np.pi, n)
    r = np.where(y == 0, 1.0, 2.0)
    v1 = r[:, None] * np.c_[np.cos(phi), np.sin(phi)] + 0.1 * eps[0]
    u = rng.uniform(-3, 3, n)
    v2 = np.where(y[:, None] == 0, np.c_[u, 2 * u**2], np.c_[u, 1 + 0.5 * u**2]) + 0.1 * eps[1]
    phi3 = rng.uniform(0, 2 * np.pi, n)
    v3 = np.where(y[:, None] == 0, 2 * np.c_[np.cos(phi3), np.sin(phi3)] + 0.1 * eps[2], 1.0 * eps[2])
    X = np.stack([v1, v2, v3])
    if shuffle:
        perm = rng.permutation(n)
        X, y = X[:, perm], y[perm]
    return X, y


def ehr_split(views: np.ndarray, labels: np.ndarray, rng: np.random.Generator, n_test: int = 200,
              per_view: bool = True):
    """The EHR hold-out (gcca:A-33): within-group shuffle per view, one global permutation, last n_test rows test."""
    from fedrepro.data.multiview import holdout, within_group_shuffle

    X, y = within_group_shuffle(np.asarray(views, dtype=np.float64), np.asarray(labels), rng, per_view=per_view)
    tr, te = holdout(len(y), n_test)
    return X[:, tr], y[tr], X[:, te], y[te]


# ---- metrics ------------------------------------------------------------------------------------------------------

def matched_accuracy(pred: np.ndarray, truth: np.ndarray) -> float:
    """max over label permutations of the agreement (Hungarian matching; Sec. V-B.3)."""
    from scipy.optimize import linear_sum_assignment

    k = int(max(pred.max(), truth.max())) + 1
    C = np.zeros((k, k))
    np.add.at(C, (pred, truth), 1)
    r, c = linear_sum_assignment(-C)
    return float(C[r, c].sum() / len(truth))


def spectral_accuracy(Z: np.ndarray, truth: np.ndarray, gamma: float = 5.0) -> float:
    """A-12: SpectralClustering(2, rbf, gamma = 5, random_state = 100), Hungarian-matched accuracy."""
    from sklearn.cluster import SpectralClustering

    pred = SpectralClustering(n_clusters=2, affinity="rbf", gamma=gamma, random_state=100).fit_predict(Z)
    return matched_accuracy(pred, truth)


def linear_svm_accuracy(G: np.ndarray, y: np.ndarray, G_test: np.ndarray, y_test: np.ndarray) -> float:
    """A-13: LinearSVC() on sqrt(J) G (train), tested on sqrt(J_test) G_test."""
    from sklearn.svm import LinearSVC

    clf = LinearSVC().fit(np.sqrt(len(G)) * G, y)
    return float((clf.predict(np.sqrt(len(G_test)) * G_test) == y_test).mean())


def rbf_svm_accuracy(A: np.ndarray, y: np.ndarray, A_test: np.ndarray, y_test: np.ndarray, scaling: str = "none") -> float:
    """A-14: SVC(kernel='rbf') defaults; scaling 'sqrtJ' multiplies each G by sqrt(rows) (off by default)."""
    from sklearn.svm import SVC

    if scaling == "sqrtJ":
        A, A_test = np.sqrt(len(A)) * A, np.sqrt(len(A_test)) * A_test
    return float((SVC(kernel="rbf").fit(A, y).predict(A_test) == y_test).mean())


# ---- runs ---------------------------------------------------------------------------------------------------------

def _cfg(p: dict, q) -> DeepConfig:
    return DeepConfig(K=int(p["K"]), R=int(p["R"]), hidden=tuple(p["hidden"]), T=int(p["T"]), batch=int(p["batch"]),
                      lr=float(p["lr"]), q=q, loss_form=p.get("loss_form", "sq"),
                      inner_unit=p.get("inner_unit", "steps"), dtype=p.get("dtype", "float32"))


def _rows(**cols) -> pd.DataFrame:
    return pd.DataFrame(cols)


def _curve_rows(method, q, trial, res) -> list[pd.DataFrame]:
    out = []
    for metric, values in (("objective", res.objective), ("bpv", res.bpv), *res.metrics.items()):
        out.append(_rows(kind="curve", method=method, q=q, seed=trial, step=res.steps, metric=metric, value=values))
    return out


def _methods(p: dict):
    return [("altmaxvar", None), ("cutemaxvar", int(p["q"]))]


def run_deep_toy(experiment: str, p: dict, device: str = "cpu", progress: Callable | None = None) -> pd.DataFrame:
    seed = int(p["seed"])
    frames = []
    trials = list(range(int(p["trials"])))
    for trial in (progress(trials) if progress else trials):
        X, y = toy_views(rng_stream(seed, experiment, trial, "train"), int(p["J"]))
        Xte, yte = toy_views(rng_stream(seed, experiment, trial, "test"), int(p["J_test"]), shuffle=False)
        Xte_t = torch.as_tensor(Xte, dtype=getattr(torch, p.get("dtype", "float32")), device=device)

        def callback(model, r, G):
            _, G_test = test_representation(model, Xte_t)
            return {"accuracy": linear_svm_accuracy(G, y, G_test, yte)}

        init = int(rng_stream(seed, experiment, trial, "init").integers(2**31))
        for method, q in _methods(p):
            res = run_deep(X, _cfg(p, q), rng_stream(seed, experiment, trial, method, "sgd"),
                           rng_stream(seed, experiment, trial, method, "compressor"), seed_init=init,
                           callback=callback, device=device)
            frames += _curve_rows(method, 32 if q is None else q, trial, res)
            if trial == 0:  # Fig. 10: the transformed test views and G_test, with their clustering accuracy
                M, G_test = test_representation(res.model, Xte_t)
                for v, Z in [*((str(i + 1), M[i]) for i in range(3)), ("G", G_test)]:
                    frames.append(_rows(kind="points", method=method, q=q or 32, seed=0, view=v, x=Z[:, 0], y=Z[:, 1],
                                        label=yte))
                    frames.append(_rows(kind="final", method=method, q=q or 32, seed=0, view=[v], metric="cluster_acc",
                                        value=[spectral_accuracy(Z, yte)]))
        if trial == 0:
            for i in range(3):
                frames.append(_rows(kind="points", method="raw", q=0, seed=0, view=str(i + 1), x=Xte[i, :, 0],
                                    y=Xte[i, :, 1], label=yte))
                frames.append(_rows(kind="final", method="raw", q=0, seed=0, view=[str(i + 1)], metric="cluster_acc",
                                    value=[spectral_accuracy(Xte[i], yte)]))
    return pd.concat(frames, ignore_index=True).reindex(columns=COLUMNS)


def run_ehr(experiment: str, p: dict, views: np.ndarray, labels: np.ndarray, device: str = "cpu",
            progress: Callable | None = None) -> pd.DataFrame:
    from sklearn.manifold import TSNE

    seed = int(p["seed"])
    X, y, Xte, yte = ehr_split(views, labels, rng_stream(seed, experiment, "split"), int(p["n_test"]),
                               per_view=bool(p.get("within_group_shuffle_per_view", True)))
    if p.get("log1p"):
        X, Xte = np.log1p(X), np.log1p(Xte)
    scaling = p.get("svm_feature_scaling", "none")
    info = {"diagnoses_kept": len(labels), "medicines": views.shape[2], "groups": len(np.unique(labels)),
            "J_train": len(y), "J_test": len(yte), "views": views.shape[0]}
    frames = [_rows(kind="info", method="data", q=0, seed=0, metric=list(info), value=list(info.values()))]
    raw_acc = rbf_svm_accuracy(X[0], y, Xte[0], yte)
    frames.append(_rows(kind="final", method="raw", q=0, seed=0, view=["1"], metric="svm_acc", value=[raw_acc]))
    Xte_t = torch.as_tensor(Xte, dtype=getattr(torch, p.get("dtype", "float32")), device=device)
    tsne_seed = int(p.get("tsne_seed", 0))

    def tsne(Z):
        return TSNE(n_components=2, random_state=tsne_seed, init="pca").fit_transform(Z)

    trials = list(range(int(p["trials"])))
    for trial in (progress(trials) if progress else trials):
        def callback(model, r, G):
            _, G_test = test_representation(model, Xte_t)
            return {"accuracy": rbf_svm_accuracy(G, y, G_test, yte, scaling)}

        init = int(rng_stream(seed, experiment, trial, "init").integers(2**31))
        for method, q in _methods(p):
            res = run_deep(X, _cfg(p, q), rng_stream(seed, experiment, trial, method, "sgd"),
                           rng_stream(seed, experiment, trial, method, "compressor"), seed_init=init,
                           callback=callback, device=device)
            frames += _curve_rows(method, 32 if q is None else q, trial, res)
            if trial == 0:  # Fig. 12: t-SNE of the test G and its RBF-SVM accuracy at r = R
                _, G_test = test_representation(res.model, Xte_t)
                E = tsne(G_test)
                frames.append(_rows(kind="points", method=method, q=q or 32, seed=0, view="G", x=E[:, 0], y=E[:, 1],
                                    label=yte))
                frames.append(_rows(kind="final", method=method, q=q or 32, seed=0, view=["G"], metric="svm_acc",
                                    value=[float(res.metrics["accuracy"][-1])]))
    E = tsne(Xte[0])
    frames.append(_rows(kind="points", method="raw", q=0, seed=0, view="1", x=E[:, 0], y=E[:, 1], label=yte))
    return pd.concat(frames, ignore_index=True).reindex(columns=COLUMNS)


def _torch_facts(ctx) -> dict:
    return {"torch_threads": torch.get_num_threads(),
            "streams": f"rng_stream(seed, '{ctx.experiment}', trial, ...) (see fedrepro.gcca.deep_experiments)"}


def deep_toy(ctx):
    """Runner of Figs. 10-11: the deep engine on the generated 2-D toy views."""
    from fedrepro.runner import RunResult

    torch.set_num_threads(max(1, int(ctx.threads)))
    rows = run_deep_toy(ctx.experiment, ctx.params, device=ctx.device,
                        progress=lambda jobs: ctx.progress(jobs, desc=ctx.experiment))
    return RunResult(rows, seeds=[ctx.seed], data={"gcca-deep-toy-synthetic": "real"}, extra=_torch_facts(ctx))


def ehr(ctx):
    """Runner of Figs. 12-13: the deep engine on the DE-SynPUF co-occurrence views (input `data`)."""
    from fedrepro.data.loaders import load_cooccurrence_views
    from fedrepro.runner import RunResult

    torch.set_num_threads(max(1, int(ctx.threads)))
    ev = load_cooccurrence_views(ctx.inputs["data"])
    rows = run_ehr(ctx.experiment, ctx.params, ev.views, ev.labels, device=ctx.device,
                   progress=lambda jobs: ctx.progress(jobs, desc=ctx.experiment))
    return RunResult(rows, seeds=[ctx.seed], extra=_torch_facts(ctx))

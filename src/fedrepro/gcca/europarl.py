"""Europarl (Fig. 9, Sec. V-A.5): hashed bag-of-words views, sparse MVLSA, CuteMaxVar/AltMaxVar with test AC.

Features (A-28): ``HashingVectorizer(n_features=2**19, alternate_sign=False, norm=None, lowercase=True)`` word
unigram counts, CSR float64, not centred.  Columns no training sentence uses are dropped per view (the
``HashedViews`` keep a per-view column map; a test sentence's buckets outside it are dropped too).  This is
exact: such a column of X_i is zero, so its row of Q_i gets no gradient and MVLSA's Q_i = V S^-1 U^T G is
zero there; X_i^test Q_i is unchanged.  The views are padded to the largest kept width so Q is one
(I, N, K) array.  Nothing here forms an N x N Gram matrix: the step 1/lambda_max comes from svds(k=1), MVLSA
from svds(k=K~) per view.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import svds

from fedrepro.gcca.objective import maxvar_objective
from fedrepro.runtime import compute_clock

_timer = compute_clock()   # CPU time: the timing rows must not change with the machine's load

# What `run` reads (gcca.yaml europarl), checked when the registry loads; format: fedrepro/registry/params.py.
PARAMETERS = {
    "languages": "list[str]",               # one view per language
    "n_train": "int>=1", "n_test": "int>=1", "n_features": "int>=1",
    "K": "int>=1", "K_tilde": "int>=1", "T": "int>=1",
    "batch?": "int>=1|null",                # SGD minibatch; null: full gradient
    "q": "int>=2",                          # CuteMaxVar bits per entry
    "R": "int>=1", "R_vstar": "int>=1",     # iterations; of the long uncompressed run that gives v*
    "ac_every": "int>=1", "ac_test?": "int>=1",   # alignment accuracy: every so many iterations, on this many rows
}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py): iterations (the v* run's too) x inner steps
# x batch x views x K_tilde.
WORK = {"units": "len(languages) * (R + R_vstar) * T * batch * K_tilde", "memory": "len(languages) * n_train"}


def hash_features(sentences: list[str], n_features: int = 2**19) -> sp.csr_matrix:
    from sklearn.feature_extraction.text import HashingVectorizer

    hv = HashingVectorizer(n_features=n_features, alternate_sign=False, norm=None, lowercase=True)
    return hv.transform(sentences).astype(np.float64).tocsr()


@dataclass
class HashedViews:
    """Sparse views (J, N) with no Gram matrix (duck-types the engine's views: I, J, N, lambda_max, apply,
    xt, full_gradient, batch_gradient)."""

    Xs: list
    XTs: list = field(init=False, repr=False)
    lambda_max: np.ndarray = field(init=False)

    def __post_init__(self):
        self.Xs = [sp.csr_matrix(x, dtype=np.float64) for x in self.Xs]
        self.XTs = [x.T.tocsr() for x in self.Xs]
        self.J, self.N = self.Xs[0].shape
        self.I = len(self.Xs)
        self.lambda_max = np.array([svds(x, k=1, return_singular_vectors=False, random_state=0)[0] ** 2
                                    for x in self.Xs])

    def apply(self, Q):
        return np.stack([x @ q for x, q in zip(self.Xs, Q)])

    def xt(self, G):
        if G.ndim == 2:
            return np.stack([xt @ G for xt in self.XTs])
        return np.stack([xt @ g for xt, g in zip(self.XTs, G)])

    def full_gradient(self, Q, XtG):
        return self.xt(self.apply(Q)) - XtG

    def batch_gradient(self, rows, Q, Ghat):
        B = rows.shape[1]
        out = np.empty((self.I, self.N, Q.shape[2]))
        for i, (x, r) in enumerate(zip(self.Xs, rows)):  # one CSR row slice per view
            XF = x[r]
            out[i] = XF.T @ (XF @ Q[i] - Ghat[r])
        return (self.J / B) * out

    @property
    def nnz_per_row(self) -> np.ndarray:
        return np.array([x.nnz / self.J for x in self.Xs])


def build_views(texts: dict, langs: list[str], train: np.ndarray, test: np.ndarray, n_features: int = 2**19):
    """(HashedViews of the training rows, list of test CSRs in the same compacted columns, kept width per view)."""
    trains, tests, widths = [], [], []
    for lang in langs:
        X = hash_features([texts[lang][j] for j in np.r_[train, test]], n_features)
        Xtr, Xte = X[: len(train)], X[len(train):]
        used = np.unique(Xtr.indices)
        colmap = np.full(n_features, -1, dtype=np.int64)
        colmap[used] = np.arange(len(used))
        trains.append((Xtr, colmap, len(used)))
        Xte = Xte.tocoo()
        keep = colmap[Xte.col] >= 0
        tests.append((Xte.row[keep], colmap[Xte.col[keep]], Xte.data[keep]))
        widths.append(len(used))
    N = max(widths)
    Xs = []
    for Xtr, colmap, _ in trains:
        c = Xtr.tocoo()
        Xs.append(sp.csr_matrix((c.data, (c.row, colmap[c.col])), shape=(len(train), N)))
    Xtest = [sp.csr_matrix((d, (r, c)), shape=(len(test), N)) for r, c, d in tests]
    return HashedViews(Xs), Xtest, np.array(widths)


@dataclass
class SparseMvlsa:
    Q: np.ndarray
    G: np.ndarray
    cost: float


def sparse_mvlsa(views: HashedViews, K: int, K_tilde: int) -> SparseMvlsa:
    """MVLSA (Rastogi et al. [10], mu = 0) from svds(k = K~) of each view: G = top-K left singular vectors of [U_1..U_I],
    Q_i = V_i S_i^-1 U_i^T G."""
    Us, Vs, Ss = [], [], []
    for x in views.Xs:
        k = min(K_tilde, min(x.shape) - 1)
        U, s, Vt = svds(x, k=k, random_state=0)
        keep = s > 1e-10 * s.max()
        Us.append(U[:, keep])
        Ss.append(s[keep])
        Vs.append(Vt[keep].T)
    W = np.concatenate(Us, axis=1)
    evals, evecs = np.linalg.eigh(W.T @ W)
    top = np.argsort(evals)[::-1][:K]
    G = W @ evecs[:, top] / np.sqrt(evals[top])
    Q = np.zeros((views.I, views.N, K))
    for i, (U, s, V) in enumerate(zip(Us, Ss, Vs)):
        Q[i] = (V / s) @ (U.T @ G)
    return SparseMvlsa(Q=Q, G=G, cost=maxvar_objective(views.apply(Q), G))


def run_europarl(experiment: str, p: dict, texts: dict, split: np.ndarray, progress=None):
    """Fig. 9 rows (tidy long): kind curve (method, step, metric objective|bpv|ac), reference (v_star, mvlsa,
    facts about the views), the v* run's curve (method 'vstar-run').

    Data: the data layer's split (0 = train, 1 = test), first n_train / n_test of each (fewer when the prepared
    corpus is smaller; recorded).  v* (A-4): the final objective of a long uncompressed AltMaxVar run
    (R_vstar iterations, same SGD batch and T, warm start).
    """
    import pandas as pd

    from fedrepro.gcca.alignment import alignment_accuracy
    from fedrepro.gcca.engine import EngineConfig, run_maxvar
    from fedrepro.runtime import rng_stream

    seed = int(p["seed"])
    langs = list(p["languages"])
    split = np.asarray(split)
    train = np.flatnonzero(split == 0)[: int(p["n_train"])]
    test_all = np.flatnonzero(split == 1)
    test = test_all[: int(p["n_test"])]
    t0 = _timer()
    views, Xtest, widths = build_views(texts, langs, train, test, int(p["n_features"]))
    t_build = _timer() - t0
    K = int(p["K"])
    warm = sparse_mvlsa(views, K, int(p["K_tilde"]))
    t_mvlsa = _timer() - t0 - t_build
    rng_ac = rng_stream(seed, experiment, "ac-subsample")
    n_ac = min(int(p.get("ac_test", len(test))), len(test))
    ac_rows = np.sort(rng_ac.choice(len(test), n_ac, replace=False))
    Xac = [x[ac_rows] for x in Xtest]

    def ac(r, Q, G):
        return {"ac": alignment_accuracy(np.stack([x @ q for x, q in zip(Xac, Q)]))}

    ref = {"mvlsa": warm.cost, "J_train": len(train), "J_test": len(test), "J_ac": n_ac, "I": len(langs),
           "N_hash": int(p["n_features"]), "N_kept_max": int(widths.max()), "N_kept_mean": float(widths.mean()),
           "nnz_per_row": float(views.nnz_per_row.mean()), "build_s": t_build, "mvlsa_s": t_mvlsa}
    frames = []
    batch = p.get("batch")
    runs = [("altmaxvar", None, int(p["R"])), ("cutemaxvar", int(p["q"]), int(p["R"])),
            ("vstar-run", None, int(p["R_vstar"]))]
    for label, q, R in (progress(runs) if progress else runs):
        cfg = EngineConfig(K=K, R=R, T=int(p["T"]), batch=batch, q=q)
        t1 = _timer()
        res = run_maxvar(views, warm.Q, cfg, rng_stream(seed, experiment, label, "sgd"),
                         rng_stream(seed, experiment, label, "compressor"),
                         callback=None if label == "vstar-run" else ac, callback_every=int(p["ac_every"]))
        ref[f"s_per_iter_{label}"] = (_timer() - t1) / R
        base = {"kind": "curve", "method": label, "q": 32 if q is None else q}
        n = len(res.steps)
        for metric, vals in (("objective", res.objective), ("bpv", res.bpv)):
            frames.append(pd.DataFrame({**base, "step": res.steps, "metric": [metric] * n, "value": vals}))
        if res.metric_steps is not None:
            frames.append(pd.DataFrame({**base, "step": res.metric_steps, "metric": "ac", "value": res.metrics["ac"]}))
        if label == "vstar-run":
            ref["v_star"] = float(res.objective[-1])
    frames.append(pd.DataFrame({"kind": "reference", "method": "reference", "q": 0, "step": 0, "metric": list(ref),
                                "value": [float(v) for v in ref.values()]}))
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "seed", 0)  # one run (the data layer's split; no trials)
    return out


def run(ctx):
    """Runner of Fig. 9: the linear engine on hashed Europarl views (input `data`: the prepared corpus)."""
    from fedrepro.data.loaders import load_parallel_text
    from fedrepro.runner import RunResult

    pt = load_parallel_text(ctx.inputs["data"])
    rows = run_europarl(ctx.experiment, ctx.params, pt.texts, pt.split,
                        progress=lambda jobs: ctx.progress(jobs, desc=ctx.experiment))
    return RunResult(rows, seeds=[ctx.seed],
                     extra={"streams": f"rng_stream(seed, '{ctx.experiment}', trial, ...) (fedrepro.gcca.europarl)"})

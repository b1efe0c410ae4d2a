"""Thesis ch. 3 assumptions as settings: the trigger reference (ch3:A-trigger-ref), the two-class split (ch3:A-45),
the γ grid runs and the whole-run γ choice (ch3:A-10)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from decentral_paper_methods import method_config

from fedrepro.decentral.engine import DecentralEngine
from fedrepro.decentral.experiments import MnistTask, node_shards, run_experiment
from fedrepro.decentral.topology import ring
from fedrepro.decentral.trigger import TriggerReference
from fedrepro.decentral.tuning import chosen_gammas, derived_runs, grid_summary

N, D = 6, 40


def _grad(targets):
    def g(X, t):
        rng = np.random.default_rng(1000 + t)
        return X - targets + torch.as_tensor(rng.normal(size=X.shape), dtype=X.dtype)
    return g


def _engine(reference, compressor="sign_topk", gamma=0.3, c=1000.0, k=4):
    rng = np.random.default_rng(0)
    targets = torch.as_tensor(rng.normal(size=(N, D)) * 3)
    x0 = torch.zeros(N, D, dtype=torch.float64)
    cfg = method_config("squarm", gamma=gamma, k=k, H=2, trigger_reference=reference)
    if compressor != "sign_topk":
        cfg.compressor, cfg.compressor_params = compressor, {}
    eng = DecentralEngine(ring(N).W, x0, cfg, lambda t: 0.05, lambda t, eta: c,
                          generator=torch.Generator().manual_seed(0))
    return eng, _grad(targets)


# ---- ch3:A-trigger-ref ---------------------------------------------------------------------------------------

def test_last_sent_reference_measures_the_drift_since_the_last_transmission():
    """With γ = 0 the iterate after a sync is x^{t+1/2} itself, so the test can keep its own record of each node's
    iterate at its last transmission and check the drift the trigger tested, and the trigger's decision, against it."""
    eng, g = _engine("last_sent", gamma=0.0)
    last = None
    checked = silent_seen = 0
    for _ in range(80):
        info = eng.step(g)
        if not info["sync"]:
            continue
        x_half = eng.X.clone()
        if last is not None:
            expect = ((x_half - last) ** 2).sum(dim=1).numpy()
            np.testing.assert_allclose(info["sq_drift"], expect, rtol=1e-12)
            thr = info["c_t"] * 0.05 ** 2
            assert np.array_equal(info["fire"], expect > thr)
            silent_seen += int((~info["fire"]).sum())
            checked += 1
        last = x_half if last is None else torch.where(torch.as_tensor(info["fire"])[:, None], x_half, last)
    assert checked > 30 and silent_seen > 0


def test_both_references_agree_when_the_copy_is_exact():
    """With the identity compressor x̂_i = x_i^{t+1/2} after every transmission: the two references are the same
    vector, and the runs are identical."""
    a, g = _engine("copy", compressor="identity")
    b, _ = _engine("last_sent", compressor="identity")
    for _ in range(60):
        ia, ib = a.step(g), b.step(g)
        if ia["sync"]:
            assert np.array_equal(ia["fire"], ib["fire"])
    assert torch.equal(a.X, b.X) and np.array_equal(a.bits, b.bits)
    assert a.trigger_rate() < 1  # the threshold silences some rounds: the comparison is not vacuous


def test_last_sent_reference_skips_where_the_lagging_copy_never_does():
    """With a coarse compressor the copy lags x by the compression error, so ‖x^{t+1/2} - x̂‖² stays above the
    threshold; the drift since the last transmission falls below it (ch3:A-trigger-ref, the Fig. 3.4 finding)."""
    rates = {}
    for ref in ("copy", "last_sent"):
        eng, g = _engine(ref, k=1)
        for _ in range(200):
            eng.step(g)
        rates[ref] = eng.trigger_rate()
    assert rates["copy"] > 0.95 and rates["last_sent"] < 0.8, rates


def test_trigger_reference_rejects_unknown_names():
    with pytest.raises(ValueError, match="copy, last_sent"):
        TriggerReference("own")


# ---- ch3:A-45 ------------------------------------------------------------------------------------------------

def test_two_class_split_gives_each_node_two_classes_five_apart():
    labels = np.repeat(np.arange(10), 600)          # 60 nodes: 2 x 60 shards of 50, six per class
    rng = np.random.default_rng(0)
    parts = node_shards(labels, 60, "two_classes", rng)
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(labels.size))   # every sample once
    for i, p in enumerate(parts):
        classes = np.unique(labels[p])
        assert list(classes) == [i // 12, i // 12 + 5], (i, classes)
        assert np.bincount(labels[p]).max() == 50
    one = node_shards(labels, 60, "sorted", rng)
    assert all(np.unique(labels[p]).size == 1 for p in one)
    with pytest.raises(ValueError, match="sorted, two_classes, iid"):
        node_shards(labels, 60, "dirichlet", rng)


# ---- ch3:A-10: the grid runs and the whole-run choice ---------------------------------------------------------

def _split(seed=0, n_train=600, n_test=200, p=20, classes=10):
    rng = np.random.default_rng(seed)
    means = rng.uniform(0.1, 0.9, size=(classes, p))

    def draw(m):
        y = np.arange(m) % classes
        return np.clip(means[y] + 0.2 * rng.normal(size=(m, p)), 0, 1).astype(np.float32), y

    xtr, ytr = draw(n_train)
    xte, yte = draw(n_test)
    return SimpleNamespace(x_train=xtr, y_train=ytr, x_test=xte, y_test=yte, n_classes=classes)


def test_grid_runs_every_gamma_and_reference():
    split = _split()
    params = dict(dataset="mnist", model="logreg", n=6, topology="ring", partition="two_classes", batch=5, T=40, H=5,
                  lr={"kind": "inverse", "a": 1.0, "b": 100.0}, beta=0.9, trigger={"kind": "sqrt_step", "c0": 5000.0,
                  "every": 1000},
                  methods={"squarm": {"algorithm": "squarm", "compressor": {"name": "sign_topk", "k": 10}},
                           "choco_topk": {"algorithm": "choco", "compressor": {"name": "topk", "k": 10}},
                           "vanilla": {"algorithm": "dsgd"}},
                  gamma_grid_runs=True, gamma_grid=[0.1, 1.0], trigger_references=["copy", "last_sent"], seeds=1,
                  eval_every=20, seed=0)
    runs, facts = run_experiment(params, lambda s: MnistTask(split, 6, "two_classes", 5, s, train_eval=200),
                                 log=lambda *a: None)
    keys = runs.drop_duplicates(["method", "trigger_reference", "gamma"])
    got = sorted((m, r if isinstance(r, str) else "-", g) for m, r, g in
                 zip(keys.method, keys.trigger_reference, keys.gamma))
    assert got == sorted([("squarm", r, g) for r in ("copy", "last_sent") for g in (0.1, 1.0)]
                         + [("choco_topk", "-", 0.1), ("choco_topk", "-", 1.0), ("vanilla", "-", 1.0)])
    assert len(facts["runs"]) == 7
    assert {"mean_sq_norm", "consensus_dist", "trigger_rate"} <= set(runs.metric)


def _grid_rows(conf, method, gamma, error, consensus, train_loss, ref=None, steps=(0, 50, 100, 150, 200)):
    rows = []
    for i, s in enumerate(steps):
        base = {"configuration": conf, "method": method, "seed": 0, "step": s, "gamma": gamma, "bits_B32": 10.0 * s,
                "rounds": s}
        if ref is not None:
            base["trigger_reference"] = ref
        for metric, v in (("test_error", error[i]), ("train_loss", train_loss[i]), ("consensus_dist", consensus[i]),
                          ("trigger_rate", 1.0)):
            rows.append({**base, "metric": metric, "value": v})
    return rows


def _grid():
    rows = []
    #                             test error over steps      consensus distance        training loss
    rows += _grid_rows("one-class", "squarm", 0.1, [.9, .5, .4, .35, .33], [0, 4, 3, 3, 2.5], [2, 1.5, 1, .9, .8], "copy")
    rows += _grid_rows("one-class", "squarm", 0.4, [.9, .5, .35, .3, .28], [0, 4, 4, 5, 5.5], [2, 1.4, .9, .8, .7], "copy")
    rows += _grid_rows("one-class", "squarm", 1.0, [.9, .3, .25, .3, .2], [0, 9, 1e3, 1e6, 1e9], [2, .9, .8, 1, .9], "copy")
    rows += _grid_rows("one-class", "squarm", 0.1, [.9, .5, .4, .36, .36], [0, 4, 3, 3, 2.9], [2, 1.5, 1, .9, .8], "last_sent")
    rows += _grid_rows("one-class", "squarm", 1.0, [.9, .5, .4, .3, .34], [0, 4, 3, 3, 2.0], [2, 1.5, 1, .9, .8], "last_sent")
    rows += _grid_rows("one-class", "choco_topk", 0.1, [.9, .5, .4, .3, .3], [0, 2, 2, 2, 1], [2, 1.5, 1, .9, .8])
    rows += _grid_rows("one-class", "vanilla", 1.0, [.9, .4, .3, .2, .15], [0, 1, 1, 1, 1], [2, 1, .8, .7, .6])
    return pd.DataFrame(rows)


def test_whole_run_choice_skips_unstable_gammas_and_a10_does_not():
    summ = grid_summary(_grid(), tune_frac=0.25, growth_max=1.0).set_index(["method", "trigger_reference", "gamma"])
    sq = summ.loc[("squarm", "copy")]
    # γ = 1: best final error (0.2) but its consensus distance grows 1e3 -> 1e9 over the second half
    assert list(sq["stable"]) == [1, 0, 0] and sq.loc[1.0, "consensus_growth"] == pytest.approx(1e9 / 1e3)
    # γ = 0.4 grows 4 -> 5.5 (x1.375): unstable at growth_max 1, the choice falls to γ = 0.1
    assert sq["chosen_whole_run"].to_dict() == {0.1: 1, 0.4: 0, 1.0: 0}
    # the A-10 rule reads the training loss at 25 % of T = step 50: γ = 1 has the lowest (0.9)
    assert sq["chosen_a10"].to_dict() == {0.1: 0, 0.4: 0, 1.0: 1}
    assert sq.loc[1.0, "tune_step"] == 50
    loose = grid_summary(_grid(), tune_frac=0.25, growth_max=1.5).set_index(["method", "trigger_reference", "gamma"])
    assert loose.loc[("squarm", "copy"), "chosen_whole_run"].to_dict() == {0.1: 0, 0.4: 1, 1.0: 0}
    chosen = chosen_gammas(grid_summary(_grid(), tune_frac=0.25))
    assert chosen[("one-class", "squarm", "last_sent")] == 1.0
    assert chosen[("one-class", "vanilla", "-")] == 1.0


def test_derived_configurations_take_each_method_at_its_chosen_gamma():
    runs = _grid()
    summ = grid_summary(runs, tune_frac=0.25)      # default growth_max 2: γ = 0.4 (x1.375) is stable
    derived = {"calibrated": {"grid": "one-class", "trigger_reference": "copy"},
               "last-sent": {"grid": "one-class", "trigger_reference": "last_sent"}}
    out = derived_runs(runs, summ, derived)
    picked = out.drop_duplicates(["configuration", "method"]).set_index(["configuration", "method"])
    assert picked["gamma"].to_dict() == {("calibrated", "squarm"): 0.4, ("calibrated", "choco_topk"): 0.1,
                                         ("calibrated", "vanilla"): 1.0, ("last-sent", "squarm"): 1.0,
                                         ("last-sent", "choco_topk"): 0.1, ("last-sent", "vanilla"): 1.0}
    assert set(out.loc[out.method == "squarm", "trigger_reference"]) == {"copy", "last_sent"}
    # every row of a chosen run comes along: 5 steps x 4 metrics
    assert (out.groupby(["configuration", "method"]).size() == 20).all()


# ---- ch3:A-42: per-channel normalization with the training set's statistics ---------------------------------------

def test_normalized_images_are_the_training_statistics_formula():
    """Both splits standardized with the training set's per-channel mean and std, element by element the floats of
    NumPy's (x - mean) / std in float32, and the channel statistics those of the training images (not the test's)."""
    from fedrepro.decentral.experiments import NormalizedImages

    rng = np.random.default_rng(7)
    x_train = rng.random((40, 3, 5, 6), dtype=np.float32) * np.array([1.0, 2.0, 0.5], np.float32)[None, :, None, None]
    x_test = rng.random((9, 3, 5, 6), dtype=np.float32)
    split = SimpleNamespace(x_train=x_train, y_train=np.arange(40) % 4, x_test=x_test, y_test=np.arange(9) % 4)
    before = x_train.copy()
    images = NormalizedImages(split)
    np.testing.assert_array_equal(x_train, before)   # the loaded images are shared with torch, never written
    # the float32 statistics the class computes, checked against float64 NumPy (sample std, n - 1) ...
    m32 = torch.as_tensor(x_train).mean(dim=(0, 2, 3), keepdim=True).numpy()
    s32 = (torch.as_tensor(x_train).std(dim=(0, 2, 3), keepdim=True) + 1e-6).numpy()
    np.testing.assert_allclose(m32, x_train.astype(np.float64).mean(axis=(0, 2, 3), keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(s32, x_train.astype(np.float64).std(axis=(0, 2, 3), ddof=1, keepdims=True) + 1e-6,
                               rtol=1e-5)
    # ... then applied element by element, bit for bit, to both splits
    np.testing.assert_array_equal(images.x.numpy(), (x_train - m32) / s32)
    np.testing.assert_array_equal(images.xt.numpy(), (x_test - m32) / s32)
    assert images.x.dtype == images.xt.dtype == torch.float32
    np.testing.assert_array_equal(images.y.numpy(), split.y_train)

"""Ch. 4 with a randomized compressor (Rand-k from fedrepro.comm): the copy update draws from its own named stream.

Before the fix, `run_scheme` called `copy.update(x_tilde, None, ...)`, and every randomized compressor stopped with
"rng must be a numpy.random.Generator".  The draws must come once per sender and message (spec §1.3.1) from a
stream of their own, so that the sample and direction streams are the same whichever compressor runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedrepro.comm import get_compressor
from fedrepro.mtl.algorithms import run_scheme
from fedrepro.mtl.experiments import build_instance, run_experiment

K = 2
PARAMS = dict(problem="qcqp", n=12, d=10, p=0.4, R=40, c_range=[-5, -3], df=10, eta=1e-3, delta=100.0, zeta=1e-4,
              runs=1, n_log=10, seed=3)
VANILLA = {"vanilla": {"algorithm": "vanilla"}}
RANDOMIZED = {"randk": {"algorithm": "compressed", "compressor": {"name": "randk", "k": K}},
              "sign_randk": {"algorithm": "compressed", "compressor": {"name": "sign_randk", "k": K, "sign_of_zero": 0}}}


def _run(rng_compressor, T=200, R=1e6):
    inst = build_instance(dict(PARAMS, R=R), "test", 0)     # a huge ball: Π is inactive, so x(t) = x̂(t)
    res = run_scheme(inst.problem, inst.x_init, compressor=get_compressor("randk", k=K), feedback="sample",
                     eta=1e-3, delta=100.0, zeta=1e-4, T=T, rng_samples=np.random.default_rng(5),
                     rng_compressor=rng_compressor, keep_history=True)
    return inst, np.stack([x for _, x, _ in res.history])


def test_randk_copy_update_sends_k_uniform_coordinates():
    inst, xs = _run(np.random.default_rng(11))
    n, d, k = inst.x_init.shape[0], inst.x_init.shape[1], K
    assert np.array_equal(xs[0], inst.x_init)                   # first message uncompressed
    moved = np.diff(xs, axis=0) != 0                            # (T - 1, n, d): coordinates each message changed
    assert np.all(moved.sum(axis=2) == k)                       # k coordinates per message (ties have probability 0)
    counts = moved.sum(axis=(0, 1))
    expect = moved.sum() / d                                    # uniform positions: each coordinate k/d of the time
    sd = np.sqrt(moved.sum() * (1 / d) * (1 - 1 / d))
    assert np.all(np.abs(counts - expect) < 5 * sd), counts
    assert moved.shape[1] == n


def test_randk_draws_are_reproducible_and_come_from_the_given_stream():
    _, a = _run(np.random.default_rng(11), T=50)
    _, b = _run(np.random.default_rng(11), T=50)
    _, c = _run(np.random.default_rng(12), T=50)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_run_experiment_with_randomized_schemes():
    """Every feedback with Rand-k and Sign∘Rand-k runs from the experiment's named streams; reruns are identical, and
    the vanilla rows do not depend on which randomized schemes ran beside them (their streams are separate)."""
    T = 30
    params = dict(PARAMS, T=T, methods={**VANILLA, **RANDOMIZED})
    a, _ = run_experiment(params, "test")
    b, _ = run_experiment(params, "test")
    pd.testing.assert_frame_equal(a, b)
    alone, _ = run_experiment(dict(params, methods=VANILLA), "test")
    pd.testing.assert_frame_equal(a[a.scheme == "vanilla"].reset_index(drop=True), alone)
    # the chapter's count for Rand-k with a shared 32-bit seed: B(T) = 2|E| [32 d + (T - 1)(32 k + 32)]
    n_edges = build_instance(params, "test", 0).problem.graph.n_edges
    last = a[(a.scheme == "randk") & (a.step == T)]["bits_measured"].iloc[0]
    assert last == 2 * n_edges * (32 * PARAMS["d"] + (T - 1) * (32 * K + 32))
    gaps = a[(a.metric == "gap") & (a.step == T)].set_index(["feedback", "scheme"])["value"]
    assert np.all(np.isfinite(gaps)) and np.all(gaps < 1)


def test_stochastic_compressor_without_stream_is_refused():
    """The old call (rng None) is what crashed: the compressor itself refuses it."""
    with pytest.raises(ValueError, match="rng must be a numpy.random.Generator"):
        get_compressor("randk", k=2)(np.ones((3, 10)), None, batched=True)

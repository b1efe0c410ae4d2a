"""Every stochastic compressor of fedrepro.comm runs through each paper's engine at smoke size.

Methods are data (docs/architecture.md, 'Methods are data'): each engine takes any compressor spec, and each gives
the compressor its random stream.  A compressor that draws uniforms refuses to run without a generator, so an
engine that forgets the stream fails here; the same seed gives the same run, another seed another run (the draws
come from the engine's stream, nowhere else).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedrepro.comm import get_compressor
from fedrepro.comm.catalog import COMPRESSORS

# Parameters that build each built-in compressor (the C-VFL engine supplies `b` itself, see below).
SPECS = {"identity": {}, "cutemaxvar": {"q": 3}, "cvfl_scalar": {"b": 2}, "cvfl_vector": {"b": 2},
         "cvfl_topk_columns": {"k": 2}, "topk": {"k": 2}, "randk": {"k": 2}, "sign": {}, "qsgd": {"s": 4},
         "sign_topk": {"k": 2}, "sign_randk": {"k": 2}, "qsgd_topk": {"k": 2, "s": 4},
         "qsgd_randk": {"k": 2, "s": 4}}
BUILT_IN = sorted(SPECS)
STOCHASTIC = [name for name in BUILT_IN if get_compressor(name, **SPECS[name]).n_uniforms(8) > 0]


def test_every_built_in_compressor_is_covered_and_some_are_stochastic():
    built_in = {name for name, factory in COMPRESSORS.items() if factory.__module__.startswith("fedrepro.comm")}
    assert built_in == set(SPECS)
    assert {"cutemaxvar", "randk", "qsgd", "cvfl_vector"} <= set(STOCHASTIC)


def _spec(name):
    return {"name": name, **SPECS[name]}


# ---- thesis ch. 3: the decentralized engine (SQuARM / CHOCO) -------------------------------------------------

def _decentral(name, seed):
    from fedrepro.decentral.engine import DecentralEngine, algorithm_config
    from fedrepro.decentral.topology import ring

    n, d = 4, 16
    x0 = torch.as_tensor(np.random.default_rng(0).normal(size=(n, d)))
    targets = torch.as_tensor(np.random.default_rng(1).normal(size=(n, d)))
    cfg = algorithm_config("squarm", _spec(name), gamma=0.5, H=2)
    eng = DecentralEngine(ring(n).W, x0, cfg, lambda t: 0.05, lambda t, eta: 0.0,
                          generator=torch.Generator().manual_seed(seed))
    for _ in range(6):
        eng.step(lambda X, t: X - targets)
    return eng.X.numpy()


# ---- thesis ch. 4: Algorithms 2 / 3 ----------------------------------------------------------------------------

def _mtl(name, seed):
    from fedrepro.mtl.experiments import run_experiment

    params = dict(problem="qcqp", n=6, d=8, p=0.6, R=40, c_range=[-5, -3], df=8, eta=1e-3, delta=100.0, zeta=1e-4,
                  T=20, runs=1, n_log=4, seed=seed, methods={name: {"algorithm": "compressed", "compressor": _spec(name)}})
    rows, _ = run_experiment(params, "engines")
    return rows[rows.metric == "gap"]["value"].to_numpy()


# ---- C-VFL: Algorithm 1 on stale compressed embeddings --------------------------------------------------------

def _cvfl(name, seed):
    from fedrepro.cvfl.simulator import CvflConfig, CvflTrainer
    from fedrepro.models.vfl_parties import StackedMLP

    M, P, n = 2, 4, 24
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(M, n, 3, generator=g), torch.randint(0, 4, (n,), generator=g)   # 4 classes: even for the lattice
    spec = {k: v for k, v in _spec(name).items() if k not in ("b", "k")}   # the run's knobs: b, ratio = b/32, k
    torch.manual_seed(0)
    cfg = CvflConfig(M=M, Q=2, B=8, epochs=1, lr=0.05, method=name, embedding=spec, b=2, eval_train=False)
    tr = CvflTrainer(cfg, StackedMLP(M, 3, 6, P), P, 4, seed=seed)
    res = tr.fit(x, y, x, y, np.arange(n))
    return np.asarray(res.step_losses + [float(tr.W.detach().abs().sum())])


# ---- gcca: CuteMaxVar's loop with another compressor ----------------------------------------------------------

def _gcca(name, seed):
    from fedrepro.gcca.engine import EngineConfig, run_maxvar
    from fedrepro.gcca.generators import dense_views
    from fedrepro.gcca.mvlsa import mvlsa

    views = dense_views(np.random.default_rng(0), 40, 6, 3, 3, 0.1)
    warm = mvlsa(views, 2, 4)
    cfg = EngineConfig(K=2, R=5, T=2, compressor=_spec(name))
    res = run_maxvar(views, warm.Q, cfg, np.random.default_rng(1), np.random.default_rng(seed))
    assert res.bits_up[-1] > 0
    return res.objective


ENGINES = {"decentral": _decentral, "mtl": _mtl, "cvfl": _cvfl, "gcca": _gcca}


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("name", STOCHASTIC)
def test_each_stochastic_compressor_draws_from_the_engines_stream(engine, name):
    run = ENGINES[engine]
    a, b, c = run(name, 11), run(name, 11), run(name, 12)
    assert np.all(np.isfinite(a))
    np.testing.assert_array_equal(a, b)          # the same stream, the same run
    assert not np.array_equal(a, c), "another seed of the compressor's stream should change the run"

"""C-VFL simulator: split-learning equivalence, Alg. 1 = Alg. 2 without compression, ledger bits, models."""

import copy

import numpy as np
import pytest
import torch
from cvfl_paper_methods import method

from fedrepro.comm.conventions import cvfl_topk_k
from fedrepro.cvfl import CvflConfig, CvflTrainer, split_learning_losses
from fedrepro.models.vfl_parties import StackedLSTM, StackedMLP, StackedViewCNN


def _data(M=3, n=40, d=4, seed=0, task="multiclass"):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(M, n, d, generator=g)
    y = (x.sum((0, 2)) > 0).long() if task == "binary" else torch.randint(0, 3, (n,), generator=g)
    return x, y


@pytest.mark.parametrize("task", ["multiclass", "binary"])
def test_identity_q1_equals_split_learning(task):
    torch.manual_seed(1)
    M, P = 3, 4
    x, y = _data(M, task=task)
    parties = StackedMLP(M, 4, 8, P)
    sl_parties = copy.deepcopy(parties)
    cfg = CvflConfig(M=M, Q=1, B=8, epochs=2, lr=0.1, **method("none"), b=32, task=task)
    tr = CvflTrainer(cfg, parties, P, 1 if task == "binary" else 3, seed=0)
    order = np.random.default_rng(0).permutation(40)
    W0, b0 = tr.W.detach().clone(), tr.bias.detach().clone()
    res = tr.fit(x, y, x, y, order)
    ref = split_learning_losses(sl_parties, W0, b0, x, y, order, B=8, lr=0.1, epochs=2, task=task)
    assert len(res.step_losses) == len(ref) == 10
    np.testing.assert_allclose(res.step_losses, ref, rtol=1e-5, atol=1e-6)
    for p, q in zip(parties.parameters(), sl_parties.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_alg2_equals_alg1_without_compression():
    M, P = 2, 4
    x, y = _data(M)
    p1 = StackedMLP(M, 4, 8, P)
    p2 = copy.deepcopy(p1)
    order = np.arange(40)
    r1 = CvflTrainer(CvflConfig(M=M, Q=1, B=10, epochs=1, lr=0.1), p1, P, 3, seed=0).fit(x, y, x, y, order)
    r2 = CvflTrainer(CvflConfig(M=M, Q=1, B=10, epochs=1, lr=0.1, alg=2), p2, P, 3, seed=0).fit(x, y, x, y, order)
    np.testing.assert_allclose(r1.step_losses, r2.step_losses, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("comp,b", [("none", 32), ("scalar", 2), ("vector", 3), ("topk", 4)])
def test_ledger_bits_match_compressor_counts(comp, b):
    M, P, B = 3, 8, 10
    x, y = _data(M)
    cfg = CvflConfig(M=M, Q=2, B=B, epochs=1, lr=0.05, **method(comp), b=b)
    tr = CvflTrainer(cfg, StackedMLP(M, 4, 8, P), P, 4, seed=0)  # 4 outputs: the lattice pairs entries
    tr.fit(x, y, x, y, np.arange(40))
    steps, up = tr.ledger.per_step("values_bits", "up")
    per_party_round = up[:, 0]
    if comp == "topk":      # first round uncompressed at 32 bits, then k columns x 32 bits
        k = cvfl_topk_k(P, b, "torch")
        assert per_party_round[0] == 32 * B * P and np.all(per_party_round[1:] == 32 * B * k)
    else:
        assert np.all(per_party_round == b * B * P)
    _, down = tr.ledger.per_step("bits", "down")  # a plain bit count per receiving party
    theta0 = 4 * M * P + 4
    if comp == "topk":
        kw, kb = max(1, (4 * M * P * b) // 32), max(1, (4 * b) // 32)
        srv = 32 * (kw + kb)
    else:
        srv = b * theta0
    assert np.all(down[:, 0] == up.sum(1) + srv)


def test_stacked_models_shapes_and_independence():
    M = 4
    lstm = StackedLSTM(M, 5, 6)
    x = torch.randn(M, 3, 7, 5)
    h = lstm(x)
    assert h.shape == (M, 3, 6) and torch.all(h.abs() < 1)
    h.sum(dim=(1, 2))[1].backward()
    assert lstm.w_ih.grad[0].abs().sum() == 0 and lstm.w_ih.grad[1].abs().sum() > 0
    cnn = StackedViewCNN(M, 1, 16, 8)
    assert cnn(torch.randn(M, 2, 3, 1, 16, 16)).shape == (M, 2, 8)

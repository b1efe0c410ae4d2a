"""ResNet-18 parties as a loop over modules (issue 19): evaluation on running statistics, and the first local forward
standing in for the round-start one."""


import pytest
import torch

from fedrepro.cvfl import CvflConfig, CvflTrainer
from fedrepro.cvfl.sources import TensorBatches
from fedrepro.models.vfl_parties import (
    StackedLSTM,
    StackedMLP,
    StackedResNet18,
    StackedViewCNN,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_evaluation_uses_running_statistics():
    torch.manual_seed(0)
    parties = StackedResNet18(2, 8, stem="cifar")
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(2, 12, 3, 16, 16, generator=g), torch.randint(0, 4, (12,), generator=g)
    tr = CvflTrainer(CvflConfig(M=2, Q=2, B=12, lr=0.05), parties, 8, 4, seed=0)
    before = parties.nets[0].bn1.running_mean.clone()
    tr.round_alg1(x, y, 0.05)
    assert not torch.equal(before, parties.nets[0].bn1.running_mean)      # training updates the statistics
    whole = tr.evaluate(TensorBatches(x, y, 12))
    chunked = tr.evaluate(TensorBatches(x, y, 5))                         # eval mode: chunking changes nothing
    assert whole["loss"] == pytest.approx(chunked["loss"], rel=1e-5) and whole["metric"] == chunked["metric"]
    assert parties.training                                               # evaluate() restores training mode
    tr.cfg.eval_batch_stats = True                                        # A-6's flag: the authors' batch statistics
    batch = tr.evaluate(TensorBatches(x, y, 12))
    assert batch["loss"] != pytest.approx(whole["loss"], rel=1e-3)
    parties.eval()
    with torch.no_grad():
        one_sample = parties(x[:, :1])
    assert torch.allclose(one_sample, parties(x)[:, :1].detach(), atol=1e-5)   # no batch statistics in eval mode


@pytest.mark.parametrize("make,shape", [
    (lambda: StackedMLP(3, 12, 8, 4), (3, 5, 12)),
    (lambda: StackedLSTM(3, 6, 4), (3, 5, 7, 6)),
    (lambda: StackedViewCNN(3, 1, 12, 4), (3, 5, 2, 1, 12, 12)),
    (lambda: StackedResNet18(2, 4), (2, 5, 3, 16, 16)),
])
def test_first_local_forward_equals_the_round_start_forward(make, shape):
    """Alg. 1 compresses the q = 0 forward's values instead of running a separate no-grad forward: exact."""
    torch.manual_seed(0)
    parties = make()
    x = torch.randn(shape)
    with torch.no_grad():
        h0 = parties(x)
    assert torch.equal(parties(x).detach(), h0)


def _indexed_lstm(lstm: StackedLSTM, x: torch.Tensor) -> torch.Tensor:
    """The recursion as first written, stepping with ``xi[:, :, t]`` (the reference for bit identity)."""
    M, B, T, _ = x.shape
    P = lstm.P
    xi = torch.einsum("mbtd,mdg->mbtg", x, lstm.w_ih) + lstm.bias[:, None, None, :]
    h, c = x.new_zeros(M, B, P), x.new_zeros(M, B, P)
    for t in range(T):
        g = xi[:, :, t] + torch.bmm(h, lstm.w_hh)
        i, f, cc, o = g.split(P, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(cc)
        h = torch.sigmoid(o) * torch.tanh(c)
    return h


@pytest.mark.parametrize("M,B,T,D,P", [(4, 500, 8, 19, 16), (3, 5, 7, 6, 4), (2, 1, 1, 3, 2)])
def test_stacked_lstm_steps_bit_identical_to_the_indexed_recursion(M, B, T, D, P):
    """Stepping with unbind changes only how the input projection's gradient is gathered: outputs and every
    parameter gradient equal the indexed recursion's bit for bit (MIMIC's quick size first)."""
    torch.manual_seed(1)
    lstm = StackedLSTM(M, D, P)
    x = torch.randn(M, B, T, D) * 3
    weights = torch.randn(M, B, P)
    grads = []
    for forward in (lstm.forward, lambda v: _indexed_lstm(lstm, v)):
        lstm.zero_grad()
        h = forward(x)
        (h * weights).sum().backward()
        grads.append([h.detach().clone()] + [p.grad.clone() for p in lstm.parameters()])
    for ours, ref in zip(*grads):
        assert torch.equal(ours, ref)


def test_stacked_lstm_equals_torch_lstm_per_party():
    """Independent oracle: party m's output is torch.nn.LSTM's last hidden state with party m's weights (torch
    keeps W (4P, D), gate order i, f, g, o, and two biases; ours is x @ W (D, 4P) with one bias)."""
    torch.manual_seed(2)
    M, B, T, D, P = 3, 6, 5, 4, 3
    lstm = StackedLSTM(M, D, P)
    with torch.no_grad():
        lstm.bias.normal_()
    x = torch.randn(M, B, T, D)
    h = lstm(x)
    for m in range(M):
        ref = torch.nn.LSTM(D, P, batch_first=True)
        with torch.no_grad():
            ref.weight_ih_l0.copy_(lstm.w_ih[m].T)
            ref.weight_hh_l0.copy_(lstm.w_hh[m].T)
            ref.bias_ih_l0.copy_(lstm.bias[m])
            ref.bias_hh_l0.zero_()
        _, (h_n, _) = ref(x[m])
        torch.testing.assert_close(h[m], h_n[0], rtol=1e-5, atol=1e-6)

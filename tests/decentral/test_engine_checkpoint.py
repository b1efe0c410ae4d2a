"""A decentral engine stopped, saved to disk, loaded into a fresh engine of the same configuration and run on is the
engine run straight through: iterates, copies, bits, ledger and counters identical (the resume of a long run)."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from test_engine_reference import SPLIT

from fedrepro.decentral.engine import DecentralEngine, algorithm_config
from fedrepro.decentral.experiments import MnistTask
from fedrepro.decentral.schedules import InverseLR, SqrtStepThreshold
from fedrepro.decentral.topology import ring

CONFIGS = {
    "squarm-last-sent": dict(algorithm="squarm", compressor={"name": "sign_topk", "k": 20}, gamma=0.4, H=3,
                             trigger_reference="last_sent"),
    "choco-topk": dict(algorithm="choco", compressor={"name": "topk", "k": 20}, gamma=0.3),
    "choco-randk-memory-efficient": dict(algorithm="choco", compressor={"name": "randk", "k": 20}, gamma=0.3,
                                         memory_efficient=True),
}


def _engine(spec: dict, task: MnistTask) -> DecentralEngine:
    cfg = algorithm_config(**spec)
    threshold = SqrtStepThreshold(5000.0) if spec["algorithm"] == "squarm" else None
    return DecentralEngine(ring(task.n).W, task.x0(), cfg, InverseLR(), threshold,
                           generator=torch.Generator().manual_seed(11))


@pytest.mark.parametrize("name", CONFIGS)
def test_a_resumed_engine_continues_exactly_where_it_stopped(name):
    spec, T, stop = CONFIGS[name], 24, 10
    straight_task = MnistTask(SPLIT, 6, "sorted", 5, 0, train_eval=100)
    straight = _engine(spec, straight_task)
    for _ in range(T):
        straight.step(straight_task.grad)

    task = MnistTask(SPLIT, 6, "sorted", 5, 0, train_eval=100)
    first = _engine(spec, task)
    for _ in range(stop):
        first.step(task.grad)
    buffer = io.BytesIO()
    torch.save({"engine": first.state_dict(), "task": task.state_dict()}, buffer)
    del first

    buffer.seek(0)
    saved = torch.load(buffer, weights_only=False)
    resumed_task = MnistTask(SPLIT, 6, "sorted", 5, 0, train_eval=100)
    resumed_task.load_state_dict(saved["task"])
    resumed = _engine(spec, resumed_task)
    resumed.load_state_dict(saved["engine"])
    for _ in range(T - stop):
        resumed.step(resumed_task.grad)

    for a, b in ((straight.X, resumed.X), (straight.V, resumed.V), (straight.xhat, resumed.xhat)):
        assert torch.equal(a, b)
    assert np.array_equal(straight.bits, resumed.bits) and np.array_equal(straight.n_fired, resumed.n_fired)
    assert straight.sync_log == resumed.sync_log and straight.t == resumed.t == T
    assert straight.ledger.to_rows() == resumed.ledger.to_rows()
    if spec["algorithm"] == "squarm":      # some nodes fired and some did not: the trigger's reference mattered
        assert 0 < straight.trigger_rate() < 1


def test_a_checkpoint_of_another_model_is_refused():
    task = MnistTask(SPLIT, 6, "sorted", 5, 0, train_eval=100)
    state = _engine(CONFIGS["choco-topk"], task).state_dict()
    other = MnistTask(SPLIT, 4, "sorted", 5, 0, train_eval=100)
    with pytest.raises(ValueError, match="checkpoint of a"):
        _engine(CONFIGS["choco-topk"], other).load_state_dict(state)

"""A thesis ch. 3 configuration run in chained blocks (fedrepro.checkpoint), one job killed mid-block and run again,
gives the rows and facts of the straight run: γ tuning, calibration, variants and seeds included."""

from __future__ import annotations

import pytest
from test_trigger_sweep import _split

from fedrepro.checkpoint import Block, BlockEnd, Progress, run_key
from fedrepro.decentral import splits
from fedrepro.decentral.experiments import MnistTask, run_experiment

SQUARM = {"algorithm": "squarm", "compressor": {"name": "sign_topk", "k": 10}, "gamma": 1.0}
PARAMS = dict(dataset="mnist", model="logreg", n=6, topology="ring", partition="sorted", batch=5, T=40, H=5,
              lr={"kind": "inverse", "a": 1.0, "b": 100.0}, beta=0.9, lr_correction=True, weight_decay=0.0,
              trigger={"kind": "sqrt_step", "c0": 5000.0, "every": 1000}, trigger_calibrate=True, iters_per_epoch=10,
              methods={"squarm": SQUARM, "choco_topk": {"algorithm": "choco", "compressor": {"name": "topk", "k": 10}},
                       "vanilla": {"algorithm": "dsgd"}},
              tune_gamma=True, gamma_grid=[0.2, 1.0], tune_frac=0.25, trigger_scales=[1, 10], seeds=2, eval_every=10,
              seed=0)
TIMING = ["seconds_per_iter"]


def _quiet(*args):
    pass


class Killed(Exception):
    """The job's process dies (SLURM's time limit, a node lost)."""


def _run(progress=None):
    split = _split()
    return run_experiment(dict(PARAMS), lambda seed: MnistTask(split, 6, "sorted", 5, seed, train_eval=200),
                          log=lambda *a: None, progress=progress)


def _without_timing(facts: dict) -> dict:
    return {**facts, "runs": [{k: v for k, v in r.items() if k not in ("seconds", "seconds_per_iter")}
                              for r in facts["runs"]]}


def test_the_step_count_is_what_the_loops_run():
    # squarm: 2 tuning trials of 10 steps, 2 scales x 2 seeds x 40; choco: 2 x 10 + 2 x 40; vanilla: 2 x 40
    assert splits.total_steps(PARAMS) == (20 + 160) + (20 + 80) + 80


def test_a_run_in_blocks_killed_mid_block_and_rerun_equals_the_straight_run(tmp_path, monkeypatch):
    rows, facts = _run()
    key, count = run_key(PARAMS), 4
    files = [str(tmp_path / f"b{k:03d}.pt") for k in range(count - 1)]

    def block(k):
        return Block(k, count, files[k] if k < count - 1 else None, str(tmp_path / f"b{k:03d}.partial"),
                     files[k - 1] if k else None)

    # block 1 saves within the block at every step and its job is killed after 7 of them
    steps = {"n": 0}
    original = Progress.step

    def dying(self, state):
        original(self, state)
        steps["n"] += 1
        if self.block.index == 1 and steps["n"] == 7 and not getattr(self, "_killed", False):
            raise Killed

    monkeypatch.setattr(Progress, "step", dying)
    ends = []
    for k in range(count):
        if k == 1:
            steps["n"] = 0
            with pytest.raises(Killed):
                _run(Progress(block(k), key, save_every_s=0.0, log=_quiet))
            assert (tmp_path / "b001.partial").exists()
            steps["n"] = 100                              # the rerun of the job is not killed
        said = []
        progress = Progress(block(k), key, save_every_s=0.0 if k == 1 else 3600.0, log=said.append)
        if k == 1:         # the rerun goes on from the killed job's last step, not from the block's start
            assert said[0].startswith("resumed at step 97 of 360 from") and said[0].endswith("b001.partial")
        if k < count - 1:
            with pytest.raises(BlockEnd):
                _run(progress)
            ends.append(progress.counter)
        else:
            resumed_rows, resumed_facts = _run(progress)
    assert ends == [90, 180, 270], "each block stops at its share of the 360 steps"
    assert not (tmp_path / "b001.partial").exists(), "the block's output replaces its partial checkpoint"
    assert resumed_rows.drop(columns=TIMING).equals(rows.drop(columns=TIMING))
    assert _without_timing(resumed_facts) == _without_timing(facts)


def test_a_checkpoint_of_another_configuration_is_refused(tmp_path):
    first = Block(0, 2, str(tmp_path / "b000.pt"), str(tmp_path / "b000.partial"))
    with pytest.raises(BlockEnd):
        _run(Progress(first, run_key(PARAMS), log=_quiet))
    second = Block(1, 2, None, str(tmp_path / "b001.partial"), str(tmp_path / "b000.pt"))
    with pytest.raises(ValueError, match="another configuration or code"):
        Progress(second, run_key({**PARAMS, "T": 41}), log=_quiet)

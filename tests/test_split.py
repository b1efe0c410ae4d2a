"""Runs longer than the time limit (fedrepro.workflow.split, docs/cluster.md "Runs longer than the time limit"):
a run split into parts, killed mid-way and resumed, writes the CSV the straight run writes."""

from __future__ import annotations

import io
import math
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from conftest import snakemake

from fedrepro.io import without_timings, write_csv
from fedrepro.provenance.sidecar import read_sidecar
from fedrepro.registry.papers import Registry
from fedrepro.workflow import plan
from fedrepro.workflow.split import choose_level, merge_parts, plan_splits, resolved_params, split_levels

RUN = "results/smoke/cvfl/runs/mimic_q/as-stated.csv"
PARTS = "results/smoke/cvfl/runs/mimic_q/as-stated.parts"
TINY = "cluster={max_runtime_h: 0.00001}"   # every run with an estimate is over this limit


def _masked(frame: pd.DataFrame, path) -> bytes:
    write_csv(path, without_timings(frame))
    return path.read_bytes()


def test_the_paper_runs_over_the_limit_are_split_into_parts_that_fit(repo):
    registry = Registry.load(repo)
    splits = plan_splits(registry, "paper", 48.0)
    assert {s.experiment for s in splits.values()} >= {"mimic", "cifar10", "mimic_q", "imagenet100", "board_mimic",
                                                       "board_ch3"}
    for split in splits.values():
        assert split.fits and split.hours / len(split.overrides) / split.blocks <= 48, split
        assert split.runtime_min(48.0) <= 48 * 60
    # Fig. 3.1: one job per method is still 341 h; each method runs in chained blocks of its epochs
    fig3_1 = splits["paper/thesis/runs/fig3_1/as-stated"]
    assert (fig3_1.label, len(fig3_1.overrides)) == ("method", 5) and fig3_1.blocks == math.ceil(fig3_1.hours / 5 / 48)
    assert {s.blocks for s in splits.values() if s is not fig3_1} == {1}
    assert not plan_splits(registry, "quick", 48.0), "nothing at quick scale needs a split"


def test_reading_the_splits_imports_no_torch(repo):
    """Every job's process reads the Snakefile, and with it the splits of its scale: a runner module imported there
    (C-VFL's imports torch) put 450 MB into the measured peak of every paper-scale job (gcca Fig. 6: 606 MB, against
    146 MB for the same run)."""
    code = ("import sys; from fedrepro.registry.papers import Registry; from fedrepro.workflow.split import plan_splits;"
            "splits = plan_splits(Registry.load('.'), 'paper', 48.0); assert splits;"
            "print(sorted(m for m in ('torch', 'torchvision', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True)
    assert "torch" not in out.stdout, out.stdout


def test_levels_go_from_coarse_to_fine_and_the_fine_one_is_used_only_when_needed():
    levels = [("run", [{}] * 10), ("seed x run", [{}] * 50)]
    assert choose_level(levels, 400.0, 48.0)[0] == "run"
    assert choose_level(levels, 1000.0, 48.0)[0:3:2] == ("seed x run", True)
    assert choose_level(levels, 5000.0, 48.0)[0:3:2] == ("seed x run", False)


def test_a_split_run_killed_and_resumed_equals_the_straight_run(workdir, tmp_path):
    snakemake("--cores", "2", RUN, "--config", "scale=smoke", cwd=workdir)
    straight = pd.read_csv(workdir / RUN)
    for f in (RUN, RUN + ".prov.json"):
        (workdir / f).unlink()

    # split, one job at a time; killed (SIGKILL, Snakemake and its jobs) in the second part, once Snakemake has
    # taken the first as finished (started the next)
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1", RUN, "--config", "scale=smoke", TINY],
                            cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    second = workdir / PARTS.replace("/runs/", "/logs/runs/") / "p001.log"
    deadline = time.monotonic() + 600
    while not second.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert second.exists(), "the second part never started"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = {p.name: p.stat().st_mtime_ns for p in (workdir / PARTS).glob("p*.csv")}
    assert not (workdir / RUN).exists() and len(done) < 4, "killed too late: nothing left to resume"

    snakemake("--unlock", RUN, "--config", "scale=smoke", TINY, cwd=workdir)   # the lock a killed Snakemake left
    out = snakemake("--cores", "2", RUN, "--config", "scale=smoke", TINY, "--rerun-incomplete", cwd=workdir)
    assert "run_merge" in out.stdout + out.stderr
    for name, mtime in done.items():     # a finished part is kept, not run again
        assert (workdir / PARTS / name).stat().st_mtime_ns == mtime, f"{name} was run again"
    merged = pd.read_csv(workdir / RUN)
    assert _masked(merged, tmp_path / "m.csv") == _masked(straight, tmp_path / "s.csv")
    record = pd.read_json(io.StringIO((workdir / (RUN + ".prov.json")).read_text()), typ="series")
    assert record["extra"]["split"] == {"label": "seed x (compressor, b) run", "parts": 4}

    # the chain holds: audit walks the merged run through its parts to the data
    audit = subprocess.run([sys.executable, "-m", "fedrepro", "audit", RUN], cwd=workdir, capture_output=True,
                           text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(workdir / "src")})
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "p003.csv" in audit.stdout


BLOCKED = "results/smoke/thesis/runs/fig3_1/as-stated.csv"
BLOCKS = "results/smoke/thesis/runs/fig3_1/as-stated.parts"


def test_a_run_in_chained_blocks_killed_mid_block_and_resumed_equals_the_straight_run(workdir, tmp_path):
    """Fig. 3.1 runs per method, each method in blocks of its epochs (fedrepro.checkpoint) handing on a checkpoint;
    a block killed mid-way goes on from the checkpoint it saved within the block."""
    snakemake("--cores", "2", BLOCKED, "--config", "scale=smoke", cwd=workdir)
    straight = pd.read_csv(workdir / BLOCKED)
    for f in (BLOCKED, BLOCKED + ".prov.json"):
        (workdir / f).unlink()

    every_step = "cluster={max_runtime_h: 0.00001, checkpoint_minutes: 0}"    # a checkpoint within a block each step
    args = [BLOCKED, "--config", "scale=smoke", every_step]
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1", *args], cwd=workdir,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    while not list((workdir / BLOCKS).glob("p*.blocks/*.partial")) and proc.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = list((workdir / BLOCKS).glob("p*.blocks/*.partial"))
    assert len(partial) == 1, "killed too late: no block was mid-way"

    snakemake("--unlock", *args, cwd=workdir)
    out = snakemake("--cores", "2", *args, "--rerun-incomplete", cwd=workdir)
    assert {"run_block", "run_last_block", "run_merge"} <= set(out.stdout.split() + out.stderr.split())
    log = workdir / str(partial[0].parent.relative_to(workdir)).replace("/runs/", "/logs/runs/")
    said = "\n".join(p.read_text() for p in log.glob("*.log"))
    assert f"from {partial[0].relative_to(workdir)}" in said, "the killed block started over"
    assert not list((workdir / BLOCKS).glob("p*.blocks/*.partial")), "a finished block leaves no partial checkpoint"
    resumed = pd.read_csv(workdir / BLOCKED)
    assert _masked(resumed, tmp_path / "r.csv") == _masked(straight, tmp_path / "s.csv")
    record = pd.read_json(io.StringIO((workdir / (BLOCKED + ".prov.json")).read_text()), typ="series")
    assert record["extra"]["split"] == {"label": "method", "parts": 5}
    # a part's sidecar carries its chain's cost (the plan reads a run's cost there), the blocks' before it included
    cost = [read_sidecar(workdir / BLOCKS / f"p004.blocks/{f}")["extra"]["cpu_seconds"] for f in ("b000.pt", "rows.csv")]
    assert 0 < cost[0] < cost[1], cost


@pytest.mark.slow
@pytest.mark.parametrize("paper,experiment,dataset", [("cvfl", "board_mimic", "mimic3_ihm"),
                                                      ("thesis", "board_ch3", "cifar10")])
def test_a_board_run_split_per_compressor_equals_the_whole(workdir, tmp_path, paper, experiment, dataset):
    """A board run divides per compressor without declaring it: its parts (one per compressor, `n/a` ones
    included) concatenate to the whole board run."""
    data = f"results/data/{dataset}/{dataset}.npz"
    snakemake("--cores", "1", data, "--config", "scale=smoke", cwd=workdir)
    registry = Registry.load(workdir)
    params = resolved_params(registry, paper, experiment, "as-stated", "smoke")
    runner = registry.run_spec(paper, experiment, "smoke")["runner"]
    label, overrides, _ = choose_level(split_levels(workdir, runner, params), 1.0, 1e-9)
    assert label == "compressor" and len(overrides) == len(params["board_compressors"]) > 2

    def once(over):
        return plan.run_once(registry, paper, experiment, "as-stated", "smoke", overrides=over,
                             inputs={"data": str(workdir / data)}, output=tmp_path / "run.csv")[0]

    whole = once({"board_compressors": params["board_compressors"]})
    for i, over in enumerate(overrides):
        write_csv(tmp_path / f"p{i:03d}.csv", once(over))
    merged = merge_parts([str(tmp_path / f"p{i:03d}.csv") for i in range(len(overrides))])
    write_csv(tmp_path / "whole.csv", whole)
    assert _masked(merged, tmp_path / "m.csv") == _masked(pd.read_csv(tmp_path / "whole.csv"), tmp_path / "w.csv")

"""Rounds per second of the decentral engine at two commits of the whole library, in the thesis Fig. 3.4 setting of
benchmarks/bench_decentral.py (60 nodes on a ring, MNIST logistic regression, batch 5, Sign-TopK k = 10).

bench_decentral.py compares the engine with its kernels on and off inside one process; this script compares the
whole library at two commits (issue 19 asked for 2x the rounds/s of the project as it was when the issue was filed,
6dc9b13, the default baseline). Each commit's `src` is exported with `git archive` into a temporary directory and
run in its own Python processes (PYTHONPATH), the two commits alternating process by process (ABBA order, `--rounds`
pairs); every process builds fresh engines, runs `--start` iterations, then times `--blocks` blocks of `--iters`
iterations of each method on its CPU time (one thread). The table gives, per method, the median over processes
of each commit's rounds/s and the median of the paired ratios, with the load average before and after.

    python benchmarks/bench_decentral_commits.py [--baseline 6dc9b13] [--current HEAD] [--rounds 3]
        [--iters 300] [--blocks 3] [--start 0] [--methods squarm,choco_sign,choco_topk,vanilla]

`--current WORKTREE` (the default) times the working tree's src instead of a commit. Uses the prepared MNIST
(results/data/mnist/mnist.npz); run from the repository root.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_decentral import PARAMS as _SETTING  # noqa: E402  (the setting: one definition for both benchmarks)

METHODS = _SETTING["methods"]
PARAMS = {k: v for k, v in _SETTING.items() if k != "methods"}
GAMMA = {name: m["gamma"] for name, m in METHODS.items()}   # the commit takes gamma per method name


def child(args) -> None:
    """One process: the library on sys.path (whichever commit), fresh engines, CPU-time rates per block."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    from fedrepro.data.loaders import load_images
    from fedrepro.decentral import experiments as ex

    split = load_images(Path(args.data), scale=True, flatten=True)
    out = {}
    for method in args.methods.split(","):
        task = ex.MnistTask(split, PARAMS["n"], "sorted", PARAMS["batch"], 0, train_eval=1000)
        if hasattr(ex, "methods"):          # methods as data (registry `methods:`), after 30dad1b
            params = dict(PARAMS, methods=METHODS)
            eng = ex.build_engine(params, next(m for m in ex.methods(params) if m.name == method), task, 0)
        else:                               # the closed method names of the commit
            eng = ex.build_engine(dict(PARAMS, gamma=GAMMA), method, task, 0)
        for _ in range(10 + args.start):
            eng.step(task.grad)
        rates = []
        for _ in range(args.blocks):
            t0 = time.process_time()
            for _ in range(args.iters):
                eng.step(task.grad)
            rates.append(args.iters / (time.process_time() - t0))
        out[method] = rates
    print(json.dumps(out))


def export_src(rev: str, into: Path) -> Path:
    """`git archive rev src` unpacked under `into`; returns the src directory."""
    blob = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run_child(src: Path, args) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--data", args.data, "--iters", str(args.iters),
           "--blocks", str(args.blocks), "--start", str(args.start), "--methods", args.methods]
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1")
    res = subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="6dc9b13", help="the commit issue 19 was filed against")
    ap.add_argument("--current", default="WORKTREE", help="a commit, or WORKTREE for the working tree's src")
    ap.add_argument("--rounds", type=int, default=3, help="pairs of processes (ABBA order)")
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--methods", default="squarm,choco_sign,choco_topk,vanilla")
    ap.add_argument("--data", default="results/data/mnist/mnist.npz")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if not (ROOT / args.data).exists():
        sys.exit(f"{args.data} not found: prepare MNIST first (snakemake --cores 1 {args.data})")
    with tempfile.TemporaryDirectory() as tmp:
        srcs = {"baseline": export_src(args.baseline, Path(tmp) / "baseline")}
        srcs["current"] = (ROOT / "src") if args.current == "WORKTREE" else export_src(args.current, Path(tmp) / "cur")
        load0 = os.getloadavg()[0]
        results = {"baseline": [], "current": []}
        for r in range(args.rounds):
            order = ("baseline", "current") if r % 2 == 0 else ("current", "baseline")
            for kind in order:
                results[kind].append(run_child(srcs[kind], args))
    methods = args.methods.split(",")
    print(f"baseline {args.baseline}, current {args.current}; {args.rounds} process pairs (ABBA), each {args.blocks} "
          f"blocks of {args.iters} iterations from iteration {args.start + 10}; one thread; load average "
          f"{load0:.2f} before, {os.getloadavg()[0]:.2f} after")
    print("| method | baseline (rounds/s) | current | current/baseline |\n|---|---|---|---|")
    for m in methods:
        base = np.array([np.median(p[m]) for p in results["baseline"]])
        cur = np.array([np.median(p[m]) for p in results["current"]])
        print(f"| {m} | {np.median(base):.0f} | {np.median(cur):.0f} | {np.median(cur / base):.2f} |")


if __name__ == "__main__":
    main()

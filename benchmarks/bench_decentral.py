"""Rounds per second of the decentral engine in the thesis Fig. 3.4 setting (60 nodes on a ring, MNIST logistic
regression 784x10, batch 5 per node, Sign-TopK k = 10), per method; evaluation excluded.

    PYTHONPATH=src python benchmarks/bench_decentral.py [--iters 1000] [--threads 1]

Uses the prepared MNIST (results/data/mnist/mnist.npz) when present, else random data of the same shapes.
Goal (issue 8): >= 200 rounds/s for SQuARM on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    torch.set_num_threads(args.threads)
    from fedrepro.decentral.experiments import MnistTask, build_engine

    path = Path("results/data/mnist/mnist.npz")
    if path.exists():
        from fedrepro.data import load_images

        split = load_images(path, scale=True, flatten=True)
    else:
        rng = np.random.default_rng(0)
        split = SimpleNamespace(x_train=rng.random((60000, 784), dtype=np.float32), y_train=np.repeat(np.arange(10), 6000),
                                x_test=rng.random((1000, 784), dtype=np.float32), y_test=np.arange(1000) % 10, n_classes=10,
                                status="synthetic")
    params = dict(n=60, topology="ring", batch=5, T=3000, H=5, lr={"kind": "inverse", "a": 1.0, "b": 100.0}, beta=0.9,
                  trigger={"kind": "sqrt_step", "c0": 5000.0, "every": 1000}, k=10,
                  gamma={"squarm": 1.0, "choco_sign": 1.0, "choco_topk": 0.4, "vanilla": 1.0})
    print(f"data: {getattr(split, 'status', 'real')}; torch threads {args.threads}; load average {os.getloadavg()[0]:.2f}")
    for method in ("squarm", "choco_sign", "choco_topk", "vanilla"):
        best = []
        for _ in range(args.repeats):
            task = MnistTask(split, 60, "sorted", 5, 0, train_eval=1000)
            eng = build_engine(params, method, task, 0)
            for _ in range(10):
                eng.step(task.grad)
            t0 = time.perf_counter()
            for _ in range(args.iters):
                eng.step(task.grad)
            best.append(args.iters / (time.perf_counter() - t0))
        print(f"{method:11s} {np.median(best):7.0f} rounds/s (median of {args.repeats}; best {max(best):.0f})")


if __name__ == "__main__":
    main()

"""Rounds per second of the decentral engine in the thesis Fig. 3.4 setting (60 nodes on a ring, MNIST logistic
regression 784x10, batch 5 per node, Sign-TopK k = 10), per method, evaluation excluded, beside:

- off:    the same engine with the compiled kernels switched off (FEDREPRO_KERNELS=0: torch's operations),
- numpy:  a plain NumPy implementation vectorized over nodes (benchmarks/reference/squarm_numpy.py),
- limit:  the memory-traffic bound, bytes a fused implementation must move per iteration / stream bandwidth
          measured here on arrays of the state's size (the gradient's FLOPs are negligible beside it).

benchmarks/bench_decentral_commits.py measures the whole library against any earlier commit (--baseline REV), in
separate processes.

The three run interleaved in one process (blocks of --iters iterations, rotating order, --pairs rounds); the
table gives medians and the medians of the per-round ratios, with the load average before and after.

    PYTHONPATH=src python benchmarks/bench_decentral.py [--iters 200] [--pairs 5] [--threads 1] [--check 300] [--start 0]

--start N times the blocks from iteration N on: late in a run the momentum holds subnormal entries (MNIST pixels
no batch lights), which x86 cores process slowly. `--start 2500` measures the end of a Fig. 3.4 run (T = 3,000).

--check N first runs the engine with the kernels on and off N iterations on the same data and prints how far the
iterates are apart (relative; float32 rounding, grown over the iterations).
Uses the prepared MNIST (results/data/mnist/mnist.npz) when present, else random data of the same shapes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

HERE = Path(__file__).resolve().parent
PARAMS = dict(n=60, topology="ring", batch=5, T=3000, H=5, lr={"kind": "inverse", "a": 1.0, "b": 100.0}, beta=0.9,
              trigger={"kind": "sqrt_step", "c0": 5000.0, "every": 1000}, k=10,
              methods={"squarm": {"algorithm": "squarm", "compressor": {"name": "sign_topk", "k": 10}, "gamma": 1.0},
                       "choco_sign": {"algorithm": "choco", "compressor": "sign", "gamma": 1.0},
                       "choco_topk": {"algorithm": "choco", "compressor": {"name": "topk", "k": 10}, "gamma": 0.4},
                       "vanilla": {"algorithm": "dsgd", "gamma": 1.0}})
NUMPY_COMPRESSOR = {"squarm": "sign_topk", "choco_sign": "sign", "choco_topk": "topk", "vanilla": "identity"}


def load_module(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / "reference" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_split():
    path = Path("results/data/mnist/mnist.npz")
    if path.exists():
        from fedrepro.data.loaders import load_images

        return load_images(path, scale=True, flatten=True)
    rng = np.random.default_rng(0)
    return SimpleNamespace(x_train=rng.random((60000, 784), dtype=np.float32), y_train=np.repeat(np.arange(10), 6000),
                           x_test=rng.random((1000, 784), dtype=np.float32), y_test=np.arange(1000) % 10, n_classes=10,
                           status="synthetic")


def stream_bandwidth(nbytes: int, repeats: int = 20) -> float:
    """Bytes/s of a copy (read + write) of an array of `nbytes`, best of `repeats`."""
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    return 2 * nbytes / best


def bytes_per_iteration(n: int, d: int, p: int, batch: int, H: int, itemsize: int = 4) -> int:
    """Minimal traffic of a fused iteration: gradient (minibatch rows, read X, write G), momentum and Nesterov in
    one pass (read X, V, G, write X, V), and per sync (every H) drift + selection (read X, x̂) and mixing
    (read X, x̂, write X)."""
    return itemsize * (n * batch * p + 2 * n * d + 5 * n * d + 5 * n * d // H)


class Runner:
    """One implementation of one method, stepped in blocks."""

    def __init__(self, kind: str, method: str, split, npref):
        import torch

        from fedrepro.decentral import experiments as ex

        self.task = ex.MnistTask(split, PARAMS["n"], "sorted", PARAMS["batch"], 0, train_eval=1000)
        if kind == "numpy":
            H = PARAMS["H"] if method == "squarm" else 1
            thr = None
            if method == "squarm":
                from fedrepro.decentral.schedules import make_threshold

                thr = make_threshold(PARAMS["trigger"], 1)
            self.eng = npref.NumpySquarm(self.task.x.numpy(), self.task.y.numpy(), PARAMS["n"], 10,
                                         compressor=NUMPY_COMPRESSOR[method], k=PARAMS["k"], H=H,
                                         gamma=PARAMS["methods"][method]["gamma"], beta=PARAMS["beta"],
                                         threshold=thr)
            shards = torch.as_tensor(self.task.shards)
            sampler = self.task.sampler

            def step():
                self.eng.step(shards.gather(1, torch.randint(shards.shape[1], shards.shape[:1] + (PARAMS["batch"],),
                                                             generator=sampler.gen)).numpy())
            self.step = step
        else:
            flag = "0" if kind == "off" else "1"
            with kernels_switch(flag):
                self.eng = ex.build_engine(PARAMS, next(m for m in ex.methods(PARAMS) if m.name == method),
                                           self.task, 0)

            def step():
                with kernels_switch(flag):       # the compressors ask for their kernels at every call
                    self.eng.step(self.task.grad)
            self.step = step
        for _ in range(10):
            self.step()

    def rate(self, iters: int) -> float:
        """Iterations per second of this process's CPU time (one thread: wall time on an idle machine, and much
        less disturbed than wall time when other jobs share the cores)."""
        t0 = time.process_time()
        for _ in range(iters):
            self.step()
        return iters / (time.process_time() - t0)


@contextlib.contextmanager
def kernels_switch(flag: str):
    """FEDREPRO_KERNELS=flag inside the block."""
    before = os.environ.get("FEDREPRO_KERNELS")
    os.environ["FEDREPRO_KERNELS"] = flag
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("FEDREPRO_KERNELS")
        else:
            os.environ["FEDREPRO_KERNELS"] = before


def check(split, iters: int) -> None:
    """Kernels on and off, same data and seeds: how far the iterates are apart after `iters` iterations."""
    for method in ("squarm", "choco_sign", "choco_topk", "vanilla"):
        runners = [Runner(kind, method, split, None) for kind in ("off", "on")]
        for r in runners:
            for _ in range(iters):
                r.step()
        a, b = (r.eng.X.double() for r in runners)
        rel = float((a - b).norm() / a.norm())
        print(f"check {method:11s} {iters + 10} iterations: iterates apart by {rel:.1e} (relative, Frobenius)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--methods", default="squarm,choco_sign,choco_topk,vanilla")
    ap.add_argument("--check", type=int, default=0)
    ap.add_argument("--start", type=int, default=0,
                    help="iterations every implementation runs before the timed blocks (the measured window's start)")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    torch.set_num_threads(args.threads)
    npref = load_module("squarm_numpy")
    split = load_split()
    if args.check:
        check(split, args.check)
    n, p = PARAMS["n"], split.x_train.shape[1]
    d = p * 10
    bw = stream_bandwidth(4 * n * d * 4)
    load0 = os.getloadavg()[0]
    print(f"data: {getattr(split, 'status', 'real')}; torch threads {args.threads}; {args.pairs} interleaved rounds "
          f"of {args.iters} iterations from iteration {args.start}; copy bandwidth {bw / 1e9:.1f} GB/s; "
          f"load average {load0:.2f}")
    print("| method | kernels off (rounds/s) | kernels on | numpy reference | memory limit | on/off | on/numpy "
          "| on/limit |\n|---|---|---|---|---|---|---|---|")
    kinds = ("off", "on", "numpy")
    for method in args.methods.split(","):
        runners = {k: Runner(k, method, split, npref) for k in kinds}
        for r in runners.values():
            for _ in range(args.start):
                r.step()
        rates = {k: [] for k in kinds}
        for i in range(args.pairs):
            order = kinds[i % 3:] + kinds[: i % 3]
            for k in order:
                rates[k].append(runners[k].rate(args.iters))
        H = PARAMS["H"] if method == "squarm" else 1
        limit = bw / bytes_per_iteration(n, d, p, PARAMS["batch"], H)
        med = {k: float(np.median(v)) for k, v in rates.items()}
        ab = np.median(np.array(rates["on"]) / np.array(rates["off"]))
        an = np.median(np.array(rates["on"]) / np.array(rates["numpy"]))
        print(f"| {method} | {med['off']:.0f} | {med['on']:.0f} | {med['numpy']:.0f} | {limit:.0f} | "
              f"{ab:.2f} | {an:.2f} | {med['on'] / limit:.2f} |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

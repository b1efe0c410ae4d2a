"""Each compiled kernel against the plain NumPy/SciPy/torch code it replaces, at paper size, one thread.

    PYTHONPATH=src python benchmarks/bench_kernels.py [--pairs 7] [--repeats 20] [--only NAME ...] [--csv FILE]

Sizes: the decentral kernels on the thesis Fig. 3.4 state (60 nodes on a ring, MNIST logistic regression 784 x 10,
float32: 60 x 7,840); the gcca kernels on benchmarks/bench_gcca.py's Fig. 8 instance (three 50,000 x 2,000 sparse
views, K = 5, minibatches of 5,000 rows, float64). Per kernel, kernel and reference alternate (--pairs rounds of
--repeats calls each, CPU time of this process, each side called once before its clock starts); the ratio is the
median of the per-round ratios reference / kernel. Both sides also run once on the same input and must agree to
float rounding (relative 1e-5 for float32, 1e-10 for float64). ``--csv FILE`` appends one row per kernel in the
columns of benchmarks/results/kernels.csv (machine: the CPU model; date: UTC).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np
import torch

from fedrepro.runtime import limit_threads, rng_stream

N_NODES, D_MODEL = 60, 7840
GCCA = dict(J=50000, N=2000, D=200, I=3, nu=0.1, K=5, batch=5000)


def decentral_cases():
    """(name, size, kernel(), reference(), pairs(), rtol) per kernel; pairs(): the (kernel, reference) outputs to compare
    after one call of each on the same input."""
    from fedrepro.decentral.mixing import make_mixer, neighbour_lists
    from fedrepro.decentral.topology import ring
    from fedrepro.kernels import dense

    rng = np.random.default_rng(0)
    f = np.float32

    def state():
        return torch.from_numpy(rng.standard_normal((N_NODES, D_MODEL)).astype(f))

    X, V, G = state(), state(), state()
    Xk, Vk = X.clone(), V.clone()
    beta, eta = 0.9, 0.0123

    def momentum_kernel():
        dense.momentum_step(Xk.view(-1).numpy(), Vk.view(-1).numpy(), G.view(-1).numpy(), f(beta), f(beta),
                            f(-eta), f(0.0), True)

    buf = torch.empty_like(X)

    def momentum_reference():                     # fedrepro.decentral.engine's torch path
        V.mul_(beta).add_(G)
        X.add_(torch.add(G, V, alpha=beta, out=buf), alpha=-eta)

    yield ("momentum_step", f"Nesterov, {N_NODES} x {D_MODEL} float32", momentum_kernel, momentum_reference,
           lambda: [(Xk, X), (Vk, V)], 1e-5)

    W = ring(N_NODES).W
    mix = make_mixer(W, torch.float32, torch.device("cpu"))
    idx, wts = neighbour_lists(W)
    wts = wts.astype(f)
    Y = state()
    Xg, Xr, mixed = state(), None, torch.empty_like(Y)
    Xr = Xg.clone()
    gamma = 0.4

    def gossip_kernel():
        dense.gossip_add(Xg.numpy(), Y.numpy(), idx, wts, f(gamma), True)

    def gossip_reference():                       # the engine's torch path: x += γ (W x̂ - x̂)
        torch.sub(mix(Y, out=mixed), Y, out=mixed)
        mixed.mul_(gamma)
        Xr.add_(mixed)

    yield ("gossip_add", f"ring of {N_NODES}, gamma {gamma}, {N_NODES} x {D_MODEL} float32", gossip_kernel,
           gossip_reference, lambda: [(Xg, Xr)], 1e-5)

    for name, comp, label in (("sign_scale_add", "sign", "x^ += scaled sign(x - x^)"),
                              ("top_magnitudes", "topk", "x^ += top-10 of (x - x^)")):
        yield copy_case(name, comp, label, state, dense_kernel=True)


def copy_case(name, compressor, label, state, dense_kernel):
    """A TrackedCopy update (the engine's call) with the kernels on against FEDREPRO_KERNELS=0."""
    from fedrepro.comm import TrackedCopy, get_compressor

    params = {"k": 10} if compressor == "topk" else {}
    diff = state()
    on, off = (TrackedCopy(get_compressor(compressor, **params)) for _ in range(2))

    def run(copy, flag):
        def call():
            os.environ["FEDREPRO_KERNELS"] = flag
            try:
                copy.apply_difference(diff, None, message=False)
            finally:
                os.environ.pop("FEDREPRO_KERNELS")
        return call

    return (name, f"{label}, {N_NODES} x {D_MODEL} float32", run(on, "1"), run(off, "0"),
            lambda: [(on.value, off.value)], 1e-5)


def gcca_cases():
    from fedrepro.comm import TrackedCopy, get_compressor
    from fedrepro.gcca.generators import sparse_views
    from fedrepro.gcca.objective import polar
    from fedrepro.gcca.views import sample_rows

    g = GCCA
    views = sparse_views(rng_stream(0, "bench", "large"), g["J"], g["N"], g["D"], g["I"], g["nu"])
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((g["I"], g["N"], g["K"]))
    Ghat = polar(views.apply(Q).sum(axis=0))
    rows = sample_rows(rng, views.I, views.J, g["batch"], increasing=True)
    size = f"3 views {g['J']} x {g['N']}, K {g['K']}, float64"

    def switched(fn, flag, keep):
        def call():
            os.environ["FEDREPRO_KERNELS"] = flag
            try:
                keep[0] = fn()
            finally:
                os.environ.pop("FEDREPRO_KERNELS")
        return call

    for name, fn, label in (("csr_matmul_into", lambda: views.apply(Q), "M = X Q"),
                            ("csr_batch_gradient_into", lambda: views.batch_gradient(rows, Q, Ghat),
                             f"minibatch gradient, {g['batch']} rows")):
        kept_on, kept_off = [None], [None]
        yield (name, f"{label}, {size}", switched(fn, "1", kept_on), switched(fn, "0", kept_off),
               lambda a=kept_on, b=kept_off: [(a[0], b[0])], 1e-10)

    M = views.apply(Q)
    on, off = (TrackedCopy(get_compressor("cutemaxvar", q=3), init=M * 0.5) for _ in range(2))
    seeds = iter(range(10**6))

    def update(copy, flag):
        def call():
            os.environ["FEDREPRO_KERNELS"] = flag
            try:
                copy.update_in_place(M, np.random.default_rng(next(seeds)))
            finally:
                os.environ.pop("FEDREPRO_KERNELS")
        return call

    def agree():     # one update of equal copies with one stream each: the quantizer's values to rounding
        a, b = (TrackedCopy(get_compressor("cutemaxvar", q=3), init=M * 0.5) for _ in range(2))
        os.environ["FEDREPRO_KERNELS"] = "1"
        a.update_in_place(M, np.random.default_rng(7))
        os.environ["FEDREPRO_KERNELS"] = "0"
        b.update_in_place(M, np.random.default_rng(7))
        os.environ.pop("FEDREPRO_KERNELS")
        return a.value, b.value

    yield ("maxabs_quantize_add", f"CuteMaxVar q=3 copy update of M, {size}", update(on, "1"), update(off, "0"),
           lambda: [agree()], 1e-10)


def cpu_seconds(fn, repeats: int) -> float:
    t = time.process_time()
    for _ in range(repeats):
        fn()
    return (time.process_time() - t) / repeats


def machine() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        model = next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        model = platform.processor() or platform.machine()
    return f"{model}, {torch.backends.cpu.get_cpu_capability()}, {os.cpu_count()} cores"


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--only", nargs="*", help="kernel names to time (default: all)")
    ap.add_argument("--csv", type=Path, help="append the rows to this CSV (benchmarks/results/kernels.csv)")
    ap.add_argument("--note", default="", help="text for the rows' note column")
    a = ap.parse_args()
    limit_threads(1)
    load = os.getloadavg()[0]
    rows = []
    print("| kernel | size | reference (ms) | kernel (ms) | reference / kernel |\n|---|---|---|---|---|")
    for cases in (decentral_cases, gcca_cases):
        for name, size, kernel, reference, pairs, rtol in cases():
            if a.only and name not in a.only:
                continue
            kernel(), reference()
            for x, y in pairs():
                np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=rtol * 1e-3,
                                           err_msg=f"{name}: kernel and reference disagree")
            ks, rs, ratios = [], [], []
            for i in range(a.pairs):
                order = (kernel, reference) if i % 2 == 0 else (reference, kernel)
                t = {fn: cpu_seconds(fn, a.repeats) for fn in order}
                ks.append(t[kernel]), rs.append(t[reference]), ratios.append(t[reference] / t[kernel])
            k, r, ratio = statistics.median(ks), statistics.median(rs), statistics.median(ratios)
            print(f"| {name} | {size} | {1e3 * r:.3f} | {1e3 * k:.3f} | {ratio:.2f} |", flush=True)
            rows.append(dict(benchmark=f"bench_kernels.py {name}", size=size, reference_s=f"{r:.6f}",
                             kernel_s=f"{k:.6f}", ratio=f"{ratio:.2f}"))
    load = f"{load:.2f}-{os.getloadavg()[0]:.2f}"
    print(f"load average {load}")
    if a.csv:
        new = not a.csv.exists()
        with a.csv.open("a", newline="") as fh:
            w = csv.DictWriter(fh, ["benchmark", "commit", "date", "machine", "load", "size", "reference_s",
                                    "kernel_s", "ratio", "note"])
            if new:
                w.writeheader()
            date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
            for row in rows:
                w.writerow(dict(row, commit=commit(), date=date, machine=machine(), load=load, note=a.note))


if __name__ == "__main__":
    main()

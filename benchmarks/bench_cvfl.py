"""C-VFL at the paper's CIFAR-10 shapes (§5.A.2): four ResNet-18 parties (CIFAR stem) on 16x16 quadrants, P = 16,
Linear(64, 10) server, B = 100, Q = 10, fp32, synthetic tensors. Compared, interleaved in one process:

- after:     fedrepro.cvfl.CvflTrainer with fedrepro.models.vfl_parties.StackedResNet18 (a loop over the parties'
             modules, the first local forward reused as the round-start embeddings);
- loop:      a plain torch loop of our own in the authors' structure (round-start forward of every party, then
             party by party Q local steps against the others' round-start embeddings, then the server);
- authors:   with --authors-code DIR (a checkout of the authors' repository, timcast725/C-VFL; not shipped here):
             the same round structure as `loop`, on the authors' own party and server modules
             (ModelNet_CVFL/models/resnet2.py `ResNet18`, models/resnet_top.py `resnet_top`, as their quant_cifar.py
             builds them) and their optimizer (torch.optim.SGD, zero_grad/backward/step per local iteration);
- limit:     the round's FLOPs (counted with torch's FlopCounterMode on the per-party modules) / the matmul rate
             measured here (2048² fp32 torch.matmul, same threads).

    PYTHONPATH=src python benchmarks/bench_cvfl.py [--threads 2] [--pairs 2] [--Q 10] [--eval-chunks 100,250,1000]
        [--authors-code DIR]

Reports medians of per-round wall and CPU times (the machine is shared: CPU time is the steadier of the two),
the paired ratios, and the evaluation time per 1,000 test images for each chunk size (parties in eval mode).
No compression (b = 32): the compressors cost well under 1 % of a round.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
M, P, C = 4, 16, 10


def matmul_rate(torch, n: int = 2048, repeats: int = 5) -> float:
    """FLOP per second of process CPU time (summed over threads, like the rounds' CPU times)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        torch.matmul(a, b)
        best = min(best, time.process_time() - t0)
    return 2 * n**3 / best


def round_flops(torch, B: int, Q: int) -> tuple[float, float]:
    """(FLOPs of one Alg.-1 round without a separate round-start forward, FLOPs of one party forward of B)."""
    from torch.utils.flop_counter import FlopCounterMode

    from fedrepro.models.vfl_parties import StackedResNet18

    net = StackedResNet18(1, P).nets[0]
    for m in net.modules():     # count the model's own convolutions, not how our backward computes them
        if isinstance(m, torch.nn.Conv2d):
            m.__class__ = torch.nn.Conv2d
    x = torch.randn(B, 3, 16, 16)
    with FlopCounterMode(display=False) as fc:
        net(x).sum().backward()
    step = fc.get_total_flops()
    with FlopCounterMode(display=False) as fc, torch.no_grad():
        net(x)
    return M * Q * step, fc.get_total_flops()


def authors_style_round(nets, W, bias, x, y, Q, lr, torch, F):
    """Round-start forward of every party; party by party, Q SGD steps on its own module against the others'
    round-start embeddings through the server model; then Q server steps on the round-start embeddings."""
    with torch.no_grad():
        H0 = [net(xm) for net, xm in zip(nets, x)]
    for m, net in enumerate(nets):
        for _ in range(Q):
            H = list(H0)
            H[m] = net(x[m])
            loss = F.cross_entropy(F.linear(torch.cat(H, dim=1), W, bias), y)
            grads = torch.autograd.grad(loss, list(net.parameters()))
            with torch.no_grad():
                for p, g in zip(net.parameters(), grads):
                    p.add_(g, alpha=-lr)
    Wg, bg = W.detach().requires_grad_(), bias.detach().requires_grad_()
    for _ in range(Q):
        loss = F.cross_entropy(F.linear(torch.cat(H0, dim=1), Wg, bg), y)
        gW, gb = torch.autograd.grad(loss, [Wg, bg])
        with torch.no_grad():
            Wg.add_(gW, alpha=-lr)
            bg.add_(gb, alpha=-lr)


def load_authors_models(root: Path, torch):
    """The authors' party and server modules, loaded from their checkout by file path (their `models` package
    imports torchvision-free modules only for these two)."""
    models = {}
    for name in ("resnet2", "resnet_top"):
        path = root / "ModelNet_CVFL" / "models" / f"{name}.py"
        if not path.is_file():
            raise SystemExit(f"--authors-code: {path} not found (give the root of a timcast725/C-VFL checkout)")
        spec = importlib.util.spec_from_file_location(f"cvfl_authors_{name}", path)
        models[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(models[name])
    parties = [models["resnet2"].ResNet18() for _ in range(M)]
    top = models["resnet_top"].resnet_top(num_classes=C, num_clients=M)
    return parties, top


def authors_round(parties, opts, top, top_opt, x, y, Q, torch, F):
    """`authors_style_round` as their train() runs it: torch.optim.SGD per module, zero_grad/backward/step."""
    with torch.no_grad():
        H0 = [net(xm) for net, xm in zip(parties, x)]
    for m, (net, opt) in enumerate(zip(parties, opts)):
        for _ in range(Q):
            H = list(H0)
            H[m] = net(x[m])
            opt.zero_grad()
            top_opt.zero_grad()
            F.cross_entropy(top(torch.cat(H, dim=1)), y).backward()
            opt.step()
    for _ in range(Q):
        top_opt.zero_grad()
        F.cross_entropy(top(torch.cat(H0, dim=1)), y).backward()
        top_opt.step()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--B", type=int, default=100)
    ap.add_argument("--Q", type=int, default=10)
    ap.add_argument("--eval-chunks", default="100,250,1000")
    ap.add_argument("--eval-n", type=int, default=1000)
    ap.add_argument("--skip-rounds", action="store_true")
    ap.add_argument("--authors-code", type=Path, default=None,
                    help="root of a checkout of the authors' repository (timcast725/C-VFL): adds their modules")
    a = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import torch
    from torch.nn import functional as F

    torch.set_num_threads(a.threads)
    from fedrepro.cvfl import CvflConfig, CvflTrainer
    from fedrepro.cvfl.sources import TensorBatches
    from fedrepro.models.vfl_parties import StackedResNet18

    rate = matmul_rate(torch)
    flops, fwd = round_flops(torch, a.B, a.Q)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(M, a.B, 3, 16, 16, generator=g)
    y = torch.randint(0, C, (a.B,), generator=g)
    cfg = CvflConfig(M=M, Q=a.Q, B=a.B, lr=1e-4)
    torch.manual_seed(0)
    after = CvflTrainer(cfg, StackedResNet18(M, P), P, C, seed=0)
    torch.manual_seed(0)
    loop_nets = StackedResNet18(M, P).nets
    W = after.W.detach().clone()
    bias = after.bias.detach().clone()

    runs = {"after": lambda: after.round_alg1(x, y, cfg.lr),
            "loop": lambda: authors_style_round(loop_nets, W, bias, x, y, a.Q, cfg.lr, torch, F)}
    if a.authors_code is not None:
        torch.manual_seed(0)
        their_parties, their_top = load_authors_models(a.authors_code, torch)
        their_opts = [torch.optim.SGD(n.parameters(), lr=cfg.lr) for n in their_parties]
        their_top_opt = torch.optim.SGD(their_top.parameters(), lr=cfg.lr)
        runs["authors"] = lambda: authors_round(their_parties, their_opts, their_top, their_top_opt, x, y, a.Q,
                                                torch, F)
    print(f"torch threads {a.threads}; B = {a.B}, Q = {a.Q}; matmul {rate / 1e9:.0f} GFLOP per CPU-second; round "
          f"{flops / 1e12:.2f} TFLOP (+ {M * fwd / 1e12:.2f} for a separate round-start forward); "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    wall = {k: [] for k in runs}
    cpu = {k: [] for k in runs}
    names = list(runs)
    for i in range(0 if a.skip_rounds else a.pairs):
        for k in names[i % len(names):] + names[: i % len(names)]:
            t0, c0 = time.perf_counter(), time.process_time()
            runs[k]()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
            print(f"  round {i} {k}: {wall[k][-1]:.1f} s wall, {cpu[k][-1]:.1f} s CPU", flush=True)
    limit = flops / rate
    if a.skip_rounds:
        names = []
    else:
        print("| implementation | round, CPU (s) | round, wall (s) | after / this (CPU, paired median) |\n|---|---|---|---|")
    for k in names:
        ratio = statistics.median(a_ / b_ for a_, b_ in zip(cpu["after"], cpu[k]))
        print(f"| {k} | {statistics.median(cpu[k]):.1f} | {statistics.median(wall[k]):.1f} | {ratio:.2f} |")
    if names:
        print(f"| FLOP limit | {limit:.1f} | | {statistics.median(cpu['after']) / limit:.2f} (after / limit) |")

    xt = torch.randn(M, a.eval_n, 3, 16, 16, generator=g)
    yt = torch.randint(0, C, (a.eval_n,), generator=g)

    def loop_eval(chunk):                       # the authors' evaluation: training-mode BatchNorm, batches of B
        with torch.no_grad():
            for s0 in range(0, a.eval_n, chunk):
                H = [net(xm[s0:s0 + chunk]) for net, xm in zip(loop_nets, xt)]
                F.linear(torch.cat(H, dim=1), W, bias)

    evals = {f"after, chunk {c}": (lambda c=c: after.evaluate(TensorBatches(xt, yt, c)))
             for c in (int(c) for c in a.eval_chunks.split(","))}
    evals[f"loop (batch statistics), chunk {a.B}"] = lambda: loop_eval(a.B)
    if a.authors_code is not None:
        def authors_eval(chunk):                # their eval(): the modules as trained (never .eval()), batches of B
            with torch.no_grad():
                for s0 in range(0, a.eval_n, chunk):
                    their_top(torch.cat([n(xm[s0:s0 + chunk]) for n, xm in zip(their_parties, xt)], dim=1))
        evals[f"authors' modules (batch statistics), chunk {a.B}"] = lambda: authors_eval(a.B)
    cpu_e = {k: [] for k in evals}
    wall_e = {k: [] for k in evals}
    names = list(evals)
    for i in range(a.pairs):
        for k in names[i % len(names):] + names[: i % len(names)]:
            t0, c0 = time.perf_counter(), time.process_time()
            evals[k]()
            wall_e[k].append(time.perf_counter() - t0)
            cpu_e[k].append(time.process_time() - c0)
    rate = max(rate, matmul_rate(torch))
    print("| evaluation | CPU s per 1,000 images | wall |\n|---|---|---|")
    for k in names:
        print(f"| {k} | {1000 * statistics.median(cpu_e[k]) / a.eval_n:.1f} | "
              f"{1000 * statistics.median(wall_e[k]) / a.eval_n:.1f} |")
    print(f"| FLOP limit | {M * fwd / a.B * 1000 / rate:.1f} | |")
    print(f"matmul rate (best of the start and the end) {rate / 1e9:.0f} GFLOP per CPU-second; load average after "
          f"{os.getloadavg()[0]:.2f}")

if __name__ == "__main__":
    main()

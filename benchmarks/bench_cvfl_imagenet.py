"""Seconds per C-VFL global round at the ImageNet-100 paper shapes (cvfl.md §5.A.4, Fig. D.8): B = 256, M = 4
ResNet-18 parties (ImageNet stem) on 112x112 quadrants, embedding P = 128, Linear(512, 100) server, Q = 10,
vector quantization b = 2. Synthetic tensors: no JPEG decoding; evaluation timed separately.

    PYTHONPATH=src python benchmarks/bench_cvfl_imagenet.py [--rounds 3] [--threads 2] [--B 256] [--device cpu]

Prints every round's wall time, one no-grad evaluation chunk of B images, peak memory, and the implied time of
an epoch (495 rounds + a 5,000-image test sweep) and of a 100-epoch run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--B", type=int, default=256)
    ap.add_argument("--Q", type=int, default=10)
    ap.add_argument("--size", type=int, default=112, help="quadrant side (paper: 224 / 2)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    torch.set_num_threads(args.threads)
    from fedrepro.cvfl import CvflConfig, CvflTrainer
    from fedrepro.models.vfl_parties import StackedResNet18

    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    torch.manual_seed(0)
    M, P, C = 4, 128, 100
    parties = StackedResNet18(M, P, stem="imagenet").to(dev)
    cfg = CvflConfig(M=M, Q=args.Q, B=args.B, lr=1e-3, embedding="cvfl_vector", b=2, cost_formula="alg1_text",
                     top5=True, server_init="normal")
    tr = CvflTrainer(cfg, parties, P, C, seed=0, device=dev)
    x = torch.randn(M, args.B, 3, args.size, args.size, device=dev)
    y = torch.randint(0, C, (args.B,), device=dev)
    print(f"device {args.device}; torch threads {torch.get_num_threads()}; B={args.B}, Q={args.Q}, "
          f"{M} x ResNet-18 on {args.size}x{args.size}; load average {os.getloadavg()[0]:.2f}", flush=True)
    times = []
    for r in range(args.rounds):
        sync()
        t0 = time.perf_counter()
        tr.round_alg1(x, y, cfg.lr)
        sync()
        times.append(time.perf_counter() - t0)
        print(f"round {r}: {times[-1]:.1f} s", flush=True)
    with torch.no_grad():
        sync()
        t0 = time.perf_counter()
        parties(x)
        sync()
        t_eval = time.perf_counter() - t0
    steady = statistics.median(times[1:] or times)                        # first round excluded
    scale = 256 / args.B                                                  # work is linear in B
    epoch = scale * (495 * steady + 5000 / 256 * t_eval)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"median round {steady:.1f} s; eval chunk of {args.B} images {t_eval:.1f} s; peak RSS {rss:.1f} GiB")
    print(f"epoch (495 rounds of B = 256, 5,000-image test sweep{'' if args.B == 256 else f', scaled from B = {args.B}'})"
          f" {epoch / 3600:.1f} h; 100-epoch run {100 * epoch / 3600 / 24:.1f} days")


if __name__ == "__main__":
    main()

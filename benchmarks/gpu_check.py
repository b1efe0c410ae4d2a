"""The GPU path, checked: every experiment the registry sends to a GPU at paper scale (`resources: {gpu: 1}`) runs at
smoke size through its own runner on the CPU and on CUDA, and the two runs' numbers are compared; then one C-VFL
CIFAR-10 round at the paper's shapes is timed on CUDA, to set the plan's one-GPU-equals-N-cores assumption
(plan:A-gpu-speedup, docs/cluster.md) from a measurement.

    PYTHONPATH=src python benchmarks/gpu_check.py --data DIR [--only cvfl:cifar10,...] [--rounds 3] [--out FILE.md]

DIR holds the prepared datasets as `<dataset>/<dataset>.npz`, like `results/data` of a build, or the smaller copies
`--shrink DEST` writes (the first rows of each array, enough for the smoke sizes; image-index sets keep their image
folders whole).  An experiment
whose dataset is not in DIR is reported as skipped, with the reason.

The comparison is not an equality: cuDNN picks other convolution algorithms and reduces in another order, so the
same seed gives trajectories that drift apart at float32 rounding and, over many steps, more.  What it checks is that
every GPU runner runs on CUDA at all (tensors, generators and models on one device), and how far its numbers move.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd

from fedrepro.io import timing_cells, write_csv
from fedrepro.provenance.sidecar import now_iso, write_sidecars
from fedrepro.registry.papers import Registry
from fedrepro.runner import RunContext, load_runner

ROOT = Path(__file__).resolve().parents[1]


def gpu_experiments(reg: Registry) -> list[tuple[str, str]]:
    return [(p, e) for p, paper in reg.papers.items() for e in paper["experiments"]
            if reg.run_spec(p, e, "paper")["resources"].get("gpu")]


def run_once(reg: Registry, paper: str, exp: str, device: str, data: Path, out: Path, done: dict) -> pd.DataFrame:
    """One smoke-size run of (paper, exp) on `device`; `needs` are run first (on the CPU) and reused."""
    spec = reg.run_spec(paper, exp, "smoke")
    configuration = reg.configurations(paper, exp, "smoke")[0]
    inputs = {}
    if spec.get("dataset"):
        path = data / spec["dataset"] / f"{spec['dataset']}.npz"
        if not path.exists():
            raise FileNotFoundError(f"no prepared {spec['dataset']} in {data}")
        inputs["data"] = str(path)
    for name, need in (spec.get("needs") or {}).items():
        need_exp = need.split("/")[0]
        if need not in done:
            frame = run_once(reg, paper, need_exp, "cpu", data, out, done)
            done[need] = str(out / f"{need_exp}.cpu.csv")
            del frame
        inputs[name] = done[need]
    params = {**reg.params(paper, exp, configuration, "smoke"), "seed": 0}
    if params.get("board_compressors") == "registered":          # a leaderboard run, resolved as the workflow does
        from fedrepro.leaderboard.spec import Board, registered_compressors

        params["board_compressors"] = Board.load(ROOT, reg).board_compressors(paper, exp, registered_compressors())
    csv = out / f"{exp}.{device}.csv"
    ctx = RunContext(paper=paper, experiment=exp, configuration=configuration, scale="smoke", params=params,
                     inputs=inputs, output=str(csv), threads=2, device_preference=device,
                     log=logging.getLogger("gpu_check"))
    started = now_iso()
    result = load_runner(spec["runner"])(ctx)
    if device == "cuda" and getattr(ctx, "_device", None) != device:   # a GPU runner that never asks ctx.device stays on the CPU
        raise RuntimeError(f"{spec['runner']} never asked for ctx.device: it runs on the CPU even on a GPU node")
    write_csv(str(csv), result.rows)
    write_sidecars([str(csv), *result.side_files], rule="run", inputs=list(inputs.values()), config=params,
                   seeds=[0], started=started, device=device)     # a `needs:` side file is checked against it
    return result.rows


def compare(cpu: pd.DataFrame, gpu: pd.DataFrame) -> tuple[int, float, float]:
    """(numeric cells compared, median and max relative difference), timing cells left out."""
    if cpu.shape != gpu.shape or list(cpu.columns) != list(gpu.columns):
        raise ValueError(f"the CPU and CUDA runs differ in shape: {cpu.shape} vs {gpu.shape}")
    skip = timing_cells(cpu).to_numpy()
    num = [i for i, c in enumerate(cpu.columns) if pd.api.types.is_numeric_dtype(cpu[c])]
    a = cpu.iloc[:, num].to_numpy(float)
    b = gpu.iloc[:, num].to_numpy(float)
    keep = ~skip[:, num] & np.isfinite(a) & np.isfinite(b)
    rel = np.abs(a - b)[keep] / np.maximum(np.maximum(np.abs(a), np.abs(b))[keep], 1e-12)
    return int(keep.sum()), float(np.median(rel)) if rel.size else 0.0, float(rel.max()) if rel.size else 0.0


def paper_round_seconds(rounds: int) -> tuple[float, float]:
    """Median seconds of one C-VFL CIFAR-10 round at the paper's shapes on CUDA (4 ResNet-18 parties, B = 100,
    Q = 10, fp32, synthetic tensors), and of evaluating 1,000 test images."""
    import torch

    from fedrepro.cvfl import CvflConfig, CvflTrainer
    from fedrepro.cvfl.sources import TensorBatches
    from fedrepro.models.vfl_parties import StackedResNet18

    torch.backends.cudnn.benchmark = False
    M, P, C, B, Q = 4, 16, 10, 100, 10
    g = torch.Generator().manual_seed(0)
    x = torch.randn(M, B, 3, 16, 16, generator=g).cuda()
    y = torch.randint(0, C, (B,), generator=g).cuda()
    torch.manual_seed(0)
    trainer = CvflTrainer(CvflConfig(M=M, Q=Q, B=B, lr=1e-4), StackedResNet18(M, P).cuda(), P, C, seed=0,
                          device="cuda")
    trainer.round_alg1(x, y, 1e-4)                          # warm-up: cuDNN plans, allocator
    times = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        trainer.round_alg1(x, y, 1e-4)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    xt = torch.randn(M, 1000, 3, 16, 16, generator=g).cuda()
    yt = torch.randint(0, C, (1000,), generator=g).cuda()
    trainer.evaluate(TensorBatches(xt, yt, 250))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    trainer.evaluate(TensorBatches(xt, yt, 250))
    torch.cuda.synchronize()
    return statistics.median(times), time.perf_counter() - t0


def shrink(src: Path, dst: Path, rows: int, names: list[str]) -> None:
    """Copies of the prepared datasets `names` with the first `rows` rows of every array that has more (both
    splits, labels with them), small enough to carry to a GPU machine; image-index sets are copied whole."""
    import shutil

    for name in names:
        f, out = src / name / f"{name}.npz", dst / name
        out.mkdir(parents=True, exist_ok=True)
        with np.load(f, allow_pickle=False) as z:
            if "path_blob" in z.files:                               # an image index: the files are the data
                shutil.copy(f, out)
                shutil.copytree(f.parent / str(z["root"]), out / str(z["root"]), dirs_exist_ok=True)
                continue
            arrays = {k: (z[k][:rows] if z[k].ndim and len(z[k]) > rows else z[k]) for k in z.files}
        np.savez_compressed(out / f.name, **arrays)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--only", default="", help="comma-separated paper:experiment")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--shrink", type=Path, help="write shrunken copies of the --datasets in --data here and stop")
    ap.add_argument("--datasets", default="cifar10,mnist,modelnet10,desynpuf,imagenet100")
    ap.add_argument("--rows", type=int, default=2000)
    a = ap.parse_args()
    if a.shrink:
        shrink(a.data, a.shrink, a.rows, a.datasets.split(","))
        return
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device is visible: run this on a GPU machine")
    logging.basicConfig(level=logging.WARNING)
    reg = Registry.load(ROOT)
    wanted = {tuple(s.split(":")) for s in a.only.split(",") if s}
    lines = [f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}", "",
             "| experiment | runner | CPU s | CUDA s | cells | median rel. diff | max rel. diff | note |",
             "|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for paper, exp in gpu_experiments(reg):
            if wanted and (paper, exp) not in wanted:
                continue
            runner = reg.run_spec(paper, exp, "smoke")["runner"]
            try:
                out, done, frames, secs = Path(tmp) / f"{paper}-{exp}", {}, {}, {}
                out.mkdir()
                for device in ("cpu", "cuda"):
                    t0 = time.perf_counter()
                    frames[device] = run_once(reg, paper, exp, device, a.data, out, done)
                    secs[device] = time.perf_counter() - t0
                n, med, mx = compare(frames["cpu"], frames["cuda"])
                row = f"| {paper}:{exp} | `{runner}` | {secs['cpu']:.1f} | {secs['cuda']:.1f} | {n} | {med:.1e} | " \
                      f"{mx:.1e} | |"
            except Exception as exc:                                  # report and go on to the next experiment
                traceback.print_exc()
                row = f"| {paper}:{exp} | `{runner}` | | | | | | {type(exc).__name__}: {str(exc)[:120]} |"
            print(row, flush=True)
            lines.append(row)
        if a.rounds:
            rnd, ev = paper_round_seconds(a.rounds)
            lines += ["", f"C-VFL CIFAR-10 paper round on CUDA (median of {a.rounds}): {rnd:.3f} s; evaluation of "
                          f"1,000 test images: {ev:.3f} s"]
    text = "\n".join(lines)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

"""C-VFL experiments: datasets -> batch sources, models per dataset, and grids of runs -> tidy rows.

MIMIC-III, CIFAR-10 and ModelNet10 are loaded as in-memory party-stacked tensors (fixed batch order, A-1);
ImageNet-100 is streamed from its image folder as quadrant batches (reshuffled every epoch [C], §5.A.4).
A run is one (compressor, b, Q, M, alg, seed); an experiment's parameters list the grid (the paper's Sec. 5).
Rows: one per evaluated epoch with test/train metrics and the cumulative costs (bits_table: the paper's
formula, §3.5; bits_text: the text-faithful count; bits_measured: the ledger of fedrepro.comm).
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd
import torch

from fedrepro.cvfl.simulator import EVAL_CHUNK, CvflConfig, CvflTrainer, eval_chunk
from fedrepro.cvfl.sources import QuadrantBatches, TensorBatches, quadrant_crop_flip
from fedrepro.cvfl.splits import expand_grid
from fedrepro.data.imagefolder import TRAIN, VAL, ImageTransform, QuadrantImages, loader_workers
from fedrepro.data.loaders import ImageIndex, load_image_index, load_images, load_multiview, load_timeseries
from fedrepro.data.multiview import feature_blocks, image_quadrants, view_groups
from fedrepro.leaderboard.candidates import BOARD_KEYS
from fedrepro.registry.methods import methods_of

# What `run` reads (cvfl.yaml, every training experiment), checked when the registry loads; format:
# fedrepro/registry/params.py.  A run is one (method, b, Q, M, alg, epochs): the methods x `bits` grid, and/or `runs`.
PARAMETERS = {
    "dataset": "mimic|cifar10|modelnet10|imagenet100",
    "B": "int>=1", "lr": "float>0", "P": "int>=1",
    "Q?": "int>=1", "M?": "int>=1", "alg?": "1|2", "epochs?": "int>=1",      # defaults of every run
    "lr_drop_epoch?": "int>=1|null", "lr_drop?": "float>0|null",
    "n_seeds": "int>=1<=5",                 # the first n of the authors' five seeds
    "seed_slot?": "int>=0<=4",              # one part of a split run (split_run): only the n_seeds' seed at this slot
    "party?": "paper|quick",                # the paper's party networks or the small proxies
    # the compressors compared (fedrepro/registry/methods.py), in order: name -> the embedding compressor, the server-model
    # compressor (default: the embedding's) and a fixed b (no compression: 32); the run supplies b, range_mode,
    # ratio = b/32 or k where a compressor takes them (fedrepro.cvfl.simulator.knobs).  The algorithm is a run's `alg`.
    "methods": {"*": {"compressor": "partial_compressor", "server?": "partial_compressor", "b?": "int>=1<=32"}},
    "compressors?": "list[method_name]",    # the methods of the grid (default: every method)
    "bits?": "list[int>=1<=32]",            # the grid: each method at each b (a method with its own b: at that b)
    "runs?": [{"compressor": "method_name", "b": "int>=1<=32", "Q?": "int>=1", "M?": "int>=1", "alg?": "1|2",
               "epochs?": "int>=1", "eval_every?": "int>=1"}],   # compressor: a method's name
    "n_train?": "int>=1|null", "n_test?": "int>=1|null",
    "train_fraction?": "float>0<=1|null",   # ModelNet10: a random fraction of the training pool
    "subset_per_seed?": "bool", "data_seed?": "int>=0",
    "timesteps?": "int>=1|null",            # MIMIC: the first T hours
    "augment?": "crop_flip|false",          # CIFAR-10: crop + flip of the whole image
    "hidden?": "int>=1", "channels?": "int>=1",                             # proxy party sizes
    "image_size?": "int>=2", "crop?": "shared|independent", "reshuffle_each_epoch?": "bool",  # ImageNet-100
    "workers?": "int>=0", "eval_batch?": "int>=1",
    "eval_train?": "bool", "eval_every?": "int>=1", "eval_batch_stats?": "bool",
}


# The leaderboard's board run (config/leaderboard.yaml): this runner's parameters, the board's keys and the
# figure method whose settings each compressor takes (`template`).
BOARD_PARAMETERS = {**PARAMETERS, **BOARD_KEYS, "template": "method_name"}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py): seeds x grid x epochs x samples x Q local
# steps x M parties (x MIMIC's hours: the LSTM steps through them); the party network (and its proxy's size) decides
# the cost of one unit.
WORK = {"units": "n_seeds * n_used * M * (timesteps if dataset == 'mimic' else 1) * "
                 "(sum(field(runs, 'epochs', epochs) * field(runs, 'Q', Q)) if runs else epochs * Q * "
                 "((('none' in compressors) + (len(compressors) - ('none' in compressors)) * len(bits)) if compressors else "
                 "(len(methods) - sum(field(values(methods), 'b', 0) > 0)) * len(bits) + "
                 "sum(field(values(methods), 'b', 0) > 0)))",   # every method at each b, one with its own b once
        "memory": "n_used * {'mimic': 912, 'cifar10': 3072, 'modelnet10': 12 * 3 * 224 * 224 / 4, "
                  "'imagenet100': 0}[dataset]",
        "defaults": {"data_train": "{'mimic': 14681, 'cifar10': 50000, 'modelnet10': 3991, 'imagenet100': 126689}"
                                   "[dataset]",      # the real sets' sizes; a measurement uses its input's
                     "n_train": "None",
                     "n_used": "min(n_train, data_train) if n_train else data_train * train_fraction",
                     "Q": "10", "M": "4", "epochs": "1", "runs": "[]", "compressors": "[]", "bits": "[]",
                     "train_fraction": "1", "hidden": "0", "channels": "0", "image_size": "0",
                     "timesteps": "48"},
        "shape": ["dataset", "party", "hidden", "channels", "image_size", "P"],
        # GPU pricing (plan:A-gpu-rate): ImageNet-100's ResNet-18 parties, 1.82 GMAC forward at 224 px, on quadrants of
        # (image_size/2)^2 px; one unit is one party's forward + backward on one sample, 3 x forward, 2 FLOP per MAC.
        # Evaluation (forward sweeps of the 5,000 val images, about 0.1 % of the training FLOP) is left out.
        "flops": "units * (6 * 1.82e9 * (image_size / 2 / 224) ** 2 if dataset == 'imagenet100' and party == 'paper' "
                 "else 0)"}

# The authors' seeds (their code).
SEEDS = {"mimic": [1234420321, 1678517510, 1679295649, 2141512896, 755346466],
         "other": [707412115, 1928644128, 16910772, 1263880818, 1445547577]}

# Per-dataset settings (the paper's Sec. 5 and App. C, the authors' code): what differs between the TF (MIMIC) and
# PyTorch (CIFAR, ModelNet, ImageNet) code paths.
DATASET_DEFAULTS = {
    "mimic": dict(task="binary", range_mode="fixed", topk_flavor="tf", topk_signal="server_kernel",
                  server_compress="kernel"),
    "cifar10": dict(task="multiclass", range_mode="max_norm", topk_flavor="torch", topk_signal="bias",
                    server_compress="all"),
    "modelnet10": dict(task="multiclass", range_mode="max_norm", topk_flavor="torch", topk_signal="bias",
                       server_compress="all"),
    # §3.5: the ImageNet cost code agrees with the text; §5.A.4: top-5; A-19: server N(0, 0.01²), zero bias
    "imagenet100": dict(task="multiclass", range_mode="max_norm", topk_flavor="torch", topk_signal="bias",
                        server_compress="all", cost_formula="alg1_text", top5=True, server_init="normal"),
}


def _subset(x, y, n, rng):
    if n is None or n >= len(y):
        return x, y
    idx = np.sort(rng.choice(len(y), size=int(n), replace=False))
    return x[idx], y[idx]


def load_vertical(dataset: str, path: str, p: dict, M: int, seed: int) -> dict:
    """Party-stacked float32 tensors (M, N, ...) for one dataset (ImageNet-100: datasets decoded on the fly,
    ``load_quadrant_images``); `p` holds the experiment parameters."""
    rng = np.random.default_rng(seed)
    if dataset == "mimic":
        d = load_timeseries(path)
        T = p.get("timesteps")
        xs = []
        for x, y, n in ((d.x_train, d.y_train, p.get("n_train")), (d.x_test, d.y_test, p.get("n_test"))):
            x, y = _subset(x, y, n, rng)
            x = x[:, :T] if T else x                       # first T hours (quick scale)
            xs.append((np.stack(feature_blocks(x.astype(np.float32), M, axis=-1)), y.astype(np.int64)))
        n_out = 1
    elif dataset == "cifar10":
        d = load_images(path, scale=True)
        xs = []
        for x, y, n in ((d.x_train, d.y_train, p.get("n_train")), (d.x_test, d.y_test, p.get("n_test"))):
            x, y = _subset(x, y, n, rng)
            x = (x - 0.5) / 0.5                             # Normalize(0.5, 0.5) (§5.A.2)
            q = np.stack([a.transpose(0, 3, 1, 2) for a in image_quadrants(x, "NHWC")])  # (4, N, C, h, w)
            xs.append((q.astype(np.float32), y.astype(np.int64)))
        n_out = 10
    elif dataset == "modelnet10":
        d = load_multiview(path, scale=True)
        if p.get("train_fraction"):                       # a random quarter of the training pool per seed
            p = {**p, "n_train": int(len(d.y_train) * float(p["train_fraction"]))}
        xs = []
        for i, (x, y, n) in enumerate(((d.x_train, d.y_train, p.get("n_train")), (d.x_test, d.y_test, p.get("n_test")))):
            x, y = _subset(x, y, n, rng)
            g = np.stack(view_groups(x, M, view_axis=1))[:, :, :, None]   # (M, N, V, 1, H, W)
            xs.append((g.astype(np.float32), y.astype(np.int64)))
        n_out = 10
    elif dataset == "imagenet100":
        return load_quadrant_images(path, p, M, rng)
    else:
        raise ValueError(f"dataset must be mimic, cifar10, modelnet10 or imagenet100; got {dataset!r}")
    (xtr, ytr), (xte, yte) = xs
    return {"x_train": torch.from_numpy(np.ascontiguousarray(xtr)), "y_train": torch.from_numpy(ytr),
            "x_test": torch.from_numpy(np.ascontiguousarray(xte)), "y_test": torch.from_numpy(yte),
            "status": d.status, "n_out": n_out}


def load_quadrant_images(path: str, p: dict, M: int, rng: np.random.Generator) -> dict:
    """ImageNet-100 (§5.A.4) as datasets decoded on the fly: train images with RandomResizedCrop + flip, cut
    into 2x2 quadrants after one shared crop (``crop: shared``, A-18) or per-party crops (``independent``, [C]);
    the val images (the test set) and, for train metrics, the train images with Resize + CenterCrop.
    ``image_size`` S (paper 224): each party sees S/2 x S/2. ``n_train`` / ``n_test``: random subsets."""
    if M != 4:
        raise ValueError(f"ImageNet-100 parties are the 4 quadrants of an image: M must be 4, got {M}")
    idx = load_image_index(path)
    keep = []
    for split, n in ((TRAIN, p.get("n_train")), (VAL, p.get("n_test"))):
        sel = np.flatnonzero(np.asarray(idx.split) == split)
        keep.append(sel if n is None or n >= len(sel) else np.sort(rng.choice(sel, size=int(n), replace=False)))
    keep = np.concatenate(keep)
    sub = ImageIndex([idx.paths[i] for i in keep], np.asarray(idx.labels)[keep], np.asarray(idx.split)[keep],
                     idx.classes, idx.status)
    S = int(p.get("image_size", 224))
    crop = p.get("crop", "shared")
    return {"train_set": QuadrantImages(sub, TRAIN, ImageTransform(S, train=True), crop=crop),
            "train_eval_set": QuadrantImages(sub, TRAIN, ImageTransform(S, train=False)),
            "test_set": QuadrantImages(sub, VAL, ImageTransform(S, train=False)),
            "sample_shape": (3, S // 2, S // 2), "status": idx.status, "n_out": len(idx.classes)}


def batch_sources(data: dict, p: dict, cfg: CvflConfig, seed: int, device: str = "cpu", chunk: int = EVAL_CHUNK):
    """(train, test, train_eval or None) of one run. In memory: the fixed per-seed order (A-1), or a new order
    every epoch with ``reshuffle_each_epoch``; evaluation in chunks of ``chunk``. ImageNet-100: streamed with
    ``workers`` loader processes; evaluation in batches of ``eval_batch`` in one fixed order."""
    reshuffle = bool(p.get("reshuffle_each_epoch", False))
    if "train_set" in data:
        kw = dict(workers=int(p.get("workers", 0)), pin_memory=str(device).startswith("cuda"))
        train = QuadrantBatches(data["train_set"], cfg.B, seed=seed, shuffle=reshuffle, **kw)

        def sweep(ds):
            order = np.random.default_rng(0).permutation(len(ds))
            return QuadrantBatches(ds, int(p.get("eval_batch", cfg.B)), shuffle=None, order=order, **kw)

        return train, sweep(data["test_set"]), sweep(data["train_eval_set"]) if cfg.eval_train else None
    x, y = data["x_train"].to(device), data["y_train"].to(device)
    order = np.random.default_rng(seed).permutation(len(y))                  # fixed per seed
    augment = None
    if p.get("augment"):                       # CIFAR-10 at paper scale: crop + flip of the whole image (§5.A.2)
        if p["augment"] != "crop_flip" or x.shape[0] != 4:
            raise ValueError(f"augment: only 'crop_flip' on 4 image quadrants is implemented, got {p['augment']!r}")
        gen = torch.Generator().manual_seed(seed + 104729)
        augment = lambda xb: quadrant_crop_flip(xb, gen)                          # noqa: E731
    train = TensorBatches(x, y, cfg.B, order, shuffle_seed=seed if reshuffle else None, augment=augment)
    test = TensorBatches(data["x_test"].to(device), data["y_test"].to(device), chunk)
    return train, test, TensorBatches(x, y, chunk) if cfg.eval_train else None


def make_parties(dataset: str, p: dict, M: int, data: dict) -> tuple[torch.nn.Module, int]:
    """The stacked party networks of a dataset (quick proxies or the paper's nets: `party` parameter)."""
    from fedrepro.models.vfl_parties import StackedLSTM, StackedMLP, StackedResNet18, StackedViewCNN

    P = int(p["P"])
    kind = p.get("party", "paper")
    if dataset == "imagenet100":   # torchvision resnet18(num_classes=P), ImageNet stem; smoke: MLP on the quadrant
        if kind == "paper":
            return StackedResNet18(M, P, stem="imagenet"), P
        return StackedMLP(M, int(np.prod(data["sample_shape"])), int(p.get("hidden", 64)), P), P
    x = data["x_train"]
    if dataset == "mimic":
        return StackedLSTM(M, x.shape[-1], P), P
    if dataset == "cifar10":
        if kind == "paper":
            return StackedResNet18(M, P, stem="cifar"), P
        return StackedMLP(M, int(np.prod(x.shape[2:])), int(p.get("hidden", 64)), P), P
    if kind == "paper":   # [C]: Conv(3,64,11,s4,p2)-ReLU-MaxPool(5,3)-Conv(64,256,3,p1)-ReLU-MaxPool(5,3), max, FC
        return StackedViewCNN(M, x.shape[3], x.shape[-1], P, channels=(64, 256), kernels=(11, 3), strides=(4, 1),
                              paddings=(2, 1), pool=5, pool_stride=3), P
    return StackedViewCNN(M, x.shape[3], x.shape[-1], P, channels=(int(p.get("channels", 8)),)), P


def run_one(dataset: str, data_path: str, p: dict, run: dict, seed: int, *, device: str = "cpu",
            data_cache: dict | None = None) -> tuple[list[dict], dict]:
    M = int(run["M"])
    key = (M, seed if p.get("subset_per_seed") else 0)
    if data_cache is not None and key in data_cache:
        data = data_cache[key]
    else:
        data = load_vertical(dataset, data_path, p, M, seed=key[1] + int(p.get("data_seed", 0)))
        if data_cache is not None:
            data_cache[key] = data
    torch.manual_seed(seed)
    parties, P = make_parties(dataset, p, M, data)
    parties = parties.to(device)
    n_out = data["n_out"]
    method = {m.name: m for m in methods_of(p)}[run["compressor"]]
    cfg = CvflConfig(M=M, Q=int(run["Q"]), B=int(p["B"]), epochs=int(run["epochs"]), lr=float(p["lr"]),
                     lr_drop_epoch=p.get("lr_drop_epoch"), lr_drop=p.get("lr_drop"), method=method.name,
                     embedding=method.compressor, server=method.get("server"),
                     b=int(run["b"]), alg=int(run["alg"]), theta0_code=M * P * max(n_out, 2),
                     eval_train=bool(p.get("eval_train", True)), eval_every=int(run.get("eval_every", p.get("eval_every", 1))),
                     eval_batch_stats=bool(p.get("eval_batch_stats", False)),
                     **DATASET_DEFAULTS[dataset])
    trainer = CvflTrainer(cfg, parties, P, n_out, seed=seed, device=device)
    train, test, train_eval = batch_sources(data, p, cfg, seed, device, chunk=eval_chunk(parties))
    t0 = time.perf_counter()
    res = trainer.fit_sources(train, test, train_eval)
    wall = time.perf_counter() - t0
    n, n_b = train.n, len(train)
    rows = [{"dataset": dataset, "compressor": method.name, "comp_id": method.index, "b": int(run["b"]), "Q": cfg.Q, "M": M,
             "alg": cfg.alg, "seed": seed, "n_b": n_b, **r} for r in res.rows]
    return rows, {"status": data["status"], "wall": wall, "n_b": n_b, "P": P, "N_train": n}


def run_experiment(params: dict, data_path: str, *, device: str = "cpu", log=print,
                   data_cache: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """Every run of the grid; `data_cache` (a dict) keeps the loaded data for the next call (the board runs)."""
    dataset = params["dataset"]
    seeds = SEEDS["mimic" if dataset == "mimic" else "other"][: int(params["n_seeds"])]
    if params.get("seed_slot") is not None:
        seeds = [seeds[int(params["seed_slot"])]]
    grid = expand_grid(params)
    rows, timing, status = [], [], "real"
    cache: dict = {} if data_cache is None else data_cache
    for run, seed in itertools.product(grid, seeds):
        r, facts = run_one(dataset, data_path, params, run, seed, device=device, data_cache=cache)
        rows += r
        status = facts["status"]
        timing.append({**run, "seed": seed, "wall_s": round(facts["wall"], 2)})
        log(f"{dataset} {run} seed {seed}: {facts['wall']:.1f} s, final metric {r[-1]['test_metric']:.3f}")
    return pd.DataFrame(rows), {"status": status, "timing": timing}


def run(ctx, data_cache: dict | None = None):
    """Runner of every C-VFL training experiment: the whole grid (compressors x b x Q x M x seeds) of a configuration."""
    from fedrepro.runner import RunResult

    params = {**ctx.params, "workers": loader_workers(ctx.params.get("workers", 0), ctx.threads)}
    rows, facts = run_experiment(params, ctx.inputs["data"], device=ctx.device, log=ctx.log.info,
                                 data_cache=data_cache)
    rows.insert(0, "configuration", ctx.configuration)
    rows.insert(1, "experiment", ctx.experiment)
    ctx.log.info("%s/%s: %d runs", ctx.experiment, ctx.configuration, len(facts["timing"]))
    return RunResult(rows, seeds=sorted({int(s) for s in rows["seed"]}),
                     extra={"timing": facts["timing"],
                            "streams": "torch.manual_seed(seed) for init; numpy default_rng(seed) batch order; "
                                       "torch.Generator(seed + 7919) shared dither (A-7)"})


def board(ctx):
    """Leaderboard runner: each compressor of `compressors` as a method of the figure's grid with the settings of
    method `template` (the run offers it the grid's bits `b`, `range_mode`, `ratio` or `k`, as to the paper's own)."""
    from dataclasses import replace

    from fedrepro.leaderboard.candidates import run_each
    from fedrepro.runner import RunResult

    p = ctx.params
    template = {k: v for k, v in (p["methods"][p["template"]] or {}).items() if k != "compressor"}
    cache: dict = {}                             # one load of the data for every compressor
    ctx.device                                   # decided here, so the sidecar records where the copies ran

    def one(name, spec):
        return run(replace(ctx, params={**p, "methods": {name: {**template, "compressor": spec}}}), cache).rows

    rows = run_each(p["board_compressors"], p.get("knobs"), one, ctx.log, build=False)
    rows["dataset"] = p["dataset"]     # also on the "n/a" rows: the leaderboard's column is per dataset
    return RunResult(rows, seeds=sorted({int(s) for s in rows["seed"].dropna()}) if "seed" in rows else [ctx.seed],
                     extra={"template": p["template"],
                            "streams": "torch.manual_seed(seed) for init; numpy default_rng(seed) batch order; "
                                       "torch.Generator(seed + 7919) shared dither (A-7)"})

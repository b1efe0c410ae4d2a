"""The runs behind thesis Figs. 3.1-3.4: one method of one experiment, logged every `eval_every` iterations.

`run_method(params, method, seed, task)` -> tidy rows (one per eval point and metric) with the cumulative bits
(network total under B32 = the compressors' measured payload, re-priced as B64idx and Blog from the ledger),
per-node bits, communication rounds, transmissions and the airtime bits (Σ_sync max_i bits_i).
Tasks: `MnistTask` (multinomial logistic regression, batched closed-form gradient), `TorchTask` (any torch
module via fedrepro.models.StackedModel on in-memory images: ResNet-20 / MLP proxies) and `ImageFolderTask`
(the same on a streamed ImageNet folder: ResNet-50, Fig. 3.1).
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd
import torch

from fedrepro.checkpoint import Progress
from fedrepro.comm.conventions import CH3_CONVENTIONS, thesis_bits_per_step
from fedrepro.decentral.engine import ALGORITHMS, DecentralEngine, algorithm_config
from fedrepro.decentral.schedules import make_lr, make_threshold
from fedrepro.decentral.splits import loops, total_steps, tune_steps
from fedrepro.decentral.topology import make_topology
from fedrepro.leaderboard.candidates import BOARD_KEYS
from fedrepro.registry.methods import Method, methods_of
from fedrepro.runtime import compute_clock, rng_stream

# What `run` reads (thesis.yaml fig3_1 ... fig3_4_trigger), checked when the registry loads; format:
# fedrepro/registry/params.py.  The T iterations: `T`, or `epochs` x `iters_per_epoch` (derived from the data if absent).
PARAMETERS = {
    "dataset": "str",                       # imagenet: streamed image folder (Fig. 3.1); else in memory
    "model": "logreg|resnet20|resnet50",
    "width?": "int>=1", "depth_blocks?": "int>=1",        # ResNet-20 proxies
    "image_size?": "int>=8", "loader_workers?": "int>=0",  # image folder
    "n": "int>=2",                          # nodes
    "topology?": "ring|ring_third|complete|torus|erdos_renyi|er",
    "partition?": "iid|sorted|two_classes",   # ch3:A-45: the heterogeneous split
    "batch": "int>=1",                      # per node
    "T?": "int>=1", "epochs?": "float>0", "iters_per_epoch?": "int>=1",
    "eval_every?": "int>=1", "eval_every_epochs?": "float>0",
    "train_eval?": "int>=1|null", "test_eval?": "int>=1|null",
    "augment?": "bool",
    "H": "int>=1",                          # SQuARM local steps (a method's own H wins)
    "lr": {"kind?": "inverse|constant|warmup_piecewise", "a?": "float", "b?": "float", "value?": "float>0",
           "base?": "float>0", "warmup_epochs?": "float>=0", "start?": "float>=0", "milestones?": "list[float>=0]",
           "factor?": "float>0", "mode?": "linear|choco_scaleup", "scaleup?": "float>0"},
    "beta?": "float>=0<1", "lr_correction?": "bool", "weight_decay?": "float>=0",
    "trigger?": ("null", {"kind?": "none|constant|sqrt_step|piecewise_epoch", "c?": "float>=0",
                          "c0?": "float>=0", "every?": "int>=1", "step?": "float>=0", "every_epochs?": "float>0",
                          "n_steps?": "int>=0", "cap_inv_lr?": "float>0|null"}),
    "trigger_calibrate?": "bool",           # rescale the schedule from one epoch's drift
    "trigger_scale?": "float>=0",
    "trigger_scales?": "list[float>=0]",    # one SQuARM run per threshold scale (the sweep)
    # the methods, in order (fedrepro/registry/methods.py): an algorithm of fedrepro.decentral.engine.ALGORITHMS, any
    # fedrepro.comm compressor (a sparsifier's `ratio`: that fraction of each tensor, A-14), the consensus step size
    # gamma (used where it is not tuned; dsgd: 1) and SQuARM's local steps H (default: the top-level H)
    "methods": {"*": {"algorithm": "squarm|choco|dsgd", "compressor?": "compressor", "gamma?": "float>0",
                      "H?": "int>=1"}},
    "tune_gamma?": "bool", "gamma_grid?": "list[float>0]", "tune_frac?": "float>0<=1",
    "gamma_grid_runs?": "bool",             # ch3:A-10: run every gamma of the grid over the whole horizon
    "trigger_references?": "list[copy|last_sent]",  # ch3:A-trigger-ref: one run per trigger reference
    "trigger_reference?": "copy|last_sent",
    "seeds?": "int>=1",
    # recorded with the run, read by no code: the figure's target lives in the artifact's parameters, the link
    # model's constants in fedrepro.decentral.linkmodel
    "target?": "float", "link_rate?": "float>0", "tau_oh?": "float>=0",
}


# The leaderboard's board run (config/leaderboard.yaml): this runner's parameters, the board's keys and the
# figure method whose settings each compressor takes (`template`).
BOARD_PARAMETERS = {**PARAMETERS, **BOARD_KEYS, "template": "method_name"}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py): samples processed x the model's cost per
# sample (ResNet-20 proxies: width^2 x blocks x pixels / 1024; logistic regression: 1).  Samples: every run a method
# makes (seeds, trigger scales or references, the gamma grid when every gamma runs, tune_frac of a run per grid value
# when gamma is tuned) x iterations x nodes x batch, plus the evaluations (train_eval + test samples every eval_every
# iterations, a forward pass each: a third of a training sample).
WORK = {"units": "seeds * len(methods) * len(trigger_scales) * len(trigger_references) * "
                 "(len(gamma_grid) if gamma_grid_runs else 1 + (tune_frac * len(gamma_grid) if tune_gamma else 0)) * "
                 "(steps * n * batch + evals * ((train_eval if train_eval else data_train) + "
                 "(test_eval if test_eval else data_test)) / 3) * "
                 "(width * width * depth_blocks * image_size * image_size / 1024 if model != 'logreg' else 1)",
        "defaults": {"T": "None", "epochs": "0", "seeds": "1", "trigger_scales": "[1]", "trigger_references": "[1]",
                     "gamma_grid_runs": "False", "tune_gamma": "False", "tune_frac": "0.1", "gamma_grid": "[]",
                     "width": "16", "depth_blocks": "3", "image_size": "32", "train_eval": "None",
                     "test_eval": "None", "eval_every": "20", "eval_every_epochs": "1",
                     "data_train": "{'mnist': 60000, 'cifar10': 50000, 'imagenet': 1281167}[dataset]",
                     "data_test": "{'mnist': 10000, 'cifar10': 10000, 'imagenet': 50000}[dataset]",
                     "iters_per_epoch": "ceil(data_train / (n * batch))",
                     "steps": "T if T else epochs * iters_per_epoch",
                     "evals": "T / eval_every if T else epochs / eval_every_epochs"},
        "shape": ["model", "dataset"],
        # GPU pricing (plan:A-gpu-rate) of Fig. 3.1's ResNet-50: 4.1 GMAC forward per 224-px image, x 2 FLOP per MAC;
        # a training sample is forward + backward, 3 x forward; the evaluations are forward passes.  The runs are
        # counted as in `units` (every method, the gamma tuning's tune_frac of a run per grid value).
        "flops": "seeds * len(methods) * len(trigger_scales) * len(trigger_references) * "
                 "(len(gamma_grid) if gamma_grid_runs else 1 + (tune_frac * len(gamma_grid) if tune_gamma else 0)) * "
                 "(3 * steps * n * batch + evals * ((train_eval if train_eval else data_train) + "
                 "(test_eval if test_eval else data_test))) * "
                 "(2 * 4.1e9 * image_size * image_size / (224 * 224) if model == 'resnet50' else 0)"}


def _torch_gen(seed: int, *keys, device: str | torch.device = "cpu") -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(int(rng_stream(seed, *keys).integers(2**62)))
    return g


class Sampler:
    """Per-node minibatches from equal-size shards (n, m) of sample indices: uniform, per iteration."""

    def __init__(self, shards: np.ndarray, batch: int, gen: torch.Generator):
        self.shards = torch.as_tensor(shards, dtype=torch.long)
        self.batch, self.gen = batch, gen

    def __call__(self) -> torch.Tensor:
        n, m = self.shards.shape
        cols = torch.randint(m, (n, self.batch), generator=self.gen)
        return torch.gather(self.shards, 1, cols)


PARTITIONS = ("sorted", "two_classes", "iid")


def node_shards(labels: np.ndarray, n: int, partition: str, rng: np.random.Generator) -> list[np.ndarray]:
    """The nodes' training data (assumption ch3:A-45, "heterogeneous distribution across classes"):
      "sorted"       label-sorted contiguous shards: one class per node (two at class boundaries), A-45;
      "two_classes"  the label-sorted data cut into 2n shards, node i holding shards i and i + n: two classes per
                     node, five classes apart (e.g. 0 and 5 on MNIST's 60 nodes); ring neighbours stay alike;
      "iid"          random equal shards (A-40)."""
    from fedrepro.data.partition import node_split, sorted_shards

    if partition == "two_classes":
        halves = sorted_shards(labels, 2 * n)
        return [np.sort(np.concatenate([halves[i], halves[i + n]])) for i in range(n)]
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {', '.join(PARTITIONS)}; got {partition!r}")
    return node_split(labels, n, partition, rng)


class MnistTask:
    """Thesis Fig. 3.4: W ∈ R^{784x10}, no bias, pixels in [0, 1], x0 = 0 (A-28, A-02)."""

    def __init__(self, split, n: int, partition: str, batch: int, seed: int, train_eval: int | None = None,
                 dtype=torch.float32):
        from fedrepro.models.logreg import softmax_regression_grad

        self._grad = softmax_regression_grad
        self.C = int(split.n_classes)
        self.x = torch.as_tensor(split.x_train, dtype=dtype)
        self.y = torch.as_tensor(split.y_train, dtype=torch.long)
        self.xt = torch.as_tensor(split.x_test, dtype=dtype)
        self.yt = torch.as_tensor(split.y_test, dtype=torch.long)
        parts = node_shards(split.y_train, n, partition, rng_stream(seed, "decentral", "partition"))
        m = min(len(p) for p in parts)
        self.shards = np.stack([p[:m] for p in parts])
        self.sampler = Sampler(self.shards, batch, _torch_gen(seed, "decentral", "minibatch"))
        idx = np.arange(len(self.y)) if not train_eval else rng_stream(seed, "decentral", "train_eval").choice(
            len(self.y), size=min(train_eval, len(self.y)), replace=False)
        self.xe, self.ye = self.x[idx], self.y[idx]
        self.n, self.d, self.dtype = n, self.x.shape[1] * self.C, dtype
        self.segments = [(0, self.d)]
        self._gbuf: torch.Tensor | None = None

    def x0(self) -> torch.Tensor:
        return torch.zeros(self.n, self.d, dtype=self.dtype)

    def state_dict(self) -> dict:
        """What the next minibatches depend on (a checkpoint's task part): the sampler's stream."""
        return {"sampler": self.sampler.gen.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.sampler.gen.set_state(state["sampler"])

    def grad(self, X: torch.Tensor, t: int) -> torch.Tensor:
        """The minibatch gradient, written into a buffer of the task: valid until the next call."""
        idx = self.sampler()
        flat = idx.reshape(-1)
        if X.device.type != "cpu" or X.requires_grad:
            xb = self.x.index_select(0, flat).view(*idx.shape, -1)  # a row copy; advanced indexing is 4x slower
            return self._grad(X, xb, self.y.index_select(0, flat).view(idx.shape), self.C)
        if (self._gbuf is None or self._gbuf.shape != X.shape or self._gbuf.dtype != X.dtype
                or self._xbuf.shape[0] != flat.numel()):
            self._gbuf = torch.empty_like(X)
            self._xt = np.empty((idx.shape[0], self.x.shape[1], idx.shape[1]), dtype=self.x.numpy().dtype)
            self._xbuf = torch.empty(flat.numel(), self.x.shape[1], dtype=self.x.dtype)
        # rows into a kept buffer: a fresh 1 MB tensor page-faults on every call
        xb = torch.index_select(self.x, 0, flat, out=self._xbuf).view(*idx.shape, -1)
        yb = self.y.index_select(0, flat).view(idx.shape)
        return self._grad(X, xb, yb, self.C, out=self._gbuf, xt=self._xt)

    @torch.no_grad()
    def evaluate(self, w: torch.Tensor) -> dict:
        Wm = w.view(-1, self.C)
        acc = float((self.xt @ Wm).argmax(1).eq(self.yt).double().mean())
        loss = float(torch.nn.functional.cross_entropy(self.xe @ Wm, self.ye))
        return {"test_acc": acc, "test_error": 1.0 - acc, "train_loss": loss}


class NormalizedImages:
    """A split's images as float32 tensors, normalized per channel with the training set's mean and std (A-42).

    Made once per run and shared by every method and seed's task: the normalization of 50,000 CIFAR-10 images
    was most of a smoke run's time when each task made its own copy (the tensors are never written to)."""

    def __init__(self, split, device: str = "cpu"):
        self.device = torch.device(device)
        x = torch.as_tensor(split.x_train, dtype=torch.float32, device=self.device)
        mean = x.mean(dim=(0, 2, 3), keepdim=True)
        std = x.std(dim=(0, 2, 3), keepdim=True) + 1e-6
        self.x = _standardized(x, mean, std)
        self.y = torch.as_tensor(split.y_train, dtype=torch.long, device=self.device)
        self.xt = _standardized(torch.as_tensor(split.x_test, dtype=torch.float32, device=self.device), mean, std)
        self.yt = torch.as_tensor(split.y_test, dtype=torch.long, device=self.device)
        self.labels = split.y_train


def _standardized(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """(x - mean) / std with the division done in place on the difference: the same floats element by element,
    without a second full-size temporary (CIFAR-10's training set: 614 MB less at the peak, 0.76 -> 0.39 s)."""
    return torch.sub(x, mean).div_(std)


class TorchTask:
    """A torch module on image data, n nodes batched with torch.func (fedrepro.models.StackedModel)."""

    def __init__(self, module, images: NormalizedImages, n: int, partition: str, batch: int, seed: int,
                 train_eval: int = 2000, test_eval: int | None = None, augment: bool = False):
        from fedrepro.models.stacked import StackedModel

        self.device = images.device
        self.model = StackedModel(module, n, device=self.device)
        self.x, self.y, self.xt, self.yt = images.x, images.y, images.xt, images.yt
        if test_eval:
            self.xt, self.yt = self.xt[:test_eval], self.yt[:test_eval]
        parts = node_shards(images.labels, n, partition, rng_stream(seed, "decentral", "partition"))
        m = min(len(p) for p in parts)
        self.shards = np.stack([p[:m] for p in parts])
        self.gen = _torch_gen(seed, "decentral", "minibatch")                       # CPU: indices, augmentation draws
        self.sampler = Sampler(self.shards, batch, self.gen)
        self.augment = augment
        ev = torch.as_tensor(rng_stream(seed, "decentral", "train_eval").choice(
            len(self.y), size=min(train_eval, len(self.y)), replace=False), device=self.device)
        self.xe, self.ye = self.x[ev], self.y[ev]
        self.n, self.d = n, self.model.d
        self.segments = self.model.segments

    def x0(self) -> torch.Tensor:
        return self.model.x0()

    def state_dict(self) -> dict:
        """The stream of minibatch indices and augmentation draws, and each node's BatchNorm statistics (A-07)."""
        return {"generator": self.gen.get_state(), "buffers": {k: v.clone() for k, v in self.model.buffers.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.gen.set_state(state["generator"])
        self.model.buffers = {k: v.clone() for k, v in state["buffers"].items()}

    def _augment(self, xb: torch.Tensor) -> torch.Tensor:
        """Random horizontal flip and a random shift of up to 4 pixels (A-42), one draw per image."""
        n, b = xb.shape[:2]
        flip = (torch.rand(n, b, 1, 1, 1, generator=self.gen) < 0.5).to(xb.device)
        xb = torch.where(flip, xb.flip(-1), xb)
        sx, sy = (int(v) for v in torch.randint(-4, 5, (2,), generator=self.gen))
        return torch.roll(xb, shifts=(sx, sy), dims=(-2, -1))

    def grad(self, X: torch.Tensor, t: int) -> torch.Tensor:
        idx = self.sampler().to(self.device)
        xb = self.x[idx]
        if self.augment:
            xb = self._augment(xb)
        return self.model.grad(X, xb, self.y[idx])

    @torch.no_grad()
    def evaluate(self, w: torch.Tensor) -> dict:
        logits = self.model.predict_logits(w, self.xt)
        acc = float(logits.argmax(1).eq(self.yt).double().mean())
        loss = float(torch.nn.functional.cross_entropy(self.model.predict_logits(w, self.xe), self.ye))
        return {"test_acc": acc, "test_error": 1.0 - acc, "train_loss": loss}


class _Skipping:
    """A batch sampler from its `skip`-th batch on: the earlier ones are drawn again (the sampler's stream goes on
    where a resumed run left it) but never handed to the loader, so no image of them is decoded."""

    def __init__(self, sampler, skip: int):
        self.sampler, self.skip = sampler, int(skip)

    def __iter__(self):
        return itertools.islice(iter(self.sampler), self.skip, None)


def _node_batches(dataset, shards: np.ndarray, batch: int, seed: int, workers: int, pin_memory: bool, skip: int):
    """fedrepro.data.imagefolder.node_batches from the `skip`-th node batch on: (x (n, b, 3, S, S), y (n, b))."""
    from fedrepro.data.imagefolder import NodeBatchSampler, make_loader

    n = np.asarray(shards).shape[0]
    loader = make_loader(dataset, _Skipping(NodeBatchSampler(shards, batch, seed), skip), workers, pin_memory)
    for x, y in loader:
        yield x.view(n, -1, *x.shape[1:]), y.view(n, -1)


class ImageFolderTask:
    """Thesis Fig. 3.1: a torch module on an ImageNet-style image folder that does not fit in memory.  Minibatches
    stream from fedrepro.data.imagefolder (each node reshuffles its own shard every epoch, A-40; RandomResizedCrop
    + flip, A-42); evaluation decodes the validation images and a fixed training subset (A-30) with
    Resize + CenterCrop."""

    def __init__(self, module, index, n: int, partition: str, batch: int, seed: int, image_size: int = 224,
                 train_eval: int | None = 50000, test_eval: int | None = None, augment: bool = True,
                 workers: int = 0, eval_batch: int = 250, device: str = "cpu"):
        from fedrepro.data.imagefolder import TRAIN, VAL, ImageFiles, ImageTransform
        from fedrepro.data.partition import node_split
        from fedrepro.models.stacked import StackedModel

        self.device = torch.device(device)
        self.model = StackedModel(module, n, device=self.device)
        train = ImageFiles(index, TRAIN, ImageTransform(image_size, train=augment))
        self.train_eval = ImageFiles(index, TRAIN, ImageTransform(image_size, train=False))
        self.test = ImageFiles(index, VAL, ImageTransform(image_size, train=False))
        parts = node_split(train.labels, n, partition, rng_stream(seed, "decentral", "partition"))
        m = min(len(p) for p in parts)
        self.shards = np.stack([p[:m] for p in parts])
        pin = self.device.type == "cuda"
        self._stream = int(rng_stream(seed, "decentral", "minibatch").integers(2**62))
        self._batches_of = lambda skip: _node_batches(train, self.shards, batch, self._stream, workers, pin, skip)
        self.batches, self.consumed = self._batches_of(0), 0
        k = len(train) if not train_eval else min(int(train_eval), len(train))
        self.train_subset = np.sort(rng_stream(seed, "decentral", "train_eval").choice(len(train), size=k, replace=False))
        self.test_subset = None if not test_eval else np.arange(min(int(test_eval), len(self.test)))
        self.workers, self.eval_batch = int(workers), int(eval_batch)
        self.n, self.d = n, self.model.d
        self.segments = self.model.segments

    def x0(self) -> torch.Tensor:
        return self.model.x0()

    def grad(self, X: torch.Tensor, t: int) -> torch.Tensor:
        xb, yb = next(self.batches)
        self.consumed += 1
        return self.model.grad(X, xb.to(self.device, non_blocking=True), yb.to(self.device, non_blocking=True))

    def state_dict(self) -> dict:
        """The node batches consumed (their permutations and augmentation seeds are drawn again on resume, no image
        decoded) and each node's BatchNorm statistics (A-07)."""
        return {"consumed": self.consumed, "buffers": {k: v.clone() for k, v in self.model.buffers.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.batches, self.consumed = self._batches_of(int(state["consumed"])), int(state["consumed"])
        self.model.buffers = {k: v.clone() for k, v in state["buffers"].items()}

    @torch.no_grad()
    def _score(self, w: torch.Tensor, files, subset) -> tuple[float, float]:
        """(accuracy, mean cross-entropy) of parameter vector w over `subset` of `files`, streamed in batches."""
        from fedrepro.data.imagefolder import SequentialBatches, make_loader

        loader = make_loader(files, SequentialBatches(len(files), self.eval_batch, subset), self.workers)
        correct, loss, count = 0, 0.0, 0
        for x, y in loader:
            logits = self.model.predict_logits(w, x.to(self.device), batch=self.eval_batch)
            y = y.to(self.device)
            correct += int(logits.argmax(1).eq(y).sum())
            loss += float(torch.nn.functional.cross_entropy(logits, y, reduction="sum"))
            count += len(y)
        return correct / count, loss / count

    def evaluate(self, w: torch.Tensor) -> dict:
        acc, _ = self._score(w, self.test, self.test_subset)
        _, loss = self._score(w, self.train_eval, self.train_subset)
        return {"test_acc": acc, "test_error": 1.0 - acc, "train_loss": loss}


def methods(params: dict) -> list[Method]:
    """The configuration's methods, in the registry's order."""
    return methods_of(params, algorithms=ALGORITHMS)


def build_engine(params: dict, method: Method, task, seed: int, gamma: float | None = None,
                 threshold_scale: float = 1.0) -> DecentralEngine:
    n = int(params["n"])
    topo = make_topology(params.get("topology", "ring"), n, rng=rng_stream(seed, "decentral", "topology"))
    ipe = int(params.get("iters_per_epoch", 1))
    triggered = method.algorithm == "squarm"
    g = gamma if gamma is not None else float(method.get("gamma", 1.0))
    cfg = algorithm_config(method.algorithm, method.compressor, gamma=g, beta=float(params.get("beta", 0.9)),
                           H=int(method.get("H", params["H"])) if triggered else None,
                           weight_decay=float(params.get("weight_decay", 0.0)),
                           lr_correction=bool(params.get("lr_correction", True)),
                           trigger_reference=str(params.get("trigger_reference", "copy")))
    thr = make_threshold(params.get("trigger"), ipe, scale=threshold_scale * float(params.get("trigger_scale", 1.0))) \
        if triggered else None
    x0 = task.x0()
    return DecentralEngine(topo.W, x0, cfg, make_lr(params["lr"], ipe), thr, segments=task.segments,
                           generator=_torch_gen(seed, "decentral", method.name, "compressor", device=x0.device))


def tune_gamma(params: dict, method: Method, make_task, seed: int, log=print,
               progress: Progress | None = None) -> tuple[float, dict]:
    """A-10: the γ of the grid with the lowest training loss of the averaged model after `tune_frac` of the run."""
    progress = progress or Progress()
    grid = [float(g) for g in params["gamma_grid"]]
    T = tune_steps(params)
    losses = {}
    for g in grid:
        name = f"tune/{method.name}/gamma={g:g}"
        loss = progress.cached(name)
        if loss is None:
            task = make_task()
            eng = build_engine(params, method, task, seed, gamma=g)
            state = progress.begin(name, T)
            if state is not None:
                eng.load_state_dict(state["engine"])
                task.load_state_dict(state["task"])
            for t in range(0 if state is None else state["t"], T):
                eng.step(task.grad)
                progress.step(lambda: {"t": t + 1, "engine": eng.state_dict(), "task": task.state_dict()})
            loss = task.evaluate(eng.mean_model())["train_loss"]
            progress.done(name, loss)
        losses[g] = loss if np.isfinite(loss) else float("inf")
        log(f"  gamma tuning {method.name}: gamma={g:g} train loss {loss:.4g} after {T} it")
    best = min(losses, key=losses.get)
    return best, losses


def run_method(params: dict, method: Method, task, seed: int, gamma: float, log=print,
               progress: Progress | None = None, name: str = "run") -> tuple[pd.DataFrame, dict]:
    """One method's run for one seed at step size γ: its evaluated steps as a frame, and its facts.  `progress`
    (fedrepro.checkpoint): the run's position, saved and restored under the loop's `name` when it runs in blocks."""
    progress = progress or Progress()
    T = int(params["T"])
    every = int(params.get("eval_every", 20))
    eng = build_engine(params, method, task, seed, gamma=gamma)
    recs = []
    t0 = time.perf_counter()
    compute = 0.0
    state = progress.begin(name, T)
    if state is not None:            # resumed mid-run: the engine, the task's streams, the rows so far, the clocks
        eng.load_state_dict(state["engine"])
        task.load_state_dict(state["task"])
        recs, compute, t0 = state["recs"], state["compute"], t0 - state["elapsed"]

    def snapshot(step):
        ev = task.evaluate(eng.mean_model())
        recs.append({"step": step, **ev, "bits_B32": int(eng.bits.sum()), "bits_per_node": float(eng.bits.sum() / eng.n),
                     "rounds": eng.rounds, "transmissions": int(eng.n_fired.sum()), "airtime_bits": eng.airtime_bits,
                     "trigger_rate": eng.trigger_rate(), "consensus_dist": eng.consensus_distance(),
                     "mean_sq_norm": float((eng.mean_model() ** 2).sum()),
                     "epoch": step / int(params.get("iters_per_epoch", 1))})

    if state is None:
        snapshot(0)
    timer = compute_clock(str(task.x0().device))   # CPU time on a CPU (load-independent), wall time on a GPU
    for t in range(0 if state is None else state["t"], T):
        s = timer()
        eng.step(task.grad)
        compute += timer() - s
        if (t + 1) % every == 0 or t + 1 == T:
            snapshot(t + 1)
            if not np.isfinite(recs[-1]["train_loss"]):
                log(f"  {method.name}: diverged at t={t + 1}")
                break
        progress.step(lambda: {"t": t + 1, "engine": eng.state_dict(), "task": task.state_dict(), "recs": recs,
                               "compute": compute, "elapsed": time.perf_counter() - t0})
    wall = time.perf_counter() - t0
    frame = pd.DataFrame(recs)
    # re-price the ledger under the other conventions (docs/thesis_ch3.md)
    for conv in CH3_CONVENTIONS[1:]:
        if eng.ledger is not None and eng.ledger.steps("p2p").size:
            steps, bits = thesis_bits_per_step(eng.ledger, conv, "p2p")
            cum = np.cumsum(bits.sum(axis=1))
            pos = np.searchsorted(steps, frame["step"].to_numpy() - 1, side="right")
            frame[f"bits_{conv}"] = np.where(pos > 0, cum[np.maximum(pos - 1, 0)], 0)
        else:
            frame[f"bits_{conv}"] = 0
    facts = {"method": method.name, "gamma": gamma, "seconds": round(wall, 3), "seconds_per_iter": compute / max(1, T),
             "trigger_rate": eng.trigger_rate(), "rounds": eng.rounds, "syncs": eng.n_sync}
    frame["seconds_per_iter"] = facts["seconds_per_iter"]
    frame["gamma"] = gamma
    log(f"  {method.name}: gamma={gamma:g}, {T} it in {wall:.1f} s ({T / wall:.0f} it/s), final test error "
        f"{recs[-1]['test_error']:.4f}, trigger rate {eng.trigger_rate():.3f}, bits {recs[-1]['bits_B32']:.3g}")
    return frame, facts


ID_COLS = ("step", "epoch", "bits_B32", "bits_B64idx", "bits_Blog", "bits_per_node", "rounds", "transmissions",
           "airtime_bits", "gamma", "seconds_per_iter")
METRICS = ("test_error", "test_acc", "train_loss", "trigger_rate", "consensus_dist", "mean_sq_norm")


def to_long(frame: pd.DataFrame, method: str, seed: int) -> pd.DataFrame:
    long = frame.melt(id_vars=[c for c in ID_COLS if c in frame], value_vars=[m for m in METRICS if m in frame],
                      var_name="metric", value_name="value")
    long.insert(0, "seed", seed)
    long.insert(0, "method", method)
    return long


def run_experiment(params: dict, make_task, log=print, progress: Progress | None = None) -> tuple[pd.DataFrame, dict]:
    """Every method x seed of one configuration.  make_task(seed) -> a fresh task (data, sampler).

    Variants of the event-triggered method (SQuARM), each in a column of its own:
      `trigger_scales` (a list; the threshold-scale sweep of RISK R-1, docs/thesis_ch3.md): the threshold c_t multiplied by
        each scale s (on top of any A-22 calibration; s = 0 is "no trigger"); column `trigger_scale`.
      `trigger_references` (a list of "copy" / "last_sent", assumption ch3:A-trigger-ref): what the trigger measures
        the drift against; column `trigger_reference`.  Without the list, `trigger_reference` (default "copy").
    `gamma_grid_runs: true` (the whole-run γ tuning of ch3:A-10): every method but vanilla runs the whole horizon at
    every γ of `gamma_grid` (the rows' `gamma` column tells them apart; the choice is made when the runs are read,
    `fedrepro.decentral.tuning`).  Otherwise γ is tuned (if `tune_gamma`, the A-10 rule) once per method, at the
    configuration's own threshold, and used for every variant.

    `progress` (fedrepro.checkpoint): a run longer than a job's time limit goes on from the checkpoint of the job
    before; each loop of steps (a γ-tuning trial, one run) is named by what it runs."""
    progress = progress or Progress()
    progress.start(total_steps(params))
    seeds = [int(params["seed"]) + i for i in range(int(params.get("seeds", 1)))]
    frames, facts = [], {"runs": [], "gamma_tuning": {}}
    squarm = [m for m in methods(params) if m.algorithm == "squarm"]
    if params.get("trigger_calibrate") and squarm:
        cal = progress.cached("calibrate")        # a loop of no counted steps: redone whole if interrupted
        if cal is None:
            progress.begin("calibrate", 0)
            cal = calibrate_trigger(params, squarm[0], make_task, seeds[0], log)
            progress.done("calibrate", cal)
        params = dict(params, trigger_scale=cal["scale"])
        facts["trigger_calibration"] = cal
    for method, gammas, variants in loops(params):
        if gammas is None:
            gamma, losses = tune_gamma(params, method, lambda: make_task(seeds[0]), seeds[0], log, progress)
            facts["gamma_tuning"][method.name] = {"chosen": gamma, "losses": {str(k): v for k, v in losses.items()}}
            gammas = [gamma]
        for ref, scale, p in variants:
            if scale is not None or ref is not None:
                log(f"  {method.name}: " + ", ".join(
                    ([f"threshold scale {scale:g} (c_t x {p['trigger_scale']:g})"] if scale is not None else [])
                    + ([f"trigger reference {ref}"] if ref is not None else [])))
            for g in gammas:
                for seed in seeds:
                    name = f"run/{method.name}/seed={seed}/gamma={g:g}/scale={scale}/reference={ref}"
                    done = progress.cached(name)
                    frame, f = done if done is not None else \
                        run_method(p, method, make_task(seed), seed, g, log, progress, name)
                    if done is None:
                        progress.done(name, (frame, f))
                    long = to_long(frame, method.name, seed)
                    if scale is not None:
                        long.insert(2, "trigger_scale", scale)
                        f = {**f, "trigger_scale": scale}
                    if ref is not None:
                        long.insert(2, "trigger_reference", ref)
                        f = {**f, "trigger_reference": ref}
                    frames.append(long)
                    facts["runs"].append({**f, "seed": seed})
    progress.finish()
    return pd.concat(frames, ignore_index=True), facts


# ---- wiring for the workflow script ---------------------------------------------------------------------

def make_task_factory(params: dict, data_path: str, device: str = "cpu"):
    """(make_task(seed), data status, facts) for the configuration's dataset and model."""
    from fedrepro.data.loaders import load_images

    ds, model = params["dataset"], params["model"]
    if ds == "imagenet":
        return _image_folder_factory(params, data_path, device)
    if model == "logreg":
        split = load_images(data_path, scale=True, flatten=True)
        return (lambda seed: MnistTask(split, int(params["n"]), params.get("partition", "sorted"), int(params["batch"]),
                                       seed, train_eval=params.get("train_eval"))), split.status, {"n_train": len(split.y_train)}
    if model == "resnet20":
        from fedrepro.models.resnet import resnet20

        split = load_images(data_path, scale=True, channels_first=True)
        images = NormalizedImages(split, device)

        def make(seed):
            torch.manual_seed(int(rng_stream(seed, "decentral", "init").integers(2**62)))   # common init
            module = resnet20(num_classes=int(split.n_classes), width=int(params.get("width", 16)),
                              depth_blocks=int(params.get("depth_blocks", 3)))
            return TorchTask(module, images, int(params["n"]), params.get("partition", "iid"), int(params["batch"]),
                             seed, train_eval=int(params.get("train_eval") or 2000), test_eval=params.get("test_eval"),
                             augment=bool(params.get("augment", False)))
        return make, split.status, {"n_train": len(split.y_train)}
    raise ValueError(f"unknown model {model!r}")


def _image_folder_factory(params: dict, data_path: str, device: str):
    """Fig. 3.1: ResNet-50 (paper) or a CIFAR-style ResNet proxy (smoke) on a streamed image folder."""
    from fedrepro.data.loaders import load_image_index

    index = load_image_index(data_path)
    n_classes = len(index.classes)
    model = params["model"]

    def make(seed):
        torch.manual_seed(int(rng_stream(seed, "decentral", "init").integers(2**62)))   # common init
        if model == "resnet50":
            from fedrepro.models.resnet import resnet50
            module = resnet50(num_classes=n_classes)
        elif model == "resnet20":
            from fedrepro.models.resnet import resnet20
            module = resnet20(num_classes=n_classes, width=int(params.get("width", 16)),
                              depth_blocks=int(params.get("depth_blocks", 3)))
        else:
            raise ValueError(f"thesis fig3_1: model must be resnet50 or resnet20, got {model!r}")
        return ImageFolderTask(module, index, int(params["n"]), params.get("partition", "iid"), int(params["batch"]),
                               seed, image_size=int(params.get("image_size", 224)), train_eval=params.get("train_eval"),
                               test_eval=params.get("test_eval"), augment=bool(params.get("augment", True)),
                               workers=int(params.get("loader_workers", 0)), device=device)
    return make, index.status, {"n_train": int((index.split == 0).sum())}


def prepare_params(params: dict, info: dict) -> dict:
    """Derive iters_per_epoch (A-40: ceil(N / (n b))), T = epochs x iters_per_epoch and eval_every."""
    p = dict(params)
    if "epochs" in p:
        if not p.get("iters_per_epoch"):
            n_node = info["n_train"] // int(p["n"])
            p["iters_per_epoch"] = -(-n_node // int(p["batch"]))
        p["T"] = int(round(float(p["epochs"]) * int(p["iters_per_epoch"])))
        p["eval_every"] = max(1, int(round(float(p.get("eval_every_epochs", 1)) * int(p["iters_per_epoch"]))))
    return p


def calibrate_trigger(params: dict, method: Method, make_task, seed: int, log=print) -> dict:
    """A-22: one epoch of the SQuARM `method` with c = 0; c_init = the 30th percentile of ‖e_i‖²/η² at sync rounds (the forced
    first round excluded); the schedule is rescaled so that its initial value is c_init."""
    task = make_task(seed)
    p = dict(params, trigger={"kind": "none"})
    eng = build_engine(p, method, task, seed)
    ratios = []
    for _ in range(max(int(params.get("iters_per_epoch", 1)), 2 * eng.cfg.H)):
        info = eng.step(task.grad)
        if info["sync"] and eng.n_sync > 1:
            ratios.append(info["sq_drift"] / info["eta"] ** 2)
    r = np.concatenate(ratios) if ratios else np.array([0.0])
    c_init = float(np.percentile(r, 30))
    c0 = float(params["trigger"].get("c0", 1.0))
    log(f"  trigger calibration (A-22): c_init = {c_init:.4g} (30th percentile of {r.size} ratios), scale {c_init / c0:.4g}")
    return {"c_init": c_init, "scale": c_init / c0, "n_ratios": int(r.size)}


def run(ctx):
    """Runner of Figs. 3.1 / 3.2 / 3.4 (every method) and fig3_4_trigger (SQuARM at every threshold scale).  It can
    run in chained blocks (`ctx.blocks`; fedrepro.decentral.splits.BLOCKS)."""
    torch.set_num_threads(max(1, int(ctx.threads)))
    return _run_on(ctx, _task_factory(ctx))


def _task_factory(ctx):
    from fedrepro.data.imagefolder import loader_workers

    device = "cpu" if ctx.params["model"] == "logreg" else ctx.device  # MNIST logistic regression runs on the CPU
    params = {**ctx.params, "loader_workers": loader_workers(ctx.params.get("loader_workers", 0), ctx.threads)}
    return make_task_factory(params, ctx.inputs["data"], device=device)


def _run_on(ctx, factory):
    """`run` on an already loaded dataset (`make_task_factory`'s triple): the board runs load it once."""
    from fedrepro.runner import RunResult

    make_task, status, info = factory
    params = prepare_params(ctx.params, info)
    rows, facts = run_experiment(params, make_task, log=ctx.log.info, progress=getattr(ctx, "blocks", None))
    ctx.log.info("%s/%s: %d iterations x %d runs", ctx.experiment, ctx.configuration, int(params["T"]),
                 len(facts["runs"]))
    return RunResult(rows, seeds=[ctx.seed + i for i in range(int(params.get("seeds", 1)))],
                     extra={"T": int(params["T"]), "iters_per_epoch": int(params.get("iters_per_epoch", 1)),
                            "runs": facts["runs"], "gamma_tuning": facts["gamma_tuning"],
                            "trigger_calibration": facts.get("trigger_calibration"), "data_status": status,
                            "streams": "rng_stream(seed, 'decentral', name), name in partition, minibatch, "
                                       "train_eval, topology, <method name>/compressor"})


def board(ctx):
    """Leaderboard runner: each compressor of `compressors` with the algorithm and settings of the figure's method
    `template` (e.g. CHOCO-SGD with its gamma), one engine call each (fedrepro.leaderboard.candidates)."""
    from dataclasses import replace

    from fedrepro.leaderboard.candidates import run_each
    from fedrepro.runner import RunResult

    p = ctx.params
    template = {k: v for k, v in (p["methods"][p["template"]] or {}).items() if k != "compressor"}
    torch.set_num_threads(max(1, int(ctx.threads)))
    factory = _task_factory(ctx)                 # one load (and normalisation) of the data for every compressor

    def one(name, spec):
        return _run_on(replace(ctx, params={**p, "methods": {name: {**template, "compressor": spec}}}), factory).rows

    rows = run_each(p["board_compressors"], p.get("knobs"), one, ctx.log)
    return RunResult(rows, seeds=[ctx.seed + i for i in range(int(p.get("seeds", 1)))],
                     extra={"template": p["template"],
                            "streams": "rng_stream(seed, 'decentral', name), name in partition, minibatch, "
                                       "train_eval, topology, <compressor>/compressor"})

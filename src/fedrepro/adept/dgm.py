"""ADEPT-DGM as run (adept.md 3.4, 5.4): x0-predicting U-Net on cold-diffusion corruption x(1-a) + u a, personalized
with the per-weight-sigma ADEPT regulariser; FedAvg + fine-tuning and local training as baselines; per-client FID/KID
against the client's test images with a pluggable feature extractor; Immerkaer noise of the class-0 client's samples.

Table 3 trains, samples and extracts features on `ctx.device`; its corruptions and sampler noise are drawn from CPU
`torch.Generator`s as before and moved, so the numbers drawn do not depend on the device (adept/fed.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import torch

from fedrepro.adept.fed import ClientData, FedConfig, client_forward, stacked_init, train
from fedrepro.metrics.generative import InputsToDevice, fid_kid, immerkaer_sigma, load_proxy_extractor
from fedrepro.models.adept_nets import BasicUNet

# What `table3` and `featnet` read (adept.yaml), checked when the registry loads; format: fedrepro/registry/params.py.
TABLE3_PARAMETERS = {
    "m": "int>=1", "seeds": "int>=1",
    "regimes": {"*": "float>0<=1"},         # regime name -> training data ratio
    "methods": "list[adept|fedavg_ft|local|fedavg]",
    "widths": "list[int>=1]",               # U-Net channel widths
    "epochs": "int>=1", "tau": "int>=1", "lr": "float>0", "lr_global": "float>0", "lr_sigma": "float>=0",
    "sigma0": "float>0", "lazy_epochs": "int>=0", "xi": "float>=0", "ft_epoch": "int>=0",
    "n_cap?": "int>=1",                     # at most this many training images per client
    "n_val": "int>=1", "n_real": "int>=1", "n_samples": "int>=1", "sampler_steps": "int>=1",
    "kid_subsets": "int>=1", "kid_subset_size": "int>=1",
    "inception_weights_path?": "str",       # '' or a missing file: the proxy feature network
}
FEATNET_PARAMETERS = {"n_train": "int>=1", "epochs": "int>=1"}

# What one run costs, for `python -m fedrepro plan` (fedrepro/workflow/plan.py): trainings x iterations x clients x data x
# U-Net width^2, plus the sampler's steps.
TABLE3_WORK = {"units": "seeds * len(methods) * m * sum(array(widths) ** 2) * "
                        "(epochs * tau * sum(values(regimes)) + n_samples * sampler_steps / 100)",
               "memory": "m * sum(values(regimes))"}
FEATNET_WORK = {"units": "n_train * epochs"}


def corrupt(x, gen):
    """Cold-diffusion corruption x (1 - a) + u a; a and u drawn from the CPU generator `gen`, moved to x's device."""
    a = torch.rand(x.shape[:2], generator=gen).reshape(*x.shape[:2], 1, 1, 1).to(x.device)
    u = torch.rand(x.shape, generator=gen).to(x.device)
    return x * (1 - a) + u * a


def denoise_loss(fwd, gen):
    def loss(params, batch):
        x, mask = batch
        err = ((fwd(params, corrupt(x, gen)) - x) ** 2).flatten(2).sum(-1)
        return (err * mask).sum(1) / mask.sum(1).clamp_min(1)
    return loss


@torch.no_grad()
def sample(fwd, params, m: int, n: int, steps: int, shape, seed0: int = 0) -> torch.Tensor:
    """CODE sampler: x ~ U[0,1]; x <- (1 - 1/(N-j)) x + 1/(N-j) phi(x); clamp.  Noise fixed per client (same across
    methods), drawn on the CPU and moved to the parameters' device."""
    device = next(iter(params.values())).device
    x = torch.stack([torch.rand((n, *shape), generator=torch.Generator().manual_seed(seed0 + i)) for i in range(m)])
    x = x.to(device)
    for j in range(steps):
        beta = 1.0 / (steps - j)
        x = (1 - beta) * x + beta * fwd(params, x)
    return x.clamp(0, 1)


def feature_extractor(p: dict, featnet_path: str, device: str | torch.device = "cpu"):
    """The FID/KID feature network on `device`: Inception-v3 when its weights are configured, else the proxy."""
    path = p.get("inception_weights_path")
    if path and Path(path).exists():
        from torchmetrics.image.fid import NoTrainInceptionV3  # needs torch-fidelity; paper scale only
        net = NoTrainInceptionV3(name="inception-v3-compat", features_list=["2048"],
                                 feature_extractor_weights_path=path)
        return InputsToDevice(net.to(device)), "inception-v3 (2048-d)"
    return load_proxy_extractor(featnet_path, device), "proxy: pipeline-trained MNIST FeatureNet (128-d)"


def run_table3(p: dict, split, featnet_path: str, rng_for, log=print, device: str | torch.device = "cpu"):
    from fedrepro.data.partition import one_class_per_client

    m = int(p["m"])
    widths = tuple(p["widths"])
    extractor, ext_name = feature_extractor(p, featnet_path, device)
    parts_te = one_class_per_client(split.y_test, m)
    te = [split.x_test[i][: int(p["n_real"])] for i in parts_te]
    rows, facts = [], {"feature_extractor": ext_name, "timing": {}}
    for seed in range(int(p["seeds"])):
        for regime, ratio in p["regimes"].items():
            parts = one_class_per_client(split.y_train, m, data_ratio=float(ratio))
            tr = ClientData([split.x_train[i][: int(p.get("n_cap", 10 ** 9))] for i in parts], device=device)
            val = ClientData([x[: int(p["n_val"])] for x in te], device=device)
            for method in p["methods"]:
                t0 = torch.get_num_threads(), __import__("time").perf_counter()
                base, theta = stacked_init(lambda: BasicUNet(1, widths), m, 1000 * seed, method == "fedavg_ft", device)
                mu0 = {k: v[:1] for k, v in
                       stacked_init(lambda: BasicUNet(1, widths), 1, 1000 * seed + 777, True, device)[1].items()}
                fwd = client_forward(base)
                gen = torch.Generator().manual_seed(int(rng_for(regime, seed, method).integers(2 ** 31)))
                rng = rng_for(regime, seed, method, "batches")
                cfg = FedConfig(method=method, epochs=int(p["epochs"]), tau=int(p["tau"]), opt="adam", lr=p["lr"],
                                lr_global=p["lr_global"], opt_global="adam", lr_sigma=p["lr_sigma"], sigma0=p["sigma0"],
                                lazy_epochs=int(p["lazy_epochs"]), xi=p["xi"],
                                lambda_reg=torch.from_numpy(1.0 / tr.n).float(), ft_epoch=int(p["ft_epoch"]),
                                lr_milestone=int(0.75 * int(p["epochs"])))
                best = {"loss": np.inf, "theta": None, "epoch": -1}

                def on_epoch(epoch, th, sig):     # client-averaged validation denoising loss, fixed corruption
                    with torch.no_grad():
                        vg = torch.Generator().manual_seed(12345)
                        vl = float(denoise_loss(fwd, vg)(th, (val.x, val.mask())).mean())
                    if vl < best["loss"]:
                        best.update(loss=vl, theta={k: v.detach().clone() for k, v in th.items()}, epoch=epoch)

                train(base, theta, denoise_loss(fwd, gen), lambda e: tr.epoch_batches(cfg.tau, rng), cfg,
                      mu0=mu0, on_epoch=on_epoch)
                theta = best["theta"]
                shape = split.x_train.shape[1:]
                xs = sample(fwd, theta, m, int(p["n_samples"]), int(p["sampler_steps"]), shape)
                if xs.is_cuda:                # kernels run asynchronously: the clock waits for the sampler
                    torch.cuda.synchronize(xs.device)
                wall = __import__("time").perf_counter() - t0[1]
                key = dict(regime=regime, method=method, seed=seed)
                for i in range(m):
                    real = torch.from_numpy(te[i]).float().to(device)
                    fid, kid = fid_kid(real, xs[i], extractor, subsets=int(p["kid_subsets"]),
                                       subset_size=int(p["kid_subset_size"]))
                    rows += [dict(**key, client=i, step=best["epoch"], metric="fid", value=fid),
                             dict(**key, client=i, step=best["epoch"], metric="kid", value=kid)]
                xs = xs.cpu()                # FID / KID are done: the rest reads the samples in numpy
                grid = xs[0, :16, 0].numpy()
                rows.append(dict(**key, client=0, step=best["epoch"], metric="noise_grid",
                                 value=float(np.mean([immerkaer_sigma(g) for g in grid]))))
                rows.append(dict(**key, client=0, step=best["epoch"], metric="noise_all",
                                 value=float(np.mean([immerkaer_sigma(g) for g in xs[0, :, 0].numpy()]))))
                rows.append(dict(**key, client=-1, step=best["epoch"], metric="wall_seconds", value=wall))
                if seed == 0 and regime == "high":       # Fig. 3: the class-0 client's first 16 samples
                    for s, img in enumerate(grid):
                        rows += [dict(**key, client=0, step=s, metric="pixel", value=float(v), pixel=j)
                                 for j, v in enumerate(np.round(img.ravel(), 3))]
                facts["timing"][f"{regime}/{method}/{seed}"] = round(wall, 1)
                log(f"table3 {regime} {method} seed {seed}: best epoch {best['epoch']}, {wall:.1f} s")
    for r in rows:
        r["feature_extractor"] = ext_name
    return rows, facts


# Feature-net test images per forward pass.  At 250 every activation stays under glibc's largest mmap threshold
# (32 MiB), so each chunk reuses the memory the last one freed; at 1,000 each chunk mapped ~0.8 GB afresh (the
# 10,000 images: 2.0 million page faults, 5.7 CPU-s against 1.7 at 250; the same logits bit for bit)
EVAL_CHUNK = 250


def train_featnet(split, p: dict, seed: int):
    """The proxy FID/KID feature network: a LeNet-style MNIST classifier (docs/adept.md, "Feature extractor for FID / KID"); returns (net, test accuracy)."""
    from fedrepro.models.adept_nets import FeatureNet
    torch.manual_seed(seed)
    net = FeatureNet()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.from_numpy(split.x_train[: int(p["n_train"])]).float()
    y = torch.from_numpy(split.y_train[: int(p["n_train"])]).long()
    g = torch.Generator().manual_seed(seed)
    for _ in range(int(p["epochs"])):
        perm = torch.randperm(len(x), generator=g)
        for s in range(0, len(x), 128):
            idx = perm[s:s + 128]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
            opt.step()
    net.eval()
    with torch.no_grad():     # in chunks: all 10,000 test images at once held 3.5 GB of activations
        xt = torch.from_numpy(split.x_test).float()
        pred = torch.cat([net(chunk).argmax(1) for chunk in xt.split(EVAL_CHUNK)])
        acc = float((pred.numpy() == split.y_test).mean())
    return copy.deepcopy(net), acc


def _rng_for(ctx):
    """Named numpy streams per cell: rng_stream(seed, 'adept', experiment, *keys)."""
    from fedrepro.runtime import rng_stream

    return lambda *keys: rng_stream(ctx.seed, "adept", ctx.experiment, *[k if isinstance(k, int) else str(k) for k in keys])


STREAMS = "rng_stream(seed, 'adept', '{}', cell..., name); torch seeds 1000*run_seed + client"


def table3(ctx):
    """Runner of Table 3 / Figs. 3-4 (ADEPT-DGM on MNIST); input `featnet`: the proxy feature network's run."""
    import pandas as pd

    from fedrepro.data.loaders import load_images
    from fedrepro.runner import RunResult, verified_side_file

    torch.manual_seed(ctx.seed)
    split = load_images(ctx.inputs["data"], scale=True, channels_first=True)
    weights = verified_side_file(ctx.inputs["featnet"], ".pt")
    ctx.log.info("%s on %s", ctx.experiment, ctx.device)
    rows, facts = run_table3(ctx.params, split, weights, _rng_for(ctx), log=ctx.log.info, device=ctx.device)
    return RunResult(pd.DataFrame(rows), inputs=[ctx.inputs["data"], ctx.inputs["featnet"], weights],
                     extra={"streams": STREAMS.format(ctx.experiment), **facts})


def featnet(ctx):
    """Runner of the proxy FID/KID feature network: test accuracy as the CSV, the weights beside it (`.pt`)."""
    import pandas as pd

    from fedrepro.data.loaders import load_images
    from fedrepro.io import atomic_path
    from fedrepro.runner import RunResult

    split = load_images(ctx.inputs["data"], scale=True, channels_first=True)
    net, acc = train_featnet(split, ctx.params, ctx.seed)
    weights = ctx.side_file(".pt")
    # saved through a file object: torch names the archive's inner folder after the path it is given, here a
    # random temporary name, so equal weights gave different bytes in every build
    with atomic_path(weights) as tmp, open(tmp, "wb") as f:
        torch.save(net.state_dict(), f)
    ctx.log.info("feature net: test accuracy %.4f", acc)
    rows = pd.DataFrame([dict(seed=ctx.seed, step=int(ctx.params["epochs"]), metric="test_accuracy", value=acc)])
    return RunResult(rows, side_files=[weights], extra={"test_accuracy": acc, "data_status": split.status})

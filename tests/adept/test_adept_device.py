"""ADEPT on `ctx.device`: every runner asks for it, trains there, and draws its random numbers on the CPU as before,
so the numbers drawn do not depend on the device.  The CUDA cases run where a GPU is visible (skipped elsewhere)."""

import logging

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from fedrepro.adept import ae, dgm, fed
from fedrepro.adept.ae import recon_loss
from fedrepro.adept.fed import ClientData, FedConfig, client_forward, stacked_init
from fedrepro.models.adept_nets import BasicUNet, FeatureNet, LinearAE
from fedrepro.runner import RunContext

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


class HeavyOpDevices(TorchDispatchMode):
    """The devices of every matrix product and convolution run while active (the work a GPU should do)."""

    HEAVY = ("mm", "bmm", "addmm", "convolution", "convolution_backward", "_conv_depthwise2d")

    def __init__(self):
        super().__init__()
        self.devices = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.__name__.split(".")[0] in self.HEAVY:
            self.devices |= {a.device.type for a in args if isinstance(a, torch.Tensor)}
        return func(*args, **(kwargs or {}))


def _images(path, n_per_class: int, shape, classes: int = 4, seed: int = 0):
    """A prepared image set as the loaders read it: uint8 images, int64 labels, `classes` classes in turn."""
    rng = np.random.default_rng(seed)
    y = np.tile(np.arange(classes), n_per_class).astype(np.int64)
    x = rng.integers(0, 256, (len(y), *shape), dtype=np.uint8)
    np.savez(path, x_train=x, y_train=y, x_test=x[::-1].copy(), y_test=y[::-1].copy())
    return str(path)


def _ctx(experiment, params, inputs, tmp_path, device):
    return RunContext(paper="adept", experiment=experiment, configuration="as-stated", scale="smoke",
                      params={**params, "seed": 0}, inputs=inputs, output=str(tmp_path / f"{experiment}.csv"),
                      device_preference=device, log=logging.getLogger("test"))


TRAINING = dict(seeds=1, epochs=2, tau=2, lr=0.01, lr_global=0.01, lr_sigma=1e-3, sigma0=0.4, lazy_epochs=0,
                xi=1e-6, lambda_reg=0.1)
TABLE1 = dict(TRAINING, d=8, latent=2, m=3, n_train=6, n_test=4, sigma_mu=0.1, sigma_stars=[0.05],
              methods=["baseline", "adept", "global", "local"])
TABLE2 = dict(TRAINING, dataset="toy", m=4, data_ratio=1.0, test_ratio=1.0, layout="consecutive", model="conv",
              latents=[2, 3], methods=["baseline", "adept", "fedavg", "local"], baseline_epochs=1)
TABLE3 = dict(m=4, regimes={"high": 1.0}, methods=["adept", "fedavg_ft", "local"], widths=[2, 2, 2], seeds=1,
              epochs=2, tau=2, lr=1e-3, lr_global=0.01, lr_sigma=1e-3, sigma0=0.8, lazy_epochs=1, xi=1e-6,
              ft_epoch=1, n_val=4, n_real=6, n_samples=6, sampler_steps=2, kid_subsets=2, kid_subset_size=4)


def _featnet_run(tmp_path):
    """A feature network's run CSV with its `.pt` weights beside it, recorded in the weights' sidecar."""
    from fedrepro.provenance.sidecar import write_sidecars

    torch.manual_seed(0)
    csv = tmp_path / "featnet.csv"
    csv.write_text("seed,step,metric,value\n0,1,test_accuracy,0.1\n")
    torch.save(FeatureNet().state_dict(), tmp_path / "featnet.pt")
    write_sidecars([str(csv), str(tmp_path / "featnet.pt")], rule="run")
    return str(csv)


def _run(experiment, device, tmp_path):
    """Run one ADEPT runner at toy size on `device`; returns (context, rows, heavy-op devices)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    if experiment == "table1":
        ctx, runner = _ctx("table1", TABLE1, {}, tmp_path, device), ae.table1
    elif experiment == "table2":
        data = _images(tmp_path / "cifar.npz", 5, (8, 8, 3))
        ctx, runner = _ctx("table2_cifar10", TABLE2, {"data": data}, tmp_path, device), ae.table2
    else:
        inputs = {"data": _images(tmp_path / "mnist.npz", 8, (28, 28)), "featnet": _featnet_run(tmp_path)}
        ctx, runner = _ctx("table3", TABLE3, inputs, tmp_path, device), dgm.table3
    with HeavyOpDevices() as seen:
        rows = runner(ctx).rows
    return ctx, rows, seen.devices


@pytest.mark.slow  # several seconds: kept out of the fast set
@pytest.mark.parametrize("experiment", ["table1", "table2", "table3"])
def test_runners_ask_ctx_device_and_compute_there(experiment, tmp_path):
    """A runner that never asks `ctx.device` stays on the CPU on a GPU node: `_device` is set only when it asks."""
    ctx, rows, heavy = _run(experiment, "cpu", tmp_path)
    assert getattr(ctx, "_device", None) == "cpu"
    assert heavy == {"cpu"} and len(rows) and np.isfinite(rows["value"].to_numpy(float)).all()


@cuda
@pytest.mark.parametrize("experiment", ["table1", "table2", "table3"])
def test_runners_on_cuda_do_their_work_there_and_agree_with_the_cpu(experiment, tmp_path):
    cpu_ctx, cpu_rows, _ = _run(experiment, "cpu", tmp_path / "cpu")
    ctx, rows, heavy = _run(experiment, "cuda", tmp_path / "cuda")
    assert ctx._device == "cuda" and heavy == {"cuda"}      # every matrix product / convolution on the GPU
    # Same draws, other reduction order: the runs agree to float32 drift over a few steps.  Table 3's sampled
    # pixels are left out: the reverse diffusion amplifies that drift pixel by pixel (seen on an H100: a few pixels
    # beyond 5 %), while the scores computed from all of them (FID, KID, noise) stay close.
    keep = ~rows["metric"].isin(["wall_seconds", "pixel"])
    a, b = cpu_rows.loc[keep, "value"].to_numpy(float), rows.loc[keep, "value"].to_numpy(float)
    np.testing.assert_allclose(b, a, rtol=0.05, atol=1e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_train_keeps_parameters_sigma_and_optimiser_state_on_the_device(device):
    torch.manual_seed(0)
    data = ClientData([np.random.default_rng(i).normal(size=(6, 5)).astype(np.float32) for i in range(3)],
                      device=device)
    base, theta = stacked_init(lambda: LinearAE(5, 2), 3, 0, False, device)
    mu0 = {k: v[:1] for k, v in stacked_init(lambda: LinearAE(5, 2), 1, 7, True, device)[1].items()}
    rng = np.random.default_rng(0)
    optimisers, make = [], fed._optim

    def optim(*a):
        optimisers.append(make(*a))
        return optimisers[-1]

    cfg = FedConfig(method="adept", epochs=2, tau=2, lazy_epochs=0, sigma_grad="accumulated", opt_global="adam",
                    lambda_reg=torch.full((3,), 0.1))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fed, "_optim", optim)
        theta, mu, sigma = fed.train(base, theta, recon_loss(client_forward(base)), lambda e: data.epoch_batches(2, rng),
                                 cfg, mu0=mu0)
    opt_states = [v for o in optimisers for s in o.state.values() for v in s.values() if torch.is_tensor(v) and v.dim()]
    want = torch.device(device).type
    tensors = [*theta.values(), *mu.values(), *sigma.values(), *opt_states, data.x, data.mask()]
    assert opt_states and {t.device.type for t in tensors} == {want}


@cuda
def test_the_draws_do_not_depend_on_the_device():
    """Batch indices (numpy), corruptions and sampler noise (CPU generators) are drawn on the CPU and moved: the
    same numbers on the GPU, bit for bit."""
    xs = [np.random.default_rng(i).random((5 + i, 1, 4, 4)).astype(np.float32) for i in range(3)]
    on = {d: ClientData(xs, device=d) for d in ("cpu", "cuda")}
    for (xc, mc), (xg, mg) in zip(on["cpu"].epoch_batches(2, np.random.default_rng(3)),
                                  on["cuda"].epoch_batches(2, np.random.default_rng(3))):
        assert torch.equal(xc, xg.cpu()) and torch.equal(mc, mg.cpu())
    a = dgm.corrupt(on["cpu"].x, torch.Generator().manual_seed(1))
    b = dgm.corrupt(on["cuda"].x, torch.Generator().manual_seed(1))
    torch.testing.assert_close(b.cpu(), a, rtol=0, atol=1e-7)
    fwd = client_forward(stacked_init(lambda: BasicUNet(1, (2, 2, 2)), 3, 0, False)[0])
    params = {d: stacked_init(lambda: BasicUNet(1, (2, 2, 2)), 3, 0, False, d)[1] for d in ("cpu", "cuda")}
    noise = {d: dgm.sample(fwd, params[d], 3, 2, 0, (1, 4, 4), seed0=5) for d in ("cpu", "cuda")}
    assert noise["cuda"].device.type == "cuda" and torch.equal(noise["cpu"], noise["cuda"].cpu())


def test_inputs_to_device_keeps_what_fid_reads_of_the_network():
    """Wrapping the Inception network for a GPU changes nothing FID sees: the same features, and `num_features`
    exactly when the network has it (else FID sizes it with a dummy image, as before)."""
    from fedrepro.metrics.generative import InputsToDevice

    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 3))
    x = torch.rand(2, 3, 2, 2)
    assert torch.equal(InputsToDevice(net)(x), net(x)) and not hasattr(InputsToDevice(net), "num_features")
    net.num_features = 3
    assert InputsToDevice(net).num_features == 3

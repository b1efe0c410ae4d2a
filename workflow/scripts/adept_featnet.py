"""Train the proxy FID/KID feature network on MNIST (used when no Inception weights are configured)."""

import time

import pandas as pd
import torch

from fedrepro.adept.dgm import train_featnet
from fedrepro.data import load_images
from fedrepro.io import atomic_path, write_csv
from fedrepro.pipeline import rule_run

sm = snakemake  # noqa: F821
with rule_run(sm) as run:
    p = dict(sm.params.cfg)
    split = load_images(sm.input.data, scale=True, channels_first=True)
    t0 = time.perf_counter()
    net, acc = train_featnet(split, p, int(p["seed"]))
    wall = time.perf_counter() - t0
    with atomic_path(sm.output.pt) as tmp:
        torch.save(net.state_dict(), tmp)
    write_csv(sm.output.csv, pd.DataFrame([dict(seed=int(p["seed"]), step=int(p["epochs"]), metric="test_accuracy",
                                                value=acc)]))
    run.log.info("feature net: test accuracy %.4f in %.1f s", acc, wall)
    run.sidecars([sm.output.pt, sm.output.csv], inputs=[sm.input.data], config=p, seeds=[int(p["seed"])],
                 extra={"test_accuracy": acc, "wall_seconds": round(wall, 2), "data_status": split.status})

"""A run computes with the registry's thread count whatever the build's `--cores`: the thread count decides how a
reduction is split, so a build on one core must give the bits of a build on two (workflow/scripts/run.py)."""

import torch
from conftest import snakemake

FEATNET = "results/smoke/adept/runs/featnet/mnist"   # registry threads: 2 (config/papers/adept.yaml)


def test_a_run_on_one_core_has_the_bits_of_the_two_core_build(smoke_run, workdir):
    snakemake("--cores", "1", f"{FEATNET}.csv", "--config", "scale=smoke", cwd=workdir)
    assert "computing with 2 thread(s)" in (workdir / "results/smoke/adept/logs/runs/featnet/mnist.log").read_text()
    two, one = (torch.load(root / f"{FEATNET}.pt") for root in (smoke_run, workdir))
    assert two.keys() == one.keys() and all(torch.equal(two[k], one[k]) for k in two)

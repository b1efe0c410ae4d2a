"""Run one C-VFL experiment configuration (its whole grid of runs) and write the tidy metrics with a sidecar."""

import time

from fedrepro.cvfl.experiments import run_experiment
from fedrepro.io import write_csv
from fedrepro.pipeline import rule_run

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
with rule_run(sm, use_torch_device=True) as run:
    params = dict(sm.params.cfg)
    t0 = time.perf_counter()
    runs, facts = run_experiment(params, sm.input.data, device=run.device, log=run.log.info)
    wall = time.perf_counter() - t0
    runs.insert(0, "configuration", sm.wildcards.configuration)
    runs.insert(1, "experiment", sm.wildcards.experiment)
    write_csv(sm.output.csv, runs)
    run.log.info("%s/%s: %d runs in %.1f s", sm.wildcards.experiment, sm.wildcards.configuration,
                 len(facts["timing"]), wall)
    run.sidecars([sm.output.csv], inputs=[sm.input.data], config=params, seeds=sorted({int(s) for s in runs["seed"]}),
                 extra={"wall_seconds": round(wall, 2), "timing": facts["timing"],
                        "streams": "torch.manual_seed(seed) for init; numpy default_rng(seed) batch order; "
                                   "torch.Generator(seed + 7919) shared dither (A-7)"})

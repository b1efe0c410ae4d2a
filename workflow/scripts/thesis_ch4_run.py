"""Run one configuration of thesis Fig. 4.1 or 4.2 (all eight schemes) and write its tidy metrics with a sidecar."""

import time

from fedrepro.io import write_csv
from fedrepro.mtl.experiments import iterations, run_experiment
from fedrepro.pipeline import rule_run

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
with rule_run(sm) as run:
    params = dict(sm.params.cfg)
    experiment = sm.wildcards.experiment
    t0 = time.perf_counter()
    runs, facts = run_experiment(params, experiment, progress=lambda jobs: run.progress(jobs, desc="schemes"),
                                 log=run.log.info)
    wall = time.perf_counter() - t0
    runs.insert(0, "configuration", sm.wildcards.configuration)
    write_csv(sm.output.csv, runs)
    T = iterations(params)
    run.log.info("%s/%s: %d iterations x %d runs in %.1f s", experiment, sm.wildcards.configuration, T,
                 len(facts["timing"]), wall)
    run.sidecars([sm.output.csv], config=params, seeds=[int(params["seed"])],
                 extra={"T": T, "wall_seconds": round(wall, 2), "timing": facts["timing"],
                        "instances": facts["instances"],
                        "streams": f"rng_stream(seed, '{experiment}', trial, name), name in graph, problem, test, "
                                   "init, edge, samples, directions"},
                 data={f"thesis-ch4-{experiment}-synthetic": "real"})

"""Run one configuration of thesis Table 5.1 and write its tidy metrics with a sidecar."""

from fedrepro.io import write_csv
from fedrepro.pipeline import rule_run
from fedrepro.transfer.table5_1 import Table51Config, run_experiment

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
with rule_run(sm) as run:
    params = dict(sm.params.cfg)
    cfg = Table51Config.from_dict(params)
    runs = run_experiment(cfg, progress=lambda jobs: run.progress(jobs, desc="cells x runs"))
    runs.insert(0, "configuration", sm.wildcards.configuration)
    write_csv(sm.output.csv, runs)
    run.sidecars([sm.output.csv], config=params, seeds=[cfg.seed],
                 extra={"runs": cfg.runs, "streams": "rng_stream(seed, 'table5_1', cell, run, name)"},
                 data={"thesis-ch5-synthetic": "real"})

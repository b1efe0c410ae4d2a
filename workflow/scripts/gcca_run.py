"""Run one configuration of a gcca linear experiment (every trial and variant) and write its tidy rows."""

from fedrepro.gcca.experiments import run_experiment
from fedrepro.io import write_csv
from fedrepro.pipeline import rule_run
from fedrepro.runtime import limit_threads

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
with rule_run(sm) as run:
    params = dict(sm.params.cfg)
    blas = int(getattr(sm.params, "blas_threads", 0) or 0)
    if blas:  # wall-clock runs: one BLAS thread, whatever cores the rule holds (it holds them to run alone)
        limit_threads(blas)
    experiment = sm.wildcards.experiment
    runs = run_experiment(experiment, params, progress=lambda jobs: run.progress(jobs, desc="trials"))
    runs.insert(0, "configuration", sm.wildcards.configuration)
    write_csv(sm.output.csv, runs)
    run.sidecars([sm.output.csv], config=params, seeds=[params["seed"]],
                 extra={"trials": params["trials"], "blas_threads": blas or sm.threads,
                        "streams": f"rng_stream(seed, '{experiment}', trial[, I], 'data'|'init'|label+'sgd'|'compressor')"},
                 data={"gcca-linear-synthetic": "real"})

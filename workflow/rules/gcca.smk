# Shrestha & Fu (CuteMaxVar), linear synthetic part: run rules.  Registry: config/papers/gcca.yaml.
# One rule for the throughput runs and one for the wall-clock runs (Figs. 6-7), which must run
# single-threaded with no other job beside them.

GCCA_TIMED = ("fig6", "fig7")


def _gcca_experiments(timed):
    names = [e for e in REGISTRY.papers["gcca"]["experiments"] if (e in GCCA_TIMED) == timed]
    return "|".join(names) or "(?!)"


rule gcca_run:
    """Figs. 3, 4, 8 and Table I: one experiment's configuration (every trial and variant) -> tidy long CSV."""
    input:
        code=code("gcca", "comm"),
    output:
        csv="results/{scale}/gcca/runs/{experiment}/{configuration}.csv",
        prov="results/{scale}/gcca/runs/{experiment}/{configuration}.csv.prov.json",
    wildcard_constraints:
        experiment=_gcca_experiments(False),
    params:
        cfg=lambda wc: run_params("gcca", wc.experiment, wc.configuration, wc.scale),
    log:
        "results/{scale}/gcca/logs/runs/{experiment}/{configuration}.log",
    threads: 2
    resources:
        mem_mb=4000,
    script:
        "../scripts/gcca_run.py"


rule gcca_run_timed:
    """Figs. 6-7: wall-clock panels.  They run with one BLAS thread (spec §4.10, A-16) and alone: the rule
    claims every core Snakemake has (`threads: workflow.cores`), so no other job runs beside it, and
    declares `resources: exclusive=1` so a cluster profile or `--resources exclusive=1` serializes them too."""
    input:
        code=code("gcca", "comm"),
    output:
        csv="results/{scale}/gcca/runs/{experiment}/{configuration}.csv",
        prov="results/{scale}/gcca/runs/{experiment}/{configuration}.csv.prov.json",
    wildcard_constraints:
        experiment=_gcca_experiments(True),
    params:
        cfg=lambda wc: run_params("gcca", wc.experiment, wc.configuration, wc.scale),
        blas_threads=1,
    log:
        "results/{scale}/gcca/logs/runs/{experiment}/{configuration}.log",
    threads: workflow.cores
    resources:
        mem_mb=4000,
        exclusive=1,
    script:
        "../scripts/gcca_run.py"

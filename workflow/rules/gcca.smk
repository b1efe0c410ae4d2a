# Shrestha & Fu (CuteMaxVar), linear synthetic part: run rules.  Registry: config/papers/gcca.yaml.
# One rule for the throughput runs and one for the wall-clock runs (Figs. 6-7), which must run
# single-threaded with no other job beside them.

GCCA_TIMED = ("fig6", "fig7")
GCCA_DATA = {"europarl": "europarl", "deep_toy": None, "ehr": "desynpuf"}  # Figs. 9-13: rule gcca_data_run


def _gcca_experiments(timed):
    names = [e for e in REGISTRY.papers["gcca"]["experiments"]
             if (e in GCCA_TIMED) == timed and e not in GCCA_DATA]
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


def _gcca_data_inputs(wc):
    dataset = GCCA_DATA[wc.experiment]
    return {"data": prepared(dataset)} if dataset else {}


rule gcca_data_run:
    """Figs. 9-13: Europarl (linear engine on hashed views, prepared corpus), the deep toy (Figs. 10-11) and the
    EHR co-occurrence views (Figs. 12-13) with the deep engine.  The prepared file is an input, so its stand-in
    status reaches every sidecar and claim.  One torch/BLAS thread: on a shared 2-core machine two threads were
    10x slower for the small MLPs (docs/gcca.md); deep runs are tagged gpu=1 at paper scale."""
    input:
        unpack(_gcca_data_inputs),
        code=code("gcca", "comm", "data"),
    output:
        csv="results/{scale}/gcca/runs/{experiment}/{configuration}.csv",
        prov="results/{scale}/gcca/runs/{experiment}/{configuration}.csv.prov.json",
    wildcard_constraints:
        experiment="|".join(GCCA_DATA),
    params:
        cfg=lambda wc: run_params("gcca", wc.experiment, wc.configuration, wc.scale),
    log:
        "results/{scale}/gcca/logs/runs/{experiment}/{configuration}.log",
    threads: 1
    resources:
        mem_mb=lambda wc: 32000 if wc.scale == "paper" and wc.experiment == "europarl" else 4000,
        gpu=lambda wc: 1 if wc.scale == "paper" and wc.experiment != "europarl" else 0,
    script:
        "../scripts/gcca_data_run.py"

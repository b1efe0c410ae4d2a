# The one run rule: any (experiment, configuration) of any paper, executed by the runner its registry names.
# Registry keys (config/papers/<paper>.yaml, experiments.<name>): runner, dataset, needs, reads, threads,
# resources and alone, each optionally per scale under scales.<scale>.  See docs/architecture.md.


rule run:
    """One experiment configuration (every seed, method and variant it runs) -> a tidy long CSV + sidecar."""
    input:
        unpack(run_inputs),
    output:
        csv="results/{scale}/{paper}/runs/{experiment}/{configuration}.csv",
        prov="results/{scale}/{paper}/runs/{experiment}/{configuration}.csv.prov.json",
    log:
        "results/{scale}/{paper}/logs/runs/{experiment}/{configuration}.log",
    wildcard_constraints:
        paper="|".join(PAPERS),
    priority: run_priority
    conda:
        "../../environment.yml"
    threads: lambda wc: run_spec(wc)["threads"]
    resources:
        **partition_resources(),
        mem_mb=run_resource("mem_mb", DEFAULT_MEM_MB),
        runtime=run_resource("runtime", 120),  # minutes (a cluster's time limit); registry `resources.runtime`
        gpu=run_resource("gpu", 0),
        machine=lambda wc: MACHINE_SLOTS if run_spec(wc)["alone"] else 1,
        host_cores=lambda wc: min(run_spec(wc)["threads"], HOST_CORES),
        slurm_extra=slurm_extra,
    params:
        cfg=lambda wc: run_params(wc.paper, wc.experiment, wc.configuration, wc.scale),
        spec=run_spec,
        code=run_code,
    script:
        "../scripts/run.py"

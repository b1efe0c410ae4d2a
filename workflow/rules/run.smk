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
        experiment="[^/]+",
        configuration="[^/]+",
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


# A run longer than cluster.max_runtime_h, in parts (fedrepro.workflow.split, docs/cluster.md "Runs longer than the
# time limit"): each part is the run rule on the configuration's parameters with the part's overrides; a part that
# finished stays when a build is killed or a job times out, so the next build runs only the missing ones.
use rule run as run_part with:
    output:
        csv="results/{scale}/{paper}/runs/{experiment}/{configuration}.parts/{part}.csv",
        prov="results/{scale}/{paper}/runs/{experiment}/{configuration}.parts/{part}.csv.prov.json",
    log:
        "results/{scale}/{paper}/logs/runs/{experiment}/{configuration}.parts/{part}.log",
    wildcard_constraints:
        paper="|".join(PAPERS),
        experiment="[^/]+",
        configuration="[^/]+",
        part=r"p\d{3}",
    resources:
        **partition_resources(),
        mem_mb=run_resource("mem_mb", DEFAULT_MEM_MB),
        runtime=part_runtime,
        gpu=run_resource("gpu", 0),
        machine=lambda wc: MACHINE_SLOTS if run_spec(wc)["alone"] else 1,
        host_cores=lambda wc: min(run_spec(wc)["threads"], HOST_CORES),
        slurm_extra=slurm_extra,
    params:
        cfg=part_params,
        spec=run_spec,
        code=run_code,


# A part longer than the limit, in chained blocks (fedrepro.checkpoint, docs/cluster.md): each block goes on from the
# checkpoint of the one before, or from its own killed job's; the last block writes the part's CSV.
rule run_block:
    """One block of a part run in chained blocks -> the checkpoint the next block goes on from."""
    input:
        unpack(block_inputs),
    output:
        checkpoint="results/{scale}/{paper}/runs/{experiment}/{configuration}.parts/{part}.blocks/{block}.pt",
        prov="results/{scale}/{paper}/runs/{experiment}/{configuration}.parts/{part}.blocks/{block}.pt.prov.json",
    log:
        "results/{scale}/{paper}/logs/runs/{experiment}/{configuration}.parts/{part}.blocks/{block}.log",
    wildcard_constraints:
        paper="|".join(PAPERS),
        experiment="[^/]+",
        configuration="[^/]+",
        part=r"p\d{3}",
        block=r"b\d{3}",
    priority: run_priority
    conda:
        "../../environment.yml"
    threads: lambda wc: run_spec(wc)["threads"]
    resources:
        **partition_resources(),
        mem_mb=run_resource("mem_mb", DEFAULT_MEM_MB),
        runtime=part_runtime,
        gpu=run_resource("gpu", 0),
        machine=lambda wc: MACHINE_SLOTS if run_spec(wc)["alone"] else 1,
        host_cores=lambda wc: min(run_spec(wc)["threads"], HOST_CORES),
        slurm_extra=slurm_extra,
    params:
        cfg=part_params,
        spec=run_spec,
        code=block_code,
        block=block_params,
    script:
        "../scripts/run_block.py"


use rule run_block as run_last_block with:
    output:
        csv="results/{scale}/{paper}/runs/{experiment}/{configuration}.parts/{part}.blocks/rows.csv",
        prov="results/{scale}/{paper}/runs/{experiment}/{configuration}.parts/{part}.blocks/rows.csv.prov.json",
    log:
        "results/{scale}/{paper}/logs/runs/{experiment}/{configuration}.parts/{part}.blocks/last.log",


rule run_merge:
    """The parts of a split run, concatenated in order: the CSV the unsplit run writes, with its sidecar."""
    input:
        parts=lambda wc: with_sidecars(SPLITS[wc.split_run].part_files()),
    output:
        csv="results/{split_run}.csv",
        prov="results/{split_run}.csv.prov.json",
    log:
        "results/{split_run}.parts/merge.log",
    wildcard_constraints:
        split_run=split_runs_regex(),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        cfg=lambda wc: run_params(*split_key(wc)),
        split=lambda wc: {
            "label": SPLITS[wc.split_run].label,
            "overrides": SPLITS[wc.split_run].overrides,
        },
        code=code("workflow/scripts/merge_parts.py"),
    script:
        "../scripts/merge_parts.py"


ruleorder: run_merge > run_part > run

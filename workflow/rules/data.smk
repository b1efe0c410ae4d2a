# Data: download + verify -> prepare (real data, or the declared stand-in).  Registry: config/datasets.yaml.
#   results/downloads/<dataset>/manifest.json   verified raw files (shared by all scales) and every failed attempt
#   results/data/<dataset>/<dataset>.npz        prepared arrays; its .prov.json says data: {<dataset>: real|stand-in}
# Paper rules take prepared data as input with prepared("<dataset>") and list the dataset under needs: in
# config/datasets.yaml for the scales that use it.


rule data:
    """Every dataset the current scale needs, verified real data where reachable, else marked stand-ins."""
    input:
        data_targets(),
    localrule: True


rule data_fetch:
    """Verified raw files of one dataset (sources in order, checksums, pins), or a record of why not."""
    output:
        manifest="results/downloads/{dataset}/manifest.json",
        prov="results/downloads/{dataset}/manifest.json.prov.json",
    log:
        "results/downloads/{dataset}/fetch.log",
    benchmark:
        "results/benchmarks/data/fetch_{dataset}.tsv"
    wildcard_constraints:
        dataset="|".join(FETCHED),
    priority: DATA_PRIORITY
    # on the submitting host (most clusters' compute nodes have no internet; they only read verified files)
    localrule: True
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=3000,
        machine=1,
        host_cores=1,
    params:
        cfg=lambda wc: {
            "dataset": wc.dataset,
            "files": DATASETS[wc.dataset].files,
            "sources": DATASETS[wc.dataset].sources,
            "on_missing": config["data"]["on_missing"],
            "credential": _credential(wc.dataset),
            **_image_sets(wc.dataset),
        },
        code=code("workflow/scripts/data_fetch.py"),
    script:
        "../scripts/data_fetch.py"


rule data_prepare:
    """results/data/<dataset>/<dataset>.npz from the verified files, or the declared stand-in."""
    input:
        manifest=lambda wc: f"results/downloads/{DATASETS.fetch_name(wc.dataset)}/manifest.json",
    output:
        npz="results/data/{dataset}/{dataset}.npz",
        prov="results/data/{dataset}/{dataset}.npz.prov.json",
    log:
        "results/data/{dataset}/prepare.log",
    benchmark:
        "results/benchmarks/data/prepare_{dataset}.tsv"
    wildcard_constraints:
        dataset="|".join(DATASETS.names()),
    priority: DATA_PRIORITY
    # on the submitting host (most clusters' compute nodes have no internet; they only read verified files)
    localrule: True
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=4000,
        machine=1,
        host_cores=1,
    params:
        cfg=lambda wc: {
            "dataset": wc.dataset,
            "prepare": DATASETS[wc.dataset].prepare,
            "standin": DATASETS[wc.dataset].standin,
            "on_missing": config["data"]["on_missing"],
        },
        code=code("workflow/scripts/data_prepare.py"),
    script:
        "../scripts/data_prepare.py"

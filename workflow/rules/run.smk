# The one run rule: any (experiment, configuration) of any paper, executed by the runner its registry names.
# Registry keys (config/papers/<paper>.yaml, experiments.<name>): runner, dataset, needs, reads, threads,
# resources and alone, each optionally per scale under scales.<scale>.  See docs/architecture.md.


def run_spec(wc):
    return REGISTRY.run_spec(wc.paper, wc.experiment, wc.scale)


def run_inputs(wc):
    spec = run_spec(wc)
    inputs = {"code": code("workflow/scripts/run.py", modules=(spec["runner"].partition(":")[0],))}
    if spec["dataset"]:
        inputs["data"] = prepared(spec["dataset"])
    for name, need in spec["needs"].items():
        inputs[name] = REGISTRY.run_file(wc.paper, need, wc.scale)
    inputs.update(spec["reads"])
    return inputs


def run_resource(key, default=None):
    return lambda wc: run_spec(wc)["resources"].get(key, default)


rule run:
    """One experiment configuration (every seed, method and variant it runs) -> a tidy long CSV + sidecar."""
    input:
        unpack(run_inputs),
    output:
        csv="results/{scale}/{paper}/runs/{experiment}/{configuration}.csv",
        prov="results/{scale}/{paper}/runs/{experiment}/{configuration}.csv.prov.json",
    wildcard_constraints:
        paper="|".join(PAPERS),
    params:
        cfg=lambda wc: run_params(wc.paper, wc.experiment, wc.configuration, wc.scale),
        spec=run_spec,
    log:
        "results/{scale}/{paper}/logs/runs/{experiment}/{configuration}.log",
    threads: lambda wc: run_spec(wc)["threads"]
    resources:
        mem_mb=run_resource("mem_mb", 4000),
        runtime=run_resource("runtime", 120),  # minutes (a cluster's time limit); registry `resources.runtime`
        gpu=run_resource("gpu", 0),
        machine=lambda wc: MACHINE_SLOTS if run_spec(wc)["alone"] else 1,
    script:
        "../scripts/run.py"

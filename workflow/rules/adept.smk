# ADEPT (Ozkara et al., paper 004; issue 10): run rules.  Registry: config/papers/adept.yaml.  Spec: adept.md.
# One rule runs one (experiment, configuration); clients are batched in one process (fedrepro.adept.fed).

# The run rules depend on the algorithm modules only (adept/artifacts.py is the render side: a change to a plot
# must not rerun training).
ADEPT_RUN_CODE = ("adept/__init__", "adept/stiefel", "adept/pca", "adept/fed", "adept/ae", "adept/dgm", "metrics",
                  "models/adept_nets", "data")

ADEPT_DATA = {"table2_mnist": "mnist", "table2_fashion_mnist": "fashion_mnist", "table2_cifar10": "cifar10",
              "table3": "mnist"}


def adept_run_inputs(wc):
    inputs = {"code": code(*ADEPT_RUN_CODE)}
    if wc.experiment in ADEPT_DATA:
        inputs["data"] = prepared(ADEPT_DATA[wc.experiment])
    if wc.experiment == "table3":
        inputs["featnet"] = f"results/{wc.scale}/adept/runs/featnet/mnist.pt"
    return inputs


rule adept_featnet:
    """Proxy FID/KID feature network: a small MNIST classifier trained by the pipeline (used when no Inception
    weights are configured; spec 4.3).  Its test accuracy is the CSV."""
    input:
        data=prepared("mnist"),
        code=code(*ADEPT_RUN_CODE),
    output:
        pt="results/{scale}/adept/runs/featnet/mnist.pt",
        csv="results/{scale}/adept/runs/featnet/mnist.csv",
        provs=["results/{scale}/adept/runs/featnet/mnist.pt.prov.json",
               "results/{scale}/adept/runs/featnet/mnist.csv.prov.json"],
    params:
        cfg=lambda wc: run_params("adept", "table3", "as-stated", wc.scale)["featnet"] | {"seed": config["seed"]},
    log:
        "results/{scale}/adept/logs/runs/featnet/mnist.log",
    threads: 2
    resources:
        mem_mb=3000,
    script:
        "../scripts/adept_featnet.py"


rule adept_run:
    """ADEPT Fig. 2 (PCA), Table 1 (synthetic AE), Table 2 (one dataset), Table 3 / Figs. 3-4 (DGM): one configuration."""
    input:
        unpack(adept_run_inputs),
    output:
        csv="results/{scale}/adept/runs/{experiment}/{configuration}.csv",
        prov="results/{scale}/adept/runs/{experiment}/{configuration}.csv.prov.json",
    wildcard_constraints:
        experiment="fig2|table1|table2_mnist|table2_fashion_mnist|table2_cifar10|table3",
    params:
        cfg=lambda wc: run_params("adept", wc.experiment, wc.configuration, wc.scale),
    log:
        "results/{scale}/adept/logs/runs/{experiment}/{configuration}.log",
    threads: 1
    resources:
        mem_mb=4000,
        gpu=lambda wc: 1 if wc.scale == "paper" and wc.experiment in ("table3", "table2_cifar10") else 0,
    script:
        "../scripts/adept_run.py"

# Castiglia et al., Compressed-VFL (ICML 2022): run rules.  Registry: config/papers/cvfl.yaml.  Spec: cvfl.md.
# One job per (experiment, configuration): the whole grid of (compressor, b, Q, M, seed) runs of that experiment,
# written as one tidy long CSV that several artifacts read (Fig. 3, Tables 2-5, Figs. 4, D.x).

CVFL_DATA = {"mimic": "mimic3_ihm", "mimic_q": "mimic3_ihm", "cifar10": "cifar10", "modelnet10": "modelnet10",
             "modelnet10_m12": "modelnet10", "imagenet100": "imagenet100"}
# Experiments that need a GPU at paper scale (cvfl.md §7.1): ResNet-18 and the ModelNet CNN. ImageNet-100 also asks
# for one core per JPEG-decoding loader process (`workers`).
CVFL_GPU = ("cifar10", "modelnet10", "modelnet10_m12", "imagenet100")


rule cvfl_run:
    """C-VFL: every run of one experiment's configuration (compressors x b x Q x M x seeds) -> tidy long CSV."""
    input:
        data=lambda wc: prepared(CVFL_DATA[wc.experiment]),
        code=code("cvfl/__init__", "cvfl/simulator", "cvfl/sources", "cvfl/experiments", "comm", "models", "data"),  # not the summaries
    output:
        csv="results/{scale}/cvfl/runs/{experiment}/{configuration}.csv",
        prov="results/{scale}/cvfl/runs/{experiment}/{configuration}.csv.prov.json",
    wildcard_constraints:
        experiment="|".join(CVFL_DATA),
    params:
        cfg=lambda wc: run_params("cvfl", wc.experiment, wc.configuration, wc.scale),
    log:
        "results/{scale}/cvfl/logs/runs/{experiment}/{configuration}.log",
    threads: lambda wc: 1 + int(run_params("cvfl", wc.experiment, wc.configuration, wc.scale).get("workers", 0))
    resources:
        mem_mb=lambda wc: 16000 if wc.scale == "paper" and wc.experiment == "imagenet100" else 4000,  # decoded batches in flight
        gpu=lambda wc: 1 if wc.scale == "paper" and wc.experiment in CVFL_GPU else 0,
    script:
        "../scripts/cvfl_run.py"


rule cvfl_cost_run:
    """C-VFL cost check: the paper's printed costs (Tables 2-4, D.1), Fig. 4's per-epoch costs and Table 5's times from
    the recovered formula at the spec's derived epochs. No data, no training; the same at every scale."""
    input:
        registry="config/papers/cvfl.yaml",   # the printed numbers: the claims' paper tables
        code=code("cvfl/__init__", "cvfl/costcheck", "cvfl/simulator", "cvfl/summaries", "comm/conventions"),
    output:
        csv="results/{scale}/cvfl/runs/cost_formula/{configuration}.csv",
        prov="results/{scale}/cvfl/runs/cost_formula/{configuration}.csv.prov.json",
    params:
        cfg=lambda wc: run_params("cvfl", "cost_formula", wc.configuration, wc.scale),
    log:
        "results/{scale}/cvfl/logs/runs/cost_formula/{configuration}.log",
    threads: 1
    resources:
        mem_mb=1000,
    script:
        "../scripts/cvfl_cost_run.py"

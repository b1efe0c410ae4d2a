# Thesis ch. 3 (issue 8): SQuARM-SGD vs CHOCO-SGD and decentralized SGD, Figs. 3.1-3.4.
# Registry: config/papers/thesis.yaml (experiments fig3_4, fig3_4_trigger, fig3_2, fig3_1; artifact fig3_3 re-uses
# fig3_2's runs; artifact fig3_4_trigger is the threshold-scale sweep of spec RISK R-1 on the Fig. 3.4 setting).
# Spec: shared/specs/thesis_ch3_squarm.md.  Library: src/fedrepro/decentral, src/fedrepro/models.

CH3_DATASET = {"fig3_4": "mnist", "fig3_4_trigger": "mnist", "fig3_2": "cifar10", "fig3_1": "imagenet"}


rule thesis_ch3_mnist_run:
    """Ch. 3, Fig. 3.4: MNIST logistic regression on 60 nodes, the four methods of one configuration (CPU).
    fig3_4_trigger: the same setting, SQuARM-SGD only, once per event-trigger threshold scale (`trigger_scales`)."""
    input:
        code=code("decentral", "models", "comm", "data"),
        data=prepared("mnist"),
    output:
        csv="results/{scale}/thesis/runs/{experiment}/{configuration}.csv",
        prov="results/{scale}/thesis/runs/{experiment}/{configuration}.csv.prov.json",
    wildcard_constraints:
        experiment="fig3_4|fig3_4_trigger",
    params:
        cfg=lambda wc: run_params("thesis", wc.experiment, wc.configuration, wc.scale),
    log:
        "results/{scale}/thesis/logs/runs/{experiment}/{configuration}.log",
    threads: 1
    resources:
        mem_mb=3000,
    script:
        "../scripts/thesis_ch3_run.py"


rule thesis_ch3_deep_run:
    """Ch. 3, Figs. 3.1-3.3: ResNet-20 (CIFAR-10) / ResNet-50 (ImageNet) with n nodes batched by torch.func
    (GPU at paper scale)."""
    input:
        code=code("decentral", "models", "comm", "data"),
        data=lambda wc: prepared(CH3_DATASET[wc.experiment]),
    output:
        csv="results/{scale}/thesis/runs/{experiment}/{configuration}.csv",
        prov="results/{scale}/thesis/runs/{experiment}/{configuration}.csv.prov.json",
    wildcard_constraints:
        experiment="fig3_2|fig3_1",
    params:
        cfg=lambda wc: run_params("thesis", wc.experiment, wc.configuration, wc.scale),
    log:
        "results/{scale}/thesis/logs/runs/{experiment}/{configuration}.log",
    threads: 1
    resources:
        mem_mb=4000,
        gpu=lambda wc: 1 if wc.scale == "paper" else 0,
    script:
        "../scripts/thesis_ch3_run.py"

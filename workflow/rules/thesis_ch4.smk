# Thesis ch. 4 (issue 9): decentralized multi-task optimization with compressed communication.
# Registry: config/papers/thesis.yaml (experiments fig4_1, fig4_2).  Spec: thesis_ch4_ch5.md PART I.


rule thesis_ch4_run:
    """Ch. 4, Figs. 4.1 / 4.2: the eight schemes (vanilla, Sign, TopK, Sign+TopK x sample, bandit) of one configuration."""
    input:
        code=code("mtl", "comm"),
    output:
        csv="results/{scale}/thesis/runs/{experiment}/{configuration}.csv",
        prov="results/{scale}/thesis/runs/{experiment}/{configuration}.csv.prov.json",
    wildcard_constraints:
        experiment="fig4_1|fig4_2",
    params:
        cfg=lambda wc: run_params("thesis", wc.experiment, wc.configuration, wc.scale),
    log:
        "results/{scale}/thesis/logs/runs/{experiment}/{configuration}.log",
    threads: 1
    resources:
        mem_mb=2000,
    script:
        "../scripts/thesis_ch4_run.py"

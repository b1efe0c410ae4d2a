# Thesis (Singh, UCLA 2024): run rules.  Registry: config/papers/thesis.yaml.


rule thesis_table5_1_run:
    """Ch. 5, Table 5.1: Phase 1 / Phase 2 / Scratch test-error ratios, one named configuration."""
    input:
        code=code("transfer"),
    output:
        csv="results/{scale}/thesis/runs/table5_1/{configuration}.csv",
        prov="results/{scale}/thesis/runs/table5_1/{configuration}.csv.prov.json",
    params:
        cfg=lambda wc: run_params("thesis", "table5_1", wc.configuration, wc.scale),
    log:
        "results/{scale}/thesis/logs/runs/table5_1/{configuration}.log",
    threads: 2
    resources:
        mem_mb=2000,
    script:
        "../scripts/thesis_table5_1.py"

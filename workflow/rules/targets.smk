# Targets: one per paper (`snakemake gcca`), one alias per artifact (`snakemake thesis_table5_1`), and a catch-all
# that turns an unknown target into a clear error (close matches; at which scales an alias exists).


for _paper in PAPERS:

    rule:
        name:
            _paper
        input:
            paper_targets(_paper),
        localrule: True


for _paper, _artifact, _entry in REGISTRY.artifacts(scale=SCALE):

    rule:
        name:
            f"{_paper}_{_artifact}"
        input:
            artifact_targets(_paper, _artifact),
        localrule: True


rule unknown_target:
    """Not a job: a target that names no file and no rule at this scale ends here with a clear message."""
    input:
        unknown_target,
    output:
        "{target}",
    wildcard_constraints:
        target=r"[A-Za-z][A-Za-z0-9_.-]*",
    localrule: True

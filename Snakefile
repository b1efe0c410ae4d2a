# fedrepro: every figure and table of four federated-learning works, with provenance.
# Targets: all | gcca | cvfl | thesis | adept | <paper>_<artifact> (e.g. thesis_table5_1) | data
# Scale:   --config scale=smoke|quick|paper   (results go to results/<scale>/...)
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


# The local-machine limits (profiles/default/config.yaml: one GPU job at a time, a wall-clock run alone; common.smk:
# no more jobs than this machine's cores) count only
# jobs that run on this machine: Snakemake tallies "local" resources of a job it submits to a cluster in that job
# alone, so on SLURM nothing waits for a GPU or a wall-clock run (the `gpu` request still reaches sbatch).
resource_scopes:
    gpu="local",
    machine="local",
    host_cores="local",


ROOT = Path(workflow.main_snakefile).resolve().parent


include: "workflow/rules/common.smk"
include: "workflow/rules/targets.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/run.smk"
include: "workflow/rules/render.smk"


# Every artifact of every paper at the configured scale, the scorecard and the index page.  (A comment, not a
# docstring: snakefmt orders default_target first and then cannot parse a docstring after it.)
rule all:
    default_target: True
    input:
        all_targets(),

# fedrepro: every figure and table of four federated-learning works, with provenance.
# Targets: all | gcca | cvfl | thesis | adept | <paper>_<artifact> (e.g. thesis_table5_1) | data
# Scale:   --config scale=smoke|quick|paper   (results go to results/<scale>/...)
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


ROOT = Path(workflow.main_snakefile).resolve().parent


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/run.smk"
include: "workflow/rules/render.smk"


rule all:
    """Every artifact of every paper at the configured scale, the scorecard and the index page."""
    input:
        all_targets(),
    default_target: True

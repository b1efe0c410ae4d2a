# fedrepro: every figure and table of four federated-learning works, with provenance.
# Targets: all | gcca | cvfl | thesis | adept | <paper>_<artifact> (e.g. thesis_table5_1) | data
# Scale:   --config scale=smoke|quick|paper   (results go to results/<scale>/...)
from pathlib import Path

from snakemake.utils import min_version

from fedrepro import warm

min_version("9.0")


configfile: "config/config.yaml"


ROOT = Path(workflow.main_snakefile).resolve().parent


include: "workflow/rules/common.smk"
include: "workflow/rules/targets.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/run.smk"
include: "workflow/rules/render.smk"


# Warm job starts (fedrepro.warm): a local build's run and render jobs start as copies of one process that has
# imported the libraries once (3-4 s a job otherwise).  Not on a cluster, not for dry runs; `--config warm=false`
# switches it off.
WARM = None


onstart:
    global WARM
    if (
        config.get("warm", True)
        and workflow.local_exec
        and not workflow.remote_exec
    ):
        WARM = warm.start(ROOT)


onsuccess:
    warm.stop(WARM)


onerror:
    warm.stop(WARM)


# Every artifact of every paper at the configured scale, the scorecard and the index page.  (A comment, not a
# docstring: snakefmt orders default_target first and then cannot parse a docstring after it.)
rule all:
    default_target: True
    input:
        all_targets(),

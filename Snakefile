# fedrepro: every figure and table of four federated-learning works, with provenance.
# Targets: all | gcca | cvfl | thesis | adept | <paper>_<artifact> (e.g. thesis_table5_1) | data
# Scale:   --config scale=smoke|quick|paper   (results go to results/<scale>/...)
import os
from pathlib import Path

from snakemake.utils import min_version

from fedrepro import warm
from fedrepro.runtime import huge_page_environment

min_version("9.0")


configfile: "config/config.yaml"


ROOT = Path(workflow.main_snakefile).resolve().parent


include: "workflow/rules/common.smk"
include: "workflow/rules/targets.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/run.smk"
include: "workflow/rules/render.smk"


# Transparent huge pages for the jobs' large buffers (torch's allocator and glibc's malloc, read when a process
# starts: set here for every process the build starts, the warm server included).  The same numbers, about 3 % less
# CPU (docs/architecture.md, "Huge pages"); a THP_MEM_ALLOC_ENABLE or glibc.malloc.hugetlb of the user's wins.
os.environ.update(huge_page_environment(os.environ))


# Warm job starts (fedrepro.warm): a local build's run, render and data jobs start as copies of one process that
# has imported the libraries once (3-4 s a job otherwise).  Only for a local build of at least WARM_MIN_JOBS such
# jobs: the server's own imports cost about as much CPU as four cold starts.  `--config warm=false` switches it off.
WARM = None
WARM_RULES = {"run", "render_figure", "render_table", "data_fetch", "data_prepare"}
WARM_MIN_JOBS = 5


onstart:
    global WARM
    jobs = sum(job.rule.name in WARM_RULES for job in workflow.dag.needrun_jobs())
    if (
        config.get("warm", True)
        and workflow.local_exec
        and not workflow.remote_exec
        and jobs >= WARM_MIN_JOBS
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

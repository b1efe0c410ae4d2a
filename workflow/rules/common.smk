# Config loading and validation, the artifact registry -> targets, and code dependencies derived from imports.
from functools import lru_cache

from snakemake.exceptions import WorkflowError

from fedrepro.codedeps import closure_relpaths
from fedrepro.config import ConfigError, resolve_config
from fedrepro.registry import Registry

try:
    _resolved = resolve_config(config, workflow.config_settings.overwrite_config, ROOT)
    REGISTRY = Registry.load(ROOT)
except ConfigError as exc:
    raise WorkflowError(f"fedrepro configuration error:\n{exc}") from None
config.clear()
config.update(_resolved)
SCALE = config["scale"]
PAPERS = ("gcca", "cvfl", "thesis", "adept")

# A wall-clock run (registry `alone: true`) takes every `machine` slot, so no other job runs beside it; every
# other job takes one.  A default global limit, unless the command line sets one (--resources machine=N).
MACHINE_SLOTS = 1000
if workflow.global_resources.get("machine") is None:
    workflow.global_resources["machine"] = MACHINE_SLOTS


@lru_cache(maxsize=None)
def code(*files, modules=()):
    """The src/fedrepro files that running `files` (scripts, notebooks) or importing `modules` loads.

    A job depends on exactly these, so editing any module it really imports (and only those) reruns it."""
    return closure_relpaths(ROOT, files=files, modules=modules)


def with_sidecars(files):
    files = list(files)
    return files + [f + ".prov.json" for f in files]


def run_params(paper, experiment, configuration, scale):
    """The resolved parameters of one run (a stable dict: the config subset the sidecar records)."""
    return {**REGISTRY.params(paper, experiment, configuration, scale), "seed": config["seed"]}


def artifact_targets(paper, artifact, scale=None):
    scale = scale or SCALE
    files = REGISTRY.artifact_files(paper, artifact, scale)
    return with_sidecars(files.values()) + with_sidecars([REGISTRY.claims_file(paper, artifact, scale)])


def paper_targets(paper, scale=None):
    scale = scale or SCALE
    return [f for _, a, _ in REGISTRY.artifacts(paper, scale) for f in artifact_targets(paper, a, scale)]


def all_targets(scale=None):
    scale = scale or SCALE
    out = [f for p in PAPERS for f in paper_targets(p, scale)]
    return out + with_sidecars(
        [f"results/{scale}/claims.csv", f"results/{scale}/claims.md", f"results/{scale}/index.html"]
    )


# One target per paper (`snakemake gcca`) and one alias per artifact (`snakemake thesis_table5_1`).
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

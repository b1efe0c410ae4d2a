# Config loading and validation, the artifact registry -> targets, code dependencies.
import sys

from snakemake.exceptions import WorkflowError

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

# Library files every run and render job uses; touching one reruns everything (it is everywhere).
CORE_CODE = ["src/fedrepro/runtime.py", "src/fedrepro/io.py", "src/fedrepro/pipeline.py",
             *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "src/fedrepro/provenance").glob("*.py"))]


def code(*names):
    """The src/fedrepro files a job depends on, so a change to them (and only them) reruns it."""
    files = list(CORE_CODE)
    for name in names:
        base = ROOT / "src" / "fedrepro" / name
        if base.is_dir():
            files += sorted(str(p.relative_to(ROOT)) for p in base.rglob("*.py"))
        elif base.with_suffix(".py").exists():
            files.append(str(base.with_suffix(".py").relative_to(ROOT)))
        else:
            raise WorkflowError(f"code dependency {name!r} names no module or package under src/fedrepro")
    return sorted(set(files))


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
    return out + with_sidecars([f"results/{scale}/claims.csv", f"results/{scale}/claims.md",
                                f"results/{scale}/index.html"])


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

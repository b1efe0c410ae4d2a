# Config loading and validation, the artifact registry -> targets, and code dependencies derived from imports.
import os
from functools import lru_cache

from snakemake.exceptions import WorkflowError

from fedrepro.workflow.codedeps import code_record
from fedrepro.provenance.published import published_claims_files
from fedrepro.registry.config import ConfigError, resolve_config
from fedrepro.registry.datasets import load_registry
from fedrepro.leaderboard.spec import Board, registered_compressors
from fedrepro.workflow.plan import DEFAULT_MEM_MB
from fedrepro.comm.plugins import PluginError, import_plugins
from fedrepro.registry.papers import Registry
from fedrepro.scorecard.expressions import validate_claim_expressions

try:
    # Snakemake internals: the raw --config values (no public view of them), so they win over the scale overlay
    _resolved = resolve_config(config, workflow.config_settings.overwrite_config, ROOT)
    # user compressors register themselves on import, before the registry's names are checked (docs/comm.md)
    import_plugins(_resolved.get("comm", {}).get("plugins"), root=ROOT)
    REGISTRY = Registry.load(ROOT)
    BOARD = Board.load(
        ROOT, REGISTRY
    )  # config/leaderboard.yaml, checked against the registry
    validate_claim_expressions(
        REGISTRY
    )  # a typo in a claim stops the run here, with file, id and suggestion
except (ConfigError, PluginError) as exc:
    raise WorkflowError(f"fedrepro configuration error:\n{exc}") from None
config.clear()
config.update(_resolved)
SCALE = config["scale"]
_CONFIGURATIONS = sorted(REGISTRY.configuration_names())
if config["configuration"] not in _CONFIGURATIONS:
    import difflib

    _close = difflib.get_close_matches(config["configuration"], _CONFIGURATIONS, n=3)
    raise WorkflowError(
        f"fedrepro configuration error:\nconfiguration: {config['configuration']!r} is defined by no experiment in "
        f"config/papers/*.yaml"
        + (f"; did you mean {', '.join(_close)}?" if _close else "")
        + f"\nDefined configurations: {', '.join(_CONFIGURATIONS)}"
    )
# plugin files are code of the runs that use a compressor they register (a changed compressor reruns those runs,
# no other); plugin modules of installed packages are not tracked
PLUGIN_FILES = [
    p for p in config.get("comm", {}).get("plugins") or [] if str(p).endswith(".py")
]


def _plugin_compressors():
    """plugin file -> the compressor names it registered on import (an empty set: it registers none, so it stays
    code of every run, since what else it changes cannot be told)."""
    import sys
    from pathlib import Path

    from fedrepro.comm.catalog import COMPRESSORS

    out = {}
    for entry in PLUGIN_FILES:
        path = (
            Path(entry) if Path(entry).is_absolute() else Path(ROOT) / entry
        ).resolve()
        modules = {
            name
            for name, m in list(sys.modules.items())
            if getattr(m, "__file__", None) and Path(m.__file__).resolve() == path
        }
        out[entry] = {
            n
            for n, f in COMPRESSORS.items()
            if getattr(f, "__module__", None) in modules
        }
    return out


PLUGIN_COMPRESSORS = _plugin_compressors()


def _strings(value):
    """Every string in a nested registry value (a method's `compressor: mine`, `{name: mine}`, a board's list)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def run_plugin_files(paper, experiment, configuration, scale):
    """The plugin files a run's code includes: those registering a compressor that the run's parameters name (a
    board run's `registered` list included), and those registering none."""
    names = set(_strings(run_params(paper, experiment, configuration, scale)))
    return tuple(
        f for f, regs in PLUGIN_COMPRESSORS.items() if not regs or regs & names
    )


PAPERS = ("gcca", "cvfl", "thesis", "adept")

# A wall-clock run (registry `alone: true`) takes every `machine` slot, so no other job runs beside it on this machine;
# every other job takes one.  The limit is profiles/default/config.yaml's `resources: machine=1000`; the Snakefile
# scopes it "local", so on a cluster nothing waits for such a run (it gets a node of its own: slurm_extra below).
MACHINE_SLOTS = 1000

# On one machine, no more jobs at once than the cores this process may use (a job holds as many as its threads):
# `--cores 8` on a two-core machine would otherwise run eight one-thread jobs that share caches and memory bandwidth
# for nothing.  The limit depends on the machine, which a profile cannot compute, so it is set here, the one write to
# Snakemake's global resources (docs/architecture.md, "Profiles and job order"); `--resources host_cores=N` wins, and
# the Snakefile scopes it "local", so a cluster build never counts it.
HOST_CORES = (
    len(os.sched_getaffinity(0))
    if hasattr(os, "sched_getaffinity")
    else (os.cpu_count() or 1)
)
if "host_cores" not in workflow.global_resources:
    workflow.global_resources["host_cores"] = HOST_CORES


@lru_cache(maxsize=None)
def code(*files, modules=(), extra=()):
    """The version of the code a job runs: a digest of the src/fedrepro files that running `files` (scripts,
    notebooks) or importing `modules` loads, plus `extra` files (user compressor plugins).

    Each job takes it as `params.code`: editing any module it really imports (and only those) changes the parameter,
    so Snakemake reruns it (rerun trigger `params`). A parameter rather than ~50 input files per job: Snakemake
    re-reads the size of every input of every ready job at each job selection (about 15 s of its main thread in a
    smoke build, while a core waits). The job's sidecars record it (key `code`: the digest and each file's sha256),
    so `python -m fedrepro audit --published` can name the modules changed since.
    """
    return code_record(ROOT, files=files, modules=modules, extra=extra)


def with_sidecars(files):
    files = list(files)
    return files + [f"{f}.prov.json" for f in files]


def run_params(paper, experiment, configuration, scale):
    """The resolved parameters of one run (a stable dict: the config subset the sidecar records).

    A leaderboard board run's `board_compressors: registered` becomes the registered names but the paper's own
    (config/leaderboard.yaml), so a new plugin is a changed parameter and reruns the board runs.
    """
    params = REGISTRY.params(paper, experiment, configuration, scale)
    if params.get("board_compressors") == "registered":
        params = {
            **params,
            "board_compressors": BOARD.board_compressors(
                paper, experiment, registered_compressors()
            ),
        }
    return {**params, "seed": config["seed"]}


def artifact_targets(paper, artifact, scale=None):
    scale = scale or SCALE
    files = REGISTRY.artifact_files(paper, artifact, scale)
    return with_sidecars(files.values()) + with_sidecars(
        [REGISTRY.claims_file(paper, artifact, scale)]
    )


def paper_targets(paper, scale=None):
    scale = scale or SCALE
    return [
        f
        for _, a, _ in REGISTRY.artifacts(paper, scale)
        for f in artifact_targets(paper, a, scale)
    ]


def all_targets(scale=None):
    scale = scale or SCALE
    out = [f for p in PAPERS for f in paper_targets(p, scale)]
    return out + with_sidecars(
        [
            *leaderboard_files(scale).values(),
            f"results/{scale}/claims.csv",
            f"results/{scale}/claims.md",
            f"results/{scale}/index.html",
        ]
    )


def leaderboard_files(scale=None):
    """The cross-paper leaderboard (config/leaderboard.yaml) and its executed notebook."""
    base = f"results/{scale or SCALE}/leaderboard"
    return {
        "csv": f"{base}.csv",
        "md": f"{base}.md",
        "png": f"{base}.png",
        "pdf": f"{base}.pdf",
        "ipynb": f"results/{scale or SCALE}/notebooks/leaderboard.ipynb",
        "html": f"results/{scale or SCALE}/notebooks/leaderboard.html",
    }


# ---- data (config/datasets.yaml) ----------------------------------------------------------------------
try:
    DATASETS = load_registry(ROOT)
except ConfigError as exc:
    raise WorkflowError(f"fedrepro dataset registry error:\n{exc}") from None

FETCHED = [n for n in DATASETS.names() if not DATASETS[n].derived_from]


def prepared(name):
    """The prepared file of a dataset, for a paper rule's input (its sidecar comes along)."""
    DATASETS[name]
    return f"results/data/{name}/{name}.npz"


def data_targets(scale=None):
    return with_sidecars([prepared(n) for n in DATASETS.needed(scale or SCALE)])


def _credential(name):
    cred = DATASETS[name].credential
    return (config["data"].get("credentials") or {}).get(cred["key"]) if cred else None


def _image_sets(name):
    """{"images": the configured paths of a dataset's image-folder sources (data.images.<key>)}; {} without one
    (so the fetch parameters of the other datasets stay as they were)."""
    keys = [s["key"] for s in DATASETS[name].sources if s["kind"] == "imagefolder"]
    images = config["data"].get("images") or {}
    return {"images": {k: images.get(k) for k in keys}} if keys else {}


# ---- runs (registry experiments) ------------------------------------------------------------------------
def run_spec(wc):
    return REGISTRY.run_spec(wc.paper, wc.experiment, wc.scale)


def run_inputs(wc):
    spec = run_spec(wc)
    inputs = {}
    if spec["dataset"]:
        inputs["data"] = prepared(spec["dataset"])
    for name, need in spec["needs"].items():
        inputs[name] = REGISTRY.run_file(wc.paper, need, wc.scale)
    inputs.update(spec["reads"])
    return inputs


def run_resource(key, default=None):
    """The registry's value for the run's scale wins; at paper scale runtime and mem_mb otherwise come from the
    cost plan (fedrepro.workflow.plan, docs/cluster.md 'Cost planning'), never below the experiment's registry value.
    """
    from fedrepro.workflow.plan import run_resource as planned

    limit = MAX_RUNTIME_H  # hours; caps runtime
    return lambda wc: planned(
        REGISTRY,
        wc.paper,
        wc.experiment,
        wc.configuration,
        wc.scale,
        key,
        default,
        max_runtime_h=limit,
    )


# Runs longer than the time limit (fedrepro.workflow.split, docs/cluster.md): a run whose planned runtime request
# exceeds cluster.max_runtime_h, and whose runner says how it divides, is run as parts by run_part and merged by
# run_merge.  SPLITS maps each such run's path below results/ to its Split.
MAX_RUNTIME_H = (config.get("cluster") or {}).get("max_runtime_h", 48)


def _splits():
    from fedrepro.workflow.split import plan_splits

    return plan_splits(
        REGISTRY, SCALE, MAX_RUNTIME_H, resolve=lambda _, *run: run_params(*run)
    )


SPLITS = _splits()


def split_of(wc):
    return SPLITS[f"{wc.scale}/{wc.paper}/runs/{wc.experiment}/{wc.configuration}"]


def split_key(wc):
    """(paper, experiment, configuration, scale) of a split run, from the merge rule's wildcard."""
    split = SPLITS[wc.split_run]
    return split.paper, split.experiment, split.configuration, split.scale


def part_params(wc):
    """A part's parameters: the configuration's, with the part's overrides merged in."""
    from fedrepro.workflow.plan import with_overrides
    from fedrepro.workflow.split import name_index

    overrides = split_of(wc).overrides[name_index(wc.part)]
    return with_overrides(
        run_params(wc.paper, wc.experiment, wc.configuration, wc.scale), overrides
    )


def part_runtime(wc):
    return split_of(wc).runtime_min(MAX_RUNTIME_H)


# Runs in chained blocks (fedrepro.checkpoint): block k of a part reads the checkpoint of block k - 1, and the last
# block (rule run_last_block) the one before it.
def block_index(wc):
    from fedrepro.workflow.split import name_index

    return name_index(wc.block) if "block" in wc.keys() else split_of(wc).blocks - 1


def block_inputs(wc):
    from fedrepro.workflow.split import block_name

    inputs = run_inputs(wc)
    k = block_index(wc)
    if k > 0:
        inputs["resume"] = split_of(wc).block_file(wc.part, block_name(k - 1))
    return inputs


def block_params(wc):
    return {"index": block_index(wc), "count": split_of(wc).blocks}


def block_code(wc):
    return runner_code(wc, "workflow/scripts/run_block.py")


def split_runs_regex():
    """The merge rule's wildcard: exactly the split runs' paths (a pattern nothing matches when none is split)."""
    import re

    return "|".join(re.escape(r) for r in SPLITS) or "(?!)"


# Scheduling order of a local build (Snakemake starts the ready job of highest priority; its default, by input bytes,
# left the ADEPT feature net -> Table 3 chain to the end of a smoke build with one core idle): the data jobs first,
# since every run waits for one; then each run by the measured CPU seconds of the chain of runs it starts
# (fedrepro.workflow.plan.schedule_priority).  Order only: no output depends on it.
DATA_PRIORITY = 1_000_000


def run_priority(wc):
    from fedrepro.workflow.plan import schedule_priority

    return schedule_priority(
        REGISTRY, wc.paper, wc.experiment, wc.configuration, wc.scale
    )


# SLURM partitions: every job keeps the partition of --default-resources (or the cluster's default), except the GPU
# runs when config cluster.gpu_partition names one.  Only then do run jobs carry `slurm_partition` (a resource set
# in a rule replaces the default one), and the other runs are given the user's default explicitly.
GPU_PARTITION = (config.get("cluster") or {}).get("gpu_partition", "")


def default_partition():
    """The partition of --default-resources (a profile's default-resources included); None when unset."""
    import ast

    # Snakemake internals: no public API gives a rule the default resources' values
    defaults = workflow.resource_settings.default_resources
    if defaults is None or "slurm_partition" not in defaults:
        return None
    raw = defaults["slurm_partition"].raw
    try:  # as Snakemake reads it: a Python literal ('cpu'), else the bare word (cpu)
        return str(ast.literal_eval(raw))
    except (ValueError, SyntaxError):
        return raw


def partition_resources():
    """The run rule's `slurm_partition`, only where cluster.gpu_partition is set (else none: the default applies)."""
    if not GPU_PARTITION:
        return {}
    other = default_partition()
    return {
        "slurm_partition": lambda wc: (
            GPU_PARTITION if run_spec(wc)["resources"].get("gpu", 0) else other
        )
    }


def slurm_extra(wc):
    """A wall-clock run (`alone`) gets a node of its own on SLURM, as it gets the machine alone locally."""
    return "--exclusive" if run_spec(wc)["alone"] else ""


# ---- renders (registry artifacts) -----------------------------------------------------------------------
def _artifact_names(kind):
    names = sorted({a for _, a, e in REGISTRY.artifacts() if e["kind"] == kind})
    return (
        "|".join(names) or "(?!)"
    )  # a regex that matches nothing when no artifact has this kind


def report_category(wc):
    """The report's category of an artifact: its paper, numbered in the papers' order (the report sorts by name)."""
    from fedrepro.scorecard.pages import paper_order

    papers = paper_order(REGISTRY)
    return f"{papers.index(wc.paper) + 1}. {wc.paper}"


def report_subcategory(wc):
    """The report's subcategory: the artifact's position in its paper, zero-padded, and its label ('02 Fig. 2'
    before '10 Fig. 10')."""
    from fedrepro.scorecard.pages import artifact_order

    order = artifact_order(REGISTRY, wc.paper)
    label = REGISTRY.artifact(wc.paper, wc.artifact)["label"]
    return f"{order.index(wc.artifact) + 1:02d} {label}"


def render_inputs(wc):
    notebook = REGISTRY.notebook(wc.paper, wc.artifact)
    return {
        "notebook": notebook,
        "runs": REGISTRY.artifact_runs(wc.paper, wc.artifact, wc.scale),
        "registry": f"config/papers/{wc.paper}.yaml",
    }


def in_report(path, caption, kind):
    """An output shown in the Snakemake report (`--report`), under its paper and artifact."""
    return report(
        path,
        caption=caption,
        category=report_category,
        subcategory=report_subcategory,
        labels={"artifact": "{artifact}", "kind": kind},
    )


def render_outputs(folder, suffixes, shown, kind):
    """A render's outputs: the artifact's files under results/{scale}/{paper}/<folder>/ (the `shown` one in the
    report), the executed notebook and its HTML, the artifact's claims, and every file's sidecar.
    """
    base = f"results/{{scale}}/{{paper}}/{folder}/{{artifact}}"
    files = {x: f"{base}.{x}" for x in suffixes}
    notebooks = {
        x: f"results/{{scale}}/{{paper}}/notebooks/{{artifact}}.{x}"
        for x in ("ipynb", "html")
    }
    claims = "results/{scale}/{paper}/claims/{artifact}.csv"
    provs = [f"{f}.prov.json" for f in [*files.values(), *notebooks.values(), claims]]
    files[shown] = in_report(files[shown], "../report/artifact.rst", kind)
    return {
        **files,
        **notebooks,
        "claims": in_report(claims, "../report/claims.rst", "claims"),
        "provs": provs,
    }


def run_code(wc):
    return runner_code(wc, "workflow/scripts/run.py")


def runner_code(wc, script):
    """The code of a run job: its script, the runner's module closure and the plugins the run uses."""
    runner_module = run_spec(wc)["runner"].partition(":")[0]
    return code(
        script,
        modules=(runner_module,),
        extra=run_plugin_files(wc.paper, wc.experiment, wc.configuration, wc.scale),
    )


def render_code(wc):
    return code(
        "workflow/scripts/render_artifact.py", REGISTRY.notebook(wc.paper, wc.artifact)
    )


def shown_configuration(paper, artifact, scale):
    """The configuration an artifact shows: config `configuration` where the artifact's runs have it (or derive it:
    registry `parameters.derived`), else the first its runs are made under, as the notebook would fall back to.
    """
    from fedrepro.scorecard.evaluate import artifact_configurations

    ran = artifact_configurations(REGISTRY, paper, artifact, scale)
    derived = (REGISTRY.artifact(paper, artifact).get("parameters") or {}).get(
        "derived"
    ) or {}
    asked = config["configuration"]
    return asked if asked in ran or asked in derived else ran[0]


def render_params(wc):
    return {"configuration": shown_configuration(wc.paper, wc.artifact, wc.scale)}


def unknown_target(wc):
    """Raised at DAG-build time for a target that is neither a file, nor a rule at this scale."""
    import difflib

    known = [*PAPERS, "all", "data"] + [
        f"{p}_{a}" for p, a, _ in REGISTRY.artifacts(scale=SCALE)
    ]
    elsewhere = sorted(
        {
            s
            for p, a, e in REGISTRY.artifacts()
            if f"{p}_{a}" == wc.target
            for s in e["scales"]
        }
    )
    if elsewhere:
        scale = "paper" if "paper" in elsewhere else elsewhere[0]
        msg = (
            f"target {wc.target!r} is built at scale {', '.join(elsewhere)}, not at {SCALE!r}; "
            f"build it with:  snakemake --cores 8 {wc.target} --config scale={scale}"
        )
    else:
        close = difflib.get_close_matches(wc.target, known, n=3, cutoff=0.6)
        msg = (
            f"unknown target {wc.target!r}"
            + (f"; did you mean {', '.join(close)}?" if close else "")
            + "\nTargets: all, a paper (gcca, cvfl, thesis, adept), data, or an artifact alias <paper>_<artifact>;"
            " every artifact with its alias: python -m fedrepro list"
        )
    raise WorkflowError(msg)

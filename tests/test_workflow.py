"""The workflow: dry runs at every scale, the smoke scale end to end, reruns on code changes, audit."""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import snakemake

from fedrepro.registry.config import SCALES
from fedrepro.registry.papers import Registry
from fedrepro.workflow import plan


def _planned_rules(wd, *targets, scale="smoke"):
    """Rule names Snakemake would run (dry run), with their job counts."""
    # targets first: `--quiet` takes several values and would swallow them
    out = snakemake(*targets, "-n", "--quiet", "rules", "--config", f"scale={scale}", cwd=wd).stdout
    rows = [line.split() for line in out.splitlines()]
    return {r[0]: int(r[1]) for r in rows if len(r) == 2 and r[1].isdigit() and r[0] != "total"}


@pytest.mark.parametrize("scale", SCALES)
def test_dry_run_resolves_every_scale(workdir, scale):
    rules = _planned_rules(workdir, "all", scale=scale)
    assert rules.get("scorecard") == 1 and rules.get("all") == 1


@pytest.mark.parametrize("scale", SCALES)
def test_every_registry_artifact_is_reachable_from_all(workdir, scale):
    summary = snakemake("-n", "--summary", "all", "--config", f"scale={scale}", cwd=workdir).stdout
    planned = {line.split("\t")[0] for line in summary.splitlines()[1:]}
    registry = Registry.load(workdir)
    expected = [f for p, a, _ in registry.artifacts(scale=scale)
                for f in (*registry.artifact_files(p, a, scale).values(), registry.claims_file(p, a, scale))]
    assert expected, "the registry names no artifact at this scale"
    missing = [f for f in expected if f not in planned]
    assert not missing, f"not reachable from `all`: {missing}"


def test_bad_config_stops_before_any_job_with_the_key_named(workdir):
    proc = snakemake("-n", "all", "--config", "scale=enormous", cwd=workdir, check=False)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "'scale'" in text and "smoke, quick, paper" in text


def test_paper_targets_and_artifact_aliases_exist(workdir):
    out = snakemake("--list-target-rules", cwd=workdir).stdout.split()
    for target in ("all", "gcca", "cvfl", "thesis", "adept", "thesis_table5_1"):
        assert target in out


def test_unknown_target_suggests_close_matches_and_the_list_command(workdir):
    proc = snakemake("-n", "thesis_fig41", cwd=workdir, check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "did you mean" in text and "thesis_fig4_1" in text
    assert "python -m fedrepro list" in text


def test_alias_of_another_scale_says_where_it_exists_and_the_advice_works(workdir):
    proc = snakemake("-n", "thesis_fig3_1", cwd=workdir, check=False)  # Fig. 3.1 is built at smoke and paper only
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "--config scale=smoke" not in text and "scale=paper" in text
    advice = text.split("build it with:")[1].split("\n")[0].split()
    assert advice[:3] == ["snakemake", "--cores", "8"]
    ok = snakemake("-n", *advice[3:], cwd=workdir, check=False)  # the printed command resolves
    assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-2000:]


def _slurm_dry_run(wd, *args):
    """{(rule, wildcards line): resources line} of a dry run through the shipped SLURM profile."""
    text = snakemake("-n", "--profile", "workflow/profiles/slurm", *args, cwd=wd).stdout
    jobs, rule, wildcards = {}, None, ""
    for line in text.splitlines():
        if re.match(r"^(local)?rule \w+:$", line):
            rule, wildcards = line.split()[-1].rstrip(":"), ""
        elif line.strip().startswith("wildcards:"):
            wildcards = line.strip().removeprefix("wildcards: ")
        elif line.strip().startswith("resources:") and rule:
            jobs[(rule, wildcards)] = dict(kv.split("=", 1) for kv in line.strip().removeprefix("resources: ").split(", "))
    return jobs


def test_slurm_profile_parses_and_jobs_get_resources(workdir):
    jobs = _slurm_dry_run(workdir, "thesis_table5_1", "--config", "scale=smoke")
    runs = [res for (rule, _), res in jobs.items() if rule == "run"]
    assert runs and all(r["runtime"] == "120" and r["mem_mb"] == "2000" for r in runs), jobs


def test_slurm_jobs_keep_the_users_partition_and_gpu_runs_go_to_the_gpu_partition(workdir):
    """issue 52: --default-resources slurm_partition=X reaches run jobs too; only GPU runs go to
    cluster.gpu_partition, and only when it is set; a wall-clock run asks SLURM for a node of its own."""
    targets = ("gcca_fig10", "gcca_fig6", "--config", "scale=paper")  # Fig. 10's deep runs are tagged gpu=1 there
    plain = _slurm_dry_run(workdir, *targets, "--default-resources", "slurm_partition=cpu")
    assert {rule for rule, _ in plain} >= {"run", "render_figure"}
    assert all(res.get("slurm_partition") == "cpu" for res in plain.values()), plain
    routed = _slurm_dry_run(workdir, *targets, "cluster={gpu_partition: gpu}", "--default-resources",
                            "slurm_partition=cpu")
    gpu = {key for key, res in routed.items() if key[0] == "run" and res["gpu"] == "1"}
    assert gpu, routed
    for key, res in routed.items():
        assert res.get("slurm_partition") == ("gpu" if key in gpu else "cpu"), (key, res)
    alone = [res for (rule, wc), res in routed.items() if rule == "run" and "experiment=fig6" in wc]
    assert alone and all(res["slurm_extra"] == "--exclusive" for res in alone), routed
    assert all(res.get("slurm_extra", "") == "" for (rule, wc), res in routed.items()
               if rule == "run" and "experiment=fig6" not in wc)


def test_data_jobs_run_on_the_submitting_host_under_slurm(workdir, tmp_path):
    """issue 52: fetching and verification are local rules: through the SLURM executor, with an `sbatch` that refuses
    every submission, the fetch still runs (on this host) and finishes."""
    stub = tmp_path / "bin" / "sbatch"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\necho 'sbatch: this test submits nothing' >&2\nexit 1\n")
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stub.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    # the plugin waits its first status check's delay (40 s) before it stops, even with nothing submitted: 1 s here
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--profile", "workflow/profiles/slurm",
                           "--slurm-init-seconds-before-status-checks", "1",
                           "results/downloads/mimic3_ihm/manifest.json", "--config", "scale=smoke"],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "localrule data_fetch:" in proc.stdout + proc.stderr
    assert (workdir / "results/downloads/mimic3_ihm/manifest.json").exists()


def test_local_limits_never_hold_back_cluster_jobs(workdir):
    """issue 52: the local-machine limits (profiles/default: gpu, machine) are scoped "local", so on a cluster
    Snakemake tallies them per submitted job, not across jobs (a `resources:` limit of the default profile is
    otherwise applied to SLURM jobs too: the workflow profile is loaded beside --profile and wins key by key)."""
    text = snakemake("--print-compilation", cwd=workdir).stdout
    scopes = re.search(r"workflow\.resourcescope\((.*?)\)", text, re.S)
    assert scopes and re.search(r"gpu\s*=\s*['\"]local['\"]", scopes.group(1)) and \
        re.search(r"machine\s*=\s*['\"]local['\"]", scopes.group(1)), scopes
    import yaml

    profile = yaml.safe_load((workdir / "profiles/default/config.yaml").read_text())
    assert set(profile["resources"]) == {"gpu", "machine"} and "cores" not in profile


def test_slurm_plugin_turns_gpu_resource_into_a_gpu_request():
    from types import SimpleNamespace

    from snakemake_executor_plugin_slurm.utils import set_gres_string

    class Resources(dict):
        __getattr__ = dict.get

    job = SimpleNamespace(resources=Resources(gpu=1), name="gpu_rule")
    assert "--gpus=1" in set_gres_string(job)


# ---- the smoke scale, end to end -------------------------------------------------------------------

def test_smoke_all_builds_every_output_with_sidecars(smoke_run):
    registry = Registry.load(smoke_run)
    for p, a, _ in registry.artifacts(scale="smoke"):
        for f in registry.artifact_files(p, a, "smoke").values():
            assert (smoke_run / f).exists(), f
            sc = json.loads((smoke_run / (f + ".prov.json")).read_text())
            for key in ("sha256", "rule", "git", "config", "config_sha256", "inputs", "library_sha256", "versions",
                        "device", "started", "finished", "data", "seeds"):
                assert key in sc, (f, key)
    for f in ("claims.csv", "claims.md", "index.html"):
        assert (smoke_run / "results" / "smoke" / f).exists()
    run_sc = json.loads((smoke_run / "results/smoke/thesis/runs/table5_1/calibrated.csv.prov.json").read_text())
    assert run_sc["config"]["d"] == 200 and run_sc["seeds"] == [0]


def test_smoke_runs_peak_within_their_declared_memory(smoke_run):
    """Each run's measured peak (its sidecar) is within the mem_mb its rule asks a cluster for: the feature net's
    whole-test-set forward once peaked at 3.6 GB against 3,000 declared."""
    registry = Registry.load(smoke_run)
    runs = plan.measured_runs(smoke_run, registry)
    assert len(runs) > 30 and all(m.peak_rss_mb for m in runs)
    assert not plan.memory_shortfalls(registry, runs)


def test_smoke_scorecard_has_every_claim_and_valid_verdicts(smoke_run):
    import pandas as pd

    from fedrepro.scorecard import VERDICTS

    claims = pd.read_csv(smoke_run / "results/smoke/claims.csv")
    assert set(claims["verdict"]) <= set(VERDICTS)
    registry = Registry.load(smoke_run)
    for p in registry.papers:
        built = {a for _, a, _ in registry.artifacts(p, scale="smoke")}
        for c in registry.claims(p):
            rows = claims[claims["claim"].str.startswith(c["id"] + "[") | (claims["claim"] == c["id"])]
            assert not rows.empty, c["id"]
            if c["artifact"] not in built:  # paper-only artifacts (thesis Fig. 3.1) are listed as not-run
                assert set(rows["verdict"]) == {"not-run"}, c["id"]
    index = (smoke_run / "results/smoke/index.html").read_text()
    assert "Table 5.1" in index and "notebooks/table5_1.html" in index


def _edit(path):
    """Change a file's content (Snakemake ignores a bare `touch` whose content hash is unchanged)."""
    path.write_text(path.read_text() + "\n# edited by a test\n")


@contextlib.contextmanager
def _edited(path):
    """`path` edited inside the block, its content restored after (the build is current again: Snakemake compares
    the code's content hashes)."""
    original = path.read_text()
    _edit(path)
    try:
        yield
    finally:
        path.write_text(original)


def test_rerun_is_a_no_op_and_editing_code_reruns_only_its_dependents(smoke_run):
    assert _planned_rules(smoke_run, "all") == {}
    src = smoke_run / "src/fedrepro"
    # the verdicts are judged by the render jobs (the claims CSV and each notebook's "Paper vs ours"); the
    # leaderboard's render runs the same render script, whose import closure holds the scorecard
    with _edited(src / "scorecard/evaluate.py"):
        assert set(_planned_rules(smoke_run, "all")) == {"render_figure", "render_table", "render_leaderboard",
                                                         "scorecard", "all"}
    with _edited(src / "scorecard/pages.py"):      # the pages: only the scorecard side
        assert set(_planned_rules(smoke_run, "all")) == {"scorecard", "all"}
    with _edited(src / "transfer/representation.py"):
        planned = _planned_rules(smoke_run, "all")
        assert set(planned) == {"run", "render_table", "scorecard", "all"}
        assert planned["run"] == 2  # table5_1's two configurations, nothing else
    # a loader-side module (not used to prepare data) must not re-prepare every dataset and so rerun everything
    with _edited(src / "data/imagefolder.py"):
        planned = _planned_rules(smoke_run, "all")
        assert "data_prepare" not in planned and "run" in planned, planned
    assert _planned_rules(smoke_run, "all") == {}


def test_editing_the_notebook_helpers_reruns_every_render_and_no_run(smoke_run):
    assert _planned_rules(smoke_run, "all") == {}
    helper = smoke_run / "src/fedrepro/artifact.py"
    original = helper.read_text()
    _edit(helper)
    try:
        planned = _planned_rules(smoke_run, "all")
        registry = Registry.load(smoke_run)
        renders = planned.get("render_figure", 0) + planned.get("render_table", 0)
        assert renders == len(list(registry.artifacts(scale="smoke"))) and "run" not in planned, planned
    finally:
        helper.write_text(original)


def test_one_run_rule(workdir):
    """One registry-driven run rule; its only other forms are a split run's parts (the same rule, `use rule run as
    run_part`), a part's chained blocks (fedrepro.checkpoint) and the parts' merge (fedrepro.workflow.split), never
    a rule per paper or experiment."""
    rules = snakemake("--list-rules", cwd=workdir).stdout.split()
    assert "run" in rules
    assert sorted(r for r in rules if r.endswith("_run") or r.startswith("run_")) == [
        "run_block", "run_last_block", "run_merge", "run_part"]


def test_executed_notebooks_show_their_figures(smoke_run):
    registry = Registry.load(smoke_run)
    figures = [(p, a) for p, a, e in registry.artifacts(scale="smoke") if e["kind"] == "figure"]
    assert figures
    for paper, artifact in figures:
        files = registry.artifact_files(paper, artifact, "smoke")
        assert "image/png" in (smoke_run / files["ipynb"]).read_text(), files["ipynb"]
        assert "<img" in (smoke_run / files["html"]).read_text(), files["html"]


def _injected_parameters(path) -> str:
    cells = json.loads(path.read_text())["cells"]
    return "".join(next(c for c in cells if "injected-parameters" in c["metadata"].get("tags", []))["source"])


def test_executed_notebooks_name_no_machine_path_and_the_configuration_they_show(smoke_run):
    """The parameters papermill injects are relative to the repository root, and `configuration` is one the
    artifact's runs were made under (an artifact run only as-stated does not claim to show `calibrated`)."""
    from fedrepro.scorecard.evaluate import artifact_configurations

    registry = Registry.load(smoke_run)
    shown = {}
    for paper, artifact, entry in registry.artifacts(scale="smoke"):
        notebook = smoke_run / registry.artifact_files(paper, artifact, "smoke")["ipynb"]
        assert str(smoke_run) not in notebook.read_text(), notebook
        params = _injected_parameters(notebook)
        assert 'root = "."' in params, params
        configuration = re.search(r'^configuration = "(.*)"$', params, re.M).group(1)
        ran = artifact_configurations(registry, paper, artifact, "smoke")
        derived = (entry.get("parameters") or {}).get("derived") or {}
        assert configuration in ran or configuration in derived, (notebook, configuration, ran)
        shown[(paper, artifact)] = configuration
    assert "as-stated" in shown.values() and "calibrated" in shown.values(), shown


def test_a_notebook_error_fails_the_render_with_the_cells_traceback(smoke_run):
    notebook = smoke_run / "notebooks/thesis/table5_1.py"
    original = notebook.read_text()
    notebook.write_text(original + '\n# %%\nraise ValueError("a deliberate error in the last cell")\n')
    try:
        proc = snakemake("--cores", "1", "thesis_table5_1", "--config", "scale=smoke", cwd=smoke_run, check=False)
        assert proc.returncode != 0
        log = (smoke_run / "results/smoke/thesis/logs/render/table5_1.log").read_text()
        assert "PapermillExecutionError" in log and "ValueError: a deliberate error in the last cell" in log, log
        assert 'raise ValueError("a deliberate error in the last cell")' in log, log   # the cell's traceback
    finally:
        notebook.write_text(original)
    snakemake("--cores", "2", "thesis_table5_1", "--config", "scale=smoke", cwd=smoke_run)  # as the build left it


def test_snakemake_report_as_the_readme_writes_it(smoke_run):
    snakemake("--report", "results/report.html", "--config", "scale=smoke", cwd=smoke_run, timeout=600)
    text = (smoke_run / "results/report.html").read_text(errors="replace")
    assert "Table 5.1" in text or "table5_1" in text


def _audit(wd, target):
    return subprocess.run([sys.executable, "-m", "fedrepro", "audit", target, "--scale", "smoke"], cwd=wd,
                          capture_output=True, text=True)


def test_audit_passes_then_detects_a_tampered_input_and_output(smoke_run):
    ok = _audit(smoke_run, "thesis:table5.1")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "runs/table5_1/calibrated.csv" in ok.stdout
    assert _audit(smoke_run, "thesis:C5.2").returncode == 0

    run_csv = smoke_run / "results/smoke/thesis/runs/table5_1/calibrated.csv"
    original = run_csv.read_bytes()
    run_csv.write_bytes(original.replace(b"phase1", b"phase9", 1))
    try:
        bad = _audit(smoke_run, "thesis:table5.1")
        assert bad.returncode == 1 and "calibrated.csv" in bad.stderr
    finally:
        run_csv.write_bytes(original)

    table = smoke_run / "results/smoke/thesis/tables/table5_1.md"
    original = table.read_bytes()
    table.write_bytes(original + b"\n")
    try:
        bad = _audit(smoke_run, "thesis:table5_1")
        assert bad.returncode == 1 and "table5_1.md" in bad.stderr
    finally:
        table.write_bytes(original)
    assert _audit(smoke_run, "thesis_table5_1").returncode == 0


def test_audit_unknown_target_is_a_clear_error(smoke_run):
    proc = _audit(smoke_run, "thesis:table9.9")
    assert proc.returncode == 2 and "python -m fedrepro list" in proc.stderr


def _job_intervals(wd):
    """{log path: (start, end)} of every job that logged 'rule ... started' and 'rule ... finished' (data, runs,
    renders), from the log lines' own timestamps."""
    from datetime import datetime

    def stamp(line):
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")

    out = {}
    for log in (wd / "results").glob("**/*.log"):
        lines = log.read_text().splitlines()
        start = [stamp(x) for x in lines if re.match(r"^\S+ \S+ INFO rule \w+ started", x)]
        end = [stamp(x) for x in lines if re.match(r"^\S+ \S+ INFO rule \w+ finished", x)]
        if start and end:
            out[log.relative_to(wd).as_posix()] = (start[-1], end[-1])
    return out


def test_wall_clock_runs_ran_alone(smoke_run):
    """A run the registry marks `alone: true` (gcca Figs. 6-7, timed by the wall clock) overlapped no other job of
    the smoke build: it takes every `machine` slot, a global limit common.smk sets by default."""
    reg = Registry.load(smoke_run)
    alone = [f"results/smoke/{p}/logs/runs/{e}/{c}.log" for p, e, c in plan.target_runs(reg, "all", "smoke")
             if reg.run_spec(p, e, "smoke")["alone"]]
    assert alone, "the smoke build has wall-clock runs (gcca Figs. 6-7)"
    jobs = _job_intervals(smoke_run)
    assert len(jobs) > 50
    for log in alone:
        start, end = jobs[log]
        beside = [other for other, (s, e) in jobs.items() if other != log and s < end and e > start]
        assert not beside, f"{log} ran beside {beside}"


@contextlib.contextmanager
def _outputs_kept(paths):
    """Copies of these run outputs and their sidecars, put back with their times afterwards (a test that reruns
    them leaves the smoke build as it was): yields {output: its copy}."""
    saved = {}
    for csv in paths:
        for f in (csv, csv.with_name(csv.name + ".prov.json")):
            saved[f] = f.with_name(f.name + ".kept")
            shutil.copy2(f, saved[f])
    try:
        yield saved
    finally:
        for f, copy in saved.items():
            shutil.copy2(copy, f)
            copy.unlink()


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or shutil.which("taskset") is None,
                    reason="needs os.sched_getaffinity and taskset (Linux)")
def test_a_local_build_runs_no_more_jobs_at_once_than_its_cores(smoke_run):
    """The README's `--cores 8`, in a process allowed one core (taskset), runs its jobs one after another:
    common.smk's default `host_cores` limit is the cores the process may use, each job holding its threads (eight
    one-thread jobs on a two-core machine share its caches and memory bandwidth for nothing)."""
    runs = [f"results/smoke/thesis/runs/{e}/as-stated.csv" for e in ("fig4_1", "fig4_2", "fig3_4")]
    with _outputs_kept([smoke_run / csv for csv in runs]):
        proc = subprocess.run(["taskset", "-c", str(min(os.sched_getaffinity(0))), sys.executable, "-m", "snakemake",
                               "--cores", "8", "-f", *runs, "--config", "scale=smoke"],
                              cwd=smoke_run, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        jobs = _job_intervals(smoke_run)
        ran = sorted(jobs[csv.replace("/runs/", "/logs/runs/").replace(".csv", ".log")] for csv in runs)
        assert len(ran) == 3
        for (_, end), (start, _) in zip(ran, ran[1:]):
            assert start >= end, f"two jobs ran at once on one core: {ran}"
    assert _planned_rules(smoke_run, *runs) == {}      # the shared build's runs are as they were

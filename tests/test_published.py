"""Published results (`published/<scale>/`): what `python -m fedrepro publish` copies, what `audit --published`
says of it, and the README's status table, which is `python -m fedrepro status` over what is committed."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from conftest import copy_workflow, snakemake

from fedrepro.cli import main, published_status_table
from fedrepro.io import without_timings
from fedrepro.provenance.published import (
    PublishError,
    audit_published,
    publish,
    published_claims_files,
    stale_artifacts,
)
from fedrepro.registry.papers import Registry

STATUS = re.compile(r"<!-- status: python -m fedrepro status -->\n(.*?)\n<!-- /status -->", re.S)


def test_the_readme_status_table_is_status_over_the_published_results(repo):
    block = STATUS.search((repo / "README.md").read_text())
    assert block, "README.md: the status table between <!-- status: ... --> and <!-- /status --> is missing"
    assert block.group(1).strip() == published_status_table(repo, Registry.load(repo)), (
        "README.md's status table is not `python -m fedrepro status` over published/: paste its output")


# an absolute path under a machine's usual roots (not a URL's path: no scheme, host or dot before it)
MACHINE_PATH = re.compile(r"(?<![\w:/.])/(?:tmp|home|root|work|Users|var|opt|scratch|mnt|srv)/[\w.-]+")


def test_no_published_file_names_a_machine_path(repo):
    """Committed pages, tables and sidecars are read on other machines: none may name the build machine's paths
    (an executed notebook once showed a warning with the clone's absolute path)."""
    hits = []
    for path in sorted((repo / "published").rglob("*")):
        if path.suffix in (".html", ".md", ".csv", ".json") and path.is_file():
            found = MACHINE_PATH.search(path.read_text(errors="replace"))
            if found:
                hits.append(f"{path.relative_to(repo)}: {found.group(0)}")
    assert not hits, hits


def test_publish_refuses_a_file_that_names_the_machine_path(tmp_path):
    from fedrepro.provenance.published import _names_no_machine_path

    (tmp_path / "page.html").write_text(f"<pre>{tmp_path.resolve()}/src/fedrepro/artifact.py:113: DtypeWarning</pre>")
    (tmp_path / "clean.html").write_text("<pre>src/fedrepro/artifact.py:113</pre>")
    _names_no_machine_path(tmp_path, "clean.html")
    with pytest.raises(PublishError, match="names this machine's path"):
        _names_no_machine_path(tmp_path, "page.html")


def test_every_published_chain_is_intact_and_both_scales_are_there(repo):
    results = audit_published(repo)
    assert {r.path.split("/")[1] for r in results} >= {"quick", "paper"}
    broken = [f"{r.path}: {r.state}" for r in results if r.problems]
    assert not broken, broken
    assert published_claims_files("paper", repo) and published_claims_files("quick", repo)


@pytest.fixture
def published_smoke(smoke_run, tmp_path):
    """A copy of the smoke build (code, registries, notebooks, results/smoke without data) with smoke published."""
    wd = tmp_path / "wf"
    results = smoke_run / "results"

    def skip(folder, names):    # prepared data and raw downloads are never published
        big = {"data", "downloads"} if Path(folder) == results else set()
        return [n for n in names if n in big or n in (".snakemake", "__pycache__")]

    shutil.copytree(smoke_run, wd, ignore=skip)
    registry = Registry.load(wd)
    return wd, registry, publish(registry, "smoke", wd)


def test_publish_copies_each_complete_artifact_with_its_runs_and_sidecars(published_smoke):
    wd, registry, written = published_smoke
    names = {p.as_posix() for p in written}
    assert "published/smoke/gcca/figures/fig3.png" in names
    assert "published/smoke/gcca/runs/fig3/calibrated.csv" in names
    assert "published/smoke/claims.csv" in names
    assert not [n for n in names if n.endswith((".ipynb", ".pdf", ".npz"))]   # large intermediates stay out
    for n in names:
        assert (wd / f"{n}.prov.json").is_file(), n
    assert {r.state for r in audit_published(wd)} == {"current"}


def test_audit_names_the_module_changed_since_and_only_where_it_was_imported(published_smoke):
    wd, _, _ = published_smoke
    with open(wd / "src/fedrepro/gcca/experiments.py", "a") as f:
        f.write("\n# edited\n")
    states = {r.path: r for r in audit_published(wd)}
    assert states["published/smoke/gcca/runs/fig3/calibrated.csv"].stale == ["src/fedrepro/gcca/experiments.py"]
    assert states["published/smoke/thesis/runs/table5_1/as-stated.csv"].state == "current"
    assert ("smoke", "gcca", "fig3") in stale_artifacts(list(states.values()), wd)
    assert ("smoke", "thesis", "table5_1") not in stale_artifacts(list(states.values()), wd)


def test_audit_breaks_the_chain_at_a_changed_published_file(published_smoke):
    wd, _, _ = published_smoke
    run = wd / "published/smoke/gcca/runs/fig3/calibrated.csv"
    run.write_text(run.read_text() + "0\n")
    states = {r.path: r for r in audit_published(wd)}
    assert states[run.relative_to(wd).as_posix()].state.startswith("broken: bytes differ")
    figure = states["published/smoke/gcca/figures/fig3.csv"]
    assert any("results/smoke/gcca/runs/fig3/calibrated.csv" in p for p in figure.problems)


def test_publish_refuses_a_result_whose_bytes_are_not_its_sidecars(published_smoke):
    wd, registry, _ = published_smoke
    (wd / "results/smoke/gcca/figures/fig3.csv").write_text("x\n")
    with pytest.raises(PublishError, match=r"results/smoke/gcca/figures/fig3.csv: its bytes .* rebuild it"):
        publish(registry, "smoke", wd)


def test_status_without_published_results_says_how_to_make_them(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("fedrepro.cli.repo_root", lambda: str(copy_workflow(tmp_path / "wf")))
    assert main(["status"]) == 2
    assert "python -m fedrepro publish --scale quick" in capsys.readouterr().err


@pytest.mark.slow
def test_a_published_paper_scale_run_is_rederived_from_scratch(repo, tmp_path):
    """CI re-derives one cheap published paper-scale run and finds the published numbers (timings aside)."""
    target = "paper/thesis/runs/fig4_2/as-stated.csv"   # the paper's T = 1000 iterations: about 10 CPU s
    wd = copy_workflow(tmp_path / "wf")
    snakemake("--cores", "2", f"results/{target}", "--config", "scale=paper", cwd=wd, timeout=900)
    ours = without_timings(pd.read_csv(wd / "results" / target))
    published = without_timings(pd.read_csv(repo / "published" / target))
    pd.testing.assert_frame_equal(ours, published, check_exact=False, rtol=1e-10)

"""A changed file is never built upon: verify_inputs before a job reads, and audit over the whole chain."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from fedrepro.provenance import InputDrift, find_drift, is_generated, sha256_file, verify_inputs, write_sidecars
from fedrepro.provenance.audit import audit_paths
from fedrepro.workflow.jobs import rule_run

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def chain(tmp_path, monkeypatch):
    """raw download -> manifest -> prepared data -> two runs -> artifact csv -> claims csv, with sidecars."""
    monkeypatch.chdir(tmp_path)

    def make(path, text, rule, inputs=()):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
        write_sidecars([path], rule=rule, inputs=inputs)

    raw = "results/downloads/toy/labels.bin"
    Path(raw).parent.mkdir(parents=True)
    Path(raw).write_bytes(bytes(range(100)))
    make("results/downloads/toy/manifest.json", '{"status": "real"}', "data_fetch", [raw])
    make("results/data/toy/toy.npz", "arrays", "data_prepare", ["results/downloads/toy/manifest.json"])
    make("results/quick/p/runs/e/a.csv", "x\n1\n", "p_e_run", ["results/data/toy/toy.npz"])
    make("results/quick/p/runs/e/b.csv", "x\n2\n", "p_e_run", ["results/data/toy/toy.npz"])
    make("results/quick/p/figures/f.csv", "x\n1\n2\n", "render_notebook",
         ["results/quick/p/runs/e/a.csv", "results/quick/p/runs/e/b.csv"])
    make("results/quick/p/claims/f.csv", "claim\n", "render_figure", ["results/quick/p/figures/f.csv"])
    return tmp_path


ROOTS = ["results/quick/p/figures/f.csv", "results/quick/p/claims/f.csv"]


def test_generated_means_under_results_except_raw_downloads():
    assert is_generated("results/quick/p/runs/e/a.csv") and is_generated("results/downloads/toy/manifest.json")
    assert not is_generated("results/downloads/toy/labels.bin") and not is_generated("src/fedrepro/io.py")
    assert not is_generated("results/quick/p/runs/e/a.csv.prov.json")


def test_verify_inputs_names_file_hashes_and_rebuild_command(chain):
    verify_inputs(["results/quick/p/runs/e/a.csv", "config/papers/p.yaml", "results/downloads/toy/labels.bin"])
    run_csv = Path("results/quick/p/runs/e/a.csv")
    recorded = sha256_file(run_csv)
    run_csv.write_text("x\n9\n")
    with pytest.raises(InputDrift) as err:
        verify_inputs([["results/quick/p/runs/e/a.csv", "results/quick/p/runs/e/b.csv"]])  # nested, like sm.input
    msg = str(err.value)
    assert recorded in msg and sha256_file(run_csv) in msg and "b.csv" not in msg
    assert "snakemake --cores 1 results/quick/p/runs/e/a.csv --forcerun p_e_run" in msg
    assert "delete results/quick/p/runs/e/a.csv" in msg


def test_generated_input_without_sidecar_is_refused(chain):
    os.remove("results/data/toy/toy.npz.prov.json")
    with pytest.raises(InputDrift, match="toy.npz: a generated file without its sidecar"):
        verify_inputs(["results/data/toy/toy.npz"])


def test_rule_run_checks_its_inputs_before_the_job_body(chain, tmp_path):
    Path("results/quick/p/runs/e/b.csv").write_text("tampered\n")
    sm = SimpleNamespace(log=[str(tmp_path / "job.log")], threads=1, rule="render_notebook", config={})
    ran = []
    with pytest.raises(InputDrift):
        with rule_run(sm, inputs=["results/quick/p/runs/e/a.csv", "results/quick/p/runs/e/b.csv"]):
            ran.append(True)
    assert not ran and "b.csv" in (tmp_path / "job.log").read_text()


SNAKEFILE = """
from fedrepro.provenance import write_sidecars

rule all:                       # the default target: a repair command must not fall back to it
    input: "results/other.txt"

rule make_other:
    output: "results/other.txt"
    shell: "echo other > {output}"

rule make_run:
    output: "results/quick/p/runs/e/a.csv"
    run:
        open(output[0], "w").write("x\\n1\\n")
        write_sidecars(output, rule="make_run")

rule make_figure:
    input: "results/quick/p/runs/e/a.csv"
    output: "results/quick/p/figures/f.csv"
    run:
        open(output[0], "w").write(open(input[0]).read() + "2\\n")
        write_sidecars(output, rule="make_figure", inputs=input)
"""


@pytest.fixture
def scratch_workflow(tmp_path):
    """A two-rule workflow in tmp_path, built; `run(args)` calls Snakemake there with this checkout's library."""
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}

    def run(args):
        return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    assert run(["--cores", "1", "results/quick/p/figures/f.csv"]).returncode == 0
    return tmp_path, run


@pytest.mark.slow  # several seconds: kept out of the fast set
def test_the_printed_rebuild_command_repairs_the_file(scratch_workflow):
    """Apply the advice of the error message literally."""
    wd, run = scratch_workflow
    target = wd / "results/quick/p/runs/e/a.csv"
    target.write_text("x\n7\n")
    again = run(["--cores", "1", "results/quick/p/runs/e/a.csv"])
    assert "Nothing to be done" in again.stdout + again.stderr       # why the check is needed
    with pytest.raises(InputDrift) as err:
        verify_inputs(["results/quick/p/runs/e/a.csv"], root=wd)
    command = shlex.split(str(err.value).split("`")[1])
    assert command[0] == "snakemake"
    proc = run(command[1:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert target.read_text() == "x\n1\n"
    assert not (wd / "results/other.txt").exists()                   # only what was asked for was built
    verify_inputs(["results/quick/p/runs/e/a.csv"], root=wd)


@pytest.mark.slow  # several seconds: kept out of the fast set
def test_the_audit_repair_command_rebuilds_the_chain(scratch_workflow):
    wd, run = scratch_workflow
    (wd / "results/quick/p/runs/e/a.csv").write_text("x\n7\n")
    report = audit_paths(["results/quick/p/figures/f.csv"], root=wd, scale="quick")
    assert not report.ok and len(report.repair) == 1
    proc = run(shlex.split(report.repair[0])[1:])                   # literally what audit printed
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (wd / "results/quick/p/figures/f.csv").read_text() == "x\n1\n2\n"
    assert not (wd / "results/other.txt").exists()
    assert audit_paths(["results/quick/p/figures/f.csv"], root=wd).ok


# ---- audit -----------------------------------------------------------------------------------------

def test_audit_passes_on_an_intact_chain_and_reaches_the_raw_download(chain):
    report = audit_paths(ROOTS)
    assert report.ok, report.drift
    assert any("results/downloads/toy/labels.bin" in line and "raw input" in line for line in report.lines)
    assert report.files_checked == 7                        # each file hashed once: toy.npz feeds two runs


def test_audit_reports_a_drift_once_and_marks_both_directions(chain):
    Path("results/data/toy/toy.npz").write_text("tampered")      # read by two runs
    report = audit_paths(ROOTS, scale="quick")
    assert len(report.drift) == 1 and report.drift[0].startswith("results/data/toy/toy.npz:")
    marks = {line.split()[1]: line.split()[0] for line in report.lines if line.split()[0] in "✓✗⚠"}
    assert marks["results/data/toy/toy.npz"] == "✗"
    for above in ("results/quick/p/runs/e/a.csv", "results/quick/p/runs/e/b.csv", *ROOTS):
        assert marks[above] == "⚠", above                       # built on the drifted file
    for below in ("results/downloads/toy/manifest.json", "results/downloads/toy/labels.bin"):
        assert marks[below] == "⚠", below                       # its inputs
    assert sum("! " in line for line in report.lines) == 1       # once, though two runs recorded it
    assert report.repair == ["snakemake --cores 1 results/quick/p/figures/f.csv results/quick/p/claims/f.csv "
                             "--forcerun data_prepare --config scale=quick"]


def test_audit_fails_on_a_generated_file_whose_sidecar_was_deleted(chain):
    os.remove("results/data/toy/toy.npz.prov.json")
    report = audit_paths(ROOTS)
    assert not report.ok and "toy.npz: a generated file without its sidecar" in report.drift[0]
    assert report.repair[0] == "rm results/data/toy/toy.npz   # generated files of unknown origin"
    assert "--forcerun p_e_run" in report.repair[-1]


def test_audit_catches_a_flipped_byte_in_a_raw_download(chain):
    raw = Path("results/downloads/toy/labels.bin")
    data = bytearray(raw.read_bytes())
    data[5] ^= 1
    raw.write_bytes(bytes(data))
    report = audit_paths(ROOTS)
    assert [d.split(":")[0] for d in report.drift] == ["results/downloads/toy/labels.bin"]
    assert report.repair[-1].endswith("--forcerun data_fetch")


def test_audit_catches_a_rewritten_sidecar_chain(chain):
    """The issue's case: a run CSV changed and its sidecar rewritten to match; the figure recorded the old one."""
    run_csv = "results/quick/p/runs/e/a.csv"
    Path(run_csv).write_text("x\n5\n")
    write_sidecars([run_csv], rule="p_e_run", inputs=["results/data/toy/toy.npz"])
    assert find_drift([run_csv]) == []                           # consistent with itself...
    report = audit_paths(ROOTS)                                  # ...but not with what the figure was made from
    assert [d.split(":")[0] for d in report.drift] == [run_csv]
    assert "sidecar was rewritten" in report.drift[0] and "--forcerun p_e_run" in report.repair[-1]
    json.loads(Path(run_csv + ".prov.json").read_text())


def test_cli_audit_ends_with_the_repair_command(chain, capsys, monkeypatch):
    from fedrepro import cli

    shutil.copytree(REPO / "config", chain / "config")
    shutil.copytree(REPO / "workflow" / "schemas", chain / "workflow" / "schemas")
    shutil.copytree(REPO / "notebooks", chain / "notebooks")
    (chain / "src").symlink_to(REPO / "src")                     # the registry checks its runners exist
    monkeypatch.setattr(cli, "repo_root", lambda: chain)
    Path("results/quick/p/runs/e/b.csv").write_text("tampered\n")
    assert cli.main(["audit", "results/quick/p/claims/f.csv", "--scale", "quick"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].strip() == ("snakemake --cores 1 results/quick/p/claims/f.csv --forcerun p_e_run "
                               "--config scale=quick")


@pytest.mark.slow  # several seconds: kept out of the fast set
def test_cli_advice_for_an_unbuilt_artifact_builds_it(workdir):
    """`audit` of an artifact not built yet (here: one not built at the quick scale) prints a command; a dry run
    of exactly that command resolves."""
    import re
    import shlex

    env = {**os.environ, "PYTHONPATH": str(workdir / "src")}
    proc = subprocess.run([sys.executable, "-m", "fedrepro", "audit", "thesis:fig3.1", "--scale", "quick"],
                          cwd=workdir, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "built only at scale(s) smoke, paper" in proc.stderr, proc.stderr
    command = shlex.split(re.search(r"run `([^`]*)`", proc.stderr).group(1))
    assert command[0] == "snakemake"
    dry = subprocess.run([sys.executable, "-m", *command, "-n"], cwd=workdir, env=env, capture_output=True,
                         text=True, timeout=600)
    assert dry.returncode == 0 and "thesis_fig3_1" in dry.stdout + dry.stderr, dry.stderr[-2000:]


def test_a_remembered_digest_is_never_reused_for_changed_bytes(tmp_path):
    """sha256_file remembers digests within a process (a job hashes each input twice), keyed by the file's change
    time: bytes changed in place, at the same size and with the modification time set back, are hashed anew."""
    import hashlib
    import time

    from fedrepro.provenance import hashing

    f = tmp_path / "data.npz"
    f.write_bytes(b"a" * 1000)
    time.sleep(hashing.STABLE_NS / 1e9 + 0.1)           # changed long enough ago to be remembered
    first = sha256_file(f)
    assert any(v == first for v in hashing._DIGESTS.values())
    st = f.stat()
    with open(f, "r+b") as fh:                           # same size, same mtime: only st_ctime moves
        fh.write(b"b")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_mtime_ns == st.st_mtime_ns and f.stat().st_size == st.st_size
    assert sha256_file(f) == hashlib.sha256(b"b" + b"a" * 999).hexdigest() != first
    young = tmp_path / "young.npz"                       # changed just now: not remembered
    young.write_bytes(b"c")
    sha256_file(young)
    assert hashlib.sha256(b"c").hexdigest() not in hashing._DIGESTS.values()


def test_sidecars_record_the_installed_versions_each_as_its_own_copy(tmp_path):
    """The versions a sidecar records are importlib.metadata's (looked up once per process), and a caller that
    edits its record does not change the next sidecar's."""
    import importlib.metadata
    import platform

    from fedrepro.provenance.sidecar import package_versions

    first = package_versions()
    assert first["python"] == platform.python_version()
    assert first["numpy"] == importlib.metadata.version("numpy")
    assert first["torch"] == importlib.metadata.version("torch")
    first["numpy"] = "edited"
    out = tmp_path / "a.csv"
    out.write_text("x\n1\n")
    write_sidecars([out], rule="test", config={}, inputs=[])
    recorded = json.loads((tmp_path / "a.csv.prov.json").read_text())["versions"]
    assert recorded["numpy"] == importlib.metadata.version("numpy")


# ---- audit of a claim, bad arguments ---------------------------------------------------------------------

@pytest.fixture
def cli_root(chain, monkeypatch):
    from fedrepro import cli

    shutil.copytree(REPO / "config", chain / "config")
    shutil.copytree(REPO / "workflow" / "schemas", chain / "workflow" / "schemas")
    shutil.copytree(REPO / "notebooks", chain / "notebooks")
    (chain / "src").symlink_to(REPO / "src")
    monkeypatch.setattr(cli, "repo_root", lambda: chain)
    return chain


def test_audit_of_a_claim_starts_with_the_claim_and_walks_only_its_runs(cli_root, capsys):
    """cvfl:F3.cifar10 reads Fig. 3's CIFAR-10 runs: the MIMIC-III and ModelNet10 runs of the same figure are not
    re-hashed (nor shown), and the claim's row of the claims CSV comes first."""
    from fedrepro import cli
    from fedrepro.registry.papers import Registry

    registry = Registry.load(cli_root)
    runs = [f for e in registry.artifact("cvfl", "fig3")["experiments"] for f in registry.run_outputs("cvfl", e, "quick")]
    assert any("/cifar10/" in r for r in runs) and any("/mimic/" in r for r in runs)
    for r in runs:
        Path(r).parent.mkdir(parents=True, exist_ok=True)
        Path(r).write_text(f"run {r}\n")
        write_sidecars([r], rule="run", inputs=["results/data/toy/toy.npz"])
    figure = "results/quick/cvfl/figures/fig3.csv"
    Path(figure).parent.mkdir(parents=True, exist_ok=True)
    Path(figure).write_text("x\n")
    write_sidecars([figure], rule="render_figure", inputs=runs)
    claims = "results/quick/cvfl/claims/fig3.csv"
    Path(claims).parent.mkdir(parents=True, exist_ok=True)
    Path(claims).write_text("paper,claim,artifact,statement,paper_value,our_value,verdict,configuration,data,scale,band,"
                            "detail\ncvfl,F3.cifar10,fig3,s,> 90% savings,98.5; 97.0; 99.1,reproduced,as-stated,"
                            "real-reencoded,quick,holds,\ncvfl,F3.mimic,fig3,s,x,1,not-comparable,as-stated,stand-in,"
                            "quick,,\n")
    write_sidecars([claims], rule="render_figure", inputs=[figure])
    assert cli.main(["audit", "cvfl:F3.cifar10", "--scale", "quick"]) == 0
    out = capsys.readouterr().out
    head = out.split("Audit of")[0]
    assert "Claim cvfl:F3.cifar10" in head and "Fig. 3, CIFAR-10 panel" in head
    assert "dataset == 'cifar10'" in head and "98.5; 97.0; 99.1" in head and "reproduced" in head
    assert "real-reencoded" in head and "as-stated" in head and "F3.mimic" not in head
    tree = out.split("Audit of", 1)[1]
    assert all(("/cifar10/" in r) == (r in tree.split("note:")[0]) for r in runs), tree


def test_audit_suggests_close_ids_and_refuses_a_path_outside_results(cli_root, capsys):
    from fedrepro import cli

    assert cli.main(["audit", "thesis:table5.l"]) == 2
    err = capsys.readouterr().err
    assert "did you mean" in err and "thesis:table5_1" in err, err
    assert cli.main(["audit", "cvfl:F3.cifar1O"]) == 2
    assert "cvfl:F3.cifar10" in capsys.readouterr().err
    assert cli.main(["audit", "config/config.yaml"]) == 2
    err = capsys.readouterr().err
    assert "not under results/" in err, err

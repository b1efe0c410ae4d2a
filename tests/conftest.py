"""Shared fixtures: the repository root and a private copy of the workflow to run Snakemake in; every test that runs
Snakemake is marked `slow` here, so `pytest -m "not slow"` is the fast inner loop."""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKFLOW_PARTS = ("Snakefile", "workflow", "profiles", "config", "notebooks", "src", "docs", "environment.yml")


def copy_workflow(dest: Path) -> Path:
    """Copy what a Snakemake run reads into `dest` (results/ and caches excluded)."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in WORKFLOW_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dest / part)
    return dest


def snakemake(*args: str, cwd: Path, check: bool = True, timeout: int = 1800) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module's tests (``pytestmark = pytest.mark.usefixtures("one_torch_thread")``):
    ResNet-18s and tiny tensors on a shared 2-core machine, where a second thread spinning on a busy core is many
    times slower."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture
def workdir(tmp_path) -> Path:
    return copy_workflow(tmp_path / "wf")


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """One end-to-end run of `all` at smoke scale, shared by the tests that inspect its outputs."""
    wd = copy_workflow(tmp_path_factory.mktemp("smoke") / "wf")
    snakemake("--cores", "2", "all", "--config", "scale=smoke", cwd=wd)
    return wd


# A test runs Snakemake when it uses the smoke build, submits to the test cluster (tests/cluster), or calls Snakemake
# (directly or through a helper of its module)
_RUNS_SNAKEMAKE = re.compile(r"\bsnakemake\(|\"-m\", \"snakemake\"|\bsnakemake_cmd\(")


def _calls_snakemake(func, depth: int = 1) -> bool:
    try:
        if _RUNS_SNAKEMAKE.search(inspect.getsource(func)):
            return True
    except (OSError, TypeError):
        return False
    if depth == 0:
        return False
    helpers = [func.__globals__.get(name) for name in func.__code__.co_names]
    return any(inspect.isfunction(h) and h.__module__ == func.__module__ and _calls_snakemake(h, depth - 1)
               for h in helpers)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        func = getattr(item, "function", None)
        shares_smoke = "smoke_run" in getattr(item, "fixturenames", ())
        builds = shares_smoke or item.get_closest_marker("cluster")
        if builds or (func is not None and _calls_snakemake(func)):
            item.add_marker(pytest.mark.slow)
        # with pytest-xdist (`-n N --dist loadgroup`): one worker builds the smoke fixture and serves every test that
        # reads it, one holds the test cluster (tests/test_constraints.py checks that the installed pair applies them)
        if shares_smoke:
            item.add_marker(pytest.mark.xdist_group("smoke"))
        elif item.get_closest_marker("cluster"):
            item.add_marker(pytest.mark.xdist_group("cluster"))

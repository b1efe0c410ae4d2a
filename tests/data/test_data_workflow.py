"""The `data` target resolves at every scale (a dry run; nothing is downloaded)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from loopback import REPO


def snakemake_cmd():
    exe = Path(sys.executable).with_name("snakemake")
    return [str(exe)] if exe.exists() else ([shutil.which("snakemake")] if shutil.which("snakemake") else None)


@pytest.mark.parametrize("scale", ["smoke", "quick", "paper"])
def test_data_target_dry_run(scale, tmp_path):
    cmd = snakemake_cmd()
    if cmd is None:
        pytest.skip("snakemake not installed")
    res = subprocess.run(cmd + ["-n", "data", "--config", f"scale={scale}", "--directory", str(REPO), "-q"],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert res.returncode == 0, res.stderr[-2000:]

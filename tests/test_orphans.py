"""A job whose Snakemake is killed with SIGKILL stops instead of writing its outputs."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")

# the "job": watches its starter, then writes its output after 3 s (a job still running when Snakemake died)
JOB = """
import sys, time
from fedrepro.workflow.orphans import exit_with_parent
exit_with_parent()
open(sys.argv[1] + ".started", "w").write("watching")
time.sleep(3)
open(sys.argv[1], "w").write("written by an orphan")
"""

# the "Snakemake": starts the job through a shell, as Snakemake does, prints the job's pid, then waits
STARTER = """
import subprocess, sys, time
p = subprocess.Popen(["bash", "-c", "sleep 0; " + " ".join(sys.argv[1:])])
print(p.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.slow  # several seconds: kept out of the fast set
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_job_stops_when_its_starter_is_killed(tmp_path):
    out = tmp_path / "output.txt"
    (tmp_path / "job.py").write_text(JOB)
    env = {**os.environ, "PYTHONPATH": SRC}
    starter = subprocess.Popen([sys.executable, "-c", STARTER, sys.executable, str(tmp_path / "job.py"), str(out)],
                               stdout=subprocess.PIPE, text=True, env=env)
    shell_pid = int(starter.stdout.readline())
    time.sleep(1.0)                                  # the job is running and watching
    starter.send_signal(signal.SIGKILL)
    starter.wait()
    time.sleep(4.5)                                  # past the moment the job would have written
    assert Path(f"{out}.started").exists(), "the job never ran (an import failed?): the test proves nothing"
    assert not out.exists()
    try:
        os.kill(shell_pid, signal.SIGKILL)           # the shell, orphaned by the kill, is ours to clean up
    except ProcessLookupError:
        pass


@pytest.mark.slow  # several seconds: kept out of the fast set
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_job_runs_to_its_end_while_its_starter_lives(tmp_path):
    out = tmp_path / "output.txt"
    (tmp_path / "job.py").write_text(JOB)
    res = subprocess.run(["bash", "-c", f"sleep 0; {sys.executable} {tmp_path / 'job.py'} {out}"],
                         env={**os.environ, "PYTHONPATH": SRC}, timeout=60)
    assert res.returncode == 0 and out.read_text() == "written by an orphan"

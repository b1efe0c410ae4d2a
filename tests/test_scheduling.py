"""The local build's job selection: priority order with EASY backfilling (fedrepro.scheduling), and the Snakemake
scheduler plugin that applies it (`scheduler: fedrepro-backfill` in the workflow profile)."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest

from fedrepro.scheduling import Candidate, Running, reservation, select


def job(key, priority, cores=1, seconds=5.0):
    return Candidate(key, priority, {"_cores": cores}, seconds)


def keys(jobs):
    return [j.key for j in jobs]


def test_a_two_core_job_is_not_starved_by_longer_one_core_jobs():
    """The quick build's case: the feature net (2 cores) is the best ready job while a 5-s data job holds one core;
    the 80-s runs behind it would end long after that core frees, so the free core is kept for the feature net."""
    ready = [job("featnet", 122, cores=2, seconds=11), job("gamma", 80, seconds=80), job("mimic", 105, seconds=105)]
    chosen, held = select(ready, [Running(end=4.0, need={"_cores": 1})], {"_cores": 1}, now=0.0)
    assert chosen == []
    assert held[0].key == "featnet" and held[1] == 4.0
    # once the data job is done, the feature net takes both cores
    chosen, held = select(ready, [], {"_cores": 2}, now=4.0)
    assert keys(chosen) == ["featnet"] and held[0].key == "mimic"


def test_short_jobs_fill_the_gap_before_a_reservation():
    """A job that ends before the reserved job's start takes the idle core (backfilling); one that would still run
    then does not, whatever its priority below the reserved one."""
    ready = [job("wide", 50, cores=2), job("long", 40, seconds=30), job("short", 1, seconds=2)]
    chosen, held = select(ready, [Running(end=10.0, need={"_cores": 1})], {"_cores": 1}, now=0.0)
    assert keys(chosen) == ["short"]
    assert held[0].key == "wide"


def test_higher_priority_jobs_that_fit_start_first():
    ready = [job("wide", 50, cores=2), job("first", 60, seconds=100)]
    chosen, _ = select(ready, [Running(end=10.0, need={"_cores": 1})], {"_cores": 1}, now=0.0)
    assert keys(chosen) == ["first"]


def test_a_long_job_may_run_beside_the_reservation_when_resources_are_spare():
    """4 cores: the reserved job needs 3 once the running 2-core job ends; 1 core is spare beside it, so one long
    1-core job may start now, but not a second."""
    ready = [job("wide", 50, cores=3), job("a", 10, seconds=100), job("b", 9, seconds=100)]
    chosen, held = select(ready, [Running(end=5.0, need={"_cores": 2})], {"_cores": 2}, now=0.0)
    assert keys(chosen) == ["a"]
    assert held[1] == 5.0


def test_every_resource_counts_and_unnamed_ones_are_unlimited():
    ready = [Candidate("gpu-job", 10, {"_cores": 2, "gpu": 1}, 5.0), Candidate("cpu-job", 5, {"_cores": 1}, 50.0)]
    running = [Running(end=20.0, need={"_cores": 1, "gpu": 1})]
    chosen, held = select(ready, running, {"_cores": 1, "gpu": 0}, now=0.0)
    assert keys(chosen) == []          # the CPU job would hold a core the GPU job needs at t = 20
    assert held[0].key == "gpu-job"
    chosen, _ = select(ready, running, {"_cores": 2, "gpu": 0}, now=0.0)
    assert keys(chosen) == ["cpu-job"]   # with a third core, it runs beside the GPU job
    chosen, _ = select([Candidate("x", 1, {"_cores": 1, "unlisted": 7}, 1.0)], [], {"_cores": 1}, now=0.0)
    assert keys(chosen) == ["x"]


def test_a_job_that_can_never_fit_holds_nothing_back():
    at, spare = reservation({"_cores": 8}, {"_cores": 1}, [Running(3.0, {"_cores": 1})], now=0.0)
    assert math.isinf(at) and spare == {}
    chosen, _ = select([job("huge", 9, cores=8), job("small", 1, seconds=100)], [Running(3.0, {"_cores": 1})],
                       {"_cores": 1}, now=0.0)
    assert keys(chosen) == ["small"]


def test_an_overdue_job_is_expected_to_end_now():
    at, _ = reservation({"_cores": 2}, {"_cores": 1}, [Running(-5.0, {"_cores": 1})], now=0.0)
    assert at == 0.0


TOY = '''
import time
T0 = time.time()

def stamp(name, secs):
    import pathlib
    start = time.time() - T0
    time.sleep(secs)
    pathlib.Path(f"out/{name}").write_text(f"{start:.3f}")

rule all:
    input: ["out/wide", "out/hold"] + [f"out/s{i}" for i in range(3)]

rule enable:
    output: "out/enable"
    priority: 300
    run: stamp("enable", 0.2)

rule hold:
    output: "out/hold"
    priority: 200
    run: stamp("hold", 1.5)

rule wide:
    input: "out/enable"
    output: "out/wide"
    threads: 2
    priority: 100
    run: stamp("wide", 0.3)

rule small:
    output: "out/s{i}"
    priority: 1
    run: stamp(f"s{wildcards.i}", 0.8)
'''


@pytest.mark.parametrize("scheduler", ["greedy", "fedrepro-backfill"])
def test_the_plugin_starts_the_two_core_job_before_lower_priority_ones(tmp_path, scheduler):
    """A real Snakemake run on two cores: `wide` (2 threads) becomes ready while `hold` runs. Snakemake's greedy
    selector fills the free core with the small jobs, so `wide` starts after one of them; the plugin keeps the core
    for `wide` (the small jobs' default estimate, 5 s, ends after `hold`'s)."""
    (tmp_path / "Snakefile").write_text(textwrap.dedent(TOY))
    (tmp_path / "out").mkdir()
    subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--force-use-threads", "--scheduler", scheduler,
                    "--quiet", "all"], cwd=tmp_path, check=True, capture_output=True, timeout=120)
    start = {p.name: float(p.read_text()) for p in (tmp_path / "out").iterdir()}
    first_small = min(start[f"s{i}"] for i in range(3))
    if scheduler == "greedy":
        assert first_small < start["wide"]
    else:
        assert start["wide"] < first_small
        assert start["wide"] >= start["hold"] + 1.4      # it waited for `hold`, as reserved


def test_the_plugin_is_found_and_falls_back_to_greedy_on_error():
    from snakemake_interface_scheduler_plugins.registry import SchedulerPluginRegistry

    plugin = SchedulerPluginRegistry().get_plugin("fedrepro-backfill")

    class Log:
        def __init__(self):
            self.lines = []

        def warning(self, msg):
            self.lines.append(msg)

        debug = warning

    class Dag:
        def finished(self, job):
            return False

    log = Log()
    scheduler = plugin.scheduler(Dag(), None, log)
    assert scheduler.select_jobs([object()], [], {"_cores": 2}, {}) is None    # not a job: greedy takes over
    assert "greedy selector takes over" in log.lines[0]

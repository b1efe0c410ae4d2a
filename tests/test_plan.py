"""Cost planning (fedrepro.workflow.plan, `python -m fedrepro plan`): the table, the model against a fresh measurement, the
resources it gives the run rule, and the expression checker."""

from __future__ import annotations

import dataclasses
import math
import re
import subprocess
import sys

import pytest
import yaml
from conftest import snakemake

from fedrepro.registry.config import ConfigError
from fedrepro.registry.papers import Registry
from fedrepro.runtime import limit_threads
from fedrepro.workflow import plan

# An estimate of a run we have not measured (between the smoke and quick sizes) must be within this factor of its
# measured CPU time (docs/cluster.md, 'Cost planning': the stated error of the model at the sizes we can afford).
FACTOR = 3.0


@pytest.fixture(scope="module")
def registry(repo):
    return Registry.load(repo)


def committed(repo, registry):
    """Only the committed calibration (a fresh clone: no run sidecars)."""
    return plan.read_calibration(repo)


def test_plan_prints_the_paper_table_for_all_from_a_fresh_clone(workdir):
    proc = subprocess.run([sys.executable, "-m", "fedrepro", "plan", "--scale", "paper", "all"], cwd=workdir,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(workdir / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    registry = Registry.load(workdir)
    jobs = plan.target_runs(registry, "all", "paper")
    board = plan.target_runs(registry, "leaderboard", "paper")   # the leaderboard's runs belong to no artifact
    assert {e for _, e, _ in board} == {"board", "board_mimic", "board_cifar10", "board_modelnet10", "board_ch3",
                                        "board_ch4"} and set(board) <= set(jobs)
    assert f"{len(jobs)} run jobs" in out
    for paper, exp, configuration in jobs:
        assert f"| {paper}/{exp}/{configuration} |" in out
    total = next(line for line in out.splitlines() if line.startswith("| **total**"))
    unknown = int(re.search(r"(\d+) without an estimate", total).group(1))
    assert unknown == 0, "every paper run has a calibration (config/calibration.csv)"
    gpu_rows = [line for line in out.splitlines() if line.startswith("| ") and "| yes |" in line]
    assert gpu_rows and all(re.search(r"\| yes \| [\d.,]+ \| [\d.,e+-]+ \|", r) for r in gpu_rows), gpu_rows[:2]
    assert "plan:A-gpu-speedup" in out


def test_every_runner_declares_its_work_and_every_expression_evaluates(registry):
    for paper, reg in registry.papers.items():
        for exp, entry in reg["experiments"].items():
            work = plan.work_spec(registry.root, entry["runner"])
            assert work is not None, f"{entry['runner']} declares no WORK"
            for scale in entry["scales"]:
                for configuration in registry.configurations(paper, exp, scale):
                    params = registry.params(paper, exp, configuration, scale)
                    units = plan.evaluate(work["units"], params, work.get("defaults"))
                    assert units > 0 and math.isfinite(units), (paper, exp, scale)
                    if work.get("flops"):     # GPU pricing where declared (plan:A-gpu-rate); 0: by the speed-up
                        flops = plan.evaluate(work["flops"], {**params, "units": units}, work.get("defaults"))
                        assert flops >= 0 and math.isfinite(flops), (paper, exp, scale)


def test_work_expressions_refuse_code():
    for text in ("().__class__", "__import__('os')", "open('x')", "[x for x in y]", "lambda: 1"):
        with pytest.raises((ConfigError, SyntaxError)):
            plan.evaluate(text, {"y": [1]})
    assert plan.evaluate("a * len(b) if c else 0", {"a": 2, "b": [1, 2], "c": True}) == 4
    assert plan.evaluate("sum(field(runs, 'epochs', 3))", {"runs": [{"epochs": 2}, {}]}) == 5
    assert plan.evaluate("n", {}, {"n": "m * 2", "m": "3"}) == 6


def test_fit_line_recovers_a_start_up_cost_and_a_slope():
    a, b = plan.fit_line([(10, 2 + 10 * 0.5), (1000, 2 + 1000 * 0.5)])
    assert a == pytest.approx(2) and b == pytest.approx(0.5)
    assert plan.fit_line([(100, 7.0)]) == (0.0, 0.07)       # one measurement: through the origin (an upper bound)


def test_estimate_of_an_unmeasured_size_is_within_the_stated_factor(repo, registry, monkeypatch):
    """gcca Fig. 3 between its smoke and quick sizes (quick's problem, fewer trials and iterations): the committed
    calibration's estimate against the CPU time measured now.  The calibration was measured before the compiled
    kernels (fedrepro.kernels), so the comparison runs without them; with them a run is about 1.4x faster and the
    plan errs on the safe side."""
    monkeypatch.setenv("FEDREPRO_KERNELS", "0")
    overrides = {"trials": 2, "R": 300}     # about a second: long enough that start-up noise does not decide
    params = {**registry.params("gcca", "fig3", "calibrated", "quick"), **overrides}
    predicted = plan.predict_cpu_seconds(registry, committed(repo, registry), "gcca", "fig3", params)
    assert predicted is not None
    limit_threads(1)
    _, cost = plan.run_once(registry, "gcca", "fig3", "calibrated", "quick", overrides)
    ratio = predicted / cost.cpu_seconds
    assert 1 / FACTOR <= ratio <= FACTOR, f"estimate {predicted:.2f} s, measured {cost.cpu_seconds:.2f} s CPU"


def test_paper_resources_come_from_the_plan_and_the_registry_wins(repo, registry):
    measurements = plan.measurements_for(repo, registry)
    est = plan.rule_resources(registry, measurements, "gcca", "fig3", "calibrated", "paper")
    assert est["runtime"] >= plan.MIN_RUNTIME_MIN and est["mem_mb"] > 0
    declared = registry.experiment("gcca", "fig3")["resources"]["mem_mb"]
    assert plan.run_resource(registry, "gcca", "fig3", "calibrated", "paper", "runtime", 120) == est["runtime"]
    assert plan.run_resource(registry, "gcca", "fig3", "calibrated", "paper", "mem_mb", 4000) == \
        max(est["mem_mb"], declared)
    # a value under scales: paper: resources: wins over the estimate
    assert plan.run_resource(registry, "cvfl", "imagenet100", "as-stated", "paper", "mem_mb", 4000) == 16000
    # other scales keep the registry's values and the rule's defaults
    assert plan.run_resource(registry, "gcca", "fig3", "calibrated", "quick", "runtime", 120) == 120
    assert plan.run_resource(registry, "gcca", "fig3", "calibrated", "quick", "mem_mb", 4000) == declared


def test_a_paper_dry_run_requests_the_planned_resources(workdir):
    out = snakemake("-n", "--cores", "2", "gcca_fig3", "--config", "scale=paper", cwd=workdir).stdout
    registry = Registry.load(workdir)
    want = plan.rule_resources(registry, plan.measurements_for(workdir, registry), "gcca", "fig3", "calibrated",
                               "paper")
    block = out[out.index("results/paper/gcca/runs/fig3/calibrated.csv"):]
    resources = block[block.index("resources:"):].splitlines()[0]
    assert f"runtime={want['runtime']}" in resources, resources
    assert f"mem_mb={max(want['mem_mb'], 4000)}" in resources, resources


def test_measure_overrides_select_methods_by_name_and_merge_the_rest():
    params = {"methods": {"a": {"algorithm": "x", "gamma": 0.4}, "b": {"algorithm": "y"}}, "T": 10, "opt": {"lr": 1}}
    out = plan.with_overrides(params, {"methods": ["a"], "T": 3, "opt": {"wd": 2}})
    assert out == {"methods": {"a": {"algorithm": "x", "gamma": 0.4}}, "T": 3, "opt": {"lr": 1, "wd": 2}}
    assert plan.with_overrides(params, {"methods": {"b": {"gamma": 1}}})["methods"] == {
        "a": {"algorithm": "x", "gamma": 0.4}, "b": {"algorithm": "y", "gamma": 1}}   # a mapping still merges
    with pytest.raises(ValueError, match="no method \\['c'\\]"):
        plan.with_overrides(params, {"methods": ["c"]})


def test_schedule_priority_is_the_measured_chain_of_runs_a_run_starts(registry, monkeypatch):
    """featnet/mnist is needed by every table3 configuration: its priority is its own seconds plus the longest of
    theirs; a configuration without a measurement takes its experiment's largest; an unmeasured experiment 0."""
    seconds = {("adept", "featnet", "mnist", "smoke"): 5.0, ("adept", "table3", "as-stated", "smoke"): 7.0,
               ("adept", "featnet", None, "smoke"): 5.0, ("adept", "table3", None, "smoke"): 7.0,
               ("gcca", "fig3", None, "smoke"): 2.0}
    monkeypatch.setattr(plan, "_measured_seconds", lambda root: seconds)
    assert plan.schedule_priority(registry, "adept", "table3", "as-stated", "smoke") == 7.0
    assert plan.schedule_priority(registry, "adept", "featnet", "mnist", "smoke") == 12.0
    assert plan.schedule_priority(registry, "gcca", "fig3", "calibrated", "smoke") == 2.0
    assert plan.schedule_priority(registry, "gcca", "fig4", "calibrated", "smoke") == 0.0


def test_a_dry_run_orders_data_first_then_the_longest_run_chains(workdir):
    """What Snakemake's scheduler reads (a fresh clone: the committed calibration): the data jobs above every run,
    and the feature net above the Table 3 run that waits for it."""
    out = snakemake("-n", "--cores", "2", "results/smoke/adept/runs/table3/as-stated.csv", "--config", "scale=smoke",
                    cwd=workdir).stdout
    priorities = {}
    for block in out.split("\nrule ")[1:]:
        lines = block.splitlines()
        output = next(line.split(":", 1)[1].split(",")[0].strip() for line in lines if "output:" in line)
        priorities[output] = float(next((line.split(":")[1] for line in lines if "priority:" in line), 0))
    data = [p for o, p in priorities.items() if o.startswith("results/d")]
    featnet = priorities["results/smoke/adept/runs/featnet/mnist.csv"]
    table3 = priorities["results/smoke/adept/runs/table3/as-stated.csv"]
    assert data and min(data) > featnet > table3 > 0, priorities


def test_declared_memory_covers_every_committed_smoke_and_quick_peak(repo, registry):
    """A run's `mem_mb` is what a cluster (SLURM's --mem) lets it use: below its measured peak it is killed. The
    committed measurements (config/calibration.csv, the runs' own sidecars) are the peaks to cover."""
    assert not plan.memory_shortfalls(registry, plan.read_calibration(repo))


def test_a_memory_shortfall_names_the_run_and_both_numbers(repo, registry):
    m = next(m for m in plan.read_calibration(repo) if (m.paper, m.experiment, m.scale) == ("gcca", "compression", "quick"))
    over = dataclasses.replace(m, peak_rss_mb=1500.0)
    assert plan.memory_shortfalls(registry, [over]) == [
        f"gcca/compression/{m.configuration} at quick: mem_mb 1000 < its peak 1500 MB ({m.source})"]


# ---- honest requests (issue 52) -----------------------------------------------------------------------------------

def test_loader_workers_follow_the_threads_granted():
    from fedrepro.data.imagefolder import loader_workers

    assert loader_workers(8, 9) == 8
    assert loader_workers(8, 4) == 3          # a smaller grant: fewer decoders, never more processes than CPUs
    assert loader_workers(8, 1) == 0          # one thread: decode in the training process
    assert loader_workers(None, 9) == 0


def test_every_job_asks_threads_for_the_loader_processes_it_starts(registry):
    """A run that asks for `loader_workers`/`workers` decoding processes declares threads for them and for itself
    (thesis Fig. 3.1 at paper scale asked 1 CPU and started 8 decoders)."""
    short = []
    for paper, reg in registry.papers.items():
        for exp, entry in reg["experiments"].items():
            for scale in entry["scales"]:
                threads = registry.run_spec(paper, exp, scale)["threads"]
                for configuration in registry.configurations(paper, exp, scale):
                    params = registry.params(paper, exp, configuration, scale)
                    workers = int(params.get("loader_workers") or params.get("workers") or 0)
                    if workers and threads < workers + 1:
                        short.append(f"{paper}/{exp}/{configuration} at {scale}: {workers} workers, threads {threads}")
    assert not short, short


def _m(units, mem_units, peak, shape="{}"):
    return plan.Measurement("p", "e", "c", "smoke", shape, units, mem_units, 1.0, "cpu", 1, peak, None, "test")


def test_memory_is_the_measured_peak_plus_measured_growth_never_a_ratio_through_zero():
    work = {"units": "n", "memory": "n"}
    # one measurement (or no growth): the peak itself, a floor; a ratio through 0 would give 1,000 x 1,900 MB
    assert plan.predict_memory(work, [_m(1, 1000, 1900.0)], {"n": 1_000_000}) == (1900.0, True)
    assert plan.predict_memory(work, [_m(1, 1000, 1500.0), _m(1, 8000, 1490.0)], {"n": 10**6}) == (1500.0, True)
    # growth measured (0.1 MB per unit from 1,000 to 11,000 units): the largest peak + the growth beyond it
    mem, floor = plan.predict_memory(work, [_m(1, 1000, 600.0), _m(1, 11000, 1600.0)], {"n": 21000})
    assert (mem, floor) == (pytest.approx(2600.0), False)


def test_logged_rows_set_the_disk_and_the_peak_and_same_size_runs_fit_by_their_mean():
    """A run that logs every step (gcca Fig. 3 at paper scale: 90 MB of rows) needs that disk and holds its rows
    about twice at its peak; one that logs little borrows neither from it."""
    work = {"units": "n", "memory": "n", "rows": "rows"}

    def m(rows, mb, peak):
        return plan.Measurement("p", "e", "c", "quick", "{}", 1.0, 100, 1.0, "cpu", 1, peak, mb * 1e6, "test",
                                rows=rows)

    runs = [m(1_000, 1.0, 102.0), m(10_000, 10.0, 120.0)]       # both: 100 MB without their rows
    assert plan.bytes_per_row(runs) == pytest.approx(1000.0)
    peak, _ = plan.predict_memory(work, runs, {"n": 100, "rows": 100_000})
    assert peak == pytest.approx(100 + plan.ROWS_IN_MEMORY * 100)
    peak, _ = plan.predict_memory(work, runs, {"n": 100, "rows": 100})
    assert peak == pytest.approx(100.2)
    # configurations of one size count by their mean (33 and 52 s at 6e6 units: 42.5), not by the slowest
    assert plan.fit_line([(1.0, 2.0), (3.0, 3.0), (3.0, 5.0)]) == (pytest.approx(1.0), pytest.approx(1.0))


def test_no_paper_memory_request_is_far_above_every_measurement(repo, registry):
    """Without measured growth a job asks MEMORY_SAFETY x its largest measured peak (C-VFL CIFAR-10 asked 63 GB
    for a run measured at 1.9 GB)."""
    measurements = plan.measurements_for(repo, registry)
    for paper, exp, configuration in plan.target_runs(registry, "all", "paper"):
        spec = registry.run_spec(paper, exp, "paper")
        work = plan.work_spec(repo, spec["runner"])
        params = registry.params(paper, exp, configuration, "paper")
        own = plan.relevant(registry, measurements, paper, exp, plan.shape_of(work, params))
        if not own or plan.memory_slope([m for m in own if m.peak_rss_mb]) is not None:
            continue
        peak = max(m.peak_rss_mb for m in own if m.peak_rss_mb)
        asked = plan.rule_resources(registry, measurements, paper, exp, configuration, "paper")["mem_mb"]
        assert asked <= plan.MEMORY_SAFETY * peak + 100, (paper, exp, asked, peak)
    asked = plan.rule_resources(registry, measurements, "cvfl", "cifar10", "as-stated", "paper")["mem_mb"]
    assert asked < 6000, asked


@pytest.mark.parametrize("paper, experiment", [("cvfl", "cifar10"), ("gcca", "fig3"), ("thesis", "fig3_4")])
def test_the_plan_is_within_half_of_every_measured_paper_shape_slice(repo, registry, paper, experiment):
    """The committed paper-shape slices (benchmarks/measure_job.py on one machine, config/calibration.csv) against
    what the plan, fitted on all committed rows, says for exactly those parameters: CPU seconds and peak memory
    within +-50 % (the issue's figures were 1.1-4x high)."""
    measurements = plan.read_calibration(repo)
    slices = [m for m in measurements if (m.paper, m.experiment) == (paper, experiment) and m.scale.startswith("paper")
              and m.source.startswith("benchmarks/")]  # the slices; whole published runs: docs/cluster.md's table
    assert len(slices) >= 2, f"{paper}/{experiment}: measure two slices (benchmarks/measure_job.py)"
    work = plan.work_spec(repo, registry.run_spec(paper, experiment, "paper")["runner"])
    for m in slices:       # the plan's fit (estimate_run) at the slice's own units and shape
        own = plan.relevant(registry, measurements, paper, experiment, m.shape)
        points, same_shape = plan.fit_points(own, m.shape)
        a, b = plan.fit_line([(p.units, p.cpu_seconds) for p in points])
        assert same_shape and 0.5 <= (a + b * m.units) / m.cpu_seconds <= 1.5, (m.source, a + b * m.units, m)
        memory = {**work, "memory": "held"} if work.get("memory") else work
        sets = m.source.partition(" --set ")[2].split()          # the slice's own parameters (its logged rows)
        overrides = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in sets)}
        params = {**plan.with_overrides(registry.params(paper, experiment, m.configuration, "paper"), overrides),
                  "held": m.memory_units}
        mem, _ = plan.predict_memory(memory, own, params, m.shape)
        assert 0.5 <= mem / m.peak_rss_mb <= 1.5, (m.source, mem, m.peak_rss_mb)


def test_imagenet_gpu_hours_come_from_the_stated_flop_count_and_rate(repo, registry):
    """Thesis Fig. 3.1 (ResNet-50, 4.1 GMAC forward at 224 px; training 3 x forward): every image the runs process
    x its FLOP / plan:A-gpu-rate.  Counted here by hand from the registry's parameters."""
    p = registry.params("thesis", "fig3_1", "as-stated", "paper")
    runs = len(p["methods"]) * (1 + 0.1 * len(p["gamma_grid"]))            # gamma tuning: a tenth of a run per value
    steps = p["epochs"] * math.ceil(1281167 / (p["n"] * p["batch"]))
    images = steps * p["n"] * p["batch"] * 3 + p["epochs"] * (p["train_eval"] + 50000)
    want = runs * images * 8.2e9 / plan.GPU_FLOPS / 3600
    est = plan.estimate_run(registry, plan.measurements_for(repo, registry), "thesis", "fig3_1", "as-stated", "paper")
    assert est.gpu_hours == pytest.approx(want, rel=1e-6)
    assert 280 / 1.5 <= est.gpu_hours <= 700 * 1.5      # an independent count: 280-700 GPU-hours
    assert "TFLOP/s" in est.basis


def test_every_runtime_request_fits_the_time_limit_and_longer_runs_are_named(repo, registry):
    measurements = plan.measurements_for(repo, registry)
    jobs = plan.target_runs(registry, "all", "paper")
    assert plan.configured_max_runtime_h(repo) == 48
    uncapped = [plan.rule_resources(registry, measurements, p, e, c, "paper").get("runtime", 0) for p, e, c in jobs]
    assert max(uncapped) > 48 * 60          # the paper has runs longer than a partition grants ...
    for p, e, c in jobs:                     # ... yet no request exceeds the limit
        assert plan.run_resource(registry, p, e, c, "paper", "runtime", 120, max_runtime_h=48) <= 48 * 60
    over = plan.over_limit(registry, measurements, jobs, "paper", 48)
    assert len(over) == sum(u > 48 * 60 for u in uncapped)
    line = next(x for x in over if x.startswith("cvfl/cifar10/as-stated:"))
    assert re.search(r"planned [\d,]+ h > cluster.max_runtime_h 48 h; runs as 50 jobs, one per seed x "
                     r"\(compressor, b\) run", line), line
    line = next(x for x in over if x.startswith("thesis/board_ch3/as-stated:"))   # a board run: per compressor
    assert "runs as 9 jobs, one per compressor" in line, line
    line = next(x for x in over if x.startswith("thesis/fig3_1/as-stated:"))     # per method, in blocks
    assert re.search(r"runs as 5 jobs, one per method, each in 8 chained blocks of 4\d h with checkpoint and resume",
                     line), line


# Where the check misses (docs/cluster.md, "Against the published paper-scale build"), and why; the job's cluster
# request (SAFETY x its CPU estimate) must still cover what it measured.
KNOWN_MISSES = {
    "gcca/board/calibrated": "the clock: planned 95x from its 7-CPU-s quick run, which measured 5.8 and 7.2 CPU s "
                             "in two builds of the same code",
}


def test_the_plan_prices_every_published_paper_run_within_30_percent(repo, registry):
    """Each published paper-scale run, estimated from every other measurement (leave one out), against what its
    sidecar measured: CPU seconds and peak memory within +-30 % (30 CPU s where a run is start-up), but for the
    known misses, whose requests still cover the measurement."""
    checks = plan.check_against(registry, plan.measurements_for(repo, registry), "published/paper")
    assert len(checks) >= 30
    misses = [c for c in checks if abs(c.planned_cpu_s - c.measured_cpu_s) > max(0.3 * c.measured_cpu_s, 30.0)
              or abs(c.planned_mb - c.measured_mb) > 0.3 * c.measured_mb]
    assert all(c.job in KNOWN_MISSES for c in misses), "\n".join(map(str, misses))
    for c in checks:
        if c.job in KNOWN_MISSES:
            assert plan.SAFETY * c.planned_cpu_s >= c.measured_cpu_s, c
            assert plan.MEMORY_SAFETY * c.planned_mb >= c.measured_mb, c

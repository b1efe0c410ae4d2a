"""Measure one run at a scale's parameters (optionally a fraction of it) and compare with `fedrepro plan`'s estimate.

    PYTHONPATH=src python benchmarks/measure_job.py thesis fig3_4 as-stated --scale paper --set T=300 seeds=1 \\
        [--data results/data/mnist/mnist.npz] [--append-calibration]

`--set methods=[squarm]` keeps only the named methods of the registry's `methods:` mapping.

Runs the experiment's runner in a process of its own with one thread (as the run rule does: its peak memory is the
job's, not this script's), with the registry's parameters at `--scale` and the `--set` overrides (YAML values), and prints the measured CPU seconds, wall seconds and peak
memory beside the plan's estimate for exactly those parameters, fitted on the smoke/quick measurements only (this
clone's run sidecars, else config/calibration.csv).  `--append-calibration` adds the measurement to
config/calibration.csv (source `benchmarks/measure_job.py`, scale `<scale>-fraction`), so the plan then fits on it.
Nothing is written under results/; `--output run.csv` keeps the run's CSV (to compare two commits' bits).
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing
import tempfile
from datetime import date
from pathlib import Path

import yaml

from fedrepro.io import write_csv
from fedrepro.registry.papers import Registry
from fedrepro.runtime import limit_threads
from fedrepro.workflow import plan


def _measure(root: str, args: argparse.Namespace, overrides: dict, inputs: dict, output: str) -> tuple:
    """In a fresh process: run the job once; (CPU s, wall s, peak MB, rows)."""
    limit_threads(1)
    registry = Registry.load(root)
    rows, cost = plan.run_once(registry, args.paper, args.experiment, args.configuration, args.scale, overrides,
                               inputs=inputs or None, output=output)
    if args.output:
        write_csv(output, rows)
    return cost.cpu_seconds, cost.wall_seconds, cost.peak_rss_mb, len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paper")
    ap.add_argument("experiment")
    ap.add_argument("configuration")
    ap.add_argument("--scale", default="paper")
    ap.add_argument("--set", nargs="*", default=[], help="key=value overrides (YAML values)")
    ap.add_argument("--data", help="the prepared dataset the run reads (input `data`)")
    ap.add_argument("--input", nargs="*", default=[], metavar="NAME=PATH",
                    help="further inputs the runner reads (e.g. adept table3's featnet=results/quick/adept/runs/featnet/mnist.pt)")
    ap.add_argument("--output", help="keep the run's CSV (and its other outputs) here, e.g. to compare two commits' bits")
    ap.add_argument("--append-calibration", action="store_true")
    args = ap.parse_args()

    root = Path(".").resolve()
    registry = Registry.load(root)
    overrides = {k: yaml.safe_load(v) for k, v in (item.split("=", 1) for item in args.set)}
    params = plan.with_overrides(registry.params(args.paper, args.experiment, args.configuration, args.scale),
                                 overrides)
    params.update(plan.data_sizes(args.data) if args.data else {})    # the rows the run really reads
    measurements = [m for m in plan.measurements_for(root, registry) if m.scale in plan.MEASURED_SCALES]
    predicted = plan.predict_cpu_seconds(registry, measurements, args.paper, args.experiment, params, args.scale)
    inputs = dict(item.split("=", 1) for item in args.input)
    if args.data:
        inputs["data"] = args.data
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(args.output) if args.output else Path(tmp) / "run.csv"
        output.parent.mkdir(parents=True, exist_ok=True)
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            cpu_seconds, wall_seconds, peak_rss_mb, n_rows = pool.apply(
                _measure, (str(root), args, overrides, inputs, str(output)))
    work = plan.work_spec(root, registry.run_spec(args.paper, args.experiment, args.scale)["runner"])
    units = plan.evaluate(work["units"], params, work.get("defaults"))
    report = {"job": f"{args.paper}/{args.experiment}/{args.configuration}", "scale": args.scale, "set": overrides,
              "units": units, "measured_cpu_s": round(cpu_seconds, 1), "wall_s": round(wall_seconds, 1),
              "peak_rss_mb": round(peak_rss_mb), "estimated_cpu_s": None if predicted is None else round(predicted, 1),
              "ratio_estimate_over_measured": None if predicted is None else round(predicted / cpu_seconds, 2),
              "rows": n_rows}
    print(json.dumps(report, indent=1))
    if args.append_calibration:
        m = plan.Measurement(paper=args.paper, experiment=args.experiment, configuration=args.configuration,
                             scale=f"{args.scale}-fraction", shape=plan.shape_of(work, params), units=units,
                             memory_units=(plan.evaluate(work["memory"], params, work.get("defaults"))
                                           if work.get("memory") else None),
                             cpu_seconds=round(cpu_seconds, 2), clock="cpu", threads=1,
                             peak_rss_mb=round(peak_rss_mb, 1), output_bytes=None,
                             source=" ".join(["benchmarks/measure_job.py", args.paper, args.experiment,
                                              args.configuration, "--scale", args.scale, "--set", *args.set]),
                             machine=plan.machine_name(),
                             date=date.today().isoformat(),
                             rows=plan.evaluate(work["rows"], params, work.get("defaults")) if work.get("rows") else None)
        with open(root / plan.CALIBRATION, "a", newline="") as f:
            csv.DictWriter(f, fieldnames=plan.CALIBRATION_FIELDS, lineterminator="\n").writerow(m.row())


if __name__ == "__main__":
    main()

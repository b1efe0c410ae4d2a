"""Cost planning: what a run costs at a scale we have not run, from what the runs we made cost (docs/cluster.md).

The model, per experiment (one registry `experiments:` entry):

* **work units.**  Each runner module declares, beside its `PARAMETERS`, a `WORK` literal (`<FUNCTION>_WORK` where a
  module holds several runners): ``units``, an expression over the run's resolved parameters that grows as its CPU
  time does (e.g. ``trials * R * len(variants) * T * J * N * K * I``); optionally ``memory``, one that grows as its
  peak memory does; ``defaults`` for parameters a configuration may leave out; ``shape``, the parameters that change
  the cost of one unit in a way the units do not count (the party network, the dataset).  Expressions are read with
  `ast` (nothing imported) and evaluated by `evaluate` (names, literals, arithmetic, comparisons, `x if c else y`,
  subscripts and the helpers in `HELPERS`; nothing else).
* **measurements.**  Every run's sidecar records ``extra.cpu_seconds`` (process CPU time of the runner, all threads,
  children included), ``extra.peak_rss_mb`` and ``extra.wall_seconds`` (workflow/scripts/run.py).  Older sidecars
  have only the wall time; it is used in place of the CPU time and the row says so (``clock: wall``).
  `config/calibration.csv` holds committed measurements (the machine and date they come from) for a fresh clone:
  ``python -m fedrepro plan --calibrate`` rewrites it from the run sidecars under ``results/`` and ``published/``, keeping
  its rows that came from elsewhere (benchmarks, paper-scale fractions).
* **fit.**  CPU seconds = a + b x units, through the smallest and the largest measurement of the same shape (a, the
  start-up cost: imports, data loading; b, the cost per unit); one measurement gives a = 0 and b = its ratio.  Peak
  memory the same way over ``memory``; without a ``memory`` expression, the largest measured peak (a lower bound).
  Output bytes scale with the units (an upper bound: runs log at most once per unit of work).
* **GPU.**  A run whose registry resources ask for a GPU at that scale is priced in GPU-hours: its CPU-seconds
  (one core) / `GPU_SPEEDUP`, a stated assumption (plan:A-gpu-speedup in docs/cluster.md), overridable with
  ``--gpu-speedup``.
* **resources.**  At paper scale the run rule's ``runtime`` and ``mem_mb`` come from here (`rule_resources`), times
  `SAFETY` (runtime) and `MEMORY_SAFETY`; a value under the registry's ``scales: paper: resources:`` wins, and the
  experiment-level value is a floor.

Nothing is invented: an experiment with no measurement at all gets no estimate (the table says so and the rule keeps
its registry/default resources).
"""

from __future__ import annotations

import ast
import csv
import json
import math
import platform
import sys
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path

import numpy as np

from fedrepro.registry.config import ConfigError
from fedrepro.registry.params import module_path

WORK_NAME = "WORK"
CALIBRATION = "config/calibration.csv"
MEASURED_SCALES = ("smoke", "quick", "paper")
GPU_SPEEDUP = 100.0      # plan:A-gpu-speedup: one GPU = this many CPU cores of the calibration machine
GPU_FLOPS = 20e12        # plan:A-gpu-rate: FLOP/s one GPU sustains training the big convnets (ResNet-50/18, 224 px)
SAFETY = 2.0             # runtime request = SAFETY x the estimate (model error, slower nodes, load)
MEMORY_SAFETY = 1.5      # mem_mb request = MEMORY_SAFETY x the estimated peak
MEMORY_NOISE = 1.05      # two peaks within 5 % are one peak measured twice, not growth
ROWS_IN_MEMORY = 2.0     # a run holds its logged rows about twice at its peak (its frames and their concatenation)
MIN_RUNTIME_MIN = 10     # no cluster request below this (queue start-up, imports)
MAX_RUNTIME_H = 48.0     # default of the config key cluster.max_runtime_h: the longest job a partition grants
CALIBRATION_FIELDS = ("paper", "experiment", "configuration", "scale", "shape", "units", "memory_units",
                      "cpu_seconds", "clock", "threads", "peak_rss_mb", "output_bytes", "source", "machine", "date",
                      "rows")


# ---- expressions ------------------------------------------------------------------------------------------------

def _field(rows, key, default=0):
    """The `key` of every mapping in a list (a default where one lacks it), as an array: `field(runs, 'epochs')`."""
    return np.array([r.get(key, default) if isinstance(r, dict) else default for r in rows or []], dtype=float)


HELPERS = {"len": len, "sum": lambda x: float(np.sum(x)), "min": min, "max": max, "abs": abs, "ceil": math.ceil,
           "prod": lambda x: float(np.prod(x)), "values": lambda d: list((d or {}).values()), "field": _field,
           "array": lambda x: np.asarray(x, dtype=float), "float": float, "int": int}
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.Name, ast.Load,
          ast.Constant, ast.Subscript, ast.Slice, ast.List, ast.Tuple, ast.Dict, ast.Add, ast.Sub, ast.Mult, ast.Div,
          ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt,
          ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn)


@lru_cache(maxsize=512)
def _compile(text: str):
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise ConfigError(f"work expression {text!r}: {type(node).__name__} is not allowed")
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            raise ConfigError(f"work expression {text!r}: name {node.id!r} is not allowed")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in HELPERS):
            raise ConfigError(f"work expression {text!r}: only the helpers {', '.join(HELPERS)} may be called")
    return compile(tree, "<work>", "eval")


def evaluate(text: str, params: dict, defaults: dict | None = None) -> float:
    """An expression's value over `params`; `defaults` (name -> expression) fill parameters a run leaves out."""
    names = dict(params)
    pending = {k: str(v) for k, v in (defaults or {}).items() if names.get(k) is None}
    while pending:          # a default may read another default: resolve in rounds
        done = {}
        for key, expr in pending.items():
            try:
                done[key] = eval(_compile(expr), {"__builtins__": {}, **HELPERS}, dict(names))  # noqa: S307
            except NameError:
                continue
        if not done:
            raise ConfigError(f"work defaults {sorted(pending)} name parameters the run does not have")
        names.update(done)
        pending = {k: v for k, v in pending.items() if k not in done}
    try:
        value = eval(_compile(text), {"__builtins__": {}, **HELPERS}, names)  # noqa: S307  (checked tree)
    except NameError as exc:
        raise ConfigError(f"work expression {text!r}: {exc}; declare a default for it") from None
    return float(value)


# ---- declarations -----------------------------------------------------------------------------------------------

@lru_cache(maxsize=64)
def _declared(path: str, mtime_ns: int, name: str) -> dict:
    out = {}
    for node in ast.parse(Path(path).read_text(), filename=path).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if target == name or target.endswith("_" + name):
                out[target] = ast.literal_eval(node.value)
    return out


def declared(root: str | Path, module: str, name: str) -> dict:
    """A module's top-level literals called `name` or `<PREFIX>_<name>` (`WORK`, `BOARD_WORK`; a splits module's
    `RUNNERS`), read with `ast`: nothing imported, cached per file version; {} where the module does not exist."""
    path = module_path(root, module)
    return {} if path is None else _declared(str(path), path.stat().st_mtime_ns, name)


def work_spec(root: str | Path, runner: str) -> dict | None:
    """A runner's `WORK` declaration (`<FUNCTION>_WORK` first), or None where it declares none."""
    module, _, function = runner.partition(":")
    specs = declared(root, module, WORK_NAME)
    return specs.get(f"{function.upper()}_{WORK_NAME}", specs.get(WORK_NAME))


def shape_of(spec: dict, params: dict) -> str:
    """The values of the parameters that decide the cost of one unit, as one comparable string."""
    return json.dumps({k: params.get(k) for k in spec.get("shape", [])}, sort_keys=True, default=str)


# ---- measurements -----------------------------------------------------------------------------------------------

@dataclass
class Measurement:
    paper: str
    experiment: str
    configuration: str
    scale: str
    shape: str
    units: float
    memory_units: float | None
    cpu_seconds: float
    clock: str                   # cpu | wall (older sidecars: the wall time stands in for the CPU time)
    threads: int
    peak_rss_mb: float | None
    output_bytes: float | None
    source: str
    machine: str = ""
    date: str = ""
    rows: float | None = None    # the rows the run logs (its WORK's `rows`), where it declares them

    def row(self) -> dict:
        return {k: ("" if getattr(self, k) is None else getattr(self, k)) for k in CALIBRATION_FIELDS}


def _num(text):
    return None if text in ("", None) else float(text)


def read_calibration(root: str | Path) -> list[Measurement]:
    path = Path(root) / CALIBRATION
    if not path.exists():
        return []
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    return [Measurement(paper=r["paper"], experiment=r["experiment"], configuration=r["configuration"],
                        scale=r["scale"], shape=r["shape"], units=float(r["units"]),
                        memory_units=_num(r["memory_units"]), cpu_seconds=float(r["cpu_seconds"]), clock=r["clock"],
                        threads=int(r["threads"] or 1), peak_rss_mb=_num(r["peak_rss_mb"]),
                        output_bytes=_num(r["output_bytes"]), source=r["source"], machine=r["machine"],
                        date=r["date"], rows=_num(r.get("rows"))) for r in rows]


def data_sizes(npz: str | Path | None) -> dict:
    """{'data_train': rows of x_train, 'data_test': rows of x_test} of a prepared dataset, read from the arrays'
    headers (nothing loaded); {} where it has neither.  A WORK expression defaults them to the real sets' sizes, so
    a measurement on a smaller stand-in is priced by the data it really read."""
    import zipfile

    out = {}
    try:
        with zipfile.ZipFile(npz) as z:
            for key, member in (("data_train", "x_train.npy"), ("data_test", "x_test.npy")):
                if member in z.namelist():
                    with z.open(member) as f:
                        major, _ = np.lib.format.read_magic(f)
                        read = np.lib.format.read_array_header_1_0 if major == 1 else \
                            np.lib.format.read_array_header_2_0
                        shape = read(f)[0]
                    out[key] = int(shape[0])
    except (OSError, TypeError, zipfile.BadZipFile, ValueError):
        return {}
    return out


def measure_sidecar(root: Path, registry, sidecar: Path) -> Measurement | None:
    """The measurement a run's sidecar records (None: not a run of a registry experiment, or no timing)."""
    parts = sidecar.relative_to(root).parts     # results/<scale>/<paper>/runs/<experiment>/<configuration>.csv.prov.json
    if len(parts) != 6 or parts[3] != "runs":
        return None
    _, scale, paper, _, experiment, name = parts
    try:
        entry = registry.experiment(paper, experiment)
    except KeyError:
        return None
    record = json.loads(sidecar.read_text())
    extra = record.get("extra") or {}
    if "cpu_seconds" in extra:
        seconds, clock = float(extra["cpu_seconds"]), "cpu"
    elif "wall_seconds" in extra:
        seconds, clock = float(extra["wall_seconds"]), "wall"
    else:
        return None
    spec = work_spec(root, entry["runner"])
    if spec is None:
        return None
    params = record.get("config") or {}
    npz = next((i["path"] for i in record.get("inputs") or [] if i["path"].endswith(".npz")), None)
    if npz:
        params = {**params, **data_sizes(root / npz)}
    csv_path = Path(str(sidecar)[: -len(".prov.json")])
    out = csv_path.stat().st_size if csv_path.exists() else None
    return Measurement(paper=paper, experiment=experiment, configuration=name[: -len(".csv.prov.json")], scale=scale,
                       shape=shape_of(spec, params), units=evaluate(spec["units"], params, spec.get("defaults")),
                       memory_units=(evaluate(spec["memory"], params, spec.get("defaults"))
                                     if spec.get("memory") else None),
                       cpu_seconds=seconds, clock=clock, threads=int(registry.run_spec(paper, experiment, scale)["threads"]),
                       peak_rss_mb=extra.get("peak_rss_mb"), output_bytes=out,
                       source=f"sidecar {sidecar.relative_to(root)}", machine=str(record.get("device", "")),
                       date=str(record.get("finished", ""))[:10],
                       rows=evaluate(spec["rows"], params, spec.get("defaults")) if spec.get("rows") else None)


def measured_runs(root: str | Path, registry) -> list[Measurement]:
    """The runs this clone built (results/<scale>/) and, where this clone has not built one, the published run
    (published/<scale>/, committed with its sidecar)."""
    root = Path(root)
    out, seen = [], set()
    for folder in ("results", "published"):
        for scale in MEASURED_SCALES:
            for sidecar in sorted((root / folder / scale).glob("*/runs/*/*.csv.prov.json")):
                m = measure_sidecar(root, registry, sidecar)
                key = None if m is None else (m.paper, m.experiment, m.configuration, m.scale)
                if m is not None and key not in seen:
                    seen.add(key)
                    out.append(m)
    return out


def machine_name() -> str:
    """'<CPU model>, <n> cores' (what the calibration's seconds are seconds of)."""
    import os

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def calibrate(root: str | Path, registry) -> list[Measurement]:
    """Rewrite config/calibration.csv: this machine's sidecar measurements (CPU clock preferred), plus the committed
    rows that did not come from sidecars (benchmarks, paper-scale fractions)."""
    root = Path(root)
    fresh = measured_runs(root, registry)
    kept = [m for m in read_calibration(root) if not m.source.startswith("sidecar")]
    for m in fresh:
        m.machine = machine_name()
    rows = kept + fresh
    path = root / CALIBRATION
    with open(path, "w", newline="") as f:
        f.write(f"# Measured run costs for `python -m fedrepro plan` on a fresh clone (docs/cluster.md, 'Cost planning').\n"
                f"# Regenerate: python -m fedrepro plan --calibrate   (last: {date.today().isoformat()})\n")
        writer = csv.DictWriter(f, fieldnames=CALIBRATION_FIELDS, lineterminator="\n")
        writer.writeheader()
        for m in rows:
            writer.writerow(m.row())
    return rows


# ---- the model --------------------------------------------------------------------------------------------------

def fit_line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """y = a + b x through the smallest and the largest x (a >= 0, b >= 0); one point (or no spread): through 0.
    Points at the same x (configurations of one size: Fig. 4.2's 33 and 52 s at 6e6 units) count by their mean, so
    the line does not hang on whichever of them is the slowest."""
    by_x: dict[float, list[float]] = {}
    for x, y in points:
        by_x.setdefault(x, []).append(y)
    points = sorted((x, sum(ys) / len(ys)) for x, ys in by_x.items())
    (x0, y0), (x1, y1) = points[0], points[-1]
    if x1 > x0 * 1.5 and y1 > y0:
        b = (y1 - y0) / (x1 - x0)
        return max(0.0, y0 - b * x0), b
    return 0.0, max(y for _, y in points) / max(x1, 1e-300)


@dataclass
class Estimate:
    paper: str
    experiment: str
    configuration: str
    scale: str
    threads: int
    gpu: bool
    units: float | None = None
    cpu_hours: float | None = None          # core-hours on the calibration machine (GPU runs: what a CPU would take)
    gpu_hours: float | None = None
    wall_hours: float | None = None         # cpu_hours / threads, or gpu_hours
    mem_mb: float | None = None
    mem_is_floor: bool = False
    disk_mb: float | None = None
    disk_note: str = ""
    basis: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def known(self) -> bool:
        return self.cpu_hours is not None


def relevant(registry, measurements: list[Measurement], paper: str, experiment: str, shape: str) -> list[Measurement]:
    """The experiment's own measurements, plus paper-size ones of other experiments of the same paper that run the
    same runner at the same shape (one unit costs the same there: e.g. C-VFL's `mimic_q` borrows `mimic`'s)."""
    runner = registry.experiment(paper, experiment)["runner"]
    own = [m for m in measurements if (m.paper, m.experiment) == (paper, experiment) and m.units > 0]
    if any(m.scale.startswith("paper") and m.shape == shape for m in own):
        return own
    borrowed = [m for m in measurements if m.paper == paper and m.experiment != experiment and m.units > 0
                and m.scale.startswith("paper") and m.shape == shape
                and registry.experiment(paper, m.experiment)["runner"] == runner]
    return own + borrowed


def fit_points(measurements: list[Measurement], shape: str) -> tuple[list[Measurement], bool]:
    """The measurements a fit uses: those of the same shape (else all, flagged); where some were made at the paper's
    sizes (`paper`, `paper-fraction`), those and the smoke runs only; on the CPU clock where it covers the largest
    run (else the older sidecars' wall times join in)."""
    same = [m for m in measurements if m.shape == shape]
    points = same or measurements
    if any(m.scale.startswith("paper") for m in points):
        # a measurement at the paper's own sizes beats quick's proxy sizes; smoke stays for the start-up cost
        points = [m for m in points if m.scale.startswith("paper") or m.scale == "smoke"]
    cpu = [m for m in points if m.clock == "cpu"]
    if cpu and max(m.units for m in cpu) >= max(m.units for m in points):
        points = cpu
    return points, bool(same)


def bytes_per_row(measurements: list[Measurement]) -> float | None:
    """Output bytes per logged row, from the measurement that logged the most rows with its output measured (a
    row's width does not change with the scale; None: no such measurement)."""
    known = [m for m in measurements if m.rows and m.output_bytes]
    if not known:
        return None
    most = max(known, key=lambda m: m.rows)
    return most.output_bytes / most.rows


def _output_mb(m: Measurement, per_row: float | None) -> float:
    """A measured run's output in MB: measured, else its logged rows at `per_row` (published runs whose CSV is
    not committed), else 0."""
    if m.output_bytes:
        return m.output_bytes / 1e6
    return m.rows * per_row / 1e6 if m.rows and per_row else 0.0


def memory_slope(measurements: list[Measurement], held=lambda m: 0.0) -> float | None:
    """MB per `memory` unit: the steepest growth, over the shapes measured, between the largest memory units of one
    model shape and the largest below them by 1.5x or more (else the smallest), the peak grown by more than
    MEMORY_NOISE (C-VFL's 1,967 and 1,981 MB at 100 and 200 samples are one peak measured twice, and their ratio
    extrapolated to 50,000 samples asked 13.5 GB); None without such a pair.  The growth nearest the planned size:
    a fixed cost that only sizes above the smallest pay is not growth (gcca Fig. 8's compiled kernels load about
    90 MB of runtime once its calls are large enough, between its smoke and quick sizes, and the smoke-to-quick line
    priced its paper run at 2.6 times its peak).  Any shape's growth counts: the memory units count the data a run
    holds, which the model does not change.  `held(m)`: the MB of m's peak that its logged rows account for, taken
    out first (a run that logs every step peaks higher at the same data)."""
    slopes = []
    for shape in {m.shape for m in measurements}:
        rss = sorted((m.memory_units, m.peak_rss_mb - held(m)) for m in measurements
                     if m.shape == shape and m.peak_rss_mb and m.memory_units is not None)
        if len(rss) >= 2:
            x1, y1 = rss[-1]
            x0, y0 = next((r for r in reversed(rss) if r[0] * 1.5 < x1), rss[0])
            if x1 > 1.5 * x0 and y1 > MEMORY_NOISE * y0:
                slopes.append((y1 - y0) / (x1 - x0))
    return max(slopes, default=None)


def predict_memory(work: dict, measurements: list[Measurement], params: dict,
                   shape: str | None = None) -> tuple[float | None, bool]:
    """(peak MB, is_floor).  A peak is the interpreter, libraries and model, plus the data (`memory` units), plus
    the logged rows (`rows`, held ROWS_IN_MEMORY times their CSV size).  From the measurements of the run's shape
    (else of any) at memory units up to the run's own: the highest peak net of its rows, plus the measured growth
    per `memory` unit (`memory_slope`) times the units this run holds beyond it, plus this run's rows.  Never a
    line through the origin: that would scale the interpreter with the data (it asked 63 GB for a C-VFL CIFAR-10
    run that peaks under 2 GB).  Without a measured growth the base peak stands, marked as a floor."""
    rss = [m for m in measurements if m.peak_rss_mb]
    if not rss:
        return None, False
    per_row = bytes_per_row(measurements) if work.get("rows") else None

    def held(m: Measurement) -> float:
        return ROWS_IN_MEMORY * _output_mb(m, per_row) if per_row else 0.0

    mine = evaluate(work["memory"], params, work.get("defaults")) if work.get("memory") else None
    pool = [m for m in rss if m.shape == shape] or rss
    if mine is not None and all(m.memory_units is not None for m in pool):
        pool = [m for m in pool if m.memory_units <= mine] or [min(pool, key=lambda m: m.memory_units)]
    base = max(pool, key=lambda m: m.peak_rss_mb - held(m))
    rows_mb = ROWS_IN_MEMORY * per_row * evaluate(work["rows"], params, work.get("defaults")) / 1e6 if per_row else 0.0
    peak = base.peak_rss_mb - held(base) + rows_mb
    slope = memory_slope(rss, held) if mine is not None and base.memory_units is not None else None
    if slope is None:
        return peak, True
    return peak + slope * max(0.0, mine - base.memory_units), False


def predict_cpu_seconds(registry, measurements: list[Measurement], paper: str, experiment: str, params: dict,
                        scale: str = "quick") -> float | None:
    """CPU seconds of one run of `experiment` with these parameters (None: no measurement)."""
    work = work_spec(registry.root, registry.run_spec(paper, experiment, scale)["runner"])
    if work is None:
        return None
    own = relevant(registry, measurements, paper, experiment, shape_of(work, params))
    if not own:
        return None
    points, _ = fit_points(own, shape_of(work, params))
    a, b = fit_line([(m.units, m.cpu_seconds) for m in points])
    return a + b * evaluate(work["units"], params, work.get("defaults"))


def with_overrides(params: dict, overrides: dict | None) -> dict:
    """`params` with `overrides` merged in (nested mappings key by key), except that a list of names over the
    `methods:` mapping (`methods=[squarm]` on measure_job's command line) keeps only those methods."""
    from fedrepro.registry.config import deep_merge

    overrides = dict(overrides or {})
    if isinstance(overrides.get("methods"), list) and isinstance(params.get("methods"), dict):
        unknown = [m for m in overrides["methods"] if m not in params["methods"]]
        if unknown:
            raise ValueError(f"methods={overrides['methods']}: no method {unknown} in the registry's "
                             f"methods ({', '.join(params['methods'])})")
        params = {**params, "methods": {m: params["methods"][m] for m in overrides.pop("methods")}}
    return deep_merge(params, overrides)


def run_once(registry, paper: str, experiment: str, configuration: str, scale: str, overrides: dict | None = None,
             inputs: dict | None = None, output: str | Path = "run.csv", seed: int = 0):
    """Run one experiment in this process with the registry's parameters at `scale` (plus `overrides`), as the run
    rule would; returns (rows, RunCost).  For measurements (benchmarks/measure_job.py) and tests."""
    from fedrepro.runner import RunContext, load_runner
    from fedrepro.workflow.jobs import RunCost

    spec = registry.run_spec(paper, experiment, scale)
    params = {**with_overrides(registry.params(paper, experiment, configuration, scale), overrides), "seed": seed}
    ctx = RunContext(paper=paper, experiment=experiment, configuration=configuration, scale=scale, params=params,
                     inputs=dict(inputs or {}), output=str(output), threads=1)
    cost = RunCost.start()
    result = load_runner(spec["runner"])(ctx)
    cost.stop()
    rows = result.rows
    if "configuration" not in rows:
        rows.insert(0, "configuration", configuration)
    return rows, cost


def estimate_run(registry, measurements: list[Measurement], paper: str, experiment: str, configuration: str,
                 scale: str, gpu_speedup: float = GPU_SPEEDUP, gpu_flops: float = GPU_FLOPS) -> Estimate:
    root = registry.root
    spec = registry.run_spec(paper, experiment, scale)
    gpu = bool(spec["resources"].get("gpu", 0))
    est = Estimate(paper, experiment, configuration, scale, threads=spec["threads"], gpu=gpu)
    work = work_spec(root, spec["runner"])
    if work is None:
        est.basis = f"no WORK declared by {spec['runner'].partition(':')[0]}"
        return est
    from fedrepro.workflow.split import resolved_params

    params = resolved_params(registry, paper, experiment, configuration, scale)   # as the job sees them (boards)
    est.units = units = evaluate(work["units"], params, work.get("defaults"))
    own = relevant(registry, measurements, paper, experiment, shape_of(work, params))
    if not own:
        est.basis = "no measurement (run it at smoke or quick scale, then --calibrate)"
        return est
    points, same_shape = fit_points(own, shape_of(work, params))
    a, b = fit_line([(m.units, m.cpu_seconds) for m in points])
    cpu_s = a + b * units
    scales = sorted({m.scale for m in points})
    clocks = sorted({m.clock for m in points})
    est.basis = f"{'+'.join(scales)} ({'/'.join(clocks)} clock{'' if same_shape else ', other model shape'})"
    if not same_shape:
        est.notes.append(f"{paper}/{experiment}: no measurement at its shape {shape_of(work, params)}; extrapolated "
                         f"from {points[0].shape} by the work units alone")
    if all(m.scale == "smoke" for m in points):
        est.basis += ", smoke only: start-up dominated, an upper bound"
    if units > 1.5 * max(m.units for m in points):
        est.basis += f", x{units / max(m.units for m in points):.3g} extrapolated"
    est.cpu_hours = cpu_s / 3600
    flops = (evaluate(work["flops"], {**params, "units": units}, work.get("defaults"))
             if gpu and work.get("flops") else 0.0)
    if flops > 0:
        # plan:A-gpu-rate: the FLOP count the runner declares over a sustained GPU rate, not CPU time / speed-up
        est.gpu_hours = flops / gpu_flops / 3600
        est.wall_hours = est.gpu_hours
        est.basis += f", GPU: {flops:.3g} FLOP at {gpu_flops / 1e12:g} TFLOP/s"
    elif gpu:
        est.gpu_hours = est.cpu_hours / gpu_speedup
        est.wall_hours = est.gpu_hours
    else:
        est.wall_hours = est.cpu_hours / max(1, est.threads)
    est.mem_mb, est.mem_is_floor = predict_memory(work, own, params, shape_of(work, params))
    per_row = bytes_per_row(own) if work.get("rows") else None
    outputs = ([per_row * evaluate(work["rows"], params, work.get("defaults"))] if per_row
               else [m.output_bytes for m in points])
    est.disk_mb, est.disk_note = _disk_mb(root, spec.get("dataset"), outputs, floor=per_row is None)
    return est


@lru_cache(maxsize=4)
def _dataset_bytes(root: str) -> dict:
    """Dataset -> the declared size of its raw files (config/datasets.yaml; a derived set: its source's)."""
    from fedrepro.registry.datasets import load_registry

    reg = load_registry(root)
    own = {n: sum((f.get("size") or 0) for f in (reg[n].files or {}).values()) if isinstance(reg[n].files, dict)
           else 0 for n in reg.names()}
    return {n: own.get(reg[n].derived_from or n, 0) or own[n] for n in reg.names()}


def _disk_mb(root, dataset: str | None, outputs: list, floor: bool = True) -> tuple[float | None, str]:
    """Disk a run needs: its dataset's raw files (declared sizes) + its outputs: its logged rows at the measured bytes
    per row where its WORK declares `rows`, else the largest measured run CSV (a floor)."""
    data = _dataset_bytes(str(root)).get(dataset, 0) if dataset else 0
    out = max([o for o in outputs if o] or [0])
    note = "≥" if (dataset and not data) or (out and floor) else ""
    return (data + out) / 1e6, note


def configured_max_runtime_h(root: str | Path) -> float:
    """config/config.yaml's cluster.max_runtime_h (MAX_RUNTIME_H where it is not set)."""
    import yaml

    path = Path(root) / "config" / "config.yaml"
    cfg = yaml.safe_load(path.read_text()) if path.exists() else {}
    return float(((cfg or {}).get("cluster") or {}).get("max_runtime_h") or MAX_RUNTIME_H)


def planned_runtime_min(wall_hours: float) -> int:
    """The runtime request (minutes) for an estimated wall time: SAFETY x the estimate, at least MIN_RUNTIME_MIN."""
    return int(max(MIN_RUNTIME_MIN, math.ceil(SAFETY * wall_hours * 60)))


def grid_runs(params: dict) -> tuple[int, str]:
    """(how many independent runs one seed of a job makes, what one is): C-VFL's (compressor, b) grid or its
    explicit `runs`, else the methods compared.  Each could be a job of its own (issue: per-run split)."""
    if params.get("runs"):
        return len(params["runs"]), "grid run"
    methods = params.get("methods") if isinstance(params.get("methods"), dict) else {}
    names = params.get("compressors") or list(methods)
    bits = params.get("bits") or []
    if names and bits:
        fixed = [n for n in names if n == "none" or (isinstance(methods.get(n), dict) and methods[n].get("b"))]
        return len(fixed) + (len(names) - len(fixed)) * len(bits), "(compressor, b) run"
    return max(1, len(names)), "method"


def split_advice(registry, paper: str, experiment: str, configuration: str, scale: str, hours: float,
                 max_hours: float) -> str:
    """How a run planned at `hours` (the request, SAFETY included) fits jobs of at most `max_hours`: the parts its
    runner declares (fedrepro.workflow.split; the workflow runs them), each in chained blocks with checkpoint and
    resume where no cut fits and the runner runs in blocks (fedrepro.checkpoint); else the cut that would fit, which
    needs a `splits` module declaring it."""
    from fedrepro.workflow.split import can_split, fit, resolved_params, split_module

    runner = registry.run_spec(paper, experiment, scale)["runner"]
    resolved = resolved_params(registry, paper, experiment, configuration, scale)
    if can_split(registry.root, runner, resolved):
        label, overrides, fits, blocks = fit(registry.root, runner, resolved, hours, max_hours)
        n = len(overrides)
        each = hours / n / blocks
        parts = f"{n} jobs, one per {label}," if n > 1 else "one job"
        if blocks > 1:
            return (f"runs as {parts} each in {blocks} chained blocks of {each:,.0f} h with checkpoint and resume "
                    f"(rules run_block, run_last_block, then run_merge)" + ("" if fits else ", still over the limit"))
        if fits:
            return f"runs as {n} jobs, one per {label}, of {each:,.0f} h each (rule run_part, then run_merge)"
        return (f"runs as {n} jobs, one per {label}, but each of {each:,.0f} h still exceeds the limit, and its runner "
                f"does not run in blocks (fedrepro.checkpoint)")
    params = registry.params(paper, experiment, configuration, scale)
    seeds = int(params.get("n_seeds") or params.get("seeds") or params.get("trials") or 1)
    runs, what = grid_runs(params)
    options: dict[int, str] = {}
    for n, label in ((seeds, "seed"), (runs, what), (seeds * runs, f"seed x {what}")):
        if n > 1:
            options.setdefault(n, label)
    options = sorted(options.items())
    undeclared = f"no split of it in {split_module(runner)} (fedrepro.workflow.split)"
    for n, label in options:
        if hours / n <= max_hours:
            return f"not split: {undeclared}; {n} jobs, one per {label}, of {hours / n:,.0f} h each would fit"
    finest = f"{options[-1][0]} jobs (one per {options[-1][1]}) of {hours / options[-1][0]:,.0f} h" if options \
        else "one seed and one run"
    return (f"not split: even {finest} exceed the limit: it needs about {math.ceil(hours / max_hours)} blocks with "
            f"checkpoint and resume, which its runner does not declare (fedrepro.checkpoint)")


def over_limit(registry, measurements, jobs, scale: str, max_hours: float) -> list[str]:
    """One line per run job whose planned runtime request exceeds `max_hours` (config cluster.max_runtime_h):
    the run, its planned hours and its split.  A run that is not split is submitted with runtime = the limit
    (a request the partition accepts) and will be stopped there."""
    lines = []
    for paper, experiment, configuration in jobs:
        est = estimate_run(registry, measurements, paper, experiment, configuration, scale)
        if est.wall_hours is None:
            continue
        hours = planned_runtime_min(est.wall_hours) / 60
        if hours > max_hours:
            lines.append(f"{paper}/{experiment}/{configuration}: planned {hours:,.0f} h > cluster.max_runtime_h "
                         f"{max_hours:g} h; {split_advice(registry, paper, experiment, configuration, scale, hours, max_hours)}")
    return lines


def rule_resources(registry, measurements, paper, experiment, configuration, scale,
                   max_runtime_h: float | None = None) -> dict:
    """{'runtime': minutes, 'mem_mb': MB} for the run rule at `scale` (empty where no estimate exists); the runtime
    request is capped at `max_runtime_h` (a request over a partition's limit stays pending for ever)."""
    est = estimate_run(registry, measurements, paper, experiment, configuration, scale)
    out = {}
    if est.wall_hours is not None:
        out["runtime"] = planned_runtime_min(est.wall_hours)
        if max_runtime_h:
            out["runtime"] = min(out["runtime"], int(max_runtime_h * 60))
    if est.mem_mb is not None:
        out["mem_mb"] = int(math.ceil(MEMORY_SAFETY * est.mem_mb / 100) * 100)
    return out


PLANNED_RESOURCES = ("runtime", "mem_mb")
DEFAULT_MEM_MB = 4000    # the run rule's mem_mb where the registry gives none (workflow/rules/run.smk)
PLANNED_SCALES = ("paper",)


def run_resource(registry, paper: str, experiment: str, configuration: str, scale: str, key: str, default=None,
                 max_runtime_h: float | None = MAX_RUNTIME_H):
    """A run rule's resource: the registry's value for this scale wins; at paper scale `runtime` and `mem_mb` are
    otherwise the plan's request (at least the experiment-level registry value; runtime at most `max_runtime_h`,
    config cluster.max_runtime_h); else the registry's or `default`."""
    entry = registry.experiment(paper, experiment)
    per_scale = ((entry["scales"].get(scale) or {}).get("resources") or {})
    if key in per_scale:
        return per_scale[key]
    declared = (entry.get("resources") or {}).get(key)
    if scale in PLANNED_SCALES and key in PLANNED_RESOURCES:
        measurements = measurements_for(registry.root, registry)
        planned = rule_resources(registry, measurements, paper, experiment, configuration, scale,
                                 max_runtime_h).get(key)
        if key == "runtime" and max_runtime_h:
            _warn_over_limit(registry, measurements, paper, experiment, configuration, scale, max_runtime_h)
        if planned is not None:
            return max(planned, declared) if declared is not None else planned
    return declared if declared is not None else default


_WARNED: set = set()


def _warn_over_limit(registry, measurements, paper, experiment, configuration, scale, max_runtime_h) -> None:
    """Say once per run (on stderr, so a dry run shows it) that its planned time exceeds the time limit and that it
    is not run as parts that fit."""
    from fedrepro.workflow.split import plan_split

    key = (str(registry.root), paper, experiment, configuration, scale, max_runtime_h)
    if key in _WARNED:
        return
    _WARNED.add(key)
    split = plan_split(registry, measurements, paper, experiment, configuration, scale, max_runtime_h)
    if split is not None and split.fits:
        return                               # its parts fit: the workflow runs those, not this job
    for line in over_limit(registry, measurements, [(paper, experiment, configuration)], scale, max_runtime_h):
        print(f"fedrepro plan: over the time limit: {line}; its job asks for {max_runtime_h:g} h and will be "
              f"stopped there (docs/cluster.md)", file=sys.stderr)


def memory_shortfalls(registry, measurements: list[Measurement], scales=("smoke", "quick")) -> list[str]:
    """The measured runs at `scales` whose peak exceeds the `mem_mb` their run rule declares (a cluster's --mem:
    such a job is killed there), one line each; paper scale asks the plan instead (above)."""
    short = []
    for m in measurements:
        if m.scale not in scales or m.peak_rss_mb is None:
            continue
        declared = run_resource(registry, m.paper, m.experiment, m.configuration, m.scale, "mem_mb", DEFAULT_MEM_MB)
        if declared < m.peak_rss_mb:
            short.append(f"{m.paper}/{m.experiment}/{m.configuration} at {m.scale}: mem_mb {declared} < its peak "
                         f"{m.peak_rss_mb:.0f} MB ({m.source})")
    return short


@lru_cache(maxsize=4)
def _cached_measurements(root: str) -> tuple:
    from fedrepro.registry.papers import Registry

    registry = Registry.load(root, check=False)
    local = measured_runs(root, registry)
    seen = {(m.paper, m.experiment) for m in local}
    committed = read_calibration(root)
    return tuple(local + [m for m in committed if not m.source.startswith("sidecar") or
                          (m.paper, m.experiment) not in seen])


def measurements_for(root: str | Path, registry) -> list[Measurement]:
    """This clone's run sidecars where an experiment has any, else the committed calibration rows for it."""
    return list(_cached_measurements(str(Path(root).resolve())))


# ---- job order of a local build ----------------------------------------------------------------------------

@lru_cache(maxsize=4)
def _measured_seconds(root: str) -> dict:
    """(paper, experiment, configuration, scale) -> measured CPU seconds: this clone's sidecars, else the committed
    calibration rows; (paper, experiment, None, scale) -> the experiment's largest. Unlike `measurements_for` (which
    fits on one machine's measurements and so drops an experiment's committed rows once it has local ones), a key
    keeps its committed row until this clone measures that very key: a clone with only quick runs still orders smoke."""
    from fedrepro.registry.papers import Registry

    out: dict = {}
    for m in [*read_calibration(root), *measured_runs(root, Registry.load(root, check=False))]:   # local ones win
        out[(m.paper, m.experiment, m.configuration, m.scale)] = m.cpu_seconds
    for (paper, experiment, _, scale), sec in list(out.items()):
        out[(paper, experiment, None, scale)] = max(out.get((paper, experiment, None, scale), 0.0), sec)
    return out


def _own_seconds(seconds: dict, paper: str, experiment: str, configuration: str, scale: str) -> float | None:
    """One run's measured CPU seconds in `_measured_seconds`, the experiment's largest where this configuration has
    none; None if unmeasured."""
    return seconds.get((paper, experiment, configuration, scale), seconds.get((paper, experiment, None, scale)))


def schedule_priority(registry, paper: str, experiment: str, configuration: str, scale: str) -> float:
    """The run job's priority for Snakemake's scheduler: the measured CPU seconds of the longest chain of runs it
    starts (its own, plus the longest chain of the runs whose `needs:` name it; the experiment's largest measurement
    where this configuration has none; 0 unmeasured). Ready jobs start in decreasing order of it, so a local build
    starts its long runs and run chains first instead of last (Snakemake's default order is by input bytes, which put
    ADEPT's feature net -> Table 3 chain at the end of a smoke build, one core idle meanwhile). Order only: no result
    depends on it."""
    seconds = _measured_seconds(str(Path(registry.root).resolve()))

    def chain(exp: str, conf: str, depth: int = 0) -> float:
        own = _own_seconds(seconds, paper, exp, conf, scale) or 0.0
        needers = [(e, c) for e in registry.papers[paper]["experiments"]
                   if f"{exp}/{conf}" in registry.run_spec(paper, e, scale)["needs"].values()
                   for c in registry.configurations(paper, e, scale)] if depth < 8 else []
        return own + max((chain(e, c, depth + 1) for e, c in needers), default=0.0)

    return round(chain(experiment, configuration), 1)


# ---- jobs of a target -------------------------------------------------------------------------------------------

def target_runs(registry, target: str, scale: str) -> list[tuple[str, str, str]]:
    """(paper, experiment, configuration) of every run job a target needs at `scale` (needs: included); `all` and
    `leaderboard` include the leaderboard's board runs (config/leaderboard.yaml), which belong to no artifact."""
    board_runs: list[tuple[str, str, str]] = []
    if target in ("all", "leaderboard"):
        from fedrepro.leaderboard.spec import Board

        board_runs = Board.load(registry.root, registry).board_runs(scale, registry)
    if target == "all":
        artifacts = [(p, a) for p, a, _ in registry.artifacts(scale=scale)]
    elif target == "leaderboard":
        artifacts = []
    elif target in registry.papers:
        artifacts = [(p, a) for p, a, _ in registry.artifacts(target, scale=scale)]
    else:
        paper, artifact = registry.resolve_artifact(target)
        if scale not in registry.artifact(paper, artifact)["scales"]:
            raise ConfigError(f"{target} is not built at scale {scale} (scales: "
                              f"{', '.join(registry.artifact(paper, artifact)['scales'])})")
        artifacts = [(paper, artifact)]
    jobs: list[tuple[str, str, str]] = []

    def add(paper, exp, configuration):
        if (paper, exp, configuration) in jobs:
            return
        for need in registry.run_spec(paper, exp, scale)["needs"].values():
            n_exp, _, n_conf = need.partition("/")
            add(paper, n_exp, n_conf)
        jobs.append((paper, exp, configuration))

    for paper, artifact in artifacts:
        for exp in registry.artifact(paper, artifact)["experiments"]:
            for configuration in registry.configurations(paper, exp, scale):
                add(paper, exp, configuration)
    for paper, exp, configuration in board_runs:
        add(paper, exp, configuration)
    return jobs


def _h(x: float | None) -> str:
    if x is None:
        return "?"
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def plan_table(estimates: list[Estimate]) -> str:
    """Markdown: one row per run job, a subtotal per experiment, the total."""
    head = ("| job | threads | GPU | CPU core-h | GPU-h | wall h | peak MB | disk MB | basis |\n"
            "|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    by_exp: dict[tuple[str, str], list[Estimate]] = {}
    for e in estimates:
        by_exp.setdefault((e.paper, e.experiment), []).append(e)

    def total(group, key):
        vals = [getattr(e, key) for e in group]
        return None if any(v is None for v in vals) and key != "gpu_hours" else sum(v or 0 for v in vals)

    for (paper, exp), group in by_exp.items():
        for e in group:
            mem = ("≥" if e.mem_is_floor else "") + _h(e.mem_mb)
            lines.append(f"| {paper}/{exp}/{e.configuration} | {e.threads} | {'yes' if e.gpu else ''} | "
                         f"{_h(e.cpu_hours)} | {_h(e.gpu_hours) if e.gpu else ''} | {_h(e.wall_hours)} | {mem} | "
                         f"{e.disk_note}{_h(e.disk_mb)} | {e.basis} |")
        if len(group) > 1:
            lines.append(f"| **{paper}/{exp}** ({len(group)} jobs) | | | **{_h(total(group, 'cpu_hours'))}** | "
                         f"**{_h(total(group, 'gpu_hours'))}** | **{_h(total(group, 'wall_hours'))}** | | "
                         f"{_h(total(group, 'disk_mb'))} | |")
    known = [e for e in estimates if e.known]
    cpu_only = [e for e in known if not e.gpu]
    lines.append(f"| **total** ({len(estimates)} run jobs, {len(estimates) - len(known)} without an estimate) | | | "
                 f"**{_h(sum(e.cpu_hours for e in known))}** (CPU jobs: {_h(sum(e.cpu_hours for e in cpu_only))}) | "
                 f"**{_h(sum(e.gpu_hours or 0 for e in known))}** | | "
                 f"max {_h(max((e.mem_mb or 0) for e in estimates) if estimates else None)} | "
                 f"{_h(sum(e.disk_mb or 0 for e in known))} | |")
    return "\n".join(lines)


# ---- the plan against the truth ---------------------------------------------------------------------------------

@dataclass
class Check:
    """One measured run beside what the plan estimated for it without that measurement."""

    job: str
    planned_cpu_s: float | None
    measured_cpu_s: float
    planned_mb: float | None
    measured_mb: float | None
    planned_disk_mb: float | None
    measured_disk_mb: float | None
    basis: str

    @staticmethod
    def ratio(planned, measured) -> float | None:
        return None if planned is None or not measured else planned / measured

    def ratios(self) -> tuple:
        return (self.ratio(self.planned_cpu_s, self.measured_cpu_s), self.ratio(self.planned_mb, self.measured_mb),
                self.ratio(self.planned_disk_mb, self.measured_disk_mb))

    def within(self, tolerance: float = 0.3) -> bool:
        """Each of CPU, memory and disk within ±tolerance of the measurement, or within a floor below which a
        relative error means nothing (a start-up-dominated job: 30 CPU s; 1 MB of disk)."""
        pairs = ((self.planned_cpu_s, self.measured_cpu_s, 30.0), (self.planned_mb, self.measured_mb, 0.0),
                 (self.planned_disk_mb, self.measured_disk_mb, 1.0))
        return all(p is not None and m is not None and abs(p - m) <= max(tolerance * m, floor)
                   for p, m, floor in pairs)


def check_against(registry, measurements: list[Measurement], folder: str | Path) -> list[Check]:
    """For every run sidecar under `folder` (a build: results/paper or published/paper), the plan's estimate at that
    scale from every measurement but those of that very run (leave one out: the build's other runs count), beside
    what the sidecar measured.  Disk, both ways: the dataset's declared raw size plus the run's outputs (its CSV and
    side files)."""
    root = Path(registry.root)
    folder = Path(folder)
    measured = [(s, measure_sidecar(root, registry, s)) for s in sorted((root / folder).glob("*/runs/*/*.csv.prov.json"))]
    measured = [(s, m) for s, m in measured if m is not None]
    # every measurement of every run, the committed rows included (measurements_for drops those of an experiment this
    # clone has measured, which would leave a run's own build as its only source)
    pool = {(m.paper, m.experiment, m.configuration, m.scale, m.source): m
            for m in [*read_calibration(root), *measurements, *(m for _, m in measured)]}
    pool = list({(m.paper, m.experiment, m.configuration, m.scale): m for m in pool.values()}.values())
    checks = []
    for sidecar, m in measured:
        # leave the run out, with its own slices (a `paper-fraction` measurement is part of the `paper` run)
        others = [o for o in pool if (o.paper, o.experiment, o.configuration) != (m.paper, m.experiment, m.configuration)
                  or not o.scale.startswith(m.scale)]
        est = estimate_run(registry, others, m.paper, m.experiment, m.configuration, m.scale)
        csv_file = Path(str(sidecar)[: -len(".prov.json")])
        written = sum(p.stat().st_size for p in sidecar.parent.glob(f"{m.configuration}.*")
                      if not p.name.endswith(".prov.json"))    # the CSV and its side files
        data = _dataset_bytes(str(root)).get(registry.run_spec(m.paper, m.experiment, m.scale).get("dataset"), 0)
        checks.append(Check(job=f"{m.paper}/{m.experiment}/{m.configuration}",
                            planned_cpu_s=None if est.cpu_hours is None else est.cpu_hours * 3600,
                            measured_cpu_s=m.cpu_seconds, planned_mb=est.mem_mb, measured_mb=m.peak_rss_mb,
                            planned_disk_mb=est.disk_mb,
                            measured_disk_mb=(data + written) / 1e6 if csv_file.exists() else None,
                            basis=est.basis))
    return checks


def check_table(checks: list[Check], tolerance: float = 0.3) -> str:
    def num(x, fmt="{:,.0f}"):
        return "–" if x is None else fmt.format(x)

    lines = ["| job | CPU s planned | CPU s measured | ratio | peak MB planned | measured | ratio | disk MB planned "
             f"| measured | ratio | within ±{tolerance:.0%} |", "|---|" + "---|" * 10]
    for c in checks:
        rc, rm, rd = c.ratios()
        lines.append(f"| {c.job} | {num(c.planned_cpu_s)} | {num(c.measured_cpu_s)} | {num(rc, '{:.2f}')} "
                     f"| {num(c.planned_mb)} | {num(c.measured_mb)} | {num(rm, '{:.2f}')} "
                     f"| {num(c.planned_disk_mb, '{:,.1f}')} | {num(c.measured_disk_mb, '{:,.1f}')} "
                     f"| {num(rd, '{:.2f}')} | {'yes' if c.within(tolerance) else 'no'} |")
    return "\n".join(lines)

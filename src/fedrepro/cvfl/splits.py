"""The runs of a C-VFL configuration and how they divide into jobs (fedrepro.workflow.split).

The workflow imports this module when it reads the Snakefile, in every job's process too: it imports neither torch
nor data, so that a job's memory is the run's own."""

from __future__ import annotations

from fedrepro.registry.methods import methods_of, select

# The runners whose runs this module divides, and the function that says how (read without importing this module).
RUNNERS = {"fedrepro.cvfl.experiments:run": "split_run"}


def expand_grid(p: dict) -> list[dict]:
    """The run configurations of an experiment: the methods (those of `compressors`, if given) x `bits` (a method
    with its own `b` once, at that b), then the explicit `runs`; each names its method in `compressor`."""
    methods = {m.name: m for m in methods_of(p)}
    grid = [] if not p.get("bits") else select(list(methods.values()), p.get("compressors"))
    out = [{"compressor": m.name, "b": b} for m in grid for b in ([m.get("b")] if m.get("b") else p["bits"])]
    for r in p.get("runs") or []:
        out.append(dict(r))
    for r in out:
        if r["compressor"] not in methods:
            raise ValueError(f"run {r}: compressor {r['compressor']!r} is not a method of this experiment "
                             f"(methods: {', '.join(methods)})")
        for k in ("Q", "M", "alg", "epochs"):
            r.setdefault(k, p.get(k, {"Q": 10, "M": 4, "alg": 1}.get(k)))
    return out


def split_run(params: dict) -> list[tuple[str, list[dict]]]:
    """How a configuration divides into jobs (fedrepro.workflow.split), coarsest first: one per run of the grid,
    then one per seed of each, in the order `run_experiment` loops (grid, then seeds); each (run, seed) seeds its
    own streams."""
    runs = [{"bits": [], "runs": [run]} for run in expand_grid(params)]
    slots = range(int(params["n_seeds"]))
    return [("(compressor, b) run", runs),
            ("seed x (compressor, b) run", [{**run, "seed_slot": s} for run in runs for s in slots])]

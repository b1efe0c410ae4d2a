"""The loops of a thesis ch. 3 run and how they divide into jobs (fedrepro.workflow.split, fedrepro.checkpoint).

A configuration runs, per method in the registry's order, its γ-tuning trials (A-10) and then its runs (every
variant, γ and seed).  Methods are independent, so a run longer than the time limit divides per method; a method
longer than the limit (Fig. 3.1 at paper scale) runs in chained blocks of its steps, each job going on from the
checkpoint of the one before.

The workflow imports this module when it reads the Snakefile, in every job's process too: it imports neither torch
nor data."""

from __future__ import annotations

from fedrepro.registry.methods import methods_of

# The runners whose runs this module divides, and the function that says how; the runners that run in chained
# blocks, and the function that bounds their count (read without importing this module)
RUNNERS = {"fedrepro.decentral.experiments:run": "split_run"}
BLOCKS = {"fedrepro.decentral.experiments:run": "max_blocks"}


def split_run(params: dict) -> list[tuple[str, list[dict]]]:
    """One job per method, in the order `run_experiment` runs them."""
    return [("method", [{"methods": [name]} for name in params["methods"]])]


def max_blocks(params: dict) -> int:
    """Blocks of at least one epoch: the run's epochs, every loop counted (its steps with one step per epoch)."""
    return total_steps({**params, "T": max(1, int(float(params.get("epochs") or 1)))})


def loops(params: dict):
    """(method, the γ of its runs (None: tuned first, A-10), [(trigger reference, threshold scale, parameters)]) per
    method, in the registry's order: what `run_experiment` runs and `total_steps` counts."""
    sweep = params.get("trigger_scales")
    references = params.get("trigger_references")
    base_scale = float(params.get("trigger_scale", 1.0))
    for method in methods_of(params):
        tuned = method.algorithm != "dsgd"          # DSGD's gamma is 1
        if params.get("gamma_grid_runs") and tuned:
            gammas = [float(g) for g in params["gamma_grid"]]
        elif params.get("tune_gamma") and tuned:
            gammas = None
        else:
            gammas = [1.0 if method.algorithm == "dsgd" else float(method.get("gamma", 1.0))]
        triggered = method.algorithm == "squarm"
        scales = [float(s) for s in sweep] if sweep is not None and triggered else [None]
        refs = [str(r) for r in references] if references is not None and triggered else [None]
        variants = []
        for ref in refs:
            for scale in scales:
                p = params if scale is None else dict(params, trigger_scale=base_scale * scale)
                variants.append((ref, scale, p if ref is None else dict(p, trigger_reference=ref)))
        yield method, gammas, variants


def tune_steps(params: dict) -> int:
    """The steps of one γ-tuning trial: `tune_frac` of the run (A-10)."""
    return max(1, int(round(float(params.get("tune_frac", 0.1)) * int(params["T"]))))


def total_steps(params: dict) -> int:
    """The engine steps of a whole configuration, each loop at its full length: γ-tuning trials and runs."""
    seeds = int(params.get("seeds", 1))
    total = 0
    for _, gammas, variants in loops(params):
        if gammas is None:
            total += len(params["gamma_grid"]) * tune_steps(params)
        total += len(variants) * len(gammas or [None]) * seeds * int(params["T"])
    return total

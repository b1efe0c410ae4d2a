"""Run one configuration of a gcca experiment on a dataset or with the deep engine (Figs. 9-13) -> tidy long CSV.

europarl (Fig. 9): the linear engine on hashed Europarl views (input `data`: the prepared corpus);
deep_toy (Figs. 10-11): the deep engine on the generated 2-D toy views;
ehr (Figs. 12-13): the deep engine on the DE-SynPUF co-occurrence views (input `data`).
"""

import json
from pathlib import Path

from fedrepro.io import write_csv
from fedrepro.pipeline import rule_run

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
experiment = sm.wildcards.experiment
with rule_run(sm, use_torch_device=experiment != "europarl") as run:
    import torch

    torch.set_num_threads(max(1, int(sm.threads)))
    params = dict(sm.params.cfg)
    progress = lambda jobs: run.progress(jobs, desc=experiment)  # noqa: E731
    inputs, data = [], {}
    if experiment == "europarl":
        from fedrepro.data import load_parallel_text
        from fedrepro.gcca.europarl import run_europarl

        pt = load_parallel_text(sm.input.data)
        inputs = [sm.input.data]
        runs = run_europarl(experiment, params, pt.texts, pt.split, progress=progress)
    elif experiment == "ehr":
        from fedrepro.data import load_cooccurrence_views
        from fedrepro.gcca.deep_experiments import run_ehr

        ev = load_cooccurrence_views(sm.input.data)
        inputs = [sm.input.data]
        runs = run_ehr(experiment, params, ev.views, ev.labels, device=run.device, progress=progress)
    else:
        from fedrepro.gcca.deep_experiments import run_deep_toy

        runs = run_deep_toy(experiment, params, device=run.device, progress=progress)
        data = {"gcca-deep-toy-synthetic": "real"}
    runs.insert(0, "configuration", sm.wildcards.configuration)
    write_csv(sm.output.csv, runs)
    run.sidecars([sm.output.csv], inputs=inputs, config=params, seeds=[params["seed"]], data=data or None,
                 extra={"torch_threads": torch.get_num_threads(),
                        "streams": f"rng_stream(seed, '{experiment}', trial, ...) (see fedrepro.gcca.deep_experiments)"})

"""Run one configuration of thesis Fig. 3.1 / 3.2 / 3.4 (every method; fig3_4_trigger: SQuARM at every threshold
scale) and write its tidy metrics with a sidecar."""

import time

from fedrepro.decentral.experiments import make_task_factory, prepare_params, run_experiment
from fedrepro.io import write_csv
from fedrepro.pipeline import rule_run

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
use_device = sm.params.cfg["model"] != "logreg"   # MNIST (fig3_4, fig3_4_trigger) runs on the CPU
with rule_run(sm, use_torch_device=use_device) as run:
    import torch

    torch.set_num_threads(max(1, int(sm.threads)))
    params = dict(sm.params.cfg)
    experiment = sm.wildcards.experiment
    t0 = time.perf_counter()
    make_task, status, info = make_task_factory(params, sm.input.data, device=run.device)
    params = prepare_params(params, info)
    runs, facts = run_experiment(params, make_task, log=run.log.info)
    wall = time.perf_counter() - t0
    runs.insert(0, "configuration", sm.wildcards.configuration)
    write_csv(sm.output.csv, runs)
    run.log.info("%s/%s: %d iterations x %d runs in %.1f s", experiment, sm.wildcards.configuration,
                 int(params["T"]), len(facts["runs"]), wall)
    run.sidecars([sm.output.csv], inputs=[sm.input.data], config=dict(sm.params.cfg),
                 seeds=[int(params["seed"]) + i for i in range(int(params.get("seeds", 1)))],
                 extra={"T": int(params["T"]), "iters_per_epoch": int(params.get("iters_per_epoch", 1)),
                        "wall_seconds": round(wall, 2), "runs": facts["runs"], "gamma_tuning": facts["gamma_tuning"],
                        "trigger_calibration": facts.get("trigger_calibration"), "data_status": status,
                        "streams": "rng_stream(seed, 'decentral', name), name in partition, minibatch, train_eval, "
                                   "topology, <method>/compressor"})

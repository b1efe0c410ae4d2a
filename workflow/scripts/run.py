"""Run one (experiment, configuration) with the runner the registry names, and write its tidy CSV + sidecars."""

from fedrepro.comm.plugins import import_plugins
from fedrepro.io import write_csv
from fedrepro.runner import RunContext, load_runner
from fedrepro.runtime import limit_threads
from fedrepro.workflow.jobs import RunCost, rule_run

sm = snakemake  # noqa: F821  (provided by Snakemake's script directive)
spec = sm.params.spec
with rule_run(sm, inputs=sm.input) as run:
    # the registry's thread count, not Snakemake's (`--cores 1` caps sm.threads): the number of threads decides how a
    # reduction is split, so the bits of a run (ADEPT's feature net, say) must not depend on the cores of the build
    threads = 1 if spec["alone"] else spec["threads"]  # wall-clock runs: one BLAS thread, no other job beside them
    limit_threads(threads)
    run.log.info("computing with %d thread(s), the registry's count", threads)
    inputs = dict(sm.input.items())
    import_plugins(sm.config.get("comm", {}).get("plugins"))  # user compressors (config comm.plugins) register themselves
    ctx = RunContext(paper=sm.wildcards.paper, experiment=sm.wildcards.experiment,
                     configuration=sm.wildcards.configuration, scale=sm.wildcards.scale, params=dict(sm.params.cfg),
                     inputs=inputs, output=sm.output.csv, threads=threads,
                     device_preference=sm.config.get("device", "auto"), log=run.log,
                     progress=lambda it, **kw: run.progress(it, **kw))
    cost = RunCost.start()  # wall, CPU seconds and peak memory, for `python -m fedrepro plan` (docs/cluster.md)
    result = load_runner(spec["runner"])(ctx)
    cost.stop()
    wall = cost.wall_seconds
    rows = result.rows
    if "configuration" not in rows:
        rows.insert(0, "configuration", ctx.configuration)
    write_csv(sm.output.csv, rows)
    run.log.info("%s/%s (%s): %d rows in %.1f s", ctx.experiment, ctx.configuration, spec["runner"], len(rows), wall)
    run.device = getattr(ctx, "_device", "cpu")
    run.sidecars([sm.output.csv, *result.side_files],
                 inputs=result.inputs if result.inputs is not None else list(inputs.values()),
                 config=ctx.params, seeds=result.seeds if result.seeds is not None else [ctx.seed], data=result.data,
                 extra={"runner": spec["runner"], **cost.record(), **result.extra})
